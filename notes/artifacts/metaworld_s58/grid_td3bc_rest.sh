#!/bin/sh
# Session 59: the rest of Meta-World's TD3+BC grid under the card's settings (grounded, honest
# hard, unfiltered), two queues side by side, one thread each.
# usage: IMAGINEBENCH_HOME=... PYTHONPATH=src sh grid_td3bc_rest.sh A|B
IB=${IB:-/tmp/fresh/.venv/bin/imaginebench}
run() { $IB train --env MetaWorld-v0 --algo td3bc --seeds 0 1 2 --profile small --threads 1 --no-progress "$@"; }
case "$1" in
A) run --level rephrase --imaginary grounded
   run --level hard
   run --level easy --imaginary unfiltered ;;
B) run --level easy --imaginary grounded
   run --level rephrase --imaginary unfiltered
   run --level hard --imaginary unfiltered ;;
esac
