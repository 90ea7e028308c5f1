#!/bin/sh
# Session 59: HalfCheetah TD3+BC cells under the card's alpha 0.25, two queues side by side, one
# thread each (the baselines and the hard Real upper bound ran first).
# usage: IMAGINEBENCH_HOME=... PYTHONPATH=src sh hc_td3bc_s59.sh A|B
IB=${IB:-/tmp/fresh/.venv/bin/imaginebench}
run() { $IB train --env HalfCheetah-v0 --algo td3bc --seeds 0 1 2 --profile small --threads 1 --no-progress "$@"; }
case "$1" in
A) run --level rephrase
   run --level rephrase --real-upper-bound
   run --level hard ;;
B) run --level easy
   run --level easy --real-upper-bound ;;
esac
