#!/bin/bash
export IMAGINEBENCH_HOME=/work/hl PYTHONPATH=/work/main/src HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
L=/work/logs/s57; CK=/work/main/notes/artifacts/babyai_s56/rollout-lm; IB=/tmp/fresh/.venv/bin/imaginebench
cd /work/main
date
( $IB imagine generate --env BabyAI-v0 --profile small --level rephrase --checkpoint $CK --threads 1 --no-progress --overwrite > $L/gen-rephrase.log 2>&1; echo rc=$? >> $L/gen-rephrase.log ) &
( $IB imagine generate --env BabyAI-v0 --profile small --level easy --checkpoint $CK --threads 1 --no-progress --overwrite > $L/gen-easy.log 2>&1; echo rc=$? >> $L/gen-easy.log ) &
wait; date; echo "generated"
$IB imagine ground --env BabyAI-v0 --profile small --level rephrase --threads 2 --overwrite > $L/ground-rephrase.log 2>&1; echo rc=$? >> $L/ground-rephrase.log
$IB imagine ground --env BabyAI-v0 --profile small --level easy --threads 2 --overwrite > $L/ground-easy.log 2>&1; echo rc=$? >> $L/ground-easy.log
date; echo "grounded"
