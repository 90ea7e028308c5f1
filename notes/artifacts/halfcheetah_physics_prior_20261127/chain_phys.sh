#!/bin/bash
export IMAGINEBENCH_HOME=/work/home_hc_phys PYTHONPATH=/work/snap_phys/src OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
IB=/work/main/.venv/bin/imaginebench
cd /work/logs/s26/hc
p() { echo "$(date +%T) $*" >> chain_phys.progress; }
p start
$IB imagine generate --env HalfCheetah-v0 --profile small --level hard --checkpoint /work/main/notes/artifacts/halfcheetah_bins_20261127/checkpoint --episodes 150 --budget 5 --batch-size 64 --seed 1 --temperature 0.5 --device cpu --threads 1 --no-score --no-progress --physics-prior > gen_phys_hard.log 2>&1
p "gen hard rc=$?"
$IB train --env HalfCheetah-v0 --algo bc --level hard --seeds 0 1 2 --profile small > bc_phys_hard.log 2>&1
p "bc hard rc=$?"
