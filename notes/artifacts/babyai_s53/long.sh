#!/bin/bash
# The session-53 BabyAI rollout model: warm start from the session-41 weights (../babyai_s41/rollout-lm copied to
# the default checkpoint folder), rollout task sampled 8x, a fresh cosine schedule over 3,500 steps, LoRA r=16.
set -e
imaginebench imagine train --env BabyAI-v0 --profile small --threads 2 --task-weights 8,1,1,1 --steps 3500 \
  --init-from "$IMAGINEBENCH_HOME/models/rollout-lm/BabyAI-v0/small/smollm2-135m-late4" --out "${1:?usage: long.sh OUT_DIR}"
