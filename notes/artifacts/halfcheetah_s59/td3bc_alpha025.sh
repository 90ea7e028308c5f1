#!/bin/sh
# Session 59: HalfCheetah TD3+BC cells under the card's alpha 0.25, one thread each. Queues A and B
# ran side by side after `--baselines` and `--level hard --real-upper-bound`; C holds the rows still
# marked "older settings" (alpha 2.5); session 60 ran it (its unfiltered cells in two lanes side by side).
# usage: IMAGINEBENCH_HOME=... PYTHONPATH=src sh td3bc_alpha025.sh A|B|C
IB=${IB:-/tmp/fresh/.venv/bin/imaginebench}
run() { $IB train --env HalfCheetah-v0 --algo td3bc --seeds 0 1 2 --profile small --threads 1 --no-progress "$@"; }
case "$1" in
A) run --level rephrase
   run --level rephrase --real-upper-bound ;;
B) run --level easy ;;
C) run --level easy --real-upper-bound
   run --level hard
   for level in rephrase easy hard; do run --level $level --imaginary unfiltered; done ;;
esac
