#!/bin/bash
export IMAGINEBENCH_HOME=/work/hl PYTHONPATH=/work/main/src HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
cd /work/main
/tmp/fresh/.venv/bin/imaginebench imagine generate --env BabyAI-v0 --profile small --level hard --checkpoint /work/hl/models/rel40-s56 --threads 1 > /work/logs/s56/gen-hard.log 2>&1; echo rc=$? >> /work/logs/s56/gen-hard.log
