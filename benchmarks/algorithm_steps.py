"""Gradient steps per second of every continuous algorithm against TD3+BC, in one process, on one
domain's real data, and the share of PRDC's step spent in its neighbour search.

Each algorithm is built with its registry defaults (256×2 MLPs, the profile's batch unless the
config sets one — Decision Transformer samples 64 windows of 20 steps) on the same
``MixedReplaySource`` (the domain's real train data, the default instruction encoder) and stepped
through ``config.update`` — the runner's own path.  Rounds interleave the algorithms, so a change
of machine load hits all alike; the median round is printed.  COMBO's dynamics fit and its first
rollout happen before timing (an epoch cap keeps the fit short) and the rollout rounds it does every
``rollout_freq`` steps are timed apart and added as an amortised rate.  Usage::

    python benchmarks/algorithm_steps.py [--env HalfCheetah-v0] [--profile small] [--seconds 60]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from imaginebench.algos.factory import build_algorithm
from imaginebench.algos.registry import get_spec
from imaginebench.algos.sampler import MixedReplaySource
from imaginebench.config import get_profile
from imaginebench.data.hub import load_real
from imaginebench.language import get_encoder

ALGORITHMS = ("td3bc", "prdc", "combo", "rebrac", "calql", "cql", "iql", "dt")


def rate(step, seconds: float, warmup: int = 3) -> float:
    """Calls of ``step`` per second over about ``seconds`` after ``warmup`` calls."""
    for _ in range(warmup):
        step()
    n, start = 0, time.perf_counter()
    while n < 3 or time.perf_counter() - start < seconds:
        step()
        n += 1
    return n / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="HalfCheetah-v0")
    parser.add_argument("--profile", default="small")
    parser.add_argument("--seconds", type=float, default=60.0, help="timed seconds per algorithm, over all rounds")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)  # as the runner trains (see imaginebench.evaluation.runner)
    batch = get_profile(args.profile).batch_size
    real = load_real(args.env, "train", args.profile)
    source = MixedReplaySource({"real": real}, encoder=get_encoder(), seed=0)
    print(f"{args.env} {args.profile}: {source.transition_count:,} transitions, observation "
          f"{source.observation_dim} columns; batch {batch}; torch threads {args.threads}; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    algos = {}
    for name in ALGORITHMS:
        overrides = {"dynamics_max_epochs": 5} if name == "combo" else {}
        config = get_spec(name).default_config(**overrides)
        torch.manual_seed(0)
        start = time.perf_counter()
        algo = build_algorithm(config, source, batch_size=config.batch_size or batch)
        built = time.perf_counter() - start
        extra = ""
        if name == "combo":
            start = time.perf_counter()
            config.update(algo, source, batch)  # fits the dynamics and rolls out once
            extra = f", dynamics fit (5 epochs) + first rollout {time.perf_counter() - start:.1f} s"
        print(f"  built {name} in {built:.1f} s{extra}")
        algos[name] = (config, algo)

    search = {"seconds": 0.0}
    index = algos["prdc"][1].impl.index
    original = index.neighbour_actions

    def timed_search(observations, actions):
        start = time.perf_counter()
        out = original(observations, actions)
        search["seconds"] += time.perf_counter() - start
        return out

    index.neighbour_actions = timed_search
    rates: dict[str, list[float]] = {name: [] for name in algos}
    search_share = 0.0
    for _ in range(args.rounds):
        for name, (config, algo) in algos.items():
            search["seconds"], start = 0.0, time.perf_counter()
            rates[name].append(rate(lambda: config.update(algo, source, batch), args.seconds / args.rounds))
            if name == "prdc":
                search_share = search["seconds"] / (time.perf_counter() - start)
    med = {name: float(np.median(v)) for name, v in rates.items()}
    combo_config, combo = algos["combo"]
    start = time.perf_counter()
    combo.rollout()
    rollout_s = time.perf_counter() - start
    print(f"\n| algorithm | steps/s (median of {args.rounds}) | vs TD3+BC |\n|---|---:|---:|")
    for name, value in med.items():
        print(f"| {get_spec(name).label} | {value:.1f} | {value / med['td3bc']:.2f}x |")
    amortised = 1.0 / (1.0 / med["combo"] + rollout_s / combo_config.rollout_freq)
    print(f"\nCOMBO with its rollout rounds ({rollout_s:.2f} s every {combo_config.rollout_freq} steps): "
          f"{amortised:.1f} steps/s ({amortised / med['td3bc']:.2f}x TD3+BC)")
    print(f"PRDC neighbour search: {100 * search_share:.0f}% of its step time in the last round "
          f"(one search per actor update, every {algos['prdc'][0].update_actor_interval} steps)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
