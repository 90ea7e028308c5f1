"""``imaginebench train``."""

from __future__ import annotations

from typing import List, Optional

import typer

from imaginebench.algos.registry import ALGORITHMS, algorithm_names
from imaginebench.cli.common import PROFILE_HELP, app, friendly
from imaginebench.config import get_profile
from imaginebench.data.hub import IMAGINARY_VARIANTS
from imaginebench.envs.registry import load_domain
from imaginebench.errors import UsageError, choice_error
from imaginebench.threads import set_threads
from imaginebench.training import train_seeds
from imaginebench.training.spec import DEFAULT_MIX_RATIO, RunSpec

UNSTACKED = tuple(name for name, spec in ALGORITHMS.items() if spec.stacked is None)
"""Algorithms without a stacked trainer (their :class:`~imaginebench.algos.algo_config.AlgoSpec` names none)."""


def _seeds(values: List[str], extra: List[str]) -> list[int]:
    """``--seeds 0 1 2`` (Typer hands over 0, the rest arrive as extra arguments) or ``--seeds 0,1,2``."""
    out = []
    for token in [*values, *extra]:
        for part in str(token).split(","):
            if not part.strip():
                continue
            try:
                out.append(int(part))
            except ValueError:
                raise UsageError(f"Seeds must be integers, got {part!r} (use --seeds 0 1 2).") from None
    return list(dict.fromkeys(out))


def _algo_options(values: List[str]) -> tuple[tuple[str, object], ...]:
    import json

    out = []
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--set takes FIELD=VALUE, got {item!r}.")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out.append((key.strip(), tuple(value) if isinstance(value, list) else value))
    return tuple(out)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": False})
@friendly
def train(
    ctx: typer.Context,
    env: str = typer.Option(..., "--env", help="Environment id, e.g. CLEVR-v0."),
    algo: str = typer.Option(..., "--algo", help=f"Algorithm: {', '.join(algorithm_names())} (bc/cql/bcq/sac/dt "
                                                  "pick the discrete version on a discrete domain)."),
    level: str = typer.Option("train", "--level", help="Target level: train, rephrase, easy or hard."),
    seeds: Optional[List[str]] = typer.Option(None, "--seeds", help="Seeds, e.g. --seeds 0 1 2 (default: the "
                                                                    "profile's)."),
    profile: Optional[str] = typer.Option(None, "--profile", help=PROFILE_HELP),
    real_upper_bound: bool = typer.Option(False, "--real-upper-bound", help="Train on real data plus expert "
                                          "rollouts of the level's tasks (the Real upper bound)."),
    real_only: bool = typer.Option(False, "--real-only", help="Train on real data only (no imaginary rollouts) "
                                   "and evaluate on the level."),
    retrieval: bool = typer.Option(False, "--retrieval", help="The retrieval baseline: train on real data only and "
                                   "evaluate the novel level with each instruction replaced by its nearest train "
                                   "phrasing under the encoder (reads no novel-level data)."),
    baselines: bool = typer.Option(False, "--baselines", help="The real-data baselines in one go: the train level, "
                                   "and real only and retrieval on every novel level, from one training per seed "
                                   "(each writes its own record, equal to training it alone)."),
    imaginary: str = typer.Option("honest", "--imaginary", help="Which imaginary data: honest (default: kept by "
                                  "the domain's pure success + legality functions), unfiltered, oracle (also "
                                  "checked against the simulator: a diagnostic), or grounded (actions checked "
                                  "by dynamics learned from real train data: imagine ground)."),
    mix_ratio: float = typer.Option(DEFAULT_MIX_RATIO, "--mix-ratio", help="Share of each batch from imaginary (or upper-bound) "
                                    "data."),
    steps: Optional[int] = typer.Option(None, "--steps", help="Override the profile's gradient steps."),
    checkpoint_every: Optional[int] = typer.Option(None, "--checkpoint-every", help="Override the profile's "
                                                   "checkpoint interval."),
    eval_episodes: Optional[int] = typer.Option(None, "--eval-episodes", help="Override evaluation episodes per task."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Override the profile's batch size."),
    standardize: str = typer.Option(RunSpec.standardize, "--standardize", help="Observation standardisation: none, embedding, all."),
    encoder: Optional[str] = typer.Option(None, "--encoder", help="Instruction encoder name (default: the "
                                          "package's MiniLM)."),
    set_: Optional[List[str]] = typer.Option(None, "--set", help="Override an algorithm default, FIELD=VALUE "
                                             "(repeatable), e.g. --set learning_rate=3e-4."),
    tag: Optional[str] = typer.Option(None, "--tag", help="Name a non-default variant; its runs live in "
                                      "<algo>@<tag> next to the default runs."),
    curve: bool = typer.Option(RunSpec.curve, "--curve/--no-curve", help="Evaluate every checkpoint (the learning "
                               "curve) or, with --no-curve, only the last five that the score averages: the same "
                               "score for about half the evaluation time."),
    threads: int = typer.Option(1, "--threads", help="torch CPU threads (1 gives steady timings on shared machines)."),
    stack: bool = typer.Option(True, "--stack/--no-stack", help="Train the seeds together with stacked parameters "
                               f"(every algorithm but {', '.join(UNSTACKED)}; each seed's numbers equal a lone run's); "
                               "--no-stack trains them one after another."),
    device: str = typer.Option("cpu", "--device", help="Torch device for training: cpu or cuda (data, sampling "
                               "and networks live there)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
) -> None:
    """Train an offline RL algorithm on a level's data, evaluate it, and write one record per seed.

    Runs resume from their last checkpoint; finished runs are skipped.  Seeds of the algorithms
    that have a stacked trainer train together in one process (--no-stack: one at a time).
    Real-only runs that would train the same network (--baselines, or a level's real only and
    retrieval) train it once and each write their own record.
    """
    if real_upper_bound and (real_only or retrieval):
        raise UsageError("Choose one of --real-upper-bound and --real-only / --retrieval.")
    if ctx.args and not seeds:
        raise UsageError(f"Unexpected arguments: {' '.join(ctx.args)}.")
    seed_list = _seeds(seeds, list(ctx.args)) if seeds else list(get_profile(profile).seeds)

    set_threads(threads)

    if imaginary not in IMAGINARY_VARIANTS:
        raise choice_error("--imaginary", imaginary, IMAGINARY_VARIANTS)
    data = ("real-upper-bound" if real_upper_bound else "real-retrieval" if retrieval else "real" if real_only else
            "imaginary" if imaginary == "honest" else f"imaginary-{imaginary}")
    if baselines:
        if data != "imaginary" or level != "train":
            raise UsageError("--baselines trains on real data and covers every level itself; drop --level, "
                             "--real-only, --retrieval, --real-upper-bound and --imaginary.")
        domain = load_domain(env)
        novel = [lv for lv in ("rephrase", "easy", "hard") if lv == "rephrase" or domain.tasks(lv)]
        cells = [("train", "real"), *((lv, d) for lv in novel for d in ("real", "real-retrieval"))]
    else:
        cells = [(level, data)]
    specs = [RunSpec(env, algo, level=lv, seed=s, profile=profile, data=d, mix_ratio=mix_ratio,
                     encoder=encoder, standardize=standardize, train_steps=steps, checkpoint_every=checkpoint_every,
                     eval_episodes_per_task=eval_episodes, batch_size=batch_size,
                     algo_options=_algo_options(set_ or []), tag=tag, curve=curve)
             for s in seed_list for lv, d in cells]
    if not (device == "cpu" or device.startswith("cpu:") or device.startswith("cuda")):
        raise UsageError(f"Unknown --device {device!r}; use cpu or cuda (cuda:N for another GPU).")
    device = {"cpu": "cpu:0", "cuda": "cuda:0"}.get(device, device)
    for result in train_seeds(specs, stack=stack, device=device, progress=progress):
        rec = result.record
        norm = rec.get("normalised", {})
        scores = "  ".join(f"{lv} {v:.1%}" + (f" (norm. {norm[lv]:.0f})" if norm.get(lv) is not None else "")
                           for lv, v in rec["score"].items())
        if result.skipped:
            status = "finished earlier, skipped"
        elif result.resumed_from:
            status = f"resumed from step {result.resumed_from}"
        else:
            status = "trained"
        typer.echo(f"{rec['env']} {rec['algo']} {rec['level']}/{rec['data']} seed {rec['seed']}: {scores} "
                   f"({status}; {rec['timing']['wall_time_s']:.0f} s) -> {result.path}")
