"""``imaginebench calibrate``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import List, Optional

import typer

from imaginebench.cli.common import app, friendly


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
    out: Optional[Path] = typer.Option(None, "--out", help="Write the markdown table here (and a .json beside it)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
) -> None:
    """Per task: expert and uniformly random success with 95% intervals (SPEC §3 calibration)."""
    from imaginebench.domains.base import LEVELS, choice_error
    from imaginebench.evaluation.reference import calibrate as run, calibration_markdown
    from imaginebench.fileio import atomic_path, write_json

    levels = tuple(level or ("train", "easy", "hard"))
    for lv in levels:
        if lv not in LEVELS:
            raise choice_error("level", lv, LEVELS)
    start = time.perf_counter()
    rows = run(env, levels, workers=workers, tasks=task, expert_episodes=expert_episodes,
               random_episodes=random_episodes, max_random_episodes=max_random_episodes, seed=seed, progress=progress)
    if not rows:
        raise ValueError(f"No task of {env} at levels {levels} matches --task {task}.")
    text = calibration_markdown(env, rows, wall_s=time.perf_counter() - start)
    typer.echo(text)
    if out is not None:
        with atomic_path(out) as tmp:
            tmp.write_text(text)
        write_json(out.with_suffix(".json"), {"env": env, "seed": seed, "expert_episodes": expert_episodes,
                                              "random_episodes": random_episodes,
                                              "max_random_episodes": max_random_episodes,
                                              "rows": [r.to_dict() for r in rows]})
        typer.echo(f"wrote {out} and {out.with_suffix('.json')}")
