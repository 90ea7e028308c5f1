"""Env steps per second of MetaWorld-v0 against the bare metaworld environment it runs on.

Both run the same metaworld task with uniformly random actions, episodes of ``--horizon`` steps:

* **bare** — metaworld's own environment (the class ``gymnasium.make('Meta-World/MT1', ...)``
  builds, without its wrappers), ``reset`` + ``step``;
* **ours** — ``imaginebench.make("MetaWorld-v0", encode_instruction=False)`` on the matching task:
  the same metaworld ``step`` plus reading the 91-dim state, the success/reward functions and
  the gymnasium wrappers.

Rounds alternate between the two so that load from other processes hits both alike; the table
shows the median steps/s over the rounds and the ratio, measured within one run.  Usage::

    python benchmarks/metaworld_env_speed.py [--task push] [--steps 3000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from metaworld.env_dict import ALL_V3_ENVIRONMENTS

import imaginebench
from imaginebench.domains.metaworld.tasks import SPECS


def bare_env(env_name: str):
    env = ALL_V3_ENVIRONMENTS[env_name]()
    env._partially_observable = False
    del env.sawyer_observation_space
    env._freeze_rand_vec = False
    env.seeded_rand_vec = True
    env._set_task_called = True
    return env


def run(env, steps: int, horizon: int, reset, rng: np.random.Generator) -> float:
    """Steps per second of ``steps`` random-action steps (resets included, as in data collection)."""
    start = time.perf_counter()
    done = 0
    while done < steps:
        reset()
        for _ in range(min(horizon, steps - done)):
            env.step(rng.uniform(-1.0, 1.0, 4).astype(np.float32))
            done += 1
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="push", help="MetaWorld-v0 task name (single-stage)")
    parser.add_argument("--steps", type=int, default=3000, help="steps per round and env")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--horizon", type=int, default=100)
    args = parser.parse_args()
    spec = SPECS[args.task]
    bare = bare_env(spec.env_name)
    ours = imaginebench.make("MetaWorld-v0", level=spec.level, encode_instruction=False)
    seeds = iter(range(10**9))
    bare_reset = lambda: (setattr(bare, "np_random", np.random.default_rng(next(seeds))), bare.reset())  # noqa: E731
    ours_reset = lambda: ours.reset(seed=next(seeds), options={"task": args.task})  # noqa: E731
    run(bare, 200, args.horizon, bare_reset, np.random.default_rng(0))  # warm-up
    run(ours, 200, args.horizon, ours_reset, np.random.default_rng(0))
    bare_rates, our_rates = [], []
    for r in range(args.rounds):
        bare_rates.append(run(bare, args.steps, args.horizon, bare_reset, np.random.default_rng(r)))
        our_rates.append(run(ours, args.steps, args.horizon, ours_reset, np.random.default_rng(r)))
    b, o = statistics.median(bare_rates), statistics.median(our_rates)
    print(f"task {args.task} (metaworld {spec.env_name}), random actions, {args.rounds} rounds x {args.steps} steps, "
          f"episodes of {args.horizon}")
    print("| env | steps/s (median) |\n|---|---:|")
    print(f"| bare metaworld | {b:,.0f} |\n| MetaWorld-v0 | {o:,.0f} |")
    print(f"ratio MetaWorld-v0 / bare: {o / b:.2f}")
    ours.close()
    bare.close()


if __name__ == "__main__":
    main()
