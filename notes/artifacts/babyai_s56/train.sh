#!/bin/bash
# continue the gain-40 relations snapshot (session 55, step 1,000) for 2,000 more steps (fresh cosine schedule)
export IMAGINEBENCH_HOME=/work/hl PYTHONPATH=/work/main/src HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
cd /work/main
/tmp/fresh/.venv/bin/imaginebench imagine train --env BabyAI-v0 --profile small --threads 2 --task-weights 8,1,1,1 --steps 2000 --lr 2e-4 --adapter-lr 4e-4 --init-from notes/artifacts/babyai_s55/rollout-lm-relations-1000 --no-progress --relations --out /work/hl/models/rel40-s56
echo rc=$?
