#!/bin/bash
# The session-54 BabyAI rollout model: warm start from the session-53 weights (../babyai_s53/rollout-lm),
# rollout task sampled 8x, a fresh cosine schedule over 3,000 steps at a lower peak rate (2e-4 LoRA, 4e-4 numeric
# adapters; session 53's action loss fell only once its rate had decayed), LoRA r=16, 2 threads (~55 min, AMD EPYC).
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
imaginebench imagine train --env BabyAI-v0 --profile small --threads 2 --task-weights 8,1,1,1 --steps 3000 \
  --lr 2e-4 --adapter-lr 4e-4 --init-from "$HERE/../babyai_s53/rollout-lm" --out "${1:?usage: cont.sh OUT_DIR}"
