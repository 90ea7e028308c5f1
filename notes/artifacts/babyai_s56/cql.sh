#!/bin/bash
# DiscreteCQL on the new rephrase data, after the DiscreteBC cells
export IMAGINEBENCH_HOME=/work/hl PYTHONPATH=/work/main/src HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
L=/work/logs/s56; PY=/tmp/fresh/.venv/bin/python
cd /work/main
( while ! grep -q "^all wall" $L/cells-a.log; do sleep 10; done; $PY $L/cells2.py BabyAI-v0 cql:rephrase:imaginary > $L/cql-a.log 2>&1 ) &
( while ! grep -q "^all wall" $L/cells-b.log; do sleep 10; done; $PY $L/cells2.py BabyAI-v0 cql:rephrase:imaginary-grounded > $L/cql-b.log 2>&1 ) &
wait; date; echo cql done
