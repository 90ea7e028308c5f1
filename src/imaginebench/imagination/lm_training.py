"""Supervised fine-tuning of the rollout model on a domain's real dataset (KALM, docs/benchmark.md §6).

Every training example is one of the four tasks of :mod:`~imaginebench.imagination.formats`
built from one real episode (task drawn with ``task_weights``).  Losses: MSE on standardised
states (and on continuous actions), cross-entropy on discrete actions and on text tokens,
binary cross-entropy of the end head on the rollout task's states (``end``; an episode's last
state is a positive only when the episode terminated, not when it was truncated).
A fixed set of held-out episodes gives a per-task validation loss every ``eval_every`` steps.
Checkpoints hold the trainable weights, the normaliser, both configs and the package version;
training resumes from the last checkpoint in the output folder (optimiser and RNG included).

**Resuming gives the same result.**  A run stopped at any moment (Ctrl-C, a kill) continues
from its last checkpoint exactly as if it had never stopped: same weights, same validation
history (checkpoints are atomic, see :mod:`~imaginebench.imagination.checkpoint`; the work done
after the last checkpoint is lost and redone; log lines of those steps are dropped).  On
``KeyboardInterrupt`` nothing of the unfinished work is saved: the last checkpoint is only
marked ``ended: "interrupted"`` and the exception propagates.

**Early stopping** (``early_stop_patience``): the criterion is the rollout task's validation
``total`` loss — the task generation uses (the sum over all tasks before session 29; the explanation
text's loss, ten times larger and noisier, chose its checkpoints: on session 28's LIBERO run the sum
picked step 1,000 with a rollout loss of 0.0044 where step 1,500 had 0.0033) — or the sum where
a model is validated without the rollout task; after ``early_stop_patience`` validations in a row that do not
beat the best by more than ``early_stop_min_delta``, training stops and saves a checkpoint.
With early stopping the checkpoint also keeps the best validation weights
(``best-*.safetensors``); :func:`~imaginebench.imagination.checkpoint.load_checkpoint` (so
generation) loads those, resuming loads the last ones.  ``checkpoint.json`` records
``ended`` (``"steps"``, ``"early_stop"``, ``"interrupted"``; ``null`` for a checkpoint taken
along the way), ``best_step`` and ``best_val``.
"""

from __future__ import annotations

import logging
import math
import resource
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import torch
from tqdm.auto import tqdm

from imaginebench.data.dataset import EpisodeDataset
from imaginebench.imagination import checkpoint as ckpt
from imaginebench.imagination.backbones import check_backbone, load_backbone
from imaginebench.imagination.formats import TASKS, SequenceBuilder, collate
from imaginebench.imagination.model import ModelConfig, Normaliser, RolloutLM, default_device
from imaginebench.run_folder import check_settings

logger = logging.getLogger("imaginebench.imagination")


@dataclass(frozen=True)
class TrainConfig:
    """Fine-tuning settings.

    Attributes:
        steps: optimiser steps (in total, counting steps done before a resume).
        batch_size: sequences per step.
        lr: learning rate of the backbone (LoRA or full); ``None``: 5e-4 (LoRA) / 1e-4 (full).
        adapter_lr: learning rate of the new numeric layers (embeddings and heads).
        weight_decay: AdamW weight decay.
        warmup_steps: linear warm-up, then cosine decay to 10% of the rate.
        grad_clip: global gradient-norm clip (0 disables it).
        task_weights: sampling weights of the four tasks (rollout, dynamics, consequence,
            explanation).
        loss_weights: weights of the ``state``, ``action``, ``text`` and ``end`` losses.
        max_rollout_steps: longer episodes are cut to a window of this many steps (rollout and
            explanation examples).
        start_window_share: share of those windows that begin at the episode's start (the rest
            begin at a uniformly random step): the start is where generation begins and where only
            the instruction tells the model what to do; 0 gives the old uniform windows, whose
            models ignored HalfCheetah's instructions.
        val_episodes: held-out episodes (at most 20% of the data).
        val_examples: validation examples per task.
        eval_every: steps between validations (and the end).
        checkpoint_every: steps between checkpoints (and the end).
        log_every: steps between training-log lines.
        seed: seed of the split, example sampling and initialisation.
        bf16: bfloat16 autocast (CPU with AMX or CUDA); faster, numerics not validated.
        threads: ``torch.set_num_threads`` (``None``: leave as is).
        early_stop_patience: stop after this many validations in a row without improvement
            of the rollout task's validation ``total`` loss (:func:`val_score`; ``None``: never stop early).
        early_stop_min_delta: an improvement must lower that criterion by more than this.
        augment: draw each training example's episode under a uniformly chosen symmetry of the
            domain (``Domain.symmetries``: exact maps of real episodes onto real episodes of
            the same task, e.g. BabyAI's eight rotations/reflections of the room); domains
            without symmetries are unaffected.  Validation examples stay unaugmented.
        init_from: warm start: a new run (not a resume) starts from this checkpoint folder's
            weights (its best, else its last) and normaliser, every tensor whose name and shape
            the new model shares; the rest (a new head, e.g. ``action_bins``) keeps its fresh
            initialisation.  The backbone and its LoRA/late-entry design must be the same.
    """

    steps: int = 1000
    batch_size: int = 8
    lr: float | None = None
    adapter_lr: float = 1e-3
    weight_decay: float = 0.0
    warmup_steps: int = 20
    grad_clip: float = 1.0
    task_weights: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)
    loss_weights: Mapping[str, float] = field(
        default_factory=lambda: {"state": 1.0, "action": 1.0, "text": 1.0, "end": 1.0})
    max_rollout_steps: int = 64
    start_window_share: float = 0.5
    val_episodes: int = 64
    val_examples: int = 32
    eval_every: int = 100
    checkpoint_every: int = 250
    log_every: int = 10
    seed: int = 0
    bf16: bool = False
    threads: int | None = None
    early_stop_patience: int | None = None
    early_stop_min_delta: float = 0.0
    augment: bool = True
    init_from: str | None = None

    def __post_init__(self) -> None:
        if self.early_stop_patience is not None and self.early_stop_patience < 1:
            raise ValueError(f"early_stop_patience must be >= 1 or None, got {self.early_stop_patience}.")
        if not self.early_stop_min_delta >= 0:
            raise ValueError(f"early_stop_min_delta must be >= 0, got {self.early_stop_min_delta}.")
        for name in ("steps", "batch_size", "max_rollout_steps", "eval_every", "checkpoint_every", "log_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}.")
        if not 0.0 <= self.start_window_share <= 1.0:
            raise ValueError(f"start_window_share must be in [0, 1], got {self.start_window_share}.")
        if len(self.task_weights) != len(TASKS) or min(self.task_weights) < 0 or sum(self.task_weights) <= 0:
            raise ValueError(f"task_weights needs {len(TASKS)} non-negative weights ({', '.join(TASKS)}), "
                             f"got {self.task_weights}.")

    def learning_rate(self, lora: bool) -> float:
        return self.lr if self.lr is not None else (5e-4 if lora else 1e-4)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["loss_weights"] = dict(self.loss_weights)
        d["task_weights"] = list(self.task_weights)
        return d


@dataclass
class RolloutTrainingResult:
    """What a fine-tuning run did (also written to the checkpoint and the log)."""

    checkpoint: Path
    steps_done: int
    steps_run: int
    seconds: float
    steps_per_second: float
    peak_rss_mb: float
    val_losses: dict[str, dict[str, float]]
    train_loss_first: float | None
    train_loss_last: float | None
    parameters: dict[str, int]
    ended: str | None = None
    best_step: int | None = None
    best_val: float | None = None


def data_spec(dataset: EpisodeDataset) -> tuple[int, bool, int]:
    """``(state_dim, discrete_actions, action_dim)`` of a dataset (metadata first, then arrays)."""
    md = dataset.metadata
    discrete = bool(md.get("discrete_actions", dataset.discrete_actions))
    if "action_dim" in md:
        action_dim = int(md["action_dim"])
    elif discrete:
        action_dim = int(dataset.actions.max(initial=0)) + 1
    else:
        action_dim = int(dataset.actions.shape[1])
    return dataset.state_dim, discrete, action_dim


def _episodes(dataset: EpisodeDataset) -> list[tuple[str, np.ndarray, np.ndarray, bool]]:
    """``(instruction, states, actions, terminal)`` of the non-empty episodes; ``terminal``: the
    episode ended by termination (its last ``terminals`` flag), not by a time limit."""
    return [(ep.instruction, np.asarray(ep.states, np.float32), np.asarray(ep.actions), bool(ep.terminals[-1]))
            for ep in dataset if len(ep)]


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (MB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class _Sampler:
    """Training examples: an episode, a task drawn by ``task_weights``, and with ``domain`` a
    uniformly drawn symmetry of that domain applied to the episode."""

    def __init__(self, builder: SequenceBuilder, episodes: list, cfg: TrainConfig, domain: Any = None) -> None:
        self.builder, self.episodes, self.cfg, self.domain = builder, episodes, cfg, domain
        w = np.asarray(cfg.task_weights, np.float64)
        self.task_p = w / w.sum()
        self.symmetries: tuple[str, ...] = tuple(domain.symmetries()) if domain is not None else ()

    def example(self, rng: np.random.Generator, task: str | None = None):
        instr, states, actions, terminal = self.episodes[int(rng.integers(len(self.episodes)))]
        task = task or TASKS[int(rng.choice(len(TASKS), p=self.task_p))]
        if self.symmetries:
            name = self.symmetries[int(rng.integers(len(self.symmetries)))]
            states, actions = self.domain.transform_episode(states, actions, name)
        return self.builder.example(task, instr, states, actions, rng, self.cfg.max_rollout_steps,
                                    terminal=terminal, start_share=self.cfg.start_window_share)


def val_score(val: Mapping[str, Mapping[str, float]]) -> float:
    """The early-stopping criterion: the rollout task's validation ``total`` loss (what generation
    samples from), or the sum over tasks where the rollout task was not validated."""
    if "rollout" in val:
        return float(val["rollout"]["total"])
    return float(sum(v["total"] for v in val.values()))


@dataclass
class _Best:
    """Best validation so far and the early-stopping count (rebuilt from the history on resume)."""

    patience: int | None
    min_delta: float
    step: int | None = None
    value: float | None = None
    bad: int = 0

    def update(self, step: int, value: float) -> bool:
        """Record a validation; return whether it is a new best."""
        if self.value is None or value < self.value - self.min_delta:
            self.step, self.value, self.bad = step, value, 0
            return True
        self.bad += 1
        return False

    @property
    def stop(self) -> bool:
        return self.patience is not None and self.bad >= self.patience


def _schedule(cfg: TrainConfig):
    def factor(step: int) -> float:
        if step < cfg.warmup_steps:
            return (step + 1) / cfg.warmup_steps
        span = max(1, cfg.steps - cfg.warmup_steps)
        progress = min(1.0, (step - cfg.warmup_steps) / span)
        return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))

    return factor


def _optimizer(model: RolloutLM, cfg: TrainConfig) -> torch.optim.Optimizer:
    adapters = [p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("lm.")]
    backbone = [p for n, p in model.named_parameters() if p.requires_grad and n.startswith("lm.")]
    groups = [{"params": adapters, "lr": cfg.adapter_lr}]
    if backbone:
        groups.append({"params": backbone, "lr": cfg.learning_rate(model.config.lora)})
    try:
        return torch.optim.AdamW(groups, weight_decay=cfg.weight_decay, fused=True)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.AdamW(groups, weight_decay=cfg.weight_decay)


def _autocast(model: RolloutLM, enabled: bool):
    return torch.autocast(device_type=model.device.type, dtype=torch.bfloat16, enabled=enabled)


@torch.no_grad()
def validate(model: RolloutLM, val_sets: Mapping[str, list], batch_size: int, loss_weights: Mapping[str, float],
             bf16: bool = False) -> dict[str, dict[str, float]]:
    """Mean losses per task on fixed validation examples: ``{task: {total, state, action, text, end}}``
    (the components a task has)."""
    was_training = model.training
    model.eval()
    result: dict[str, dict[str, float]] = {}
    for task, seqs in val_sets.items():
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}
        for i in range(0, len(seqs), batch_size):
            with _autocast(model, bf16):
                out = model.losses(collate(seqs[i:i + batch_size]), loss_weights)
            for name in ("total", "state", "action", "text", "end"):
                if name in out:
                    n = len(seqs[i:i + batch_size])
                    sums[name] = sums.get(name, 0.0) + float(out[name]) * n
                    counts[name] = counts.get(name, 0) + n
        result[task] = {k: sums[k] / counts[k] for k in sums}
    model.train(was_training)
    return result


def _announce(model: RolloutLM, sampler: _Sampler, cfg: TrainConfig, steps: int, progress: bool) -> None:
    """Print a time estimate before training: one probe step (forward + backward, no update, its
    own random stream, gradients dropped) on a batch like the run's.  The run's random streams
    and weights are untouched, so a resumed run still equals an uninterrupted one."""
    rng = np.random.default_rng(987654321)
    batch = collate([sampler.example(rng) for _ in range(cfg.batch_size)])
    positions = int(batch.mask.sum())
    t0 = time.perf_counter()
    with _autocast(model, cfg.bf16):
        out = model.losses(batch, cfg.loss_weights)
    out["total"].backward()
    model.zero_grad(set_to_none=True)
    seconds = time.perf_counter() - t0
    depth = len(model.decoder.layers)
    msg = (f"fine-tune: {steps:,} steps of {cfg.batch_size} sequences (~{positions} positions per step); numbers run "
           f"through {depth} decoder layers{' (late entry)' if model.late_entry else ''}; one probe step took "
           f"{seconds:.2f} s ({positions / seconds:.0f} positions/s), so about {steps * seconds / 60:.0f} min "
           f"plus validation")
    logger.info(msg)
    if progress:
        tqdm.write(msg)


def _check_warm_start(warm: RolloutLM, meta: Mapping[str, Any], mcfg: ModelConfig, env_id: str, state_dim: int,
                      discrete: bool, action_dim: int, folder: str) -> None:
    """A warm start must come from the same domain and backbone design (one-line errors)."""
    if meta.get("env_id") != env_id or (warm.state_dim, warm.discrete, warm.action_dim) != (state_dim, discrete,
                                                                                              action_dim):
        raise ValueError(f"--init-from {folder} is a rollout model of {meta.get('env_id')}, not of {env_id}; warm "
                         "start from a checkpoint of the same domain.")
    theirs, ours = warm.config.to_dict(), mcfg.to_dict()
    design = ("backbone", "lora", "lora_rank", "lora_alpha", "num_layers", "numeric_layers", "residual_states")
    differ = [f"{k} {theirs[k]} there vs {ours[k]} now" for k in design if theirs[k] != ours[k]]
    if differ:
        raise ValueError(f"--init-from {folder} has another backbone design ({'; '.join(differ)}); warm start needs "
                         "the same one.")


def _copy_shared_weights(source: RolloutLM, target: RolloutLM) -> tuple[int, list[str]]:
    """Copy every trainable tensor of ``source`` that ``target`` has with the same shape; returns
    the count and the names of ``target``'s trainable tensors left at their initialisation.
    Relational facts' weights are rescaled between the two models' ``relation_gain`` so that
    their contribution to the state embedding is unchanged."""
    theirs = source.trainable_state()
    params = dict(target.named_parameters())
    copied, fresh = 0, []
    with torch.no_grad():
        for name in target.trainable_state():
            value = theirs.get(name)
            if value is not None and value.shape == params[name].shape:
                if name.startswith("relation_embed."):
                    value = value * (source.config.relation_gain / target.config.relation_gain)
                params[name].copy_(value)
                copied += 1
            else:
                fresh.append(name)
    return copied, fresh


def train_rollout_model(
    env_id: str,
    real: EpisodeDataset,
    out_dir: Path | str,
    model_config: ModelConfig | None = None,
    train_config: TrainConfig | None = None,
    profile: str | None = None,
    resume: bool = True,
    overwrite: bool = False,
    progress: bool = True,
    device: torch.device | str | None = None,
    on_step: Callable[[int], None] | None = None,
) -> RolloutTrainingResult:
    """Fine-tune a rollout model on ``real`` and save it to ``out_dir``.

    With ``resume`` (default) an existing compatible checkpoint in ``out_dir`` is continued up
    to ``train_config.steps`` (a run that already stopped early stays stopped); ``overwrite``
    deletes it and starts over.  ``on_step(steps_done)`` is called after every step (after its
    validation and checkpoint).  Returns timings, peak memory, the last per-task validation
    losses, how the run ended and its best validation.
    """
    mcfg = model_config or ModelConfig()
    tcfg = train_config or TrainConfig()
    check_backbone(mcfg.backbone)
    out_dir = Path(out_dir)
    if tcfg.threads:
        torch.set_num_threads(tcfg.threads)
    device = torch.device(device) if device is not None else default_device()
    state_dim, discrete, action_dim = data_spec(real)
    episodes = _episodes(real)
    if len(episodes) < 2:
        raise ValueError(f"Need at least 2 non-empty episodes to fine-tune, got {len(episodes)}.")

    existing = (out_dir / ckpt.META).exists()
    resume_state = None
    if existing and not overwrite and not resume:
        raise FileExistsError(f"A checkpoint exists at {out_dir}; resume it (default) or pass --overwrite.")
    if existing and resume and not overwrite:
        meta = ckpt.read_checkpoint_meta(out_dir)
        found = {"env_id": meta.get("env_id"), **{f"model {k}": v for k, v in
                                                    ModelConfig.from_dict(meta["model"]).to_dict().items()}}
        wanted = {"env_id": env_id, **{f"model {k}": v for k, v in mcfg.to_dict().items()}}
        check_settings(found, wanted, out_dir, "rollout-model fine-tune",
                       "Pass --overwrite to start over, or choose another --out so both are kept.")
        model, meta = ckpt.load_checkpoint(out_dir, device=device, which="last")
        resume_state = ckpt.load_resume_state(out_dir, meta)
        start = int(meta.get("step", 0))
        history = list(meta.get("val_history", []))
        ended: str | None = meta.get("ended")
        best_file: str | None = ckpt.checkpoint_files(meta).get("best")
        ckpt.truncate_log(out_dir, start)
    else:
        if overwrite and existing:
            ckpt.remove_checkpoint(out_dir)
        # a log with no checkpoint is a killed attempt's: its steps run again, so they are not kept
        (out_dir / ckpt.LOG).unlink(missing_ok=True)
        backbone = load_backbone(mcfg.backbone, num_layers=mcfg.num_layers)
        torch.manual_seed(tcfg.seed)  # after loading: a first smollm2 conversion draws random numbers
        normaliser = Normaliser.fit(real.states)
        warm = None
        if tcfg.init_from is not None:
            warm, warm_meta = ckpt.load_checkpoint(Path(tcfg.init_from), device="cpu", which="best")
            _check_warm_start(warm, warm_meta, mcfg, env_id, state_dim, discrete, action_dim, tcfg.init_from)
            normaliser = warm.normaliser
        model = RolloutLM(backbone, mcfg, state_dim, discrete, action_dim, normaliser,
                          relations=ckpt.domain_relations(mcfg, env_id))
        if warm is not None:
            copied, fresh = _copy_shared_weights(warm, model)
            msg = (f"Warm start from {tcfg.init_from} ({warm_meta['loaded']['file']}, step "
                   f"{warm_meta['loaded']['step']}): {copied} tensors copied; fresh: {', '.join(fresh) or 'none'}")
            logger.info(msg)
            if progress:
                tqdm.write(msg)
            del warm
        model = model.to(device)
        start, history, ended, best_file = 0, [], None, None
    best = _Best(tcfg.early_stop_patience, tcfg.early_stop_min_delta)
    for record in history:
        best.update(int(record["step"]), val_score(record["val"]))
    keep_best = tcfg.early_stop_patience is not None
    # Best weights not yet in a file: "weights" (the next save's weights) or CPU copies.
    best_pending: Mapping[str, torch.Tensor] | str | None = None

    # Split: a fixed permutation, so a resumed run holds out the same episodes.
    order = np.random.default_rng(tcfg.seed).permutation(len(episodes))
    n_val = min(tcfg.val_episodes, len(episodes) // 5) if len(episodes) >= 5 else 1
    val_eps = [episodes[i] for i in order[:n_val]]
    train_eps = [episodes[i] for i in order[n_val:]]
    builder = SequenceBuilder(model.tokenizer, state_dim, discrete, action_dim)
    val_rng = np.random.default_rng([tcfg.seed, 1])
    val_sampler = _Sampler(builder, val_eps, tcfg)
    val_sets = {task: [val_sampler.example(val_rng, task) for _ in range(tcfg.val_examples)] for task in TASKS}
    domain = None
    if tcfg.augment:
        from imaginebench.envs.registry import load_domain

        domain = load_domain(env_id)
        if domain.symmetries():
            logger.info("Augmenting %s's training episodes with its %d symmetries.", env_id, len(domain.symmetries()))
    sampler = _Sampler(builder, train_eps, tcfg, domain)

    model.train()
    optimizer = _optimizer(model, tcfg)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _schedule(tcfg))
    rng = np.random.default_rng([tcfg.seed, 2])
    if resume_state is not None:
        optimizer.load_state_dict(resume_state["optimizer"])
        scheduler.load_state_dict(resume_state["scheduler"])
        rng.bit_generator.state = resume_state["numpy_rng"]
        torch.set_rng_state(resume_state["torch_rng"])

    meta_base = {"env_id": env_id, "profile": profile, "train": tcfg.to_dict(),
                 "data": {"episodes": len(real), "train_episodes": len(train_eps), "val_episodes": len(val_eps),
                          "dataset": dict(real.metadata)}}

    def save(step: int, how: str | None) -> None:
        nonlocal best_file, best_pending
        state = {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                 "numpy_rng": rng.bit_generator.state, "torch_rng": torch.get_rng_state()}
        meta = {**meta_base, "step": step, "val_history": history, "ended": how,
                "best_step": best.step, "best_val": best.value}
        files = ckpt.save_checkpoint(out_dir, model, meta, state,
                                     best=(best_pending if best_pending is not None else best_file) if keep_best
                                     else None)
        best_file, best_pending = files.get("best"), None

    first_loss = last_loss = None
    val: dict[str, dict[str, float]] = history[-1]["val"] if history else {}
    last_step = tcfg.steps if not best.stop else start  # a run that stopped early stays stopped
    if last_step > start:
        _announce(model, sampler, tcfg, last_step - start, progress)
    t0 = time.perf_counter()
    steps_run = positions_done = 0
    if best.stop:
        logger.info("The checkpoint at %s already stopped early at step %d (best step %s).", out_dir, start, best.step)
    bar = tqdm(range(start, last_step), desc=f"fine-tune {mcfg.backbone}", unit="step", disable=not progress,
               initial=0, total=max(0, last_step - start))
    try:
        for step in bar:
            batch = collate([sampler.example(rng) for _ in range(tcfg.batch_size)])
            with _autocast(model, tcfg.bf16):
                out = model.losses(batch, tcfg.loss_weights)
            optimizer.zero_grad(set_to_none=True)
            out["total"].backward()
            if tcfg.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], tcfg.grad_clip)
            optimizer.step()
            scheduler.step()
            steps_run += 1
            loss = float(out["total"].detach())
            if not math.isfinite(loss):
                raise FloatingPointError(f"Training loss became {loss} at step {step + 1}; lower the learning rate.")
            first_loss = loss if first_loss is None else first_loss
            last_loss = loss
            done = step + 1
            record = {"step": done, "loss": loss, **{k: float(v.detach()) for k, v in out.items()
                                                     if k in ("state", "action", "text", "end")}}
            positions_done += int(batch.mask.sum())
            bar.set_postfix(loss=f"{loss:.3f}", positions_per_s=f"{positions_done / (time.perf_counter() - t0):.0f}")
            if done % tcfg.log_every == 0:
                ckpt.append_log(out_dir, {"kind": "train", **record,
                                          "lr": scheduler.get_last_lr()[-1], "seconds": time.perf_counter() - t0})
            how = "steps" if done == tcfg.steps else None
            if done % tcfg.eval_every == 0 or done == tcfg.steps:
                val = validate(model, val_sets, tcfg.batch_size, tcfg.loss_weights, tcfg.bf16)
                history.append({"step": done, "val": val})
                ckpt.append_log(out_dir, {"kind": "val", "step": done, "val": val})
                logger.info("step %d validation: %s", done, {k: round(v["total"], 4) for k, v in val.items()})
                improved = best.update(done, val_score(val))
                if best.stop:
                    how = "early_stop"
                    logger.info("Early stop at step %d: no improvement for %d validations (best step %d, %.4f).",
                                done, best.bad, best.step, best.value)
                saving = how is not None or done % tcfg.checkpoint_every == 0
                if keep_best and improved:
                    best_pending = "weights" if saving else {
                        k: v.detach().to("cpu", copy=True) for k, v in model.trainable_state().items()}
            if how is not None or done % tcfg.checkpoint_every == 0:
                save(done, how)
                if how is not None:
                    ended = how
            if on_step is not None:
                on_step(done)
            if how == "early_stop":
                break
    except KeyboardInterrupt:
        bar.close()
        if (out_dir / ckpt.META).exists() and ckpt.read_checkpoint_meta(out_dir).get("ended") in (None, "interrupted"):
            meta = ckpt.update_meta(out_dir, ended="interrupted")  # only the meta: no unfinished work is saved
            logger.warning("Interrupted; the checkpoint at %s (step %s) is intact and resumes from there.",
                           out_dir, meta.get("step"))
        raise
    bar.close()
    seconds = time.perf_counter() - t0
    if steps_run == 0 and not (out_dir / ckpt.META).exists():
        save(start, None)
    steps_done = start + steps_run
    return RolloutTrainingResult(
        checkpoint=out_dir, steps_done=steps_done, steps_run=steps_run,
        seconds=seconds, steps_per_second=steps_run / seconds if steps_run and seconds > 0 else 0.0,
        peak_rss_mb=peak_rss_mb(), val_losses=val, train_loss_first=first_loss, train_loss_last=last_loss,
        parameters=model.parameter_counts(), ended=ended, best_step=best.step, best_val=best.value,
    )
