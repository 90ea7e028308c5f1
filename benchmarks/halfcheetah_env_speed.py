"""Env steps per second of HalfCheetah-v0 against the bare gymnasium ``HalfCheetah-v5``.

Both run uniformly random actions, episodes of ``--horizon`` steps, resets included:

* **bare** — ``gymnasium.make("HalfCheetah-v5")`` (with gymnasium's wrappers);
* **ours** — ``imaginebench.make("HalfCheetah-v0", encode_instruction=False)`` on ``--task``: the
  same MuJoCo step plus the 18-dim state, the progress record, the success and reward rules
  (the jump tasks run forward kinematics for the airborne test) and the gymnasium wrappers.

Rounds alternate between the two so that load from other processes hits both alike; the table
shows the median steps/s over the rounds and the ratio, measured within one run.  Usage::

    python benchmarks/halfcheetah_env_speed.py [--task jump_forward] [--steps 5000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym
import numpy as np

import imaginebench
from imaginebench.domains.halfcheetah.tasks import build_tasks


def run(env, steps: int, horizon: int, reset, rng: np.random.Generator) -> float:
    start = time.perf_counter()
    done = 0
    while done < steps:
        reset()
        for _ in range(min(horizon, steps - done)):
            env.step(rng.uniform(-1.0, 1.0, 6).astype(np.float32))
            done += 1
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="jump_forward", help="HalfCheetah-v0 task name")
    parser.add_argument("--steps", type=int, default=5000, help="steps per round and env")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--horizon", type=int, default=200)
    args = parser.parse_args()
    level = next(lv for lv, tasks in build_tasks().items() if args.task in {t.name for t in tasks})
    bare = gym.make("HalfCheetah-v5")
    ours = imaginebench.make("HalfCheetah-v0", level=level, encode_instruction=False)
    seeds = iter(range(10**9))
    bare_reset = lambda: bare.reset(seed=next(seeds))  # noqa: E731
    ours_reset = lambda: ours.reset(seed=next(seeds), options={"task": args.task})  # noqa: E731
    run(bare, 400, args.horizon, bare_reset, np.random.default_rng(0))  # warm-up
    run(ours, 400, args.horizon, ours_reset, np.random.default_rng(0))
    bare_rates, our_rates = [], []
    for r in range(args.rounds):
        bare_rates.append(run(bare, args.steps, args.horizon, bare_reset, np.random.default_rng(r)))
        our_rates.append(run(ours, args.steps, args.horizon, ours_reset, np.random.default_rng(r)))
    b, o = statistics.median(bare_rates), statistics.median(our_rates)
    print(f"task {args.task}, random actions, {args.rounds} rounds x {args.steps} steps, episodes of {args.horizon}")
    print("| env | steps/s (median) |\n|---|---:|")
    print(f"| bare gymnasium HalfCheetah-v5 | {b:,.0f} |\n| HalfCheetah-v0 | {o:,.0f} |")
    print(f"ratio HalfCheetah-v0 / bare: {o / b:.2f}")
    ours.close()
    bare.close()


if __name__ == "__main__":
    main()
