#!/bin/sh
# Session 58: Meta-World TD3+BC cells under the card's new TD3+BC settings (64-wide instruction
# projection, annealed rates, alpha 0.25), two queues side by side, one thread each; the rest of
# the grid (grounded, honest hard, unfiltered) is for a later session.
# usage: IMAGINEBENCH_HOME=... PYTHONPATH=src sh grid_td3bc.sh A|B
IB=${IB:-/tmp/fresh/.venv/bin/imaginebench}
run() { $IB train --env MetaWorld-v0 --algo td3bc --seeds 0 1 2 --profile small --threads 1 --no-progress "$@"; }
case "$1" in
A) run --baselines
   run --level hard --real-upper-bound
   run --level easy ;;
B) run --level rephrase --real-upper-bound
   run --level easy --real-upper-bound
   run --level rephrase ;;
esac
