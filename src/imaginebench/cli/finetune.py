"""``imaginebench finetune``."""

from __future__ import annotations

from typing import List, Optional

import typer

from imaginebench.cli.common import PROFILE_HELP, app, friendly
from imaginebench.cli.train import _algo_options, _seeds
from imaginebench.config import get_profile
from imaginebench.errors import UsageError
from imaginebench.finetune import FinetuneSpec
from imaginebench.finetune.spec import ONLINE_METHODS
from imaginebench.threads import set_threads


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": False})
@friendly
def finetune(
    ctx: typer.Context,
    env: str = typer.Option(..., "--env", help="Environment id, e.g. CLEVR-v0."),
    level: str = typer.Option(..., "--level", help="Level whose tasks the policy interacts with and is scored on."),
    start: str = typer.Option(..., "--from", help="scratch, ALGO/DATA (the offline run of that algorithm and data "
                              "at this level, profile and seed, e.g. discrete_cql/real or discrete_cql/imaginary), "
                              "or an offline run's folder."),
    method: Optional[str] = typer.Option(None, "--method", help=f"Online method: {', '.join(ONLINE_METHODS)} "
                                         "(default: the start's algorithm; a BC start: td3 / discrete_sac)."),
    budget: Optional[int] = typer.Option(None, "--budget", help="Environment steps (default: the profile's)."),
    eval_every: Optional[int] = typer.Option(None, "--eval-every", help="Environment steps between evaluations "
                                             "(default: the profile's)."),
    seeds: Optional[List[str]] = typer.Option(None, "--seeds", help="Seeds, e.g. --seeds 0 1 2 (default: the "
                                                                    "profile's)."),
    profile: Optional[str] = typer.Option(None, "--profile", help=PROFILE_HELP),
    num_envs: int = typer.Option(FinetuneSpec.num_envs, "--num-envs", help="Environments stepped together "
                                 "(gymnasium vector env)."),
    vectorization: str = typer.Option(FinetuneSpec.vectorization, "--vectorization", help="sync (one process) or async (a process "
                                      "per environment)."),
    offline_ratio: float = typer.Option(FinetuneSpec.offline_ratio, "--offline-ratio", help="Share of every batch from the offline data "
                                        "(the start's real + imaginary data; real data for scratch); 0.5 = RLPD's "
                                        "symmetric sampling."),
    updates_per_step: int = typer.Option(FinetuneSpec.updates_per_step, "--updates-per-step", help="Gradient steps per environment step."),
    epsilon: float = typer.Option(FinetuneSpec.epsilon, "--epsilon", help="Epsilon-greedy exploration (discrete, greedy methods)."),
    noise_std: float = typer.Option(FinetuneSpec.noise_std, "--noise-std", help="Gaussian exploration noise (continuous, "
                                    "deterministic methods)."),
    eval_episodes: Optional[int] = typer.Option(None, "--eval-episodes", help="Evaluation episodes per task."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Override the profile's batch size."),
    set_: Optional[List[str]] = typer.Option(None, "--set", help="Override a method field, FIELD=VALUE."),
    tag: Optional[str] = typer.Option(None, "--tag", help="Name a non-default variant (<method>@<tag>)."),
    threads: int = typer.Option(1, "--threads", help="torch CPU threads."),
    device: str = typer.Option("cpu", "--device", help="Torch device: cpu or cuda."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
) -> None:
    """Fine-tune an offline policy (or networks from scratch) online on a level's tasks, evaluating at fixed
    environment-step intervals; one record per seed.

    Fine-tunes resume from their last checkpoint; finished ones are skipped.
    """
    from imaginebench.finetune import finetune as run_finetune

    if ctx.args and not seeds:
        raise UsageError(f"Unexpected arguments: {' '.join(ctx.args)}.")
    seed_list = _seeds(seeds, list(ctx.args)) if seeds else list(get_profile(profile).seeds)

    set_threads(threads)
    if not (device == "cpu" or device.startswith("cpu:") or device.startswith("cuda")):
        raise UsageError(f"Unknown --device {device!r}; use cpu or cuda.")
    device = {"cpu": "cpu:0", "cuda": "cuda:0"}.get(device, device)
    specs = [FinetuneSpec(env, level, start=start, method=method, budget=budget, eval_every=eval_every, seed=s,
                          profile=profile, num_envs=num_envs, offline_ratio=offline_ratio,
                          updates_per_step=updates_per_step, epsilon=epsilon, noise_std=noise_std,
                          eval_episodes_per_task=eval_episodes, batch_size=batch_size,
                          algo_options=_algo_options(set_ or []), vectorization=vectorization, tag=tag)
             for s in seed_list]
    for spec in specs:
        result = run_finetune(spec, progress=progress, device=device)
        rec = result.record
        status = ("finished earlier, skipped" if result.skipped else
                  f"resumed from env step {result.resumed_from}" if result.resumed_from else "fine-tuned")
        curve = " ".join(f"{c['success']:.0%}" for c in rec["curve"])
        typer.echo(f"{rec['env']} {rec['level']} {rec['start']['name']} -> {rec['method']} seed {rec['seed']}: "
                   f"success {curve} (final {rec['score']['final']:.1%}, AUC {rec['score']['auc']:.1%}; {status}) "
                   f"-> {result.path}")
