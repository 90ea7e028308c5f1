"""``imaginebench imagine train|generate|quality``: the rollout language model stage."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional

import typer

from imaginebench import limits
from imaginebench.cli.common import PROFILE_HELP, app, friendly
from imaginebench.data.hub import load_imaginary, load_real
from imaginebench.data.storage import load_dataset
from imaginebench.errors import UsageError, choice_error
from imaginebench.imagination.pipeline import _levels, generate, quality, train
from imaginebench.imagination.quality import ORACLE_RULES, format_table, oracle_variant
from imaginebench.imagination.render import episode_strip, save_png

imagine_app = typer.Typer(help="Fine-tune the rollout language model, imagine rollouts, score them.",
                          no_args_is_help=True)
app.add_typer(imagine_app, name="imagine")

EnvOpt = typer.Option("CLEVR-v0", "--env", help="Environment id.")
ProfileOpt = typer.Option(None, "--profile", help=PROFILE_HELP)
BackboneOpt = typer.Option(None, "--backbone",
                           help="smollm2-135m, tiny, or a local Hugging Face model folder (default: the profile's).")
LevelOpt = typer.Option("all", "--level", help="rephrase, easy, hard or all.")


@imagine_app.command("train")
@friendly
def imagine_train(
    env: str = EnvOpt,
    profile: Optional[str] = ProfileOpt,
    backbone: Optional[str] = BackboneOpt,
    lora: bool = typer.Option(True, "--lora/--full", help="LoRA adapters or full fine-tuning of the backbone."),
    steps: Optional[int] = typer.Option(None, "--steps", help="Total optimiser steps (default: profile lm_steps)."),
    layers: Optional[int] = typer.Option(None, "--layers", help="Keep only the first N decoder layers (faster)."),
    numeric_layers: Optional[int] = typer.Option(
        None, "--numeric-layers", help="Late entry: states and actions run through only the top N decoder layers "
        "(the text below is cached); 0 = every layer (the full-depth model). Default: the profile's."),
    augment: bool = typer.Option(True, "--augment/--no-augment", help="Train on the domain's exact symmetries of "
                                 "the real episodes (BabyAI: the room's 8 rotations/reflections); others: no effect."),
    start_window_share: float = typer.Option(
        0.5, "--start-window-share", help="Share of the windows cut from long episodes that begin at the episode's "
        "start, where only the instruction says what to do (0: uniform windows, the old behaviour)."),
    action_bins: Optional[int] = typer.Option(
        None, "--action-bins", help="Continuous actions only: predict each action dimension as one of K values from "
        "-1 to 1 and sample it in generation (default: regress it, which averages a gait). Use --out: a checkpoint "
        "folder holds one model design."),
    relations: bool = typer.Option(
        False, "--relations/--no-relations", help="Add the domain's relational state facts (BabyAI: the agent on / "
        "beside each object, at the door, objects beside each other, what is carried) to the state embedding, "
        "zero-initialised: equalities of cells a linear embedding cannot express. Use --out: a checkpoint folder "
        "holds one model design."),
    relation_gain: Optional[float] = typer.Option(
        None, "--relation-gain", help="With --relations: fixed factor on the facts' embedding (default 40; "
        "checkpoints saved before it existed trained at 1)."),
    init_from: Optional[Path] = typer.Option(
        None, "--init-from", help="Warm start a new run from this checkpoint folder's weights (same domain and "
        "backbone design; tensors a new head adds, e.g. --action-bins, start fresh)."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Sequences per step (default: the profile's)."),
    lr: Optional[float] = typer.Option(None, "--lr", help="Backbone learning rate (default 5e-4 LoRA / 1e-4 full)."),
    adapter_lr: Optional[float] = typer.Option(None, "--adapter-lr",
                                               help="Learning rate of the numeric layers (default 1e-3)."),
    task_weights: Optional[str] = typer.Option(
        None, "--task-weights", help="Sampling weights of rollout,dynamics,consequence,explanation, e.g. 3,1,1,1."),
    out: Optional[Path] = typer.Option(None, "--out", help="Checkpoint folder (default under the data home)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Start over instead of resuming an existing checkpoint."),
    bf16: bool = typer.Option(False, "--bf16", help="bfloat16 autocast (faster on CPUs with AMX; not validated)."),
    threads: Optional[int] = typer.Option(None, "--threads", help="torch threads."),
    seed: int = typer.Option(0, "--seed"),
    eval_every: Optional[int] = typer.Option(None, "--eval-every", help="Steps between validations (default: the "
                                             "profile's)."),
    early_stop_patience: Optional[int] = typer.Option(
        None, "--early-stop-patience", help="Stop after this many validations in a row without improvement of the "
        "rollout task's validation loss; generation then uses the best validation weights."),
    early_stop_min_delta: float = typer.Option(0.0, "--early-stop-min-delta", help="Smallest improvement that counts."),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda or cuda:N."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
) -> None:
    """Fine-tune the rollout model on the real train data (resumes an existing checkpoint)."""
    if action_bins is not None and action_bins < 2:
        raise UsageError(f"--action-bins must be at least 2, got {action_bins}.")
    for option, value in (("--steps", steps), ("--layers", layers), ("--batch-size", batch_size),
                          ("--eval-every", eval_every), ("--early-stop-patience", early_stop_patience)):
        limits.count(option, value, allow_none=True)
    limits.positive("--lr", lr, allow_none=True)
    limits.positive("--adapter-lr", adapter_lr, allow_none=True)
    limits.positive("--relation-gain", relation_gain, allow_none=True)
    limits.number("--early-stop-min-delta", early_stop_min_delta, low=0.0)
    limits.number("--start-window-share", start_window_share, low=0.0, high=1.0)
    _threads(threads)
    extra: dict = {"early_stop_min_delta": early_stop_min_delta, "augment": augment,
                   "start_window_share": start_window_share}
    if init_from is not None:
        extra["init_from"] = str(init_from)
    if eval_every is not None:
        extra["eval_every"] = eval_every
    if early_stop_patience is not None:
        extra["early_stop_patience"] = early_stop_patience
    if adapter_lr is not None:
        extra["adapter_lr"] = adapter_lr
    if task_weights is not None:
        try:
            extra["task_weights"] = tuple(float(w) for w in task_weights.split(","))
            weights = extra["task_weights"]
            if len(weights) != 4 or not all(math.isfinite(w) and w >= 0 for w in weights) or not sum(weights) > 0:
                raise ValueError
        except ValueError:
            raise UsageError(f"--task-weights needs four finite numbers >= 0, not all 0, like 3,1,1,1; got "
                             f"{task_weights!r}.") from None
    r = train(env, profile, backbone, lora=lora, steps=steps, num_layers=layers, batch_size=batch_size, lr=lr,
              out=out, overwrite=overwrite, bf16=bf16, threads=threads, seed=seed, device=device, progress=progress,
              numeric_layers=numeric_layers, action_bins=action_bins, relations=relations,
              relation_gain=relation_gain, **extra)
    import torch

    gpu = (f", peak GPU memory {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB"
           if torch.cuda.is_available() and torch.cuda.max_memory_allocated() else "")
    typer.echo(f"checkpoint {r.checkpoint}: {r.steps_done} steps ({r.steps_run} now, {r.steps_per_second:.2f} steps/s, "
               f"peak RSS {r.peak_rss_mb:.0f} MB{gpu}); ended: {getattr(r, 'ended', None)}, "
               f"best step {getattr(r, 'best_step', None)}")
    for task, losses in r.val_losses.items():
        parts = ", ".join(f"{k} {v:.4f}" for k, v in losses.items())
        typer.echo(f"  validation {task:<12} {parts}")


def _threads(threads: int | None) -> None:
    """``--threads``: at least 1 and at most the CPUs this process may use."""
    limits.count("--threads", threads, high=limits.available_cpus(), allow_none=True)


@imagine_app.command("generate")
@friendly
def imagine_generate(
    env: str = EnvOpt,
    profile: Optional[str] = ProfileOpt,
    backbone: Optional[str] = BackboneOpt,
    level: str = LevelOpt,
    checkpoint: Optional[Path] = typer.Option(None, "--checkpoint",
                                              help="Checkpoint folder (default: the trained one)."),
    episodes: Optional[int] = typer.Option(None, "--episodes", help="Kept rollouts per level (default: the "
                                           "profile's)."),
    temperature: float = typer.Option(1.0, "--temperature", help="Action sampling temperature; 0 = argmax."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Rollouts per batch (GPU: 1024+)."),
    seed: int = typer.Option(1, "--seed", help="Seed of the initial states and of sampling."),
    keep: str = typer.Option("honest", "--keep", help="honest (default: goal reached and every state legal, by "
                             "the domain's pure functions; no simulator), none (unfiltered), or oracle (also "
                             "re-simulates every transition: a diagnostic that reads the simulator), or grounded "
                             "(honest, and the actions cause the outcome under dynamics learned from real train "
                             "data; no simulator; writes imaginary-<level>.grounded.npz)."),
    budget: float = typer.Option(16.0, "--budget", help="Best-of-N: at most this many candidates per kept "
                                 "rollout, per task."),
    stop_on_end: bool = typer.Option(True, "--stop-on-end/--no-stop-on-end",
                                     help="End rollouts where the model's end-of-rollout output fires."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace existing imaginary datasets."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help="Compute cap on rollout length (never below "
                                            "the steps the level's tasks need)."),
    score: bool = typer.Option(True, "--score/--no-score", help="Compute the simulator-based quality metrics now."),
    physics_prior: bool = typer.Option(False, "--physics-prior", help="Impose the domain's physics prior on "
                                       "every imagined step (Meta-World: the hand follows the arm's position "
                                       "control, untouched entities stay put; HalfCheetah: joints stop at their "
                                       "limits, the body stays out of the floor; LIBERO: bodies out of the gripper's "
                                       "reach stay put); recorded in the metadata."),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda or cuda:N."),
    bf16: bool = typer.Option(False, "--bf16"),
    threads: Optional[int] = typer.Option(None, "--threads"),
    numeric_layers: Optional[int] = typer.Option(
        None, "--numeric-layers", help="Which default checkpoint folder to read: the late-entry model with N "
        "numeric layers, 0 = the full-depth one (default: the profile's). Ignored with --checkpoint."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show progress bars."),
) -> None:
    """Imagine rollouts for novel instructions (best-of-N per task), filter them and save them."""
    for option, value in (("--episodes", episodes), ("--batch-size", batch_size), ("--max-steps", max_steps)):
        limits.count(option, value, allow_none=True)
    limits.number("--temperature", temperature, low=0.0)
    limits.number("--budget", budget, low=1.0)
    _threads(threads)
    results = generate(env, profile, level, backbone=backbone, checkpoint=checkpoint, episodes=episodes,
                       temperature=temperature, batch_size=batch_size, seed=seed,
                       overwrite=overwrite, bf16=bf16, threads=threads, max_steps=max_steps, keep=keep,
                       budget=budget, stop_on_end=stop_on_end, score=score, device=device, progress=progress,
                       numeric_layers=numeric_layers, physics_prior=physics_prior)
    for r in results:
        t = r.throughput
        q = r.quality
        typer.echo(f"{r.level}: kept {r.episodes} of {r.generated} candidates ({q['candidates_per_kept']:.1f} per kept; "
                   f"filter {q['filter']}; {len(q['tasks_short_of_quota'])} tasks short of quota) -> {r.path}; "
                   f"{t['imagined_steps']} steps at {t['steps_per_second']:.0f} steps/s"
                   + (f"; resumed from {r.resumed_rounds} finished round{'s' if r.resumed_rounds != 1 else ''}"
                      if r.resumed_rounds else ""))
    if all(r.quality.get("scored") for r in results):
        typer.echo(format_table([r.quality for r in results]))


@imagine_app.command("quality")
@friendly
def imagine_quality(
    env: str = EnvOpt,
    profile: Optional[str] = ProfileOpt,
    level: str = LevelOpt,
    tolerance: Optional[float] = typer.Option(None, "--tolerance", help="Transition tolerance (default: per domain)."),
    keep: Optional[str] = typer.Option(None, "--keep", help="Filter the stored dataset in place: honest (pure "
                                       "success + legality) or oracle (also re-simulated transitions); originals "
                                       "kept as imaginary-<level>.unfiltered.npz."),
    variant: str = typer.Option("honest", "--variant", help="Which stored dataset to score: honest, unfiltered, "
                                "oracle, grounded."),
    write_oracle: bool = typer.Option(False, "--write-oracle", help="Write imaginary-<level>.oracle.npz: the honest "
                                      "rollouts whose transitions the simulator confirms (a diagnostic)."),
    oracle_rule: Optional[str] = typer.Option(None, "--oracle-rule", help="With --write-oracle: which simulator check "
                                              "a rollout must pass: transitions (default; every transition "
                                              "re-simulated), replay (its imagined actions reach the goal in the "
                                              "simulator) or transitions+replay (both)."),
    oracle_replay: bool = typer.Option(False, "--oracle-replay", help="With --write-oracle: the same as "
                                       "--oracle-rule transitions+replay."),
    overwrite: bool = typer.Option(False, "--overwrite", help="With --write-oracle: replace an existing file."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Score stored imaginary rollouts: consistency, transition correctness, legality, replay success."""
    limits.positive("--tolerance", tolerance, allow_none=True)
    for flag, given in (("--oracle-replay", oracle_replay), ("--oracle-rule", oracle_rule is not None)):
        if given and not write_oracle:
            raise UsageError(f"{flag} only applies with --write-oracle; add --write-oracle (or drop {flag}).")
    if oracle_rule is not None and oracle_rule not in ORACLE_RULES:
        raise choice_error("--oracle-rule", oracle_rule, ORACLE_RULES)
    if oracle_replay and oracle_rule not in (None, "transitions+replay"):
        raise UsageError(f"--oracle-replay means --oracle-rule transitions+replay, not {oracle_rule!r}; drop one.")
    rule = "transitions+replay" if oracle_replay else oracle_rule or "transitions"

    if write_oracle:
        for lv in _levels(level):
            r = oracle_variant(env, lv, profile, tolerance=tolerance, overwrite=overwrite, rule=rule)
            typer.echo(f"{lv}: oracle ({r['oracle_rule']}) kept {r['kept']} of {r['honest']} honest rollouts "
                       f"-> {r['dataset']}")
        return
    reports = quality(env, profile, level, tolerance=tolerance, keep=keep, variant=variant)
    typer.echo(json.dumps(reports, indent=1) if as_json else format_table(reports))


@imagine_app.command("ground")
@friendly
def imagine_ground(
    env: str = EnvOpt,
    profile: Optional[str] = ProfileOpt,
    level: str = LevelOpt,
    mode: str = typer.Option("replay", "--mode", help="replay (keep the imagined actions the learned dynamics "
                             "replay to the goal), relabel (actions read off the imagined states by the inverse "
                             "model, then the same check) or plan (relabel, and store the model-replayed states)."),
    state_test: str = typer.Option("states", "--state-test", help="What the imagined states must pass first: states "
                                   "(legal, goal at the last state), honest (the honest filter's whole test) or none."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing grounded file."),
    threads: Optional[int] = typer.Option(None, "--threads", help="Torch CPU threads (default: torch's)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Ground the level's stored imagined rollouts in dynamics learned from real train data (no simulator):
    write imaginary-<level>.grounded.npz, used with `train --imaginary grounded`. The models are fitted once
    per domain, profile and real data (a few minutes) and cached in the data home."""
    from imaginebench.imagination.grounding import GROUND_MODES, STATE_TESTS, NothingKept, ground_dataset

    if mode not in GROUND_MODES:
        raise choice_error("--mode", mode, tuple(GROUND_MODES))
    if state_test not in STATE_TESTS:
        raise choice_error("--state-test", state_test, STATE_TESTS)
    _threads(threads)
    if threads:
        import torch

        torch.set_num_threads(threads)
    out = []
    levels = _levels(level)
    for lv in levels:
        try:
            r = ground_dataset(env, lv, profile, mode=mode, state_test=state_test, overwrite=overwrite)
        except NothingKept as e:
            if len(levels) == 1:
                raise
            # one level keeping nothing is a measurement; the other levels' files stand
            r = {"env_id": env, "level": lv, "dataset": None, "kept": 0, "candidates": e.candidates, "note": str(e)}
        out.append(r)
        if not as_json:
            where = f"-> {r['dataset']}" if r["dataset"] else "(nothing kept; no file written)"
            typer.echo(f"{lv}: grounded ({mode}, state test {state_test}) kept {r['kept']} of "
                       f"{r['candidates']} candidates {where}")
    if as_json:
        typer.echo(json.dumps(out, indent=1))
    if not any(r["dataset"] for r in out):
        raise typer.Exit(1)


@imagine_app.command("render")
@friendly
def imagine_render(
    env: str = EnvOpt,
    profile: Optional[str] = ProfileOpt,
    level: str = typer.Option("hard", "--level", help="train, rephrase, easy or hard."),
    source: str = typer.Option("imaginary", "--source", help="imaginary or real."),
    variant: str = typer.Option("honest", "--variant", help="Imaginary dataset: honest, unfiltered, oracle or grounded."),
    dataset: Optional[Path] = typer.Option(None, "--dataset", help="A dataset file (instead of the data home's)."),
    episode: int = typer.Option(0, "--episode", help="Episode index in the dataset."),
    frames: int = typer.Option(6, "--frames", help="Frames in the strip (evenly spaced, first and last included)."),
    out: Path = typer.Option(..., "--out", help="PNG file to write."),
) -> None:
    """Draw one rollout (real or imagined) from its state vectors as a PNG strip (any domain whose env can draw a state vector: all five built-in ones).

    Sets MUJOCO_GL=egl unless MUJOCO_GL is already set."""
    import os

    os.environ.setdefault("MUJOCO_GL", "egl")


    if source not in ("imaginary", "real"):
        raise UsageError(f"--source must be imaginary or real, got {source!r}.")
    limits.count("--episode", episode, low=0)
    limits.count("--frames", frames, low=2, high=64)
    if dataset is not None:
        ds = load_dataset(dataset)
    elif source == "real":
        ds = load_real(env, level, profile)
    else:
        ds = load_imaginary(env, level, profile, variant)
        if ds is None:
            raise FileNotFoundError(f"No imaginary {level} dataset ({variant}) for {env}; build one with "
                                    f"imaginebench imagine generate --env {env} --level {level}.")
    try:
        image = episode_strip(ds, episode, frames)
    except RuntimeError as exc:  # no OpenGL context for MuJoCo's renderer
        raise ValueError(str(exc)) from None
    typer.echo(f"wrote {save_png(image, out)} ({image.shape[1]} x {image.shape[0]})")
