"""``imaginebench experts``: train and inspect the experts that are learned, not scripted."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import typer

from imaginebench import limits
from imaginebench.cli.common import app, friendly
from imaginebench.domains.base import trained_experts_of
from imaginebench.envs.registry import domain_class, env_ids, env_spec
from imaginebench.errors import UsageError, choice_error

experts_app = typer.Typer(help="Experts that are learned policies, not scripts: train them, list what ships.",
                          no_args_is_help=True)
app.add_typer(experts_app, name="experts")


def trained_domains() -> list[str]:
    """Env ids whose domain card names trained experts (read from the cards, no simulator)."""
    found = []
    for env_id in env_ids():
        try:
            if getattr(domain_class(env_id), "trained_experts", None) is not None:
                found.append(env_id)
        except ImportError:  # a domain whose extra is missing cannot be asked
            continue
    return found


def _experts(env: str) -> Any:
    spec = env_spec(env)
    experts = trained_experts_of(domain_class(spec.env_id))
    if experts is None:
        raise UsageError(f"{spec.env_id}'s expert is scripted, nothing to train; trained experts: "
                         f"{', '.join(trained_domains()) or 'none'}.")
    return experts


@experts_app.command("train")
@friendly
def train(
    env: str = typer.Option(..., "--env", help="Environment id of a domain with trained experts."),
    task: Optional[List[str]] = typer.Option(None, "--task", help="Expert policies to train (repeatable; default all)."),
    steps: Optional[int] = typer.Option(None, "--steps",
                                        help="Environment steps of online SAC per policy (default: what each shipped expert used)."),
    seed: int = typer.Option(0, "--seed", help="Training seed."),
    out_dir: Optional[Path] = typer.Option(None, "--out-dir",
                                           help="Write the safetensors files here (default: inside the package)."),
    eval_episodes: int = typer.Option(20, "--eval-episodes", help="Episodes of the final success check."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
) -> None:
    """Train experts online and store their weights (safetensors)."""
    experts = _experts(env)

    policies = list(task or experts.policies)
    for name in policies:
        if name not in experts.policies:
            raise choice_error(f"{experts.env_id} expert policy", name, experts.policies)
    if steps is not None and steps <= 0:
        raise UsageError(f"--steps must be positive, got {steps}.")

    limits.count("--eval-episodes", eval_episodes)
    if steps is not None and steps < 5:  # the random warm-up takes a fifth of the steps; SAC needs at least one
        raise UsageError(f"--steps must be at least 5 (a fifth of them are random warm-up steps), got {steps}.")
    for name in policies:
        out = (out_dir / f"{name}.safetensors") if out_dir else experts.path(name)
        meta = experts.train(name, steps, seed, out, eval_episodes, progress)
        typer.echo(f"{name}: {meta['evaluation']} in {meta['train_seconds']} s -> {out}")


@experts_app.command("list")
@friendly
def list_experts(env: str = typer.Option(..., "--env", help="Environment id of a domain with trained experts.")) -> None:
    """The trained experts that ship, with their training settings and measured success."""
    experts = _experts(env)
    for name in experts.policies:
        if not experts.path(name).exists():
            typer.echo(f"{name}: missing (imaginebench experts train --env {experts.env_id} --task {name})")
            continue
        info = experts.info(name)
        typer.echo(f"{name}: {info.get('evaluation')} settings {info.get('settings')} "
                   f"({info.get('train_seconds')} s)")
