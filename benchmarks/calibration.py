"""Calibration: per task, the expert's and a uniformly random policy's success rates.

    python benchmarks/calibration.py --env CLEVR-v0 --episodes 50 [--workers 2] [--out table.md]

Every task of the train, easy and hard levels is run for ``--episodes`` episodes with the
scripted expert and with uniformly random actions (same seeds for both). SPEC: expert ≥ 90%,
random ≤ 5% (where a task's nature makes chance success higher, the table shows it).
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

import imaginebench

CALIBRATION_LEVELS = ("train", "easy", "hard")


def success_rate(env_id: str, level: str, task: str, policy: str, episodes: int, seed: int) -> float:
    """Fraction of ``episodes`` in which ``policy`` ("expert" or "random") solves ``task``."""
    env = imaginebench.make(env_id, level=level, encode_instruction=False)
    env.action_space.seed(seed)
    wins = 0
    for ep in range(episodes):
        env.reset(seed=seed + ep, options={"task": task})
        done, info = False, {"is_success": False}
        while not done:
            action = env.expert_action() if policy == "expert" else env.action_space.sample()
            _, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        wins += bool(info["is_success"])
    env.close()
    return wins / episodes


def _row(args: tuple[str, str, str, int, int]) -> tuple[str, str, float, float]:
    env_id, level, task, episodes, seed = args
    expert = success_rate(env_id, level, task, "expert", episodes, seed)
    rand = success_rate(env_id, level, task, "random", episodes, seed)
    return level, task, expert, rand


def calibrate(env_id: str, episodes: int, workers: int, seed: int = 10_000) -> list[tuple[str, str, float, float]]:
    jobs = []
    for level in CALIBRATION_LEVELS:
        env = imaginebench.make(env_id, level=level, encode_instruction=False)
        jobs += [(env_id, level, task, episodes, seed) for task in env.unwrapped.tasks]
        env.close()
    if workers <= 1:
        return [_row(j) for j in jobs]
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(_row, jobs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="CLEVR-v0")
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=None, help="also write the markdown table here")
    args = parser.parse_args()
    start = time.perf_counter()
    rows = calibrate(args.env, args.episodes, args.workers)
    lines = [f"Calibration of {args.env}: {args.episodes} episodes per task and policy", "",
             "| level | task | expert | random | ok |", "|---|---|---|---|---|"]
    for level, task, expert, rand in rows:
        ok = "yes" if expert >= 0.9 and rand <= 0.05 else ("expert<90%" if expert < 0.9 else "random>5%")
        lines.append(f"| {level} | {task} | {expert:.0%} | {rand:.0%} | {ok} |")
    experts = np.array([r[2] for r in rows])
    randoms = np.array([r[3] for r in rows])
    lines += ["", f"tasks: {len(rows)}; expert min {experts.min():.0%}, mean {experts.mean():.1%}; "
              f"random max {randoms.max():.0%}, mean {randoms.mean():.1%}; "
              f"{time.perf_counter() - start:.0f} s"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
