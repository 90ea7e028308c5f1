"""One online fine-tune, end to end: start networks -> interaction on vector envs -> updates ->
evaluation at fixed environment-step intervals -> record.  Resumable after a kill (the
checkpoint holds the networks and optimisers, the online buffer, every sub-env's episode and
every random stream, so a resumed fine-tune writes the record an uninterrupted one would);
finished fine-tunes are skipped.

Layout under the data home: ``finetune/<env>/<profile>/<level>/<start>/<method>[@<tag>]/seed<k>/``,
a run folder (:mod:`imaginebench.run_folder`) like an offline run's.
"""

from __future__ import annotations

import dataclasses
import io
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

from imaginebench.algos._d3rlpy import load as load_d3rlpy
from imaginebench.algos import BuildContext
from imaginebench.algos.sampler import MixedReplaySource, fast_update
from imaginebench.algos.weights import load_impl_state
from imaginebench.data.hub import dataset_path, load_real
from imaginebench.envs.registry import env_spec, load_domain
from imaginebench.errors import UsageError
from imaginebench.evaluation.protocol import Evaluator, d3rlpy_policy
from imaginebench.evaluation.records import versions
from imaginebench.evaluation.reference import reference_scores
from imaginebench.finetune.buffer import OnlineBuffer, concat_batches
from imaginebench.finetune.interaction import Interaction
from imaginebench.finetune.spec import (
    STOCHASTIC, FinetuneSpec, Start, finetune_dir, method_config, resolve_method, resolve_start,
)
from imaginebench.language import get_encoder
from imaginebench.run_folder import RunFolder
from imaginebench.training.runner import flushed_denormals
from imaginebench.training.sources import load_sources
from imaginebench.training.spec import RunSpec

SCHEMA_VERSION = 1
METHOD_LABELS = {"discrete_cql": "CQL", "double_dqn": "Double DQN", "discrete_sac": "SAC", "td3bc": "TD3+BC",
                 "td3": "TD3", "rebrac": "ReBRAC", "cql": "CQL", "calql": "Cal-QL", "iql": "IQL", "sac": "SAC"}
ALIASES = {"policy": ("policy", "imitator"), "targ_policy": ("targ_policy", "policy", "imitator"),
           "targ_q_funcs": ("targ_q_funcs", "q_funcs")}
"""Where a method's module is looked for in the start's modules, in order (a BC start's
``imitator`` becomes the actor and its target)."""


@dataclass
class FinetuneResult:
    """What :func:`finetune` returns: the record, the folder, and whether it was skipped."""

    record: dict[str, Any]
    path: Path
    skipped: bool = False
    resumed_from: int = 0


# ---------------------------------------------------------------------------- networks
def transfer_modules(online: Any, offline: Any, method: str) -> dict[str, str]:
    """Copy the start's networks into the method's (by name, see :data:`ALIASES`); returns
    ``{method module: start module}``.  Optimisers stay fresh."""
    import torch

    source = {f.name: getattr(offline.impl.modules, f.name) for f in dataclasses.fields(offline.impl.modules)}
    moved: dict[str, str] = {}
    for f in dataclasses.fields(online.impl.modules):
        target = getattr(online.impl.modules, f.name)
        if not isinstance(target, torch.nn.Module):
            continue
        for name in ALIASES.get(f.name, (f.name,)):
            found = source.get(name)
            if isinstance(found, torch.nn.Module):
                try:
                    target.load_state_dict(found.state_dict())
                except RuntimeError as exc:
                    first = str(exc).strip().splitlines()[0]
                    raise UsageError(f"The start's {name} does not fit {method}'s {f.name} ({first}); start from a "
                                     "run with the same network sizes.") from None
                moved[f.name] = name
                break
    if not moved:
        raise UsageError(f"The start's networks ({', '.join(source)}) give {method} nothing to start from; pick "
                         "another --method.")
    return moved


def _module_names(algo: Any) -> list[str]:
    import torch

    return [f.name for f in dataclasses.fields(algo.impl.modules)
            if isinstance(getattr(algo.impl.modules, f.name), torch.nn.Module)]


class InstructionTable:
    """Phrasing -> row of an embedding table that grows as new phrasings appear."""

    def __init__(self, encoder: Any, texts: list[str] = ()) -> None:
        self.encoder = encoder
        self.rows: dict[str, int] = {}
        self.table = np.zeros((0, int(getattr(encoder, "dim", 0) or 0)), dtype=np.float32)
        if texts:
            self.ids(list(texts))

    def ids(self, texts: list[str]) -> np.ndarray:
        new = [t for t in dict.fromkeys(texts) if t not in self.rows]
        if new:
            emb = np.asarray(self.encoder.encode(new), dtype=np.float32)
            base = len(self.rows)
            self.table = np.concatenate([self.table.reshape(base, emb.shape[1]), emb]) if base else emb
            for i, t in enumerate(new):
                self.rows[t] = base + i
        return np.array([self.rows[t] for t in texts], dtype=np.int64)

    @property
    def texts(self) -> list[str]:
        return list(self.rows)


# ---------------------------------------------------------------------------- the run
@dataclass
class _Finetune:
    spec: FinetuneSpec
    start: Start
    method: str
    config: Any
    folder: RunFolder
    algo: Any
    moved: dict[str, str]
    interaction: Interaction
    buffer: OnlineBuffer
    table: InstructionTable
    evaluator: Any
    offline: Any  # MixedReplaySource of the offline data, or None
    offline_info: list[dict[str, Any]]
    explorer: Any
    rng: np.random.Generator
    encoder_name: str
    batch: int
    curve: list[dict[str, Any]] = field(default_factory=list)
    env_steps: int = 0
    states: np.ndarray | None = None
    instr: np.ndarray | None = None
    online: dict[str, float] = field(default_factory=lambda: {"episodes": 0, "successes": 0})
    elapsed: dict[str, float] = field(default_factory=lambda: {"env": 0.0, "update": 0.0, "eval": 0.0})
    resumed_from: int = 0
    started: float = 0.0
    started_at: str = ""
    lock: Any = None
    """The folder's :class:`~imaginebench.fileio.WriterLock`, released when the fine-tune ends."""

    @property
    def env_id(self) -> str:
        return str(self.evaluator.env_id)

    def settings(self) -> dict[str, Any]:
        return _settings(self.spec, self.method, self.config, self.start, self.encoder_name)


def _settings(spec: FinetuneSpec, method: str, config: Any, start: Start, encoder_name: str) -> dict[str, Any]:
    """What a finished fine-tune or a checkpoint must match to be skipped or resumed."""
    return {**spec.settings(), "method": method, "algorithm": config.to_dict(),
            "start_model_sha256": start.model_sha256, "encoder": encoder_name}


def _np_global_state() -> dict[str, Any]:
    state = np.random.get_state(legacy=False)
    return {**state, "state": {"key": state["state"]["key"].tolist(), "pos": int(state["state"]["pos"])}}


def _set_np_global_state(state: dict[str, Any]) -> None:
    np.random.set_state({**state, "state": {"key": np.asarray(state["state"]["key"], dtype=np.uint32),
                                            "pos": int(state["state"]["pos"])}})


def _offline_source(spec: FinetuneSpec, start: Start, encoder: Any, action_size: int | None):
    """The offline data a batch may draw from: the start run's sources, or the real training data
    for a scratch start; with their description."""
    if start.run is None:
        real = load_real(spec.env_id, "train", spec.profile)
        info = [{"name": "real", "source": "real", "level": "train", "episodes": len(real),
                 "transitions": real.num_transitions, "weight": 1.0,
                 "path": str(dataset_path(spec.env_id, "real", "train", spec.profile))}]
        return MixedReplaySource({"real": real}, encoder=encoder, seed=spec.seed, action_size=action_size), info
    rec = start.record
    run_spec = RunSpec(rec["env"], rec["algo"], level=rec["level"], seed=rec["seed"], profile=rec["profile"],
                       data=rec["data"], mix_ratio=rec["settings"]["mix_ratio"])
    sources, weights, info = load_sources(run_spec, rec["env"])
    return MixedReplaySource(sources, weights, encoder=encoder, seed=spec.seed, action_size=action_size), info


def _prepare(spec: FinetuneSpec, encoder: Any, device: str) -> _Finetune | FinetuneResult:
    """A finished fine-tune's :class:`FinetuneResult`, or a :class:`_Finetune` ready to run
    (resumed if a checkpoint exists)."""
    domain = load_domain(env_spec(spec.env_id).env_id)
    start = resolve_start(spec)
    method = resolve_method(spec, start, domain.discrete_actions)
    config = method_config(spec, start, method)
    folder = RunFolder(finetune_dir(spec, start, method), "fine-tune")
    encoder_name = (start.record.get("settings") or {}).get("encoder") if start.run else None
    if encoder is None:
        encoder = get_encoder(encoder_name)
    encoder_name = str(getattr(encoder, "name", encoder_name or "default"))
    if folder.finished:
        record = folder.read_record()
        folder.check(record.get("settings"), _settings(spec, method, config, start, encoder_name))
        return FinetuneResult(record, folder.path, skipped=True)
    # one writer per folder: a second process is refused, naming the first
    claimed = folder.claim(lambda: _build(spec, start, method, config, folder, domain, encoder, encoder_name, device))
    if claimed is None:  # another process finished it while this one was loading
        return _prepare(spec, encoder, device)
    run, run.lock = claimed
    return run


def _build(spec: FinetuneSpec, start: Start, method: str, config: Any, folder: RunFolder, domain: Any, encoder: Any,
           encoder_name: str, device: str) -> _Finetune:
    """The fine-tune's algorithm (moved from its offline start), envs, buffer and evaluator,
    resumed from its checkpoint if there is one."""
    import torch

    d3rlpy = load_d3rlpy()
    started, started_at = time.perf_counter(), datetime.now(timezone.utc).isoformat(timespec="seconds")

    action_size = domain.action_dim
    from imaginebench import limits  # sizes that cannot fit are refused before anything is loaded or encoded

    limits.check_training_memory(observation_dim=domain.state_dim + int(encoder.dim), action_size=action_size,
                                 hidden_units=tuple(getattr(config, "hidden_units", ())),
                                 batch_size=int(config.batch_size or spec.batch), what=f"{method} on {domain.env_id}")
    action_width = 1 if domain.discrete_actions else action_size
    limits.fits_in_memory(4.0 * spec.steps * (2 * domain.state_dim + action_width + 3),
                          f"the online buffer of a {spec.steps}-step budget", "give a smaller --budget")
    offline_model = None
    if start.run is not None:
        from imaginebench.algos.weights import MODEL_FILE, load_model

        offline_model = load_model(start.run / MODEL_FILE, device=device, sha256=start.model_sha256)
    offline, offline_info = None, []
    if spec.offline_ratio > 0 or start.run is None:  # scratch: its standardisation comes from the real data
        offline, offline_info = _offline_source(spec, start, encoder, action_size if domain.discrete_actions else None)
    scaler = (offline_model.config.observation_scaler if offline_model is not None
              else offline.observation_scaler("all"))
    batch = int(config.batch_size or spec.batch)
    ctx = BuildContext(batch_size=batch, state_dim=domain.state_dim, embedding_dim=int(encoder.dim),
                       action_size=action_size, discrete=domain.discrete_actions, observation_scaler=scaler,
                       device=device)
    torch.manual_seed(spec.seed)
    algo = config.create(ctx)
    algo.create_impl((ctx.observation_dim,), action_size)
    moved = transfer_modules(algo, offline_model, method) if offline_model is not None else {}

    if method in STOCHASTIC:
        explorer = None
    elif domain.discrete_actions:
        explorer = d3rlpy.algos.ConstantEpsilonGreedy(spec.epsilon)
    else:
        explorer = d3rlpy.algos.NormalNoise(mean=0.0, std=spec.noise_std)
    interaction = Interaction(domain.env_id, spec.level, spec.num_envs, spec.seed, spec.vectorization)
    bank = list(domain.instruction_bank(spec.level))
    table = InstructionTable(encoder, bank)
    buffer = OnlineBuffer(spec.steps, domain.state_dim, () if domain.discrete_actions else (action_size,),
                          spec.num_envs, config.gamma)
    evaluator = Evaluator(domain.env_id, spec.level, spec.episodes_per_task, spec.seed, encoder)
    run = _Finetune(spec, start, method, config, folder, algo, moved, interaction, buffer, table, evaluator, offline,
                    offline_info, explorer, np.random.default_rng([spec.seed, 0xF7]), encoder_name, batch,
                    started=started, started_at=started_at)
    if folder.checkpoint_path.exists():
        _load_checkpoint(run)
    else:
        np.random.seed(spec.seed)  # d3rlpy's explorers draw from numpy's global stream
        run.states, texts = interaction.reset()
        run.instr = table.ids(texts)
    run.resumed_from = run.env_steps
    return run


def _save_checkpoint(run: _Finetune) -> None:
    import torch

    buf = io.BytesIO()
    run.algo.impl.save_model(buf)
    run.folder.save_checkpoint(
        {"env_steps": run.env_steps, "grad_step": run.algo.grad_step, "curve": run.curve, "model": buf.getvalue(),
         "buffer": run.buffer.state_dict(), "envs": run.interaction.snapshot(), "instructions": run.table.texts,
         "instr": torch.from_numpy(run.instr.copy()), "np_global": _np_global_state(),
         "rng": run.rng.bit_generator.state, "torch_rng": torch.get_rng_state(), "online": dict(run.online),
         "elapsed": dict(run.elapsed), "settings": run.settings()})


def _load_checkpoint(run: _Finetune) -> None:
    import torch


    def restore(st: dict[str, Any]) -> None:
        load_impl_state(run.algo.impl, st["model"])
        run.buffer.load_state_dict(st["buffer"])

    state = run.folder.load_checkpoint(run.settings(), restore=restore)
    run.algo.set_grad_step(int(state["grad_step"]))
    run.env_steps, run.curve = int(state["env_steps"]), list(state["curve"])
    run.table.ids(list(state["instructions"]))  # same rows as before (the bank comes first in both)
    run.states, _ = run.interaction.restore(state["envs"])
    run.instr = state["instr"].numpy().astype(np.int64)
    _set_np_global_state(state["np_global"])
    run.rng.bit_generator.state = state["rng"]
    torch.set_rng_state(state["torch_rng"])
    run.online, run.elapsed = dict(state["online"]), dict(state["elapsed"])


# ---------------------------------------------------------------------------- the loop
def _act(run: _Finetune, observations: np.ndarray) -> np.ndarray:
    if run.explorer is None:
        return np.asarray(run.algo.sample_action(observations))
    return np.asarray(run.explorer.sample(run.algo, observations, run.env_steps))


def _update(run: _Finetune) -> dict[str, float]:
    n_off = int(round(run.spec.offline_ratio * run.batch)) if run.offline is not None and run.spec.offline_ratio else 0
    n_on = run.batch - n_off
    idx = run.rng.integers(0, len(run.buffer), size=n_on)
    online, returns = run.buffer.batch(idx, run.table.table)
    parts, rtg = [online], [returns]
    if n_off:
        off_idx = run.offline.sample_indices(n_off, run.rng)
        parts.insert(0, run.offline.batch_from_indices(off_idx))
        if run.algo.need_returns_to_go:
            rtg.insert(0, run.offline.returns_to_go(run.config.gamma)[off_idx])
    batch = concat_batches(parts)
    return fast_update(run.algo, batch, np.concatenate(rtg) if run.algo.need_returns_to_go else None)


def _evaluate(run: _Finetune, loss: dict[str, float], on_checkpoint) -> dict[str, Any]:
    t0 = time.perf_counter()
    result = run.evaluator(d3rlpy_policy(run.algo)).to_dict()
    run.elapsed["eval"] += time.perf_counter() - t0
    episodes = int(run.online["episodes"])
    entry = {"env_steps": run.env_steps, "grad_steps": int(run.algo.grad_step), **result,
             "loss": {k: float(v) for k, v in loss.items()},
             "online": {"episodes": episodes,
                        "success": run.online["successes"] / episodes if episodes else None}}
    run.curve.append(entry)
    _save_checkpoint(run)
    if on_checkpoint is not None:
        on_checkpoint(run.env_steps, entry)
    return entry


def _loop(run: _Finetune, progress: bool, on_checkpoint) -> None:
    from tqdm.auto import tqdm


    spec = run.spec
    loss: dict[str, float] = {}
    if not run.curve:  # step 0: the start itself
        _evaluate(run, loss, on_checkpoint)
    label = f"{spec.env_id} {spec.level} {run.start.name} -> {run.method} seed {spec.seed}"
    bar = tqdm(total=spec.steps, initial=run.env_steps, desc=label, unit="env step", disable=not progress,
               dynamic_ncols=True)
    n = spec.num_envs
    try:
        while run.env_steps < spec.steps:
            t0 = time.perf_counter()
            obs = np.concatenate([run.states, run.table.table[run.instr]], axis=1)
            actions = _act(run, obs)
            step = run.interaction.step(actions)
            done = np.logical_or(step.terminated, step.truncated)
            run.buffer.add(run.states, run.instr, actions, step.rewards, step.next_states, step.terminated, done)
            finished = np.flatnonzero(done)
            run.online["episodes"] += len(finished)
            run.online["successes"] += float(np.nansum(step.successes[finished]))
            run.states, run.instr = step.states, run.table.ids(step.instructions)
            run.env_steps += n
            t1 = time.perf_counter()
            run.elapsed["env"] += t1 - t0
            if len(run.buffer) >= run.batch:
                with flushed_denormals():
                    for _ in range(n * spec.updates_per_step):
                        loss = _update(run)
            run.elapsed["update"] += time.perf_counter() - t1
            bar.update(n)
            if run.env_steps % spec.every == 0:
                entry = _evaluate(run, loss, on_checkpoint)
                bar.set_postfix({spec.level: f"{entry['success']:.0%}"})
    finally:
        bar.close()


def _finish(run: _Finetune) -> FinetuneResult:
    spec = run.spec
    ref = reference_scores(run.env_id, spec.level, spec.episodes_per_task, spec.seed)
    record = build_record(run, {"random": ref["random"]["success"], "expert": ref["expert"]["success"]})
    record["versions"] = versions()
    env_s, upd_s = run.elapsed["env"], run.elapsed["update"]
    trained = spec.steps - run.resumed_from
    record["timing"] = {
        "wall_time_s": round(time.perf_counter() - run.started, 3), "env_time_s": round(env_s, 3),
        "update_time_s": round(upd_s, 3), "eval_time_s": round(run.elapsed["eval"], 3),
        "env_steps_per_s": round(spec.steps / env_s, 2) if env_s else None,
        "grad_steps_per_s": round(int(run.algo.grad_step) / upd_s, 2) if upd_s else None,
        "started_at": run.started_at, "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "resumed_from_env_step": run.resumed_from, "env_steps_this_session": trained,
    }
    run.folder.finish(record, run.algo)
    return FinetuneResult(record, run.folder.path, resumed_from=run.resumed_from)


def steps_to_reach(curve: list[dict[str, Any]], threshold: float) -> int | None:
    """Environment steps of the first evaluation at or above ``threshold`` (``None``: never)."""
    for entry in curve:
        if entry["success"] >= threshold:
            return int(entry["env_steps"])
    return None


def area_under_curve(curve: list[dict[str, Any]]) -> float:
    """Mean success over the budget: the trapezoid area under success vs environment steps,
    divided by the budget (1.0 = solved from the first step)."""
    x = np.array([c["env_steps"] for c in curve], dtype=np.float64)
    y = np.array([c["success"] for c in curve], dtype=np.float64)
    if len(x) < 2 or x[-1] <= x[0]:
        return float(y[-1]) if len(y) else float("nan")
    return float(np.sum((y[1:] + y[:-1]) * np.diff(x)) / 2.0 / (x[-1] - x[0]))


def build_record(run: _Finetune, reference: dict[str, float]) -> dict[str, Any]:
    """The results record (without ``versions`` and ``timing``)."""
    spec, curve = run.spec, run.curve
    half = 0.5 * reference["expert"]
    return {
        "schema_version": SCHEMA_VERSION, "kind": "finetune", "env": run.env_id, "level": spec.level,
        "method": run.method, "method_label": METHOD_LABELS.get(run.method, run.method), "tag": spec.tag,
        "seed": spec.seed, "profile": spec.profile_name, "start": run.start.describe(), "settings": run.settings(),
        "budget": spec.steps, "eval_every": spec.every, "num_envs": spec.num_envs, "batch_size": run.batch,
        "eval": {"level": spec.level, "episodes_per_task": spec.episodes_per_task,
                 "episodes": curve[-1]["episodes"] if curve else 0},
        "curve": curve,
        "score": {"initial": curve[0]["success"], "final": curve[-1]["success"], "auc": area_under_curve(curve),
                  "steps_to_half_expert": steps_to_reach(curve, half) if half > 0 else None},
        "reference": reference,
        "config": {"algorithm": run.config.to_dict(), "encoder": run.encoder_name, "initialised": dict(run.moved),
                   "fresh": [m for m in _module_names(run.algo) if m not in run.moved],
                   "explorer": ("policy samples" if run.explorer is None else
                                f"epsilon-greedy {spec.epsilon}" if run.config.discrete else
                                f"Gaussian noise std {spec.noise_std}"),
                   "offline_data": run.offline_info if spec.offline_ratio > 0 else []},
    }


def finetune(spec: FinetuneSpec, *, progress: bool = True, encoder: Any = None, device: str = "cpu:0",
             on_checkpoint: Callable[[int, dict[str, Any]], None] | None = None) -> FinetuneResult:
    """Fine-tune one seed online (resuming or skipping it as its folder says).

    Args:
        spec: the fine-tune.
        progress: show a progress bar.
        encoder: an instruction encoder object (default: the start run's, else the default).
        device: torch device.
        on_checkpoint: called as ``on_checkpoint(env_steps, curve_entry)`` after each evaluation's
            checkpoint is saved (e.g. to stop a fine-tune early in tests).
    """
    prepared = _prepare(spec, encoder, device)
    if isinstance(prepared, FinetuneResult):
        return prepared
    run = prepared
    try:
        _loop(run, progress, on_checkpoint)
        return _finish(run)
    finally:
        run.interaction.close()
        run.evaluator.close()
        if run.lock is not None:
            run.lock.release()
