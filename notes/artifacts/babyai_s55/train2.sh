#!/bin/bash
# Session 55: A/B from the same start (cont-s54), same recipe, one thread each, side by side:
#   cont-s55      : 3,000 more steps as before (resumed from its step-750 checkpoint, now 1 thread)
#   cont-rel-s55  : the same, with --relations (BabyAI's relational state facts, zero-initialised)
export IMAGINEBENCH_HOME=/work/hl PYTHONPATH=/work/main/src
B="/tmp/fresh/.venv/bin/imaginebench imagine train --env BabyAI-v0 --profile small --threads 1 --task-weights 8,1,1,1 --steps 3000 --lr 2e-4 --adapter-lr 4e-4 --init-from /work/hl/models/cont-s54 --no-progress"
$B --out /work/hl/models/cont-s55 > /work/logs/s55/train-s55.log 2>&1 &
$B --relations --out /work/hl/models/cont-rel-s55 > /work/logs/s55/train-rel.log 2>&1 &
wait; date; echo done
