#!/bin/bash
# Meta-World imaginary data, honest filter with the contact rule (session 22), CPU, one thread; usage: gen22b.sh LEVEL EPISODES BUDGET
cd /work/snap_b && source /work/main/.venv/bin/activate
export IMAGINEBENCH_HOME=/work/home_mw22 PYTHONPATH=/work/snap_b/src OMP_NUM_THREADS=1
git rev-parse HEAD
echo "=== $(date -u +%FT%TZ) generate $1 episodes $2 budget $3"
/usr/bin/time -v imaginebench imagine generate --env MetaWorld-v0 --profile small --level $1 --episodes $2 --budget $3 \
   --checkpoint /work/gpu26/ck/mw --threads 1 --device cpu --no-score --batch-size 64 --no-progress
echo "=== $(date -u +%FT%TZ) END rc=$?"
