#!/bin/bash
# after the fine-tune: rephrase + easy generation (one thread each), grounding, closed loop, DiscreteBC cells
export IMAGINEBENCH_HOME=/work/hl PYTHONPATH=/work/main/src HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
L=/work/logs/s56; CK=/work/hl/models/rel40-s56; IB=/tmp/fresh/.venv/bin/imaginebench; PY=/tmp/fresh/.venv/bin/python
cd /work/main
while ! grep -q "^rc=" $L/train.log; do sleep 10; done
date; echo "train done"
( /usr/bin/time -v $IB imagine generate --env BabyAI-v0 --profile small --level rephrase --checkpoint $CK --threads 1 --no-progress > $L/gen-rephrase.log 2>&1; echo rc=$? >> $L/gen-rephrase.log ) &
( $IB imagine generate --env BabyAI-v0 --profile small --level easy --checkpoint $CK --threads 1 --no-progress > $L/gen-easy.log 2>&1; echo rc=$? >> $L/gen-easy.log ) &
wait; date; echo "generated"
$IB imagine ground --env BabyAI-v0 --profile small --level rephrase --threads 2 > $L/ground-rephrase.log 2>&1; echo rc=$? >> $L/ground-rephrase.log
$IB imagine ground --env BabyAI-v0 --profile small --level easy --threads 2 > $L/ground-easy.log 2>&1; echo rc=$? >> $L/ground-easy.log
date; echo "grounded"
$PY $L/cells2.py BabyAI-v0 bc:rephrase:imaginary bc:easy:imaginary > $L/cells-a.log 2>&1 &
$PY $L/cells2.py BabyAI-v0 bc:rephrase:imaginary-grounded bc:easy:imaginary-grounded > $L/cells-b.log 2>&1 &
wait; date; echo "cells done"
