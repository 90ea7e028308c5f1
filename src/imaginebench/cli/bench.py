"""``imaginebench bench``."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from imaginebench.cli.common import PROFILE_HELP, app, friendly
from imaginebench.cli.train import _seeds
from imaginebench.errors import UsageError
from imaginebench.raycluster import import_ray
from imaginebench.sweep import GridSpec, ResultsStore
from imaginebench.sweep.ray_runner import check_grid_options, run_grid


def _list(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": False})
@friendly
def bench(
    ctx: typer.Context,
    envs: str = typer.Option(..., "--envs", help="Environment ids, comma-separated, e.g. CLEVR-v0,BabyAI-v0."),
    algos: str = typer.Option(..., "--algos", help="Algorithms, comma-separated, e.g. bc,cql (bc/cql/bcq/sac pick "
                                                    "the discrete version on a discrete domain; an algorithm that "
                                                    "does not fit an environment is left out there)."),
    levels: str = typer.Option("train,rephrase,easy,hard", "--levels", help="Target levels, comma-separated."),
    data: str = typer.Option("real,imaginary,real-upper-bound", "--data", help="Training data settings, "
                             "comma-separated: real, imaginary, real-upper-bound, real-retrieval, imaginary-unfiltered, "
                             "imaginary-oracle, imaginary-grounded (senseless combinations, e.g. the upper bound at train, are left "
                             "out)."),
    seeds: Optional[List[str]] = typer.Option(None, "--seeds", help="Seeds, e.g. --seeds 0 1 2 or --seeds 0,1,2 "
                                                                    "(default: the profile's)."),
    profile: Optional[str] = typer.Option(None, "--profile", help=PROFILE_HELP),
    address: Optional[str] = typer.Option(None, "--address", help="Connect to this Ray cluster (e.g. auto) "
                                          "instead of starting a local one."),
    cpus: Optional[int] = typer.Option(None, "--cpus", help="CPUs of the local Ray instance (default: all)."),
    cpus_per_run: float = typer.Option(1, "--cpus-per-run", help="CPUs (and torch threads) per run."),
    gpus_per_run: float = typer.Option(0, "--gpus-per-run", help="GPUs reserved per run."),
    store: Optional[Path] = typer.Option(None, "--store", help="Results store (default "
                                         "<data home>/results/results.sqlite)."),
    steps: Optional[int] = typer.Option(None, "--steps", help="Override the profile's gradient steps."),
    checkpoint_every: Optional[int] = typer.Option(None, "--checkpoint-every", help="Override the profile's "
                                                   "checkpoint interval."),
    eval_episodes: Optional[int] = typer.Option(None, "--eval-episodes", help="Override evaluation episodes per task."),
    curve: bool = typer.Option(GridSpec.curve, "--curve/--no-curve", help="Evaluate every checkpoint (the "
                               "learning curves) or, with --no-curve, only the last five that the scores average: "
                               "the same scores for about half the evaluation time."),
    retries: int = typer.Option(1, "--retries", help="Extra attempts for a failed run (not for errors that would "
                                "recur: missing data, bad settings)."),
    lease: float = typer.Option(60.0, "--lease", help="Seconds another grid's claim on a run stays valid without its "
                                "heartbeat (a run another grid is running waits for it)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show live progress on stderr."),
    estimate: bool = typer.Option(True, "--estimate/--no-estimate", help="Print the grid's estimated core-hours "
                                  "before it starts (update rates and evaluation cost measured on this machine once, "
                                  "then kept in the data home)."),
) -> None:
    """Run the benchmark grid (envs × algos × levels × data × seeds) on Ray, with a results store.

    Each run's status and scores go to the store (SQLite); runs it has as done are skipped.

    The same command again resumes a stopped grid (unfinished runs continue from their last checkpoint).

    Exits with code 1 if a run failed.
    """
    if ctx.args and not seeds:
        raise UsageError(f"Unexpected arguments: {' '.join(ctx.args)}.")
    grid = GridSpec(envs=_list(envs), algos=_list(algos), levels=_list(levels), data=_list(data),
                    seeds=_seeds(seeds, list(ctx.args)) if seeds else None, profile=profile, train_steps=steps,
                    checkpoint_every=checkpoint_every, eval_episodes_per_task=eval_episodes, curve=curve)
    plan = grid.plan()  # unknown names and senseless combinations fail here, before the store is made
    import_ray()
    check_grid_options(address=address, num_cpus=cpus, cpus_per_run=cpus_per_run, gpus_per_run=gpus_per_run,
                       retries=retries, lease_s=lease)
    with ResultsStore(store) as results:
        if estimate:
            from imaginebench.sweep.cost import estimate as estimate_cost

            threads = max(1, int(cpus_per_run))
            typer.echo(estimate_cost((run.spec for run in plan.runs), threads=threads).describe(cpus), err=True)
        summary = run_grid(grid, results, address=address, num_cpus=cpus, cpus_per_run=cpus_per_run,
                           gpus_per_run=gpus_per_run, retries=retries, progress=progress,
                           lease_s=lease)
    for what, reason in summary.excluded:
        typer.echo(f"left out: {what} ({reason})")
    for label, error in summary.failures:
        typer.echo(f"failed: {label}: {error}")
    typer.echo(f"grid of {summary.total} runs: {summary.done} done now ({summary.resumed} resumed), "
               f"{summary.skipped} done before (skipped), {summary.failed} failed; {summary.wall_time_s:.1f} s")
    typer.echo(f"results store: {summary.store_path}")
    if summary.failed:
        raise typer.Exit(1)
