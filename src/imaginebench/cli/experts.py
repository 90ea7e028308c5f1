"""``imaginebench experts``: train and inspect the experts that are learned, not scripted."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from imaginebench.cli.common import app, friendly
from imaginebench.errors import UsageError

experts_app = typer.Typer(help="Trained experts (HalfCheetah-v0): train them, list what ships.",
                          no_args_is_help=True)
app.add_typer(experts_app, name="experts")

TRAINED = ("HalfCheetah-v0",)
"""Domains whose experts are trained policies (the others' experts are scripted)."""


def _check_env(env: str) -> None:
    from imaginebench.envs.registry import env_spec

    spec = env_spec(env)
    if spec.env_id not in TRAINED:
        raise UsageError(f"{spec.env_id}'s expert is scripted, nothing to train; trained experts: {', '.join(TRAINED)}.")


@experts_app.command("train")
@friendly
def train(
    env: str = typer.Option(..., "--env", help="Environment id (HalfCheetah-v0)."),
    task: Optional[List[str]] = typer.Option(None, "--task", help="Expert policies to train (repeatable; default all)."),
    steps: Optional[int] = typer.Option(None, "--steps",
                                        help="Environment steps of online SAC per policy (default: what each shipped expert used)."),
    seed: int = typer.Option(0, "--seed", help="Training seed."),
    out_dir: Optional[Path] = typer.Option(None, "--out-dir",
                                           help="Write the safetensors files here (default: inside the package)."),
    eval_episodes: int = typer.Option(20, "--eval-episodes", help="Episodes of the final success check."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
) -> None:
    """Train experts online with d3rlpy's SAC and store their weights (safetensors)."""
    _check_env(env)
    from imaginebench.domains.halfcheetah.expert import POLICIES, policy_path
    from imaginebench.domains.halfcheetah.training import TRAIN_STEPS, TrainSettings, train_expert
    from imaginebench.errors import choice_error

    policies = list(task or POLICIES)
    for name in policies:
        if name not in POLICIES:
            raise choice_error("HalfCheetah-v0 expert policy", name, POLICIES)
    if steps is not None and steps <= 0:
        raise UsageError(f"--steps must be positive, got {steps}.")
    from imaginebench import limits

    limits.count("--eval-episodes", eval_episodes)
    if steps is not None and steps < 5:  # the random warm-up takes a fifth of the steps; SAC needs at least one
        raise UsageError(f"--steps must be at least 5 (a fifth of them are random warm-up steps), got {steps}.")
    for name in policies:
        n = steps or TRAIN_STEPS[name]
        settings = TrainSettings(steps=n, random_steps=min(5_000, n // 5), seed=seed)
        out = (out_dir / f"{name}.safetensors") if out_dir else policy_path(name)
        meta = train_expert(name, settings, out=out, eval_episodes=eval_episodes, progress=progress)
        typer.echo(f"{name}: {meta['evaluation']} in {meta['train_seconds']} s -> {out}")


@experts_app.command("list")
@friendly
def list_experts(env: str = typer.Option(..., "--env", help="Environment id (HalfCheetah-v0).")) -> None:
    """The trained experts that ship, with their training settings and measured success."""
    _check_env(env)
    from imaginebench.domains.halfcheetah.expert import POLICIES, MLPPolicy, policy_path

    for name in POLICIES:
        path = policy_path(name)
        if not path.exists():
            typer.echo(f"{name}: missing (imaginebench experts train --env {env} --task {name})")
            continue
        info = MLPPolicy.load(path).info
        typer.echo(f"{name}: {info.get('evaluation')} settings {info.get('settings')} "
                   f"({info.get('train_seconds')} s)")
