#!/bin/sh
# Session 58: Meta-World BC grid under the card's new BC settings (annealed rate, 64-wide
# instruction projection), two queues side by side, one thread each.
# usage: IMAGINEBENCH_HOME=... PYTHONPATH=src sh grid.sh A|B
IB=${IB:-/tmp/fresh/.venv/bin/imaginebench}
run() { $IB train --env MetaWorld-v0 --algo bc --seeds 0 1 2 --profile small --threads 1 --no-progress "$@"; }
case "$1" in
A) run --baselines
   run --level rephrase --real-upper-bound
   run --level rephrase
   run --level rephrase --imaginary grounded
   run --level rephrase --imaginary unfiltered
   run --level hard --imaginary unfiltered ;;
B) run --level easy --real-upper-bound
   run --level hard --real-upper-bound
   run --level easy
   run --level hard
   run --level easy --imaginary grounded
   run --level easy --imaginary unfiltered
   run --level train --set lr_decay=none --tag proj ;;
esac
