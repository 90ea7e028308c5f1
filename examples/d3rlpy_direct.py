"""A plain d3rlpy algorithm on ImagineBench's arrays, scored by the official evaluation.

    python examples/d3rlpy_direct.py --env CLEVR-v0 --level rephrase --profile small --steps 20000

No ImagineBench training code is involved: the real and imaginary arrays become one d3rlpy
``MDPDataset`` (imaginary rollouts in proportion to their size, not 50/50 as
``imaginebench train`` samples), d3rlpy's own ``fit`` trains, ``imaginebench.evaluate`` scores.
"""

from __future__ import annotations

import argparse
import logging

import numpy as np
import structlog

import imaginebench
from imaginebench.algos import load_d3rlpy

d3rlpy = load_d3rlpy()  # d3rlpy, imported without the banner its gym dependency prints
structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))  # d3rlpy's info lines off


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="CLEVR-v0")
    parser.add_argument("--level", default="rephrase")
    parser.add_argument("--profile", default="small")
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--encoder", default=None)
    parser.add_argument("--episodes-per-task", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (one is fastest for networks "
                        "this size; see imaginebench.set_threads)")
    args = parser.parse_args()
    imaginebench.set_threads(args.threads)
    d3rlpy.seed(args.seed)

    real, imaginary = imaginebench.get_dataset(args.env, args.level, profile=args.profile, build=True)
    parts = [real.arrays(encoder=args.encoder)] + ([imaginary.arrays(encoder=args.encoder)] if imaginary else [])
    cat = {k: np.concatenate([p[k] for p in parts]) for k in ("observations", "actions", "rewards", "terminals",
                                                              "timeouts", "episode_ends")}
    discrete = cat["actions"].dtype.kind == "i"
    dataset = d3rlpy.dataset.MDPDataset(
        observations=cat["observations"], actions=cat["actions"], rewards=cat["rewards"],
        terminals=cat["terminals"].astype(np.float32),
        timeouts=(cat["episode_ends"] & ~cat["terminals"]).astype(np.float32),  # every episode ends on a flag
        action_space=d3rlpy.ActionSpace.DISCRETE if discrete else d3rlpy.ActionSpace.CONTINUOUS,
        action_size=int(real.metadata["action_dim"]) if discrete else None)
    config = d3rlpy.algos.DiscreteBCConfig() if discrete else d3rlpy.algos.BCConfig()
    algo = config.create(device="cpu:0")
    algo.fit(dataset, n_steps=args.steps, n_steps_per_epoch=args.steps, show_progress=False, save_interval=10**9,
             logger_adapter=d3rlpy.logging.NoopAdapterFactory())

    result = imaginebench.evaluate(algo.predict, args.env, args.level, seed=args.seed, encoder=args.encoder,
                                   episodes_per_task=args.episodes_per_task, profile=args.profile, num_envs=8)
    print(result)


if __name__ == "__main__":
    main()
