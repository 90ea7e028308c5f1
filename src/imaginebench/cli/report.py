"""``imaginebench report``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from imaginebench.cli.common import app, friendly
from imaginebench.config import data_home
from imaginebench.envs.registry import env_spec
from imaginebench.report import build_report


@app.command()
@friendly
def report(
    out: Optional[Path] = typer.Option(None, "--out", help="Output folder (default <data home>/reports)."),
    runs: Optional[Path] = typer.Option(None, "--runs", help="Folder of run records (default <data home>/runs)."),
    finetune_runs: Optional[Path] = typer.Option(None, "--finetune-runs", help="Folder of fine-tune records "
                                                 "(default <data home>/finetune)."),
    env: Optional[str] = typer.Option(None, "--env", help="Only this environment."),
    profile: Optional[str] = typer.Option(None, "--profile", help="Only this profile."),
    quiet: bool = typer.Option(False, "--quiet", help="Do not print the table."),
    pictures: bool = typer.Option(True, "--pictures/--no-pictures", help="Draw one real and one imagined rollout "
                                  "per domain and novel level (sets MUJOCO_GL=egl unless MUJOCO_GL is set)."),
) -> None:
    """Aggregate run records into a report: success tables (mean ± std over seeds), rollout quality,
    calibration, online fine-tuning tables and curves, PNG figures and rollout pictures, and one
    self-contained HTML page."""
    if env is not None:
        env_spec(env)  # an unknown id is a usage error, not "no records"
    if pictures:
        os.environ.setdefault("MUJOCO_GL", "egl")
    written = build_report(out or data_home() / "reports", runs=runs, finetune_runs=finetune_runs, pictures=pictures,
                           env=env, profile=profile)
    if not quiet:
        typer.echo(written["report.md"].read_text())
    for path in written.values():
        typer.echo(f"wrote {path}")
