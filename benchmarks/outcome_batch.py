"""Per-row ``Domain.outcome`` loop vs the batched ``Domain.outcome_batch`` (and legality).

For each domain and level, ``N`` rows are drawn from expert transitions of tasks sampled
uniformly from the level (so the batch mixes tasks and families, as an imagination batch
does).  Each round times the per-row loop (what imagination did: one ``outcome`` call per
row) and one ``outcome_batch`` call on the same rows, alternating so that load from other
processes hits both alike; the table shows the median milliseconds per call over the
rounds and the ratio, measured within one run.  Usage::

    python benchmarks/outcome_batch.py [--rows 1024] [--rounds 7] [--envs CLEVR-v0 BabyAI-v0] [--json PATH]
"""

from __future__ import annotations

import argparse

import numpy as np

import imaginebench
from harness import Report, add_json_argument, median_times
from imaginebench.domains.base import Domain

LEVELS = ("train", "easy", "hard")


def expert_batch(env_id: str, level: str, rows: int, seed: int) -> tuple[Domain, tuple]:
    """``rows`` transitions ``(tasks, states, actions, next_states, progress)`` of expert
    episodes of uniformly drawn tasks of ``level``."""
    env = imaginebench.make(env_id, level=level, encode_instruction=False).unwrapped
    domain, rng = env.domain, np.random.default_rng(seed)
    pool: list[tuple] = []
    episode = 0
    while len(pool) < 2 * rows:
        name = env.tasks[int(rng.integers(len(env.tasks)))]
        _, info = env.reset(seed=seed * 100_000 + episode, options={"task": name})
        episode += 1
        task, state = domain.task(name), info["state"]
        progress, done = domain.initial_progress(task, state), False
        while not done:
            action = env.expert_action()
            _, _, terminated, truncated, info = env.step(action)
            pool.append((task, state, action, info["state"], progress))
            state, progress, done = info["state"], env.progress.copy(), terminated or truncated
    picked = [pool[i] for i in rng.choice(len(pool), size=rows, replace=False)]
    tasks, states, actions, next_states, progress = zip(*picked)
    return domain, (list(tasks), np.array(states), np.array(actions), np.array(next_states), list(progress))


def per_row_outcomes(domain: Domain, batch: tuple) -> None:
    tasks, states, actions, next_states, progress = batch
    for i, task in enumerate(tasks):
        domain.outcome(task, states[i], actions[i], next_states[i], progress[i])


def per_row_legality(domain: Domain, states: np.ndarray) -> None:
    for state in states:
        domain.is_legal(state)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--envs", nargs="+", default=["CLEVR-v0", "BabyAI-v0"])
    parser.add_argument("--levels", nargs="+", default=list(LEVELS))
    parser.add_argument("--seed", type=int, default=0)
    add_json_argument(parser)
    args = parser.parse_args()
    report = Report(__file__, args.json)
    ms = ["outcome loop", "outcome_batch", "is_legal loop", "is_legal_batch"]
    table = report.table(f"Per-row loop vs batched call, ms per call, median of {args.rounds} rounds: "
                         f"N={args.rows} rows of mixed tasks per call",
                         ["env", "level", *ms[:2], "outcome ratio", *ms[2:], "is_legal ratio"],
                         {**dict.fromkeys(ms, "{:.2f}"), "outcome ratio": "{:.1f}x", "is_legal ratio": "{:.1f}x"})
    for env_id in args.envs:
        for level in args.levels:
            domain, batch = expert_batch(env_id, level, args.rows, args.seed)
            states = batch[1]
            seconds = median_times([
                lambda: per_row_outcomes(domain, batch), lambda: domain.outcome_batch(*batch),
                lambda: per_row_legality(domain, states), lambda: domain.is_legal_batch(states),
            ], args.rounds)
            loop, batched, legal_loop, legal_batched = (1e3 * s for s in seconds)
            table.add(env_id, level, loop, batched, loop / batched,
                      legal_loop, legal_batched, legal_loop / legal_batched)
    report.finish()


if __name__ == "__main__":
    main()
