#!/bin/bash
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONPATH=/work/main/src
IB=/work/main/.venv/bin/imaginebench
run() {  # home level checkpoint temperature episodes
  IMAGINEBENCH_HOME=$1 $IB imagine generate --env HalfCheetah-v0 --profile small --level $2 --checkpoint $3 --episodes $5 --budget 5 --batch-size 64 --seed 1 --temperature $4 --device cpu --threads 1 --no-score --no-progress > gen_$(basename $1)_$2.log 2>&1
  echo "$(date +%T) gen done $1 $2" >> chain2.progress
  IMAGINEBENCH_HOME=$1 $IB train --env HalfCheetah-v0 --algo bc --level $2 --seeds 0 1 2 --profile small > bc_$(basename $1)_$2.log 2>&1
  echo "$(date +%T) bc done $1 $2" >> chain2.progress
}
run /work/home_hc_bins_t0 hard /work/home_hc/ck_bins21 0 150
run /work/home_hc_bins_t05 easy /work/home_hc/ck_bins21 0.5 200
run /work/home_hc_bins_t05 hard /work/home_hc/ck_bins21 0.5 150
