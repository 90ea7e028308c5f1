"""Decoding: imagining rollouts with the fine-tuned rollout model (docs/benchmark.md §6).

For each rollout: a real initial state (an env reset of one of the level's tasks, tasks
balanced round-robin) and an instruction from that level's bank go into the prompt
"Generate a rollout for the following goal: [GOAL]. Rollout:" followed by the state.  The
model then alternates: action head -> action (argmax, or sampled at ``temperature``) ->
action embedding -> state head -> next state -> state embedding -> ...  Every state and
action comes from the language model; the simulator is only used for the initial state.
A rollout stops when the domain's pure success test holds on the generated state or at the
task's horizon; rewards, terminals and successes come from ``domain.outcome``.

Rollouts are generated in batches with a KV cache (left-padded prompts, explicit position
ids); finished rollouts are dropped from the batch and from the cache.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from imaginebench.data.collect import episode_seed
from imaginebench.data.dataset import Episode
from imaginebench.domains.base import Domain, Task
from imaginebench.envs.registry import make
from imaginebench.imagination.filters import KEEP_MODES
from imaginebench.imagination.formats import SequenceBuilder, collate

logger = logging.getLogger("imaginebench.imagination")


@dataclass(frozen=True)
class GenerateConfig:
    """Sampling settings of imagination.

    Attributes:
        temperature: discrete actions are sampled from softmax(logits / temperature);
            0 means argmax.  Continuous actions of a model with ``action_bins`` are sampled the
            same way, one value per dimension; a regression head's are its output, clipped to
            [-1, 1], whatever the temperature.
        batch_size: rollouts generated together.
        seed: seed of the initial states (env resets) and of action sampling.
        use_cache: reuse keys/values between steps (``False`` recomputes the whole sequence;
            only for checking).
        max_steps: optional compute cap on rollout length.  It never cuts below the steps a
            level's tasks need (:func:`required_steps`); ``None``: the task horizon.
        bf16: bfloat16 autocast.
        keep: one of :data:`KEEP_MODES`.
        budget: best-of-N budget: at most ``ceil(budget * quota)`` candidates per task, where
            ``quota`` is the task's share of the level's imaginary rollouts.
        stop_on_end: also end a rollout where the model's learned end-of-rollout output says
            so (probability above ``end_threshold``), when the checkpoint has that output.
        end_threshold: probability above which the end-of-rollout output ends a rollout.
        complete_states: recompute the state entries the domain's layout defines from other
            entries or fixes for the episode from its real initial state
            (``Domain.complete_states``; BabyAI: the carried record; Meta-World: which entity
            slots are empty, unit quaternions) in every imagined state before it is scored and
            fed back.  Pure, no simulator.
        physics_prior: impose the domain's physics prior on every imagined step
            (``Domain.constrain_step(previous, actions, states)``; Meta-World: the hand where the
            arm's position control takes it, untouched entities where they were) before it is
            scored and fed back.  Off by default: the honest filter then judges what the model
            alone imagined.  Pure, no simulator.
    """

    temperature: float = 1.0
    batch_size: int = 64
    seed: int = 1
    use_cache: bool = True
    max_steps: int | None = None
    bf16: bool = False
    keep: str = "honest"
    budget: float = 16.0
    stop_on_end: bool = True
    end_threshold: float = 0.5
    complete_states: bool = True
    physics_prior: bool = False

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0 (0 = argmax), got {self.temperature}.")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}.")
        if self.keep not in KEEP_MODES:
            raise ValueError(f"Unknown keep mode {self.keep!r}; choose one of {', '.join(KEEP_MODES)}.")
        if not self.budget >= 1:
            raise ValueError(f"budget must be >= 1 candidate per kept rollout, got {self.budget}.")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.max_steps}.")


@dataclass(frozen=True)
class Start:
    """Where an imagined rollout begins: a task, an instruction and a real initial state."""

    task: Task
    instruction: str
    state: np.ndarray


class StartSampler:
    """Real initial states of a level's tasks, drawn on demand (env resets only).

    Start ``i`` of a sampler with ``seed`` is the reset with ``episode_seed(seed, i)``; the
    instruction is drawn from the level's bank by that reset (rephrase: held-out phrasings).
    """

    def __init__(self, env_id: str, level: str, seed: int = 1) -> None:
        self.env = make(env_id, level=level, encode_instruction=False)
        self.base = self.env.unwrapped
        self.level, self.seed, self.count = level, int(seed), 0
        self.task_names: tuple[str, ...] = tuple(self.base.tasks)

    def draw(self, task_name: str) -> Start:
        _, info = self.env.reset(seed=episode_seed(self.seed, self.count), options={"task": task_name})
        self.count += 1
        return Start(self.base.domain.task(info["task"], level=self.level), info["instruction"],
                     np.asarray(info["state"], np.float32))

    def close(self) -> None:
        self.env.close()


def initial_starts(env_id: str, level: str, n: int, seed: int = 1) -> list[Start]:
    """``n`` real initial states of ``level``: env resets, task ``i % n_tasks`` for rollout ``i``."""
    sampler = StartSampler(env_id, level, seed)
    try:
        names = sampler.task_names
        return [sampler.draw(names[i % len(names)]) for i in range(n)]
    finally:
        sampler.close()


class _Rows:
    """Per-rollout bookkeeping while a batch is generated."""

    def __init__(self, domain: Domain, start: Start, horizon: int) -> None:
        self.domain, self.start, self.horizon = domain, start, horizon
        self.states = [np.asarray(start.state, np.float32)]
        self.actions: list[Any] = []
        self.rewards: list[float] = []
        self.successes: list[bool] = []
        self.progress = domain.initial_progress(start.task, start.state)
        self.ended_by_model = False

    def record(self, action: Any, state: np.ndarray, reward: float, success: bool, progress: np.ndarray) -> bool:
        """Record one imagined step (outcome already computed); return whether the rollout is finished."""
        self.progress = progress
        self.actions.append(action)
        self.states.append(np.asarray(state, np.float32))
        self.rewards.append(float(reward))
        self.successes.append(bool(success))
        return bool(success) or len(self.actions) >= self.horizon

    def episode(self) -> Episode:
        t = len(self.actions)
        succ = np.asarray(self.successes, bool)
        terminals = succ.copy()
        truncations = np.zeros(t, bool)
        if t and not succ[-1]:
            truncations[-1] = True
        return Episode(task=self.start.task.name, instruction=self.start.instruction,
                       states=np.stack(self.states), actions=np.asarray(self.actions),
                       rewards=np.asarray(self.rewards, np.float32), terminals=terminals,
                       truncations=truncations, successes=succ)


def _sample(logits: torch.Tensor, temperature: float, gen: torch.Generator) -> torch.Tensor:
    """Indices drawn from softmax(logits / temperature) over the last axis (0: argmax)."""
    if temperature == 0:
        return logits.argmax(-1)
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    if probs.device.type == "cpu":
        flat = probs.reshape(-1, probs.shape[-1])
        return torch.multinomial(flat, 1, generator=gen).reshape(probs.shape[:-1])
    # Gumbel-max on the device: no host round trip; the noise comes from the seeded CPU generator.
    noise = torch.rand(probs.shape, generator=gen).to(probs.device).clamp_(1e-20, 1.0)
    return (probs.log() - (-noise.log()).log()).argmax(-1)


def _choose_actions(model: Any, hidden: torch.Tensor, temperature: float, gen: torch.Generator) -> torch.Tensor:
    out = model.predict_actions(hidden)
    if model.discrete:
        return _sample(out, temperature, gen)
    if getattr(model, "action_bins", None) is not None:  # one value per dimension, sampled
        return model.action_values[_sample(out, temperature, gen)]
    return out.clamp(-1.0, 1.0)


def _round_states(model: Any, states: torch.Tensor) -> torch.Tensor:
    integer = torch.as_tensor(model.normaliser.integer, device=states.device)
    if integer.numel() and bool(integer.any()):
        states = torch.where(integer, states.round(), states)
    return states


def _outcome_or_failure(domain: Domain, row: "_Rows", action: Any, state: np.ndarray) -> tuple[bool, float, np.ndarray]:
    """One row's outcome; an imagined state the success functions cannot read is a failure."""
    try:
        o = domain.outcome(row.start.task, row.states[-1], action, state, row.progress)
        return bool(o.success), float(o.reward), o.progress
    except (ValueError, IndexError, KeyError, FloatingPointError, OverflowError):
        return False, 0.0, row.progress


def _outcomes(domain: Domain, rows: Sequence[_Rows], actions: list[Any], next_states: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Success, reward and progress of one imagined step of every active row (batched when possible).

    Imagined states can be garbage (off the grid, overlapping): where the domain's functions
    cannot read a state, that step is scored as no success and zero reward; the honest filter
    rejects such rollouts anyway (their states are illegal).
    """
    batch = getattr(domain, "outcome_batch", None)
    if batch is not None:
        prev = np.stack([r.states[-1] for r in rows])
        try:
            out = batch([r.start.task for r in rows], prev, np.asarray(actions), next_states,
                        [r.progress for r in rows])
            return np.asarray(out.success, bool), np.asarray(out.reward, np.float64), list(out.progress)
        except (ValueError, IndexError, KeyError, FloatingPointError, OverflowError):
            pass  # some row is unreadable: score row by row
    results = [_outcome_or_failure(domain, r, a, s) for r, a, s in zip(rows, actions, next_states)]
    return (np.asarray([x[0] for x in results], bool), np.asarray([x[1] for x in results], np.float64),
            [x[2] for x in results])


@torch.no_grad()
def imagine_batch(model: Any, domain: Domain, starts: Sequence[Start], cfg: GenerateConfig,
                  gen: torch.Generator, builder: SequenceBuilder | None = None,
                  horizons: Sequence[int] | None = None) -> list[Episode]:
    """Imagine one rollout per start, all in one batch.

    ``horizons`` (one per start) cap each rollout; default: the task horizon (and
    ``cfg.max_steps``).  Besides success and the cap, a rollout ends where the model's
    end-of-rollout output fires (``cfg.stop_on_end``, checkpoints that have that output).
    """
    from transformers import DynamicCache

    builder = builder or SequenceBuilder(model.tokenizer, model.state_dim, model.discrete, model.action_dim)
    rows = []
    for i, s in enumerate(starts):
        horizon = horizons[i] if horizons is not None else domain.task_horizon(s.task)
        if horizons is None and cfg.max_steps is not None:
            horizon = min(horizon, cfg.max_steps)
        rows.append(_Rows(domain, s, horizon))
    use_end = bool(cfg.stop_on_end and getattr(model, "has_end_head", False))
    batch = collate([builder.rollout_prompt(s.instruction, s.state) for s in starts], left_pad=True)
    t = model.tensors(batch)
    autocast = torch.autocast(device_type=model.device.type, dtype=torch.bfloat16, enabled=cfg.bf16)
    mask = t["mask"].long()
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    last_pos = positions[:, -1]
    physics_prior = getattr(domain, "constrain_step", None) if cfg.physics_prior else None
    if cfg.physics_prior and physics_prior is None:
        raise ValueError(f"{type(domain).__name__} has no physics prior (Domain.constrain_step); "
                         "generate without --physics-prior.")
    active = list(range(len(rows)))
    current = torch.as_tensor(np.stack([s.state for s in starts]), device=model.device, dtype=torch.float32)
    late_prompt = cfg.use_cache and getattr(model, "late_entry", False) and not model.training
    if not late_prompt:
        with autocast:
            emb = model.embed(t["kinds"], t["tokens"], t["states"], t["actions"], t["mask"])

    if late_prompt:
        # the prompt's text in the top stack comes from the per-phrasing cache; only S0 is decoded
        cache = DynamicCache(config=model.decoder.config)
        texts = [tuple(builder.rollout_prompt(s.instruction, s.state).tokens[:-1].tolist()) for s in starts]
        per_row = model.prompt_kv(texts, bf16=cfg.bf16)
        length = max(len(x) for x in texts)
        for layer in range(len(per_row[0])):
            k0, v0 = per_row[0][layer]
            keys = k0.new_zeros((len(texts), k0.shape[1], length, k0.shape[3]))
            values = v0.new_zeros((len(texts), v0.shape[1], length, v0.shape[3]))
            for i, kv in enumerate(per_row):
                n = len(texts[i])
                keys[i, :, length - n:], values[i, :, length - n:] = kv[layer][0][0], kv[layer][1][0]
            cache.update(keys, values, layer)
        text_mask = torch.zeros((len(texts), length), dtype=torch.long, device=model.device)
        for i, x in enumerate(texts):
            text_mask[i, length - len(x):] = 1
        mask = torch.cat([text_mask, text_mask.new_ones(len(texts), 1)], dim=1)
        last_pos = torch.as_tensor([len(x) for x in texts], device=model.device)
        with autocast:
            hidden = model.decode(model.embed_states(current).unsqueeze(1), mask, last_pos.unsqueeze(1), cache,
                                  use_cache=True).last_hidden_state[:, -1]
    elif cfg.use_cache:
        cache = DynamicCache(config=model.decoder.config)
        with autocast:
            hidden = model.decode(emb, mask, positions, cache, use_cache=True).last_hidden_state[:, -1]
    else:
        seq = emb
        with autocast:
            hidden = model.decode(seq, mask, positions).last_hidden_state[:, -1]

    def feed(new: torch.Tensor) -> torch.Tensor:
        """Append one position per active row and return the new last hidden states."""
        nonlocal mask, last_pos, positions, seq
        mask = torch.cat([mask, mask.new_ones(len(mask), 1)], dim=1)
        last_pos = last_pos + 1
        with autocast:
            if cfg.use_cache:
                out = model.decode(new.unsqueeze(1), mask, last_pos.unsqueeze(1), cache, use_cache=True)
            else:
                seq = torch.cat([seq, new.unsqueeze(1).to(seq.dtype)], dim=1)
                positions = torch.cat([positions, last_pos.unsqueeze(1)], dim=1)
                out = model.decode(seq, mask, positions)
        return out.last_hidden_state[:, -1]

    while active:
        actions = _choose_actions(model, hidden, cfg.temperature, gen)
        with autocast:
            hidden = feed(model.embed_actions(actions))
        nxt = _round_states(model, model.denormalise(model.predict_states(hidden, current)))
        a_np, s_np = actions.cpu().numpy(), nxt.float().cpu().numpy()
        complete = getattr(domain, "complete_states", None) if cfg.complete_states else None
        if complete is not None:
            s_np = np.asarray(complete(s_np, np.stack([rows[r].start.state for r in active])), np.float32)
            nxt = torch.as_tensor(s_np, device=nxt.device, dtype=nxt.dtype)
        if cfg.physics_prior:
            s_np = np.asarray(physics_prior(current.float().cpu().numpy(), a_np, s_np), np.float32)
            nxt = torch.as_tensor(s_np, device=nxt.device, dtype=nxt.dtype)
        act = [int(a) for a in a_np] if model.discrete else [a.astype(np.float32) for a in a_np]
        live = [rows[r] for r in active]
        succ, rew, prog = _outcomes(domain, live, act, s_np)
        keep = [j for j, r in enumerate(live) if not r.record(act[j], s_np[j], rew[j], succ[j], prog[j])]
        if not keep:
            break
        current = nxt
        with autocast:
            hidden = feed(model.embed_states(nxt))
        if use_end:
            ended = (torch.sigmoid(model.predict_end(hidden)) > cfg.end_threshold).cpu().numpy()
            still = []
            for j in keep:
                if ended[j]:
                    live[j].ended_by_model = True
                else:
                    still.append(j)
            keep = still
            if not keep:
                break
        if len(keep) < len(active):
            idx = torch.as_tensor(keep, device=model.device)
            if cfg.use_cache:
                cache.batch_select_indices(idx)
            else:
                seq, positions = seq[idx], positions[idx]
            mask, last_pos, current, hidden = mask[idx], last_pos[idx], current[idx], hidden[idx]
            active = [active[j] for j in keep]
    return [r.episode() for r in rows]


def imagine(model: Any, domain: Domain, starts: Sequence[Start], cfg: GenerateConfig | None = None,
            progress: bool = True, desc: str = "imagine", gen: torch.Generator | None = None,
            horizons: Sequence[int] | None = None) -> tuple[list[Episode], dict[str, float]]:
    """Imagine one rollout per start (in batches); returns the episodes and throughput numbers."""
    cfg = cfg or GenerateConfig()
    gen = gen if gen is not None else torch.Generator().manual_seed(cfg.seed)
    builder = SequenceBuilder(model.tokenizer, model.state_dim, model.discrete, model.action_dim)
    episodes: list[Episode] = []
    model.eval()
    t0 = time.perf_counter()
    bar = tqdm(total=len(starts), desc=desc, unit="rollout", disable=not progress)
    for i in range(0, len(starts), cfg.batch_size):
        chunk = starts[i:i + cfg.batch_size]
        hz = None if horizons is None else horizons[i:i + cfg.batch_size]
        episodes += imagine_batch(model, domain, chunk, cfg, gen, builder, horizons=hz)
        bar.update(len(chunk))
    bar.close()
    seconds = time.perf_counter() - t0
    steps = sum(len(ep) for ep in episodes)
    return episodes, {"seconds": seconds, "imagined_steps": steps,
                      "steps_per_second": steps / seconds if seconds > 0 else math.inf,
                      "rollouts_per_second": len(episodes) / seconds if seconds > 0 else math.inf}
