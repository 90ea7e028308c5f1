"""One offline RL run, end to end: data -> mixed sampler -> d3rlpy algorithm -> checkpoints,
evaluation -> results record.  Runs resume from their last checkpoint and finished runs are
skipped (:mod:`imaginebench.run_folder`; the record's fields: :mod:`imaginebench.evaluation.records`).

>>> from imaginebench.training import RunSpec, train
>>> result = train(RunSpec("CLEVR-v0", "discrete_bc", level="rephrase", seed=0, profile="tiny"))
>>> result.record["success"]
"""

from __future__ import annotations

import io
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from imaginebench.algos.weights import load_impl_state
from imaginebench.evaluation.protocol import Evaluator, d3rlpy_policy, eval_levels
from imaginebench.evaluation.retrieval import NearestTrainInstruction
from imaginebench.limits import check_training_memory
from imaginebench.training.record import add_references, build_record
from imaginebench.training.sources import load_sources
from imaginebench.training.spec import ResolvedRun, RunSpec, resolve_run


def _wanted_settings(spec: RunSpec, algorithm: dict[str, Any]) -> dict[str, Any]:
    """What a finished run or a checkpoint must hold to be skipped or resumed: the spec's settings
    and one entry per algorithm field (``algorithm <field>``), so a run made under other package
    defaults is not passed off as one of the current defaults."""
    return {**spec.settings(), **{f"algorithm {k}": v for k, v in algorithm.items()}}


def _absent_settings(algo_spec: Any) -> dict[str, Any]:
    """What an algorithm field a record or checkpoint does not name was when it was made: the
    algorithm's own default (a field is added at the default that keeps the old behaviour), so
    a finished run does not clash with a package that has grown a field since."""
    return {f"algorithm {k}": v for k, v in algo_spec.default_config().to_dict().items()}


def _recorded_settings(record: dict[str, Any]) -> dict[str, Any] | None:
    found = record.get("settings")
    if found is None:
        return None
    return {**found, **{f"algorithm {k}": v for k, v in record.get("config", {}).get("algorithm", {}).items()}}


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


def _checkpoint_state(run: "_Run", torch_rng) -> dict[str, Any]:
    buf = io.BytesIO()
    run.algo.impl.save_model(buf)
    return {"step": run.step, "grad_step": run.algo.grad_step, "curve": run.curve, "model": buf.getvalue(),
            "sampler_rng": run.source.rng.bit_generator.state, "torch_rng": torch_rng,
            "elapsed": dict(run.elapsed), "settings": _wanted_settings(run.spec, run.config.to_dict())}


def _resume(run: "_Run") -> None:
    import torch

    state = run.folder.load_checkpoint(_wanted_settings(run.spec, run.config.to_dict()),
                                       restore=lambda st: load_impl_state(run.algo.impl, st["model"]),
                                       absent=_absent_settings(run.resolved.algo))
    run.algo.set_grad_step(int(state["grad_step"]))
    run.source.rng.bit_generator.state = state["sampler_rng"]
    torch.set_rng_state(state["torch_rng"])
    run.step, run.curve, run.elapsed = int(state["step"]), list(state["curve"]), dict(state["elapsed"])


@dataclass
class _Run:
    """One run being trained: its resolved spec, data, algorithm, evaluators and progress."""

    resolved: ResolvedRun
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
    followers: list["_Run"] = field(default_factory=list)
    """Runs whose training is this run's (:func:`training_key`): they only evaluate and save."""
    lock: Any = None
    """The folder's :class:`~imaginebench.fileio.WriterLock`, held until :meth:`close`."""
    batch: int = 0
    """Transitions (or windows) per gradient step: the config's ``batch_size`` if it sets one, else
    the run's (profile or ``--batch-size``)."""

    @property
    def spec(self) -> RunSpec:
        return self.resolved.spec

    @property
    def algo_spec(self) -> Any:
        return self.resolved.algo

    @property
    def domain(self) -> Any:
        return self.resolved.domain

    @property
    def folder(self) -> Any:
        return self.resolved.folder

    def close(self) -> None:
        for evaluator in self.evaluators.values():
            if evaluator is not None:
                evaluator.close()
        self.evaluators = {lv: None for lv in self.evaluators}
        if self.lock is not None:
            self.lock.release()


def _prepare(resolved: ResolvedRun, encoder: Any, env_factory: Callable[[str], Any] | None,
             device: str, env_pools: dict[tuple[str, str], list]) -> _Run | RunResult:
    """A finished run's :class:`RunResult`, or a :class:`_Run` ready to train (resumed if a
    checkpoint exists).  ``env_pools`` maps (env id, level) to the environment list its
    evaluators share with the other runs of one :func:`train_seeds` call."""
    spec, domain, algo_spec, folder = resolved.spec, resolved.domain, resolved.algo, resolved.folder
    config = resolved.config()
    if folder.finished:
        record = folder.read_record()
        folder.check(_recorded_settings(record), _wanted_settings(spec, config.to_dict()), _absent_settings(algo_spec))
        return RunResult(record, folder.path, skipped=True)

    # sizes that cannot fit are refused before anything is loaded, encoded or written
    check_training_memory(observation_dim=domain.state_dim + int(encoder.dim), action_size=domain.action_dim,
                          hidden_units=tuple(getattr(config, "hidden_units", ())),
                          batch_size=int(config.batch_size or spec.batch), what=f"{algo_spec.name} on {domain.env_id}")
    sources, weights, source_info = load_sources(spec, domain.env_id)
    # one writer per run folder: a second process is refused, naming the first
    claimed = folder.claim(lambda: _build(resolved, config, sources, weights, source_info, encoder, env_factory, device,
                                          env_pools))
    if claimed is None:  # another process finished it while this one was loading
        return _prepare(resolved, encoder, env_factory, device, env_pools)
    run, run.lock = claimed
    return run


def _build(resolved: ResolvedRun, config: Any, sources: Any, weights: Any, source_info: list[dict[str, Any]],
           encoder: Any, env_factory: Callable[[str], Any] | None, device: str,
           env_pools: dict[tuple[str, str], list]) -> _Run:
    """The run's sampler, algorithm (resumed from its checkpoint if there is one) and evaluators."""
    import torch

    from imaginebench.algos.factory import build_algorithm
    from imaginebench.algos.sampler import MixedReplaySource

    spec, domain, folder = resolved.spec, resolved.domain, resolved.folder
    started = time.perf_counter()
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    source = MixedReplaySource(sources, weights, encoder=encoder, seed=spec.seed,
                               action_size=domain.action_dim if domain.discrete_actions else None)
    batch = config.batch_size or spec.batch
    torch.manual_seed(spec.seed)
    algo = build_algorithm(config, source, batch_size=batch, standardize=spec.standardize, device=device,
                           total_steps=spec.steps)
    run = _Run(resolved, config, source, source_info, algo, None, {},
               str(getattr(encoder, "name", spec.encoder or "default")), started, started_at, batch=batch)
    if folder.checkpoint_path.exists():
        _resume(run)
    run.resumed_from = run.step
    # the run's own random stream (the global one right after seeding and building, or as checkpointed)
    run.generator = torch.Generator()
    run.generator.set_state(torch.get_rng_state())
    # the retrieval baseline: novel instructions mapped to the nearest train phrasing (train level as given)
    retrieve = NearestTrainInstruction(domain.env_id, encoder) if spec.data == "real-retrieval" else None
    run.evaluators = {lv: Evaluator(domain.env_id, lv, spec.episodes_per_task, spec.seed, encoder,
                                    pool=spec.eval_pool, env_factory=env_factory,
                                    retrieve=None if lv == "train" else retrieve,
                                    envs=env_pools.setdefault((domain.env_id, lv), []))
                      for lv in eval_levels(spec.level)}
    return run


def training_key(spec: RunSpec, algo_name: str) -> tuple[Any, ...] | None:
    """What makes two runs' training identical, or ``None`` for a run that trains on more than the
    real train data.  Real-only runs (any level, with or without retrieval) with equal keys train
    the same network on the same batches and differ only in what they evaluate, so one of them
    trains and the others follow it (:func:`train_seeds`)."""
    if spec.data_tag not in ("real", "real-retrieval"):
        return None
    return (spec.env_id, algo_name, spec.tag, spec.profile_name, spec.seed, repr(spec.settings()), spec.curve)


def _evaluate(run: _Run, policy: Any, done: dict[tuple[str, bool], dict[str, Any]]) -> dict[str, Any]:
    """``run``'s evaluations of ``policy``, each (level, retrieval or not) computed once per
    checkpoint across a run and its followers (same seed, so the same episodes)."""
    out = {}
    for lv, evaluator in run.evaluators.items():
        key = (lv, evaluator.retrieve is not None)
        if key not in done:
            done[key] = evaluator(policy).to_dict()
        out[lv] = done[key]
    return out


def _checkpoint(run: _Run, loss: dict[str, float], torch_rng,
                on_checkpoint: Callable[[int, dict[str, Any]], None] | None) -> dict[str, Any]:
    """Evaluate ``run`` (and its followers) at its current step (unless the run evaluates only its
    scored checkpoints and this is not one: :meth:`RunSpec.evaluates_at`), append the evaluation
    to the curves and save the checkpoints."""
    evaluated = run.spec.evaluates_at(run.step)
    policy = d3rlpy_policy(run.algo) if evaluated else None
    done: dict[tuple[str, bool], dict[str, Any]] = {}
    for member in (run, *run.followers):
        t0 = time.perf_counter()
        member.step, member.elapsed["train"] = run.step, run.elapsed["train"]
        entry: dict[str, Any] = {"step": run.step, "loss": {k: float(v) for k, v in loss.items()},
                                 **(_evaluate(member, policy, done) if evaluated else {})}
        member.elapsed["eval"] += time.perf_counter() - t0
        if evaluated:
            member.curve.append(entry)
        member.folder.save_checkpoint(_checkpoint_state(member, torch_rng))
        if member is run:
            first = entry
    if on_checkpoint is not None:  # after every member's checkpoint is saved
        on_checkpoint(run.step, first)
    return first


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
            bar.set_postfix({lv: f"{entry[lv]['success']:.0%}" for lv in run.evaluators if lv in entry})
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
    sampler = StackedSampler(runs[0].source, [r.source.rng for r in runs], device, runs[0].algo.config.observation_scaler,
                             runs[0].algo.config.action_scaler)
    cuda = str(device).startswith("cuda") and trainer.graphable
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
                        trainer.step(sampler.sample(trainer.source_rows(runs[0].batch)))
            trainer.write_back()
            dt = time.perf_counter() - t0
            losses = trainer.losses()
            bar.update(chunk)
            post = {}
            for run, generator, loss in zip(runs, generators, losses):
                run.elapsed["train"] += dt
                run.step += chunk
                entry = _checkpoint(run, loss, generator.get_state(), on_checkpoint)
                if run.spec.level in entry:
                    post[f"s{run.spec.seed}"] = f"{entry[run.spec.level]['success']:.0%}"
            if post:
                bar.set_postfix(post)
    finally:
        bar.close()


def _finish(run: _Run, env_factory) -> RunResult:
    spec = run.spec
    record = build_record(run.resolved, run.config, run.source, run.encoder_name, run.source_info, run.curve,
                          tuple(run.evaluators))
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
    run.folder.finish(record, run.algo)
    return RunResult(record, run.folder.path, skipped=False, resumed_from=run.resumed_from)


def stackable(runs: list[_Run]) -> bool:
    """Whether ``runs`` can train together: one stacked-capable algorithm and config, same data and
    settings, same step, only the seed differing."""
    from imaginebench.algos.vectorised import stacked_trainers

    first = runs[0]
    if type(first.algo).__name__ not in stacked_trainers():
        return False
    key = lambda r: (r.spec.env_id, r.algo_spec.name, r.spec.level, r.spec.data_tag, r.spec.tag,  # noqa: E731
                     r.spec.profile_name, repr(r.spec.settings()), r.step, str(r.algo.impl.device))
    return all(key(r) == key(first) for r in runs)


def _carrier_for(run: _Run, carriers: list[_Run]) -> _Run | None:
    """The run among ``carriers`` whose training ``run`` can share (same :func:`training_key`,
    same step), if any."""
    key = training_key(run.spec, run.algo_spec.name)
    if key is None:
        return None
    for carrier in carriers:
        if training_key(carrier.spec, carrier.algo_spec.name) == key and carrier.step == run.step:
            return carrier
    return None


def _follow(run: _Run, carrier: _Run) -> None:
    """Make ``run`` evaluate ``carrier``'s network instead of training its own: its checkpoints then
    hold exactly what its own training would have saved (model, sampler and torch streams)."""
    run.algo, run.source, run.generator = carrier.algo, carrier.source, carrier.generator
    carrier.followers.append(run)


def train_seeds(specs: list[RunSpec], *, stack: bool = True, device: str = "cpu:0", progress: bool = True,
                encoder: Any = None, env_factory: Callable[[str], Any] | None = None,
                on_checkpoint: Callable[[int, dict[str, Any]], None] | None = None,
                share: bool = True) -> list[RunResult]:
    """Train and evaluate several runs (usually seeds of one setting), resuming or skipping each.

    With ``stack`` (the default), unfinished runs that differ only in their seed and whose
    algorithm has a stacked trainer (:func:`imaginebench.algos.vectorised.stacked_trainers`) train
    together in one process with stacked parameters — each seed's numbers equal those of
    training it alone, within float tolerance.  Runs resumed at different steps, and the other
    algorithms, train one after another through d3rlpy's update.  With ``share`` (the default),
    real-only runs of several levels or of the retrieval baseline that would train the same
    network (:func:`training_key`) train it once: the others evaluate it at every checkpoint and
    write their own checkpoints and records, equal to those of training alone.

    Args:
        specs: the runs.
        stack: train fitting seeds together.
        share: train identical real-only trainings once.
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
    # one pool of evaluation envs per (env, level) for all the runs: they evaluate one at a time
    env_pools: dict[tuple[str, str], list] = {}
    try:
        for i, spec in enumerate(specs):
            prepared = _prepare(resolve_run(spec), encoder or encoders[spec.encoder], env_factory, device, env_pools)
            if isinstance(prepared, RunResult):
                results[i] = prepared
            else:
                pending.append((i, prepared))
        carriers: list[tuple[int, _Run]] = []
        followers: list[tuple[int, _Run]] = []
        for item in pending:
            carrier = _carrier_for(item[1], [r for _, r in carriers]) if share else None
            if carrier is None:
                carriers.append(item)
            else:
                _follow(item[1], carrier)
                followers.append(item)
        groups: list[list[tuple[int, _Run]]] = []
        for item in carriers:
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
                for follower in run.followers:
                    follower.engine = {**run.engine, "trained_with": f"{run.spec.level}/{run.spec.data_tag}"}
                    follower.close()
                    results[next(j for j, r in followers if r is follower)] = _finish(follower, env_factory)
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


