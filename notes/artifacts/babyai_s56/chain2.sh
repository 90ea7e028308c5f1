#!/bin/bash
# after the DiscreteBC cells: the full test suite (reference data changed), then DiscreteCQL on the new rephrase data
export PYTHONPATH=/work/main/src HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
L=/work/logs/s56; PY=/tmp/fresh/.venv/bin/python
cd /work/main
while ! grep -q "^all wall" $L/cells-a.log || ! grep -q "^all wall" $L/cells-b.log; do sleep 10; done
date; echo "bc cells done"
IMAGINEBENCH_HOME=$(mktemp -d) $PY -m pytest -q -p no:cacheprovider -n 2 --dist loadgroup > $L/tests.log 2>&1; echo rc=$? >> $L/tests.log
date; echo "tests done"
export IMAGINEBENCH_HOME=/work/hl
$PY $L/cells2.py BabyAI-v0 cql:rephrase:imaginary > $L/cql-a.log 2>&1 &
$PY $L/cells2.py BabyAI-v0 cql:rephrase:imaginary-grounded > $L/cql-b.log 2>&1 &
wait; date; echo "cql done"
