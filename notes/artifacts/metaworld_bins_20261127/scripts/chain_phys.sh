#!/bin/bash
export IMAGINEBENCH_HOME=/work/home_mw_phys PYTHONPATH=/work/snap_phys/src OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
IB=/work/main/.venv/bin/imaginebench
cd /work/logs/s26/mw
p() { echo "$(date +%T) $*" >> chain_phys.progress; }
p start
$IB imagine generate --env MetaWorld-v0 --profile small --level rephrase --checkpoint /work/main/notes/artifacts/gpu_20261126b/mw --episodes 500 --budget 5 --batch-size 64 --seed 1 --temperature 1.0 --device cpu --threads 1 --no-score --no-progress --physics-prior > gen_phys_rephrase.log 2>&1
p "gen rephrase rc=$?"
$IB train --env MetaWorld-v0 --algo bc --level rephrase --seeds 0 1 2 --profile small > bc_phys_rephrase.log 2>&1
p "bc rephrase rc=$?"
