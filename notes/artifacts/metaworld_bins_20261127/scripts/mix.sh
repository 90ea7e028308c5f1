#!/bin/bash
export IMAGINEBENCH_HOME=/work/home_mw_ship PYTHONPATH=/work/snap_mw/src OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
cd /work/logs/s26/mw
echo "$(date +%T) start" >> mix.progress
/work/main/.venv/bin/imaginebench train --env MetaWorld-v0 --algo bc --level rephrase --seeds 0 1 2 --profile small --mix-ratio 0.1 --tag mix01 > bc_mix01_rephrase.log 2>&1
echo "$(date +%T) done rc=$?" >> mix.progress
