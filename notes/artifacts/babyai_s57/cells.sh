#!/bin/bash
export IMAGINEBENCH_HOME=/work/hl PYTHONPATH=/work/main/src HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
L=/work/logs/s57; PY=/tmp/fresh/.venv/bin/python; C=/work/main/notes/artifacts/babyai_s55/cells2.py
cd /work/main
while ! grep -q "^grounded" $L/ground.out; do sleep 10; done
date; echo "start cells"
$PY $C BabyAI-v0 bc:rephrase:imaginary bc:easy:imaginary bc:hard:imaginary cql:rephrase:imaginary cql:easy:imaginary cql:hard:imaginary > $L/cells-a.log 2>&1 &
$PY $C BabyAI-v0 bc:rephrase:imaginary-grounded bc:easy:imaginary-grounded bc:hard:imaginary-grounded cql:rephrase:imaginary-grounded cql:easy:imaginary-grounded > $L/cells-b.log 2>&1 &
wait; date; echo "cells done"
