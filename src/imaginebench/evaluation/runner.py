"""One offline RL run, end to end: data -> mixed sampler -> d3rlpy algorithm -> checkpoints,
evaluation -> results record.  Runs resume from their last checkpoint and finished runs are
skipped (see :mod:`imaginebench.evaluation.records` for the layout on disk).

>>> from imaginebench.evaluation import RunSpec, train
>>> result = train(RunSpec("CLEVR-v0", "discrete_bc", level="rephrase", seed=0, profile="tiny"))
>>> result.record["success"]
"""

from __future__ import annotations

import io
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

from imaginebench.algos.registry import AlgoSpec, resolve
from imaginebench.config import get_profile
from imaginebench.domains.base import check_level, choice_error
from imaginebench.fileio import atomic_path
from imaginebench.evaluation.protocol import (
    LAST_CHECKPOINTS,
    Evaluator,
    d3rlpy_policy,
    eval_levels,
    last_checkpoints_mean,
)
from imaginebench.evaluation.records import RECORD_NAME, SCHEMA_VERSION, read_record, runs_root, versions, write_json

DATA_VARIANTS = ("imaginary", "imaginary-unfiltered", "imaginary-oracle", "real", "real-upper-bound")
"""Training data of a run: real + the level's imaginary rollouts kept by the honest filter
(the default; ``train``: real only); real + every generated imaginary rollout (unfiltered);
real + imaginary rollouts kept by the oracle filter (reads the simulator: a diagnostic);
real rollouts only; real + expert rollouts of the level's tasks (the "Real" upper bound)."""

IMAGINARY_DATA = {"imaginary": "honest", "imaginary-unfiltered": "unfiltered", "imaginary-oracle": "oracle"}
"""Training-data variant -> stored imaginary dataset variant (:data:`imaginebench.data.hub.IMAGINARY_VARIANTS`)."""

DEFAULT_MIX_RATIO = 0.5
"""Share of every batch taken from the second source (imaginary or upper-bound data)."""

CHECKPOINT_NAME = "checkpoint.pt"
_TAG = re.compile(r"[A-Za-z0-9_.-]{1,40}")
MODEL_NAME = "model.d3"


@dataclass(frozen=True)
class RunSpec:
    """What to train and how; every size not given comes from the profile.

    Attributes:
        env_id: environment id, e.g. ``"CLEVR-v0"``.
        algo: algorithm name (``bc`` on a discrete domain means ``discrete_bc``; see
            :func:`imaginebench.algos.resolve`).
        level: target level (``train``, ``rephrase``, ``easy``, ``hard``).
        seed: run seed (network initialisation, batches, evaluation episodes).
        profile: size profile name (``None``: ``$IMAGINEBENCH_PROFILE`` or ``small``).
        data: one of :data:`DATA_VARIANTS`.
        mix_ratio: share of each batch from the second source (imaginary / upper-bound data).
        encoder: instruction encoder name (``None``: the default encoder).
        standardize: observation standardisation, ``none``, ``embedding`` or ``all``.
        train_steps, checkpoint_every, eval_episodes_per_task, batch_size: profile overrides.
        algo_options: ``(field, value)`` overrides of the algorithm's default config.
        eval_pool: environments stepped together during evaluation.
        tag: a name for a non-default variant (e.g. ``"nostd"``); runs with a tag live in
            ``<algo>@<tag>`` so they never collide with the default runs.
    """

    env_id: str
    algo: str
    level: str = "train"
    seed: int = 0
    profile: str | None = None
    data: str = "imaginary"
    mix_ratio: float = DEFAULT_MIX_RATIO
    encoder: str | None = None
    standardize: str = "all"
    train_steps: int | None = None
    checkpoint_every: int | None = None
    eval_episodes_per_task: int | None = None
    batch_size: int | None = None
    algo_options: tuple[tuple[str, Any], ...] = ()
    eval_pool: int = 16
    tag: str | None = None

    def __post_init__(self) -> None:
        check_level(self.level)
        if self.tag is not None and not _TAG.fullmatch(self.tag):
            raise ValueError(f"tag must be letters, digits, '.', '_' or '-', got {self.tag!r}.")
        if self.data not in DATA_VARIANTS:
            raise choice_error("training data variant", self.data, DATA_VARIANTS)
        if self.data == "real-upper-bound" and self.level == "train":
            raise ValueError("The Real upper bound needs a novel level (rephrase, easy or hard), not train.")
        if not 0.0 < self.mix_ratio < 1.0:
            raise ValueError(f"mix_ratio must lie strictly between 0 and 1, got {self.mix_ratio}.")
        for name in ("train_steps", "checkpoint_every", "eval_episodes_per_task", "batch_size"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive, got {value}.")
        get_profile(self.profile)  # validates the name

    # ------------------------------------------------------------------ derived
    @property
    def profile_name(self) -> str:
        return get_profile(self.profile).name

    @property
    def steps(self) -> int:
        return self.train_steps or get_profile(self.profile).train_steps

    @property
    def every(self) -> int:
        return min(self.checkpoint_every or get_profile(self.profile).checkpoint_every, self.steps)

    @property
    def episodes_per_task(self) -> int:
        return self.eval_episodes_per_task or get_profile(self.profile).eval_episodes_per_task

    @property
    def batch(self) -> int:
        return self.batch_size or get_profile(self.profile).batch_size

    def settings(self) -> dict[str, Any]:
        """Everything besides the folder's identity that changes a run's results."""
        from imaginebench.language.encoders import DEFAULT_ENCODER

        # the resolved encoder name: a run made under an older default never passes for a new one
        return {"steps": self.steps, "checkpoint_every": self.every, "eval_episodes_per_task": self.episodes_per_task,
                "batch_size": self.batch, "mix_ratio": self.mix_ratio, "encoder": self.encoder or DEFAULT_ENCODER,
                "standardize": self.standardize, "algo_options": {k: list(v) if isinstance(v, tuple) else v
                                                                  for k, v in self.algo_options}}

    @property
    def data_tag(self) -> str:
        """``real`` for the train level's default data (it has no imaginary rollouts)."""
        return "real" if self.level == "train" and self.data == "imaginary" else self.data


@dataclass
class RunResult:
    """What :func:`train` returns.

    Attributes:
        record: the results record.
        path: the run folder.
        skipped: the run had already finished; nothing was trained.
        resumed_from: the step training continued from (0 for a fresh run).
    """

    record: dict[str, Any]
    path: Path
    skipped: bool = False
    resumed_from: int = 0


@dataclass
class _Resolved:
    spec: RunSpec
    algo_spec: AlgoSpec
    domain: Any
    path: Path
    extras: dict[str, Any] = field(default_factory=dict)


def _domain_and_algo(spec: RunSpec) -> tuple[Any, AlgoSpec]:
    from imaginebench.envs.registry import env_spec, load_domain

    domain = load_domain(env_spec(spec.env_id).env_id)
    space = f"Discrete({domain.action_dim})" if domain.discrete_actions else f"Box({domain.action_dim},)"
    return domain, resolve(spec.algo, domain.discrete_actions, domain.env_id, space)


def run_dir(spec: RunSpec, algo_name: str | None = None) -> Path:
    """The folder of ``spec``'s run (``algo_name``: the resolved algorithm name)."""
    from imaginebench.envs.registry import env_spec

    if algo_name is None:
        algo_name = _domain_and_algo(spec)[1].name
    folder = f"{algo_name}@{spec.tag}" if spec.tag else algo_name
    return (runs_root() / env_spec(spec.env_id).env_id / spec.profile_name / spec.level / spec.data_tag
            / folder / f"seed{spec.seed}")


def _check_settings(found: dict[str, Any] | None, spec: RunSpec, where: Path) -> None:
    wanted = spec.settings()
    if found is None or found == wanted:
        return
    diff = ", ".join(f"{k} {found.get(k)!r} there vs {wanted[k]!r} now" for k in wanted if found.get(k) != wanted[k])
    raise ValueError(f"{where} holds a run with other settings ({diff}). Give this run a --tag, or delete that "
                     f"folder to replace it.")


def load_sources(spec: RunSpec, env_id: str) -> tuple[dict[str, Any], dict[str, float], list[dict[str, Any]]]:
    """Datasets, batch shares and a description of each source for ``spec``.

    Raises ``FileNotFoundError`` naming the command that builds a missing dataset.
    """
    from imaginebench.data.hub import dataset_path, imaginary_path, imagine_command, load_imaginary, load_real

    real = load_real(env_id, "train", spec.profile)
    sources = {"real": real}
    described = [("real", "real", "train")]
    paths = {"real": str(dataset_path(env_id, "real", "train", spec.profile))}
    if spec.data_tag in IMAGINARY_DATA:
        variant = IMAGINARY_DATA[spec.data_tag]
        imaginary = load_imaginary(env_id, spec.level, spec.profile, variant)
        if imaginary is None:
            raise FileNotFoundError(
                f"No {variant} imaginary {spec.level} dataset for {env_id} at "
                f"{imaginary_path(env_id, spec.level, spec.profile, variant)}. Build it with: "
                f"{imagine_command(env_id, spec.level, spec.profile)} (or train on real data only with --real-only)."
            )
        sources["imaginary"] = imaginary
        described.append(("imaginary", "imaginary", spec.level))
        paths["imaginary"] = str(imaginary.metadata.get("path") or
                                 imaginary_path(env_id, spec.level, spec.profile, variant))
    elif spec.data_tag == "real-upper-bound":
        sources[f"real-{spec.level}"] = load_real(env_id, spec.level, spec.profile)
        described.append((f"real-{spec.level}", "real", spec.level))
    weights = ({"real": 1.0} if len(sources) == 1 else
               {name: (1.0 - spec.mix_ratio if name == "real" else spec.mix_ratio) for name in sources})
    info = [{"name": name, "source": source, "level": level, "episodes": len(sources[name]),
             "transitions": sources[name].num_transitions, "weight": weights[name],
             "path": paths.get(name) or str(dataset_path(env_id, source, level, spec.profile)),
             **({k: sources[name].metadata.get(k) for k in ("filter", "oracle", "reference", "backbone", "model",
                                                               "device", "generated", "checkpoint_step")}
                if source == "imaginary" else {})}
            for name, source, level in described]
    return sources, weights, info


def _save_checkpoint(path: Path, algo, step: int, curve: list, sampler_rng: np.random.Generator,
                     elapsed: dict[str, float], settings: dict[str, Any]) -> None:
    import torch

    buf = io.BytesIO()
    algo.impl.save_model(buf)
    state = {"step": step, "grad_step": algo.grad_step, "curve": curve, "model": buf.getvalue(),
             "sampler_rng": sampler_rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
             "elapsed": dict(elapsed), "settings": settings}
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def _load_checkpoint(path: Path, algo, sampler_rng: np.random.Generator) -> dict[str, Any]:
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)  # plain data: no pickled code runs
        algo.impl.load_model(io.BytesIO(state["model"]))
    except Exception as exc:  # a damaged checkpoint is an error, never silently ignored
        raise ValueError(f"Cannot resume from {path} ({exc}); delete it to restart the run from scratch.") from None
    algo.set_grad_step(int(state["grad_step"]))
    sampler_rng.bit_generator.state = state["sampler_rng"]
    torch.set_rng_state(state["torch_rng"])
    return state


def train(spec: RunSpec, *, progress: bool = True, encoder: Any = None,
          env_factory: Callable[[str], Any] | None = None,
          on_checkpoint: Callable[[int, dict[str, Any]], None] | None = None) -> RunResult:
    """Train and evaluate one run (resuming or skipping it as its folder says).

    Args:
        spec: the run.
        progress: show a progress bar.
        encoder: an instruction encoder object (default: ``get_encoder(spec.encoder)``).
        env_factory: ``level -> raw env`` for evaluation (default ``imaginebench.make``).
        on_checkpoint: called as ``on_checkpoint(step, curve_entry)`` after each checkpoint is
            saved (e.g. to stop a run early in tests).
    """
    import torch
    from tqdm.auto import tqdm

    from imaginebench.algos.factory import build_algorithm
    from imaginebench.algos.sampler import MixedReplaySource, fast_update

    domain, algo_spec = _domain_and_algo(spec)
    path = run_dir(spec, algo_spec.name)
    record_path = path / RECORD_NAME
    if record_path.exists():
        record = read_record(record_path)
        _check_settings(record.get("settings"), spec, path)
        return RunResult(record, path, skipped=True)

    if encoder is None:
        from imaginebench.language import get_encoder

        encoder = get_encoder(spec.encoder)
    config = algo_spec.default_config(**dict(spec.algo_options))
    sources, weights, source_info = load_sources(spec, domain.env_id)

    started = time.perf_counter()
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    source = MixedReplaySource(sources, weights, encoder=encoder, seed=spec.seed,
                               action_size=domain.action_dim if domain.discrete_actions else None)
    torch.manual_seed(spec.seed)
    algo = build_algorithm(config, source, batch_size=spec.batch, standardize=spec.standardize)

    path.mkdir(parents=True, exist_ok=True)
    ckpt_path = path / CHECKPOINT_NAME
    curve: list[dict[str, Any]] = []
    step = 0
    elapsed = {"train": 0.0, "eval": 0.0}
    if ckpt_path.exists():
        state = _load_checkpoint(ckpt_path, algo, source.rng)
        _check_settings(state.get("settings"), spec, path)
        step, curve, elapsed = int(state["step"]), list(state["curve"]), dict(state["elapsed"])
    resumed_from = step

    levels = eval_levels(spec.level)
    evaluators = {lv: Evaluator(domain.env_id, lv, spec.episodes_per_task, spec.seed, encoder,
                                pool=spec.eval_pool, env_factory=env_factory) for lv in levels}
    policy = d3rlpy_policy(algo)
    label = f"{domain.env_id} {algo_spec.name} {spec.level}/{spec.data_tag} seed {spec.seed}"
    bar = tqdm(total=spec.steps, initial=step, desc=label, unit="step", disable=not progress, dynamic_ncols=True)
    try:
        while step < spec.steps:
            chunk = min(spec.every - step % spec.every, spec.steps - step)
            t0 = time.perf_counter()
            for _ in range(chunk):
                loss = fast_update(algo, source.sample_transition_batch(spec.batch))
            elapsed["train"] += time.perf_counter() - t0
            step += chunk
            bar.update(chunk)
            if step % spec.every == 0 or step == spec.steps:
                t0 = time.perf_counter()
                entry: dict[str, Any] = {"step": step, "loss": {k: float(v) for k, v in loss.items()}}
                for lv, evaluator in evaluators.items():
                    entry[lv] = evaluator(policy).to_dict()
                elapsed["eval"] += time.perf_counter() - t0
                curve.append(entry)
                _save_checkpoint(ckpt_path, algo, step, curve, source.rng, elapsed, spec.settings())
                bar.set_postfix({lv: f"{entry[lv]['success']:.0%}" for lv in levels})
                if on_checkpoint is not None:
                    on_checkpoint(step, entry)
    finally:
        bar.close()
        for evaluator in evaluators.values():
            evaluator.close()

    encoder_name = str(getattr(encoder, "name", spec.encoder or "default"))
    record = _record(spec, algo_spec, domain, config, source, encoder_name, source_info, curve, levels)
    if env_factory is None:  # a custom env factory has no cached references to compare with
        add_references(record)
    wall = time.perf_counter() - started
    record["timing"] = {
        "wall_time_s": round(wall, 3), "train_time_s": round(elapsed["train"], 3),
        "eval_time_s": round(elapsed["eval"], 3),
        "steps_per_s": round((spec.steps - resumed_from) / elapsed["train"], 2) if elapsed["train"] else None,
        "started_at": started_at, "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "resumed_from_step": resumed_from,
    }
    algo.save(str(path / MODEL_NAME))
    write_json(record_path, record)
    ckpt_path.unlink(missing_ok=True)
    return RunResult(record, path, skipped=False, resumed_from=resumed_from)


def add_references(record: dict[str, Any]) -> dict[str, Any]:
    """Add the random and expert policies' success on the run's own evaluation episodes, and
    the normalised score (0 = random, 100 = expert), to ``record`` (in place; returned)."""
    from imaginebench.evaluation.reference import normalised_score, reference_scores

    refs, norm = {}, {}
    for lv in record["eval"]["levels"]:
        ref = reference_scores(record["env"], lv, record["eval"]["episodes_per_task"], record["seed"])
        refs[lv] = {"random": ref["random"]["success"], "expert": ref["expert"]["success"],
                    "episodes": ref["episodes"]}
        value = normalised_score(record["score"][lv], refs[lv]["random"], refs[lv]["expert"])
        norm[lv] = value if np.isfinite(value) else None  # null: the expert is not above chance here
    record["reference"] = refs
    record["normalised"] = norm
    return record


def _record(spec: RunSpec, algo_spec: AlgoSpec, domain: Any, config: Any, source: Any, encoder_name: str,
            source_info: list[dict[str, Any]], curve: list[dict[str, Any]], levels: tuple[str, ...]) -> dict[str, Any]:
    tail = curve[-LAST_CHECKPOINTS:]
    score = {lv: last_checkpoints_mean([c[lv]["success"] for c in curve]) for lv in levels}
    per_task = {lv: {task: float(np.mean([c[lv]["per_task"][task] for c in tail])) for task in tail[-1][lv]["per_task"]}
                for lv in levels} if tail else {}
    return {
        "schema_version": SCHEMA_VERSION,
        "env": domain.env_id, "level": spec.level, "algo": algo_spec.name, "algo_family": algo_spec.family,
        "algo_label": algo_spec.label, "algo_requested": spec.algo, "tag": spec.tag, "seed": spec.seed,
        "profile": spec.profile_name, "settings": spec.settings(),
        "data": spec.data_tag, "sources": source_info, "mix_ratio": spec.mix_ratio if len(source_info) > 1 else 0.0,
        "steps": spec.steps, "checkpoint_every": spec.every, "batch_size": spec.batch,
        "eval": {"levels": list(levels), "episodes_per_task": spec.episodes_per_task,
                 "episodes": {lv: curve[-1][lv]["episodes"] for lv in levels} if curve else {},
                 "last_checkpoints": min(LAST_CHECKPOINTS, len(curve))},
        "score": score, "success": score[spec.level], "per_task": per_task, "curve": curve,
        "config": {"algorithm": config.to_dict(), "encoder": encoder_name,
                   "embedding_dim": source.embedding_dim, "state_dim": source.state_dim,
                   "standardize": spec.standardize, "mix_ratio": spec.mix_ratio,
                   "instructions": len(source.instructions)},
        "versions": versions(),
    }
