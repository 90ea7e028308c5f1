#!/bin/bash
# A/B at equal steps: cont-s54 + the same 3,000-step recipe with --relations at the default gain 40, stopped at step 1,000
# (control: cont-s55-at1000, the same recipe without relations).
export IMAGINEBENCH_HOME=/work/hl PYTHONPATH=/work/main/src
/tmp/fresh/.venv/bin/imaginebench imagine train --env BabyAI-v0 --profile small --threads 1 --task-weights 8,1,1,1 --steps 3000 --lr 2e-4 --adapter-lr 4e-4 --init-from /work/hl/models/cont-s54 --no-progress --relations --out /work/hl/models/cont-rel40-s55 > /work/logs/s55/train-gain.log 2>&1 &
P=$!
while ! grep -q '"step": 1000,' /work/hl/models/cont-rel40-s55/checkpoint.json 2>/dev/null; do sleep 5; done
sleep 5; cp -r /work/hl/models/cont-rel40-s55 /work/hl/models/cont-rel40-s55-at1000; kill $P; date; echo "copied at 1000"
/tmp/fresh/.venv/bin/python /work/logs/s55/closed_loop.py /work/hl/models/cont-rel40-s55-at1000 train 528 1 2>/dev/null | grep '^{' >> /work/logs/s55/cl.jsonl
/tmp/fresh/.venv/bin/python /work/logs/s55/endstop_diag.py /work/hl/models/cont-rel40-s55-at1000 rephrase 528 2>/dev/null | grep '^{' >> /work/logs/s55/endstop.jsonl
date; echo "measured"
