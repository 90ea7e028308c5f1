#!/bin/bash
export IMAGINEBENCH_HOME=/work/hl PYTHONPATH=/work/main/src HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
L=/work/logs/s57; IB=/tmp/fresh/.venv/bin/imaginebench
cd /work/main
$IB imagine ground --env BabyAI-v0 --profile small --level rephrase --threads 2 --overwrite > $L/ground-rephrase.log 2>&1; echo rc=$? >> $L/ground-rephrase.log
$IB imagine ground --env BabyAI-v0 --profile small --level easy --threads 2 --overwrite > $L/ground-easy.log 2>&1; echo rc=$? >> $L/ground-easy.log
date; echo "grounded"
