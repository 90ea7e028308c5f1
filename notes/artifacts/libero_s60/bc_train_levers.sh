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
# easy's Real upper bound at 40k steps (needs `data collect --level easy`; started at session 60's end,
# resumes from its run folder): does the level's room grow with steps where the train level's did not?
rub-easy-steps40k) $IB train --env LIBERO-v0 --algo bc --level easy --real-upper-bound --seeds 0 1 2 \
    --profile small --no-curve --threads 2 --no-progress --steps 40000 --checkpoint-every 4000 --tag steps40k ;;
esac
