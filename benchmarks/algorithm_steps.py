"""Gradient steps per second of every continuous algorithm against TD3+BC, in one process, on one
domain's real data, and the share of PRDC's step spent in its neighbour search.

Each algorithm is built with its registry defaults (256×2 MLPs, the profile's batch unless the
config sets one — Decision Transformer samples 64 windows of 20 steps) on the same
``MixedReplaySource`` (the domain's real train data, the default instruction encoder) and stepped
through ``config.update`` — the runner's own path.  Rounds interleave the algorithms, so a change
of machine load hits all alike; the median round is printed.  COMBO's dynamics fit and its first
rollout happen before timing (an epoch cap keeps the fit short) and the rollout rounds it does every
``rollout_freq`` steps are timed apart and added as an amortised rate.  Usage::

    python benchmarks/algorithm_steps.py [--env HalfCheetah-v0] [--profile small] [--seconds 60] [--json PATH]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from imaginebench.algos.factory import build_algorithm
from imaginebench.algos.registry import get_spec
from imaginebench.algos.sampler import MixedReplaySource
from harness import Report, Stopwatch, add_json_argument, calls_per_second
from imaginebench.config import get_profile
from imaginebench.data.hub import load_real
from imaginebench.language import get_encoder

ALGORITHMS = ("td3bc", "prdc", "combo", "rebrac", "calql", "cql", "iql", "dt")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="HalfCheetah-v0")
    parser.add_argument("--profile", default="small")
    parser.add_argument("--seconds", type=float, default=60.0, help="timed seconds per algorithm, over all rounds")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    add_json_argument(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)  # as the runner trains (see imaginebench.training.runner)
    report = Report(__file__, args.json)
    batch = get_profile(args.profile).batch_size
    real = load_real(args.env, "train", args.profile)
    source = MixedReplaySource({"real": real}, encoder=get_encoder(), seed=0)
    setup = (f"{args.env} {args.profile}: {source.transition_count:,} transitions, observation "
             f"{source.observation_dim} columns, batch {batch}")

    built = report.table(f"Build time, {setup}", ["algorithm", "build s", "dynamics fit (5 epochs) + first rollout s"],
                         {"build s": "{:.1f}", "dynamics fit (5 epochs) + first rollout s": "{:.1f}"})
    algos = {}
    for name in ALGORITHMS:
        overrides = {"dynamics_max_epochs": 5} if name == "combo" else {}
        config = get_spec(name).default_config(**overrides)
        torch.manual_seed(0)
        with Stopwatch() as build:
            algo = build_algorithm(config, source, batch_size=config.batch_size or batch)
        fit = None
        if name == "combo":
            with Stopwatch() as first_update:
                config.update(algo, source, batch)  # fits the dynamics and rolls out once
            fit = first_update.seconds
        built.add(name, build.seconds, fit)
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
            rates[name].append(calls_per_second(lambda: config.update(algo, source, batch),
                                                args.seconds / args.rounds))
            if name == "prdc":
                search_share = search["seconds"] / (time.perf_counter() - start)
    med = {name: float(np.median(v)) for name, v in rates.items()}
    combo_config, combo = algos["combo"]
    with Stopwatch() as rollout:
        combo.rollout()
    table = report.table(f"Gradient steps/s, median of {args.rounds} rounds, {setup}",
                         ["algorithm", "steps/s", "vs TD3+BC"], {"steps/s": "{:.1f}", "vs TD3+BC": "{:.2f}x"})
    for name, value in med.items():
        table.add(get_spec(name).label, value, value / med["td3bc"])
    amortised = 1.0 / (1.0 / med["combo"] + rollout.seconds / combo_config.rollout_freq)
    table = report.table("COMBO with its rollout rounds", ["rollout round s", "every steps", "steps/s", "vs TD3+BC"],
                         {"rollout round s": "{:.2f}", "every steps": "{}", "steps/s": "{:.1f}",
                          "vs TD3+BC": "{:.2f}x"})
    table.add(rollout.seconds, combo_config.rollout_freq, amortised, amortised / med["td3bc"])
    table = report.table("PRDC neighbour search (one search per actor update)",
                         ["share of step time, last round", "actor update every steps"],
                         {"share of step time, last round": "{:.0%}", "actor update every steps": "{}"})
    table.add(search_share, algos["prdc"][0].update_actor_interval)
    report.finish()


if __name__ == "__main__":
    main()
