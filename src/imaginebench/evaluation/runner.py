"""One offline RL run, end to end: data -> mixed sampler -> d3rlpy algorithm -> checkpoints,
evaluation -> results record.  Runs resume from their last checkpoint and finished runs are
skipped (see :mod:`imaginebench.evaluation.records` for the layout on disk).

>>> from imaginebench.evaluation import RunSpec, train
>>> result = train(RunSpec("CLEVR-v0", "discrete_bc", level="rephrase", seed=0, profile="tiny"))
>>> result.record["success"]
"""

from __future__ import annotations

import hashlib
import io
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

from imaginebench.algos.registry import AlgoSpec, resolve
from imaginebench.config import get_profile
from imaginebench.domains.base import check_level
from imaginebench.errors import UsageError, choice_error
from imaginebench.fileio import atomic_path, check_writable, first_line, remove_temporaries, torch_load_plain
from imaginebench.limits import check_training_memory
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
            raise UsageError(f"tag must be letters, digits, '.', '_' or '-', got {self.tag!r}.")
        if self.data not in DATA_VARIANTS:
            raise choice_error("training data variant", self.data, DATA_VARIANTS)
        if self.data == "real-upper-bound" and self.level == "train":
            raise UsageError("The Real upper bound needs a novel level (rephrase, easy or hard), not train.")
        if not 0.0 < self.mix_ratio < 1.0:
            raise UsageError(f"mix_ratio must lie strictly between 0 and 1, got {self.mix_ratio}.")
        for name in ("train_steps", "checkpoint_every", "eval_episodes_per_task", "batch_size"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise UsageError(f"{name} must be positive, got {value}.")
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


def _check_settings(found: dict[str, Any] | None, spec: RunSpec, where: Path,
                    algorithm: dict[str, Any] | None = None) -> None:
    """Refuse to skip or resume a run made with other settings — or with other algorithm values
    (``algorithm``: the config's fields, compared when the found run recorded them, so a finished
    run made under older package defaults is not passed off as one of the current defaults)."""
    if found is None:
        return
    wanted = spec.settings()
    if algorithm is not None and "algorithm" in found:  # one entry per field, named "algorithm <field>"
        wanted.update({f"algorithm {k}": v for k, v in algorithm.items()})
        found = {**found, **{f"algorithm {k}": v for k, v in found["algorithm"].items()}}
    diff = ", ".join(f"{k} {found.get(k)!r} there vs {wanted[k]!r} now" for k in wanted if found.get(k) != wanted[k])
    if not diff:
        return
    raise ValueError(f"{where} holds a run with other settings ({diff}). Give this run a --tag (e.g. --tag variant) "
                     f"so both are kept; the finished run there is left as it is.")


def load_sources(spec: RunSpec, env_id: str) -> tuple[dict[str, Any], dict[str, float], list[dict[str, Any]]]:
    """Datasets, batch shares and a description of each source for ``spec``.

    Raises ``FileNotFoundError`` naming the command that builds a missing dataset.
    """
    from imaginebench.data.hub import (check_sources_match, dataset_path, imaginary_path, imagine_command,
                                       load_imaginary, load_real, reference_available)

    real = load_real(env_id, "train", spec.profile)
    sources = {"real": real}
    described = [("real", "real", "train")]
    paths = {"real": str(dataset_path(env_id, "real", "train", spec.profile))}
    if spec.data_tag in IMAGINARY_DATA:
        variant = IMAGINARY_DATA[spec.data_tag]
        found = (imaginary_path(env_id, spec.level, spec.profile, variant).exists()
                 or reference_available(env_id, spec.level, spec.profile, variant))
        imaginary = load_imaginary(env_id, spec.level, spec.profile, variant) if found else None
        if imaginary is None:  # one error line, not load_imaginary's warning followed by it
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
        paths[f"real-{spec.level}"] = str(dataset_path(env_id, "real", spec.level, spec.profile))
        described.append((f"real-{spec.level}", "real", spec.level))
    check_sources_match(env_id, sources, paths, {name: level for name, _, level in described}, spec.profile)
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
                     elapsed: dict[str, float], settings: dict[str, Any], torch_rng) -> None:
    import torch

    buf = io.BytesIO()
    algo.impl.save_model(buf)
    state = {"step": step, "grad_step": algo.grad_step, "curve": curve, "model": buf.getvalue(),
             "model_sha256": hashlib.sha256(buf.getvalue()).hexdigest(),
             "sampler_rng": sampler_rng.bit_generator.state, "torch_rng": torch_rng,
             "elapsed": dict(elapsed), "settings": settings}
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def _load_checkpoint(path: Path, algo, sampler_rng: np.random.Generator) -> dict[str, Any]:
    import torch

    from imaginebench.algos.weights import load_impl_state

    try:
        state = torch_load_plain(path)  # plain data: no pickled code runs
        digest = state.get("model_sha256")  # absent in checkpoints written before it was recorded
        if digest is not None and hashlib.sha256(state["model"]).hexdigest() != digest:
            raise ValueError("the model and optimiser bytes do not match their SHA-256")
        load_impl_state(algo.impl, state["model"])
    except Exception as exc:  # a damaged checkpoint is an error, never silently ignored
        raise ValueError(f"Cannot resume from {path} ({first_line(exc)}); delete that file to restart the run "
                         "from scratch.") from None
    algo.set_grad_step(int(state["grad_step"]))
    sampler_rng.bit_generator.state = state["sampler_rng"]
    torch.set_rng_state(state["torch_rng"])
    return state


@dataclass
class _Run:
    """One run being trained: its spec, data, algorithm, evaluators and progress."""

    spec: RunSpec
    algo_spec: AlgoSpec
    domain: Any
    path: Path
    config: Any
    source: Any
    source_info: list[dict[str, Any]]
    algo: Any
    generator: Any
    """``torch.Generator`` holding this run's stream for randomness inside updates."""
    evaluators: dict[str, Any]
    encoder_name: str
    started: float
    started_at: str
    curve: list[dict[str, Any]] = field(default_factory=list)
    step: int = 0
    resumed_from: int = 0
    elapsed: dict[str, float] = field(default_factory=lambda: {"train": 0.0, "eval": 0.0})
    engine: dict[str, Any] = field(default_factory=dict)
    batch: int = 0
    """Transitions (or windows) per gradient step: the config's ``batch_size`` if it sets one, else
    the run's (profile or ``--batch-size``)."""

    @property
    def ckpt_path(self) -> Path:
        return self.path / CHECKPOINT_NAME

    def close(self) -> None:
        for evaluator in self.evaluators.values():
            if evaluator is not None:
                evaluator.close()
        self.evaluators = {lv: None for lv in self.evaluators}


def _prepare(spec: RunSpec, encoder: Any, env_factory: Callable[[str], Any] | None, device: str) -> _Run | RunResult:
    """A finished run's :class:`RunResult`, or a :class:`_Run` ready to train (resumed if a
    checkpoint exists)."""
    import torch

    from imaginebench.algos.factory import build_algorithm
    from imaginebench.algos.sampler import MixedReplaySource

    domain, algo_spec = _domain_and_algo(spec)
    path = run_dir(spec, algo_spec.name)
    record_path = path / RECORD_NAME
    config = algo_spec.default_config(**dict(spec.algo_options))
    if record_path.exists():
        record = read_record(record_path)
        found = record.get("settings")
        if found is not None and "algorithm" in record.get("config", {}):
            found = {**found, "algorithm": record["config"]["algorithm"]}
        _check_settings(found, spec, path, config.to_dict())
        return RunResult(record, path, skipped=True)

    # sizes that cannot fit are refused before anything is loaded, encoded or written
    check_training_memory(observation_dim=domain.state_dim + int(encoder.dim), action_size=domain.action_dim,
                          hidden_units=tuple(getattr(config, "hidden_units", ())),
                          batch_size=int(config.batch_size or spec.batch), what=f"{algo_spec.name} on {domain.env_id}")
    sources, weights, source_info = load_sources(spec, domain.env_id)
    check_writable(path)
    for name in (CHECKPOINT_NAME, RECORD_NAME, MODEL_NAME, "model.pt"):  # temporaries of a killed earlier attempt
        remove_temporaries(path / name)
    started = time.perf_counter()
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    source = MixedReplaySource(sources, weights, encoder=encoder, seed=spec.seed,
                               action_size=domain.action_dim if domain.discrete_actions else None)
    batch = config.batch_size or spec.batch
    torch.manual_seed(spec.seed)
    algo = build_algorithm(config, source, batch_size=batch, standardize=spec.standardize, device=device)
    path.mkdir(parents=True, exist_ok=True)
    run = _Run(spec, algo_spec, domain, path, config, source, source_info, algo, None, {},
               str(getattr(encoder, "name", spec.encoder or "default")), started, started_at, batch=batch)
    if run.ckpt_path.exists():
        state = _load_checkpoint(run.ckpt_path, algo, source.rng)
        _check_settings(state.get("settings"), spec, path, config.to_dict())
        run.step, run.curve, run.elapsed = int(state["step"]), list(state["curve"]), dict(state["elapsed"])
    run.resumed_from = run.step
    # the run's own random stream (the global one right after seeding and building, or as checkpointed)
    run.generator = torch.Generator()
    run.generator.set_state(torch.get_rng_state())
    run.evaluators = {lv: Evaluator(domain.env_id, lv, spec.episodes_per_task, spec.seed, encoder,
                                    pool=spec.eval_pool, env_factory=env_factory)
                      for lv in eval_levels(spec.level)}
    return run


def _checkpoint(run: _Run, loss: dict[str, float], torch_rng,
                on_checkpoint: Callable[[int, dict[str, Any]], None] | None) -> dict[str, Any]:
    """Evaluate ``run`` at its current step, append to its curve and save its checkpoint."""
    t0 = time.perf_counter()
    entry: dict[str, Any] = {"step": run.step, "loss": {k: float(v) for k, v in loss.items()}}
    policy = d3rlpy_policy(run.algo)
    for lv, evaluator in run.evaluators.items():
        entry[lv] = evaluator(policy).to_dict()
    run.elapsed["eval"] += time.perf_counter() - t0
    run.curve.append(entry)
    _save_checkpoint(run.ckpt_path, run.algo, run.step, run.curve, run.source.rng, run.elapsed,
                     {**run.spec.settings(), "algorithm": run.config.to_dict()}, torch_rng)
    if on_checkpoint is not None:
        on_checkpoint(run.step, entry)
    return entry


@contextmanager
def flushed_denormals():
    """Gradient steps with denormal floats (below ~1.2e-38) flushed to zero on the CPU, the thread's
    previous setting restored after.  Matrix products over gradients full of denormals run several
    times slower (Cal-QL's calibrated log-sum-exp made HalfCheetah steps 2.5x slower than CQL's,
    same shapes); only values that small change.  Evaluation (the simulators) runs outside it."""
    import torch

    was = float(torch.tensor([1e-40], dtype=torch.float32)[0]) == 0.0  # already flushing?
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(was)


def _next_chunk(spec: RunSpec, step: int) -> int:
    return min(spec.every - step % spec.every, spec.steps - step)


def _train_alone(run: _Run, progress: bool, on_checkpoint) -> None:
    """d3rlpy's own update, one run (algorithms without a stacked trainer, or ``stack=False``)."""
    import torch
    from tqdm.auto import tqdm

    spec, source, algo = run.spec, run.source, run.algo
    torch.set_rng_state(run.generator.get_state())
    label = f"{run.domain.env_id} {run.algo_spec.name} {spec.level}/{spec.data_tag} seed {spec.seed}"
    bar = tqdm(total=spec.steps, initial=run.step, desc=label, unit="step", disable=not progress, dynamic_ncols=True)
    run.engine = {"engine": "d3rlpy", "stacked_seeds": 1, "device": str(algo.impl.device)}
    try:
        while run.step < spec.steps:
            chunk = _next_chunk(spec, run.step)
            t0 = time.perf_counter()
            with flushed_denormals():
                for _ in range(chunk):
                    loss = run.config.update(algo, source, run.batch)
            run.elapsed["train"] += time.perf_counter() - t0
            run.step += chunk
            bar.update(chunk)
            entry = _checkpoint(run, loss, torch.get_rng_state(), on_checkpoint)
            bar.set_postfix({lv: f"{entry[lv]['success']:.0%}" for lv in run.evaluators})
    finally:
        bar.close()


def _train_stacked(runs: list[_Run], progress: bool, on_checkpoint) -> None:
    """Runs that differ only in their seed, trained together with stacked parameters
    (:mod:`imaginebench.algos.vectorised`); each run's numbers equal those of training it alone."""
    from tqdm.auto import tqdm

    from imaginebench.algos.vectorised import trainer_for
    from imaginebench.algos.vectorised.batches import StackedSampler

    spec = runs[0].spec
    device = runs[0].algo.impl.device
    generators = [r.generator for r in runs]
    trainer = trainer_for([r.algo for r in runs], generators)
    sampler = StackedSampler(runs[0].source, [r.source.rng for r in runs], device, runs[0].algo.config.observation_scaler)
    cuda = str(device).startswith("cuda")
    seeds = ",".join(str(r.spec.seed) for r in runs)
    label = f"{runs[0].domain.env_id} {runs[0].algo_spec.name} {spec.level}/{spec.data_tag} seeds {seeds}"
    bar = tqdm(total=spec.steps, initial=runs[0].step, desc=label, unit="step", disable=not progress,
               dynamic_ncols=True)
    for run in runs:
        run.engine = {"engine": "stacked", "stacked_seeds": len(runs), "device": str(device)}
    try:
        while runs[0].step < spec.steps:
            chunk = _next_chunk(spec, runs[0].step)
            t0 = time.perf_counter()
            with flushed_denormals():
                for _ in range(chunk):
                    if cuda:  # one CUDA-graph replay per step (same arithmetic as the eager step)
                        trainer.graph_step(sampler, runs[0].batch)
                    else:
                        trainer.step(sampler.sample(runs[0].batch))
            trainer.write_back()
            dt = time.perf_counter() - t0
            losses = trainer.losses()
            bar.update(chunk)
            post = {}
            for run, generator, loss in zip(runs, generators, losses):
                run.elapsed["train"] += dt
                run.step += chunk
                entry = _checkpoint(run, loss, generator.get_state(), on_checkpoint)
                post[f"s{run.spec.seed}"] = f"{entry[run.spec.level]['success']:.0%}"
            bar.set_postfix(post)
    finally:
        bar.close()


def _finish(run: _Run, env_factory) -> RunResult:
    spec = run.spec
    record = _record(spec, run.algo_spec, run.domain, run.config, run.source, run.encoder_name, run.source_info,
                     run.curve, tuple(run.evaluators))
    if env_factory is None:  # a custom env factory has no cached references to compare with
        add_references(record)
    wall = time.perf_counter() - run.started
    trained = spec.steps - run.resumed_from
    record["timing"] = {
        "wall_time_s": round(wall, 3), "train_time_s": round(run.elapsed["train"], 3),
        "eval_time_s": round(run.elapsed["eval"], 3),
        "steps_per_s": round(trained / run.elapsed["train"], 2) if run.elapsed["train"] else None,
        "started_at": run.started_at, "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "resumed_from_step": run.resumed_from, **run.engine,
    }
    from imaginebench.algos.weights import MODEL_FILE, save_model

    record["files"] = {MODEL_FILE: save_model(run.algo, run.path / MODEL_FILE)}  # what finetune --from reads
    with atomic_path(run.path / MODEL_NAME) as tmp:  # d3rlpy's format, an export for its users: never read here
        run.algo.save(str(tmp))
    write_json(run.path / RECORD_NAME, record)
    run.ckpt_path.unlink(missing_ok=True)
    return RunResult(record, run.path, skipped=False, resumed_from=run.resumed_from)


def stackable(runs: list[_Run]) -> bool:
    """Whether ``runs`` can train together: one stacked-capable algorithm and config, same data and
    settings, same step, only the seed differing."""
    from imaginebench.algos.vectorised import STACKED

    first = runs[0]
    if type(first.algo).__name__ not in STACKED:
        return False
    key = lambda r: (r.spec.env_id, r.algo_spec.name, r.spec.level, r.spec.data_tag, r.spec.tag,  # noqa: E731
                     r.spec.profile_name, repr(r.spec.settings()), r.step, str(r.algo.impl.device))
    return all(key(r) == key(first) for r in runs)


def train_seeds(specs: list[RunSpec], *, stack: bool = True, device: str = "cpu:0", progress: bool = True,
                encoder: Any = None, env_factory: Callable[[str], Any] | None = None,
                on_checkpoint: Callable[[int, dict[str, Any]], None] | None = None) -> list[RunResult]:
    """Train and evaluate several runs (usually seeds of one setting), resuming or skipping each.

    With ``stack`` (the default), unfinished runs that differ only in their seed and whose
    algorithm has a stacked trainer (:data:`imaginebench.algos.vectorised.STACKED`) train
    together in one process with stacked parameters — each seed's numbers equal those of
    training it alone, within float tolerance.  Runs resumed at different steps, and the other
    algorithms, train one after another through d3rlpy's update.

    Args:
        specs: the runs.
        stack: train fitting seeds together.
        device: torch device (``"cpu:0"``, ``"cuda:0"``): networks, data and sampling live there.
        progress, encoder, env_factory, on_checkpoint: as for :func:`train`.
    """
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"--device {device}: torch sees no CUDA device here; use --device cpu.")
    if encoder is None:
        from imaginebench.language import get_encoder

        names = {s.encoder for s in specs}
        encoders = {n: get_encoder(n) for n in names}
    results: dict[int, RunResult] = {}
    pending: list[tuple[int, _Run]] = []
    try:
        for i, spec in enumerate(specs):
            prepared = _prepare(spec, encoder or encoders[spec.encoder], env_factory, device)
            if isinstance(prepared, RunResult):
                results[i] = prepared
            else:
                pending.append((i, prepared))
        groups: list[list[tuple[int, _Run]]] = []
        for item in pending:
            for group in groups:
                if stack and stackable([group[0][1], item[1]]):
                    group.append(item)
                    break
            else:
                groups.append([item])
        for group in groups:
            runs = [r for _, r in group]
            if len(runs) > 1 or (stack and device.startswith("cuda") and stackable(runs)):
                _train_stacked(runs, progress, on_checkpoint)
            else:
                _train_alone(runs[0], progress, on_checkpoint)
            for i, run in group:
                run.close()
                results[i] = _finish(run, env_factory)
    finally:
        for _, run in pending:
            run.close()
    return [results[i] for i in range(len(specs))]


def train(spec: RunSpec, *, progress: bool = True, encoder: Any = None,
          env_factory: Callable[[str], Any] | None = None,
          on_checkpoint: Callable[[int, dict[str, Any]], None] | None = None, device: str = "cpu:0") -> RunResult:
    """Train and evaluate one run (resuming or skipping it as its folder says).

    Args:
        spec: the run.
        progress: show a progress bar.
        encoder: an instruction encoder object (default: ``get_encoder(spec.encoder)``).
        env_factory: ``level -> raw env`` for evaluation (default ``imaginebench.make``).
        on_checkpoint: called as ``on_checkpoint(step, curve_entry)`` after each checkpoint is
            saved (e.g. to stop a run early in tests).
        device: torch device.
    """
    return train_seeds([spec], stack=False, device=device, progress=progress, encoder=encoder,
                       env_factory=env_factory, on_checkpoint=on_checkpoint)[0]


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
        "steps": spec.steps, "checkpoint_every": spec.every, "batch_size": config.batch_size or spec.batch,
        "eval": {"levels": list(levels), "episodes_per_task": spec.episodes_per_task,
                 "episodes": {lv: curve[-1][lv]["episodes"] for lv in levels} if curve else {},
                 "last_checkpoints": min(LAST_CHECKPOINTS, len(curve))},
        "score": score, "success": score[spec.level], "per_task": per_task, "curve": curve,
        "config": {"algorithm": config.to_dict(), "encoder": encoder_name,
                   "embedding_dim": source.embedding_dim, "state_dim": source.state_dim,
                   "standardize": spec.standardize, "mix_ratio": spec.mix_ratio,
                   "instructions": len(source.instructions),
                   **({"derived": derived} if (derived := config.derived(source)) else {})},
        "versions": versions(),
    }
