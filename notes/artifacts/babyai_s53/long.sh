#!/bin/bash
# warm start from the session-41 model; rollout task 8x; fresh cosine over 3,500 steps; LoRA (checkpoints stay small)
export IMAGINEBENCH_HOME=/work/hl PYTHONPATH=/work/main/src
cd /work/main
date
/tmp/fresh/.venv/bin/imaginebench imagine train --env BabyAI-v0 --profile small --threads 2 --no-progress --task-weights 8,1,1,1 --steps 3500 --init-from $IMAGINEBENCH_HOME/models/rollout-lm/BabyAI-v0/small/smollm2-135m-late4 --out /path/to/out --overwrite
echo rc=$?; date
