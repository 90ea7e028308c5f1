"""``imaginebench calibrate``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import List, Optional

import typer

from imaginebench import limits
from imaginebench.cli.common import app, friendly
from imaginebench.domains.base import LEVELS
from imaginebench.envs.registry import load_domain
from imaginebench.errors import UsageError, choice_error
from imaginebench.evaluation.reference import calibrate as run
from imaginebench.evaluation.reference import (
    calibration_markdown, calibration_path, calibration_summary, load_calibration, save_calibration,
)
from imaginebench.fileio import atomic_path, write_json


@app.command()
@friendly
def calibrate(
    env: str = typer.Option(..., "--env", help="Environment id, e.g. CLEVR-v0."),
    level: Optional[List[str]] = typer.Option(None, "--level", help="Levels to calibrate (repeatable; "
                                              "default train, easy, hard — rephrase shares train's tasks)."),
    task: Optional[List[str]] = typer.Option(None, "--task", help="Only these tasks (repeatable)."),
    expert_episodes: int = typer.Option(100, "--expert-episodes", help="Expert episodes per task."),
    random_episodes: int = typer.Option(100, "--random-episodes", help="First count of random episodes per task."),
    max_random_episodes: int = typer.Option(1600, "--max-random-episodes",
                                            help="Random episodes are doubled up to this cap until the 95% "
                                                 "interval lies on one side of 5%."),
    seed: int = typer.Option(0, "--seed", help="Base seed of the calibration episodes."),
    workers: int = typer.Option(1, "--workers", help="Processes."),
    out: Optional[Path] = typer.Option(None, "--out", help="Also write the markdown table here (and a .json beside "
                                       "it); the data home always keeps one (<data home>/calibration/<env>.json)."),
    skip_existing: bool = typer.Option(False, "--skip-existing", help="Do nothing when the data home already has a "
                                       "calibration of every task asked for."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
    quiet: bool = typer.Option(False, "--quiet", help="Print the per-level summary only, not the per-task table."),
) -> None:
    """Per task: expert and uniformly random success with 95% intervals (docs/benchmark.md §3 calibration).

    The result is stored in the data home (<data home>/calibration/<env>.json and .md), where
    `imaginebench report` finds it."""

    workers = limits.workers("--workers", workers)
    limits.count("--expert-episodes", expert_episodes)
    limits.count("--random-episodes", random_episodes)
    limits.count("--max-random-episodes", max_random_episodes, low=random_episodes)
    levels = tuple(level or ("train", "easy", "hard"))
    for lv in levels:
        if lv not in LEVELS:
            raise choice_error("level", lv, LEVELS)
    domain = load_domain(env)
    env = domain.env_id
    if skip_existing:
        stored = load_calibration(env)
        wanted = {(lv, t.name) for lv in levels for t in domain.tasks(lv) if not task or t.name in task}
        if stored is not None and wanted <= {(r.level, r.task) for r in stored[0]}:
            typer.echo(f"{calibration_path(env)} already has all {len(wanted)} tasks; skipped (--skip-existing).")
            return
    start = time.perf_counter()
    rows = run(env, levels, workers=workers, tasks=task, expert_episodes=expert_episodes,
               random_episodes=random_episodes, max_random_episodes=max_random_episodes, seed=seed, progress=progress)
    if not rows:
        raise UsageError(f"No task of {env} at levels {levels} matches --task {' '.join(task) if isinstance(task, (list, tuple)) else task}.")
    wall_s = time.perf_counter() - start
    text = calibration_markdown(env, rows, wall_s=wall_s)
    typer.echo("\n".join(calibration_summary(rows)) if quiet else text)
    settings = {"seed": seed, "expert_episodes": expert_episodes, "random_episodes": random_episodes,
                "max_random_episodes": max_random_episodes}
    typer.echo(f"stored {save_calibration(env, rows, settings, wall_s=wall_s)}")
    if out is not None:
        with atomic_path(out) as tmp:
            tmp.write_text(text)
        write_json(out.with_suffix(".json"), {"env": env, "seed": seed, "expert_episodes": expert_episodes,
                                              "random_episodes": random_episodes,
                                              "max_random_episodes": max_random_episodes,
                                              "rows": [r.to_dict() for r in rows]})
        typer.echo(f"wrote {out} and {out.with_suffix('.json')}")
