#!/bin/sh
# Session 60: LIBERO BC real only on the train level, two levers the card has not tried, each a
# tagged run through the protocol (3 stacked seeds, last-five mean, --no-curve, one thread):
#   steps40k  twice the profile's gradient steps, checkpoints every 4,000 (what a card's
#             train_steps=40000 would give: the scored five at 24k-40k), the rate annealed over 40k;
#   h512      the profile's 20,000 steps with 512x512 hidden layers (card: 256x256).
# usage: IMAGINEBENCH_HOME=... PYTHONPATH=src sh bc_train_levers.sh steps40k|h512
IB=${IB:-/tmp/fresh/.venv/bin/imaginebench}
run() { $IB train --env LIBERO-v0 --algo bc --level train --seeds 0 1 2 --profile small --no-curve --threads 1 --no-progress "$@"; }
case "$1" in
steps40k) run --steps 40000 --checkpoint-every 4000 --tag steps40k ;;
h512) run --set 'hidden_units=[512,512]' --tag h512 ;;
esac
