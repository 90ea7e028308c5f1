#!/bin/bash
# easy level: generate with each model then BC, one after another
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONPATH=/work/main/src
IB=/work/main/.venv/bin/imaginebench
run() {  # home checkpoint temperature
  IMAGINEBENCH_HOME=$1 $IB imagine generate --env HalfCheetah-v0 --profile small --level easy --checkpoint $2 --episodes 200 --budget 5 --batch-size 64 --seed 1 --temperature $3 --device cpu --threads 1 --no-score --no-progress > gen_$(basename $1)_easy.log 2>&1
  echo "$(date +%T) gen done $1" >> chain_easy.progress
  IMAGINEBENCH_HOME=$1 $IB train --env HalfCheetah-v0 --algo bc --level easy --seeds 0 1 2 --profile small > bc_$(basename $1)_easy.log 2>&1
  echo "$(date +%T) bc done $1" >> chain_easy.progress
}
run /work/home_hc_bins_t0 /work/home_hc/ck_bins21 0
run /work/home_hc_reg /work/main/notes/artifacts/gpu_20261126b/hc 1
