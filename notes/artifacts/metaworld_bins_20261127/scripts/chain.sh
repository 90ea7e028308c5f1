#!/bin/bash
# MW binned-head experiment: fine-tune (warm start) -> diag -> generate rephrase/easy at t=0.5 -> BC cells
export IMAGINEBENCH_HOME=/work/home_mw PYTHONPATH=/work/snap_mw/src OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
IB=/work/main/.venv/bin/imaginebench
PY=/work/main/.venv/bin/python
CK=/work/home_mw/ck_bins21
cd /work/logs/s26/mw
p() { echo "$(date +%T) $*" >> chain.progress; }
p start
$IB imagine train --env MetaWorld-v0 --profile small --action-bins 21 --init-from /work/main/notes/artifacts/gpu_20261126b/mw --out $CK --steps 600 --batch-size 16 --eval-every 100 --threads 1 > train.log 2>&1
p "train rc=$?"
$PY diag.py $CK rephrase 20 0.5 MetaWorld-v0 > diag_bins_rephrase_t05.json 2> diag_bins_rephrase_t05.err
p "diag rc=$?"
for lv in rephrase easy; do
  $IB imagine generate --env MetaWorld-v0 --profile small --level $lv --checkpoint $CK --episodes $([ $lv = rephrase ] && echo 500 || echo 400) --budget 5 --batch-size 64 --seed 1 --temperature 0.5 --device cpu --threads 1 --no-score --no-progress > gen_$lv.log 2>&1
  p "gen $lv rc=$?"
done
for lv in rephrase easy; do
  $IB train --env MetaWorld-v0 --algo bc --level $lv --seeds 0 1 2 --profile small > bc_$lv.log 2>&1
  p "bc $lv rc=$?"
done
