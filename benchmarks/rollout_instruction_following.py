"""Does the rollout model do what the instruction asks?  A confusion table per level.

For each level and task, ``--per-task`` rollouts are imagined (plain sampling, no filter) from
real initial states with that level's instructions (train: the phrasings the model was
fine-tuned on; rephrase: held-out phrasings of the same tasks; easy/hard: novel tasks).  Each
imagined rollout is then judged by the domain's pure success rule of *every* task of the train
level and of its own level, so the table shows both whether the asked task is reached and which
other task's rule the rollout satisfies instead (e.g. asked to run backward, it runs forward).
No simulator call; one run, one machine.  Usage::

    python benchmarks/rollout_instruction_following.py --env HalfCheetah-v0 \\
        --checkpoint notes/artifacts/halfcheetah_gpu_20261126/checkpoint --levels train rephrase --per-task 40 \\
        [--json PATH]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from harness import Report, add_json_argument


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="HalfCheetah-v0")
    parser.add_argument("--checkpoint", required=True, help="rollout-model checkpoint folder")
    parser.add_argument("--levels", nargs="+", default=["train", "rephrase"])
    parser.add_argument("--per-task", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--weights", choices=("best", "last"), default="best",
                        help="the checkpoint's best-validation weights or its latest ones")
    add_json_argument(parser)
    args = parser.parse_args()

    import torch

    from imaginebench.envs.registry import load_domain
    from imaginebench.imagination.checkpoint import load_checkpoint
    from imaginebench.imagination.decoding import GenerateConfig, imagine, initial_starts

    torch.set_num_threads(args.threads)
    report = Report(__file__, args.json)
    domain = load_domain(args.env)
    model, meta = load_checkpoint(Path(args.checkpoint), device=torch.device("cpu"), which=args.weights)
    model.merge_lora()
    cfg = GenerateConfig(batch_size=args.batch_size, seed=args.seed, keep="none")
    train_tasks = list(domain.tasks("train"))
    setup = report.table("Setup", ["env", "checkpoint", "weights", "step", "rollouts per task", "temperature", "seed"],
                         {"step": "{}", "rollouts per task": "{}", "temperature": "{}", "seed": "{}"})
    setup.add(args.env, args.checkpoint, args.weights, meta["loaded"]["step"], args.per_task, cfg.temperature,
              args.seed)
    for level in args.levels:
        tasks = list(domain.tasks(level))
        own = {t.name for t in tasks}
        judges = train_tasks + [t for t in tasks if t.name not in {j.name for j in train_tasks}]
        starts = initial_starts(args.env, level, args.per_task * len(tasks), seed=args.seed)
        t0 = time.perf_counter()
        episodes, speed = imagine(model, domain, starts, cfg, progress=False)
        seconds = time.perf_counter() - t0
        meets = [f"meets {j.name}" for j in judges]
        table = report.table(f"Level {level}: {len(episodes)} rollouts, {speed['imagined_steps']} imagined steps in "
                             f"{seconds:.0f} s; % of each asked task's rollouts that meet each task's rule",
                             ["asked task", "rollouts", "meets the asked task", *meets],
                             {"rollouts": "{}", "meets the asked task": "{:.0f}", **dict.fromkeys(meets, "{:.0f}")})
        for task in tasks:
            mine = [ep for ep in episodes if ep.task == task.name]
            shares = []
            for judge in judges:
                met = 0
                for ep in mine:
                    try:
                        _, succ = domain.score_rollout(
                            domain.task(judge.name, level=level if judge.name in own else "train"),
                            np.asarray(ep.states, np.float64), ep.actions)
                        met += bool(np.asarray(succ).any())
                    except (ValueError, FloatingPointError, IndexError, KeyError, OverflowError):
                        pass
                shares.append(100.0 * met / max(len(mine), 1))
            table.add(task.name, len(mine), shares[[j.name for j in judges].index(task.name)], *shares)
    report.finish()


if __name__ == "__main__":
    main()
