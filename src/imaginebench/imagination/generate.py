"""Imagining rollouts with the fine-tuned rollout model (docs/benchmark.md §6).

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

import json
import logging
import math
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from imaginebench.data.dataset import Episode, EpisodeDataset
from imaginebench.domains.base import Domain, Task
from imaginebench.errors import UsageError
from imaginebench.imagination.filters import KEEP_MODES, KEEP_VARIANT, honest_ok  # noqa: F401  (re-exported)
from imaginebench.imagination.formats import ROLLOUT_PROMPT, SequenceBuilder, collate

logger = logging.getLogger("imaginebench.imagination")

IMAGINARY_LEVELS: tuple[str, ...] = ("rephrase", "easy", "hard")


@dataclass(frozen=True)
class GenerateConfig:
    """Sampling settings of imagination.

    Attributes:
        temperature: discrete actions are sampled from softmax(logits / temperature);
            0 means argmax.  (Continuous actions are the head's output, clipped to [-1, 1].)
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
            entries (``Domain.complete_states``; BabyAI: the carried record) in every imagined
            state before it is scored and fed back.  Pure, no simulator.
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
        from imaginebench.envs.registry import make

        self.env = make(env_id, level=level, encode_instruction=False)
        self.base = self.env.unwrapped
        self.level, self.seed, self.count = level, int(seed), 0
        self.task_names: tuple[str, ...] = tuple(self.base.tasks)

    def draw(self, task_name: str) -> Start:
        from imaginebench.data.collect import episode_seed

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


def _choose_actions(model: Any, hidden: torch.Tensor, temperature: float, gen: torch.Generator) -> torch.Tensor:
    out = model.predict_actions(hidden)
    if not model.discrete:
        return out.clamp(-1.0, 1.0)
    if temperature == 0:
        return out.argmax(-1)
    probs = torch.softmax(out.float() / temperature, dim=-1)
    if probs.device.type == "cpu":
        return torch.multinomial(probs, 1, generator=gen).squeeze(-1)
    # Gumbel-max on the device: no host round trip; the noise comes from the seeded CPU generator.
    noise = torch.rand(probs.shape, generator=gen).to(probs.device).clamp_(1e-20, 1.0)
    return (probs.log() - (-noise.log()).log()).argmax(-1)


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
            s_np = np.asarray(complete(s_np), np.float32)
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


# ---------------------------------------------------------------------- best-of-N
def task_quotas(task_names: Sequence[str], n: int) -> dict[str, int]:
    """Split ``n`` rollouts over tasks as evenly as possible (the first ``n % T`` get one more)."""
    t = len(task_names)
    return {name: n // t + (1 if i < n % t else 0) for i, name in enumerate(task_names)}


def required_steps(env_id: str, level: str, episodes_per_task: int = 2, seed: int = 7) -> dict[str, int]:
    """Steps each of ``level``'s tasks needs: the longest expert episode over a few resets.

    Used only as a floor under ``--max-steps`` (the step cap is a compute knob and must not
    cut rollouts shorter than the tasks need); never to judge imagined rollouts.
    """
    from imaginebench.data.collect import episode_seed, rollout
    from imaginebench.envs.registry import make

    env = make(env_id, level=level, encode_instruction=False)
    try:
        need: dict[str, int] = {}
        for i, name in enumerate(env.unwrapped.tasks):
            lengths = [len(rollout(env, name, episode_seed(seed, i * episodes_per_task + k)))
                       for k in range(episodes_per_task)]
            need[name] = max(lengths)
        return need
    finally:
        env.close()


def _round_robin(per_task: Mapping[str, list[Episode]]) -> list[Episode]:
    """Interleave tasks: first rollout of every task, then the second, ..."""
    depth = max((len(v) for v in per_task.values()), default=0)
    return [eps[i] for i in range(depth) for eps in per_task.values() if i < len(eps)]


@dataclass
class BestOfN:
    """What best-of-N generation produced for one level."""

    kept: list[Episode]
    unfiltered: list[Episode]
    candidates: list[Episode]
    per_task: dict[str, dict[str, int]]
    throughput: dict[str, float]
    oracle_checked: int = 0

    @property
    def generated(self) -> int:
        return sum(v["candidates"] for v in self.per_task.values())


class RoundStore:
    """Best-of-N's rounds on disk, so that a level killed mid-way resumes to the same dataset.

    A folder ``<dataset>.partial/`` holds one ``round-NNNN.npz`` per finished round (its
    candidates, in the storage format) and ``state.json`` (written last, atomically): the
    settings the run was started with, each round's file, its keep flags, the start sampler's
    position, the sampling generator's state and the time spent.  A round written but not yet
    in ``state.json`` (a kill between the two writes) is ignored and redone.  The rounds are
    deterministic given that state, so resuming gives the dataset an uninterrupted run gives.
    """

    STATE = "state.json"

    def __init__(self, folder: Path, settings: Mapping[str, Any]) -> None:
        self.folder = Path(folder)
        self.settings = json.loads(json.dumps(settings, default=str))
        self.rounds: list[dict[str, Any]] = []
        self.extra: dict[str, Any] = {}

    def load(self) -> list[tuple[list[Episode], np.ndarray]]:
        """The finished rounds (candidates, keep flags); [] for a fresh run.  Raises
        ``UsageError`` when the folder was started with other settings."""
        from imaginebench.data.storage import load_dataset

        path = self.folder / self.STATE
        if not path.exists():
            return []
        state = json.loads(path.read_text())
        if state.get("settings") != self.settings:
            diff = sorted(k for k in set(self.settings) | set(state.get("settings", {}))
                          if self.settings.get(k) != state.get("settings", {}).get(k))
            raise UsageError(f"{self.folder} holds a generation started with other settings ({', '.join(diff)}); "
                             "pass --overwrite to start the level over.")
        self.rounds, self.extra = list(state["rounds"]), dict(state["extra"])
        return [(list(load_dataset(self.folder / r["file"], verify=False)), np.asarray(r["ok"], bool))
                for r in self.rounds]

    def append(self, episodes: list[Episode], ok: np.ndarray, metadata: Mapping[str, Any],
               state_dim: int, action_shape: tuple[int, ...], **extra: Any) -> None:
        from imaginebench.data.storage import save_dataset
        from imaginebench.fileio import write_json

        name = f"round-{len(self.rounds):04d}.npz"
        save_dataset(EpisodeDataset.from_episodes(episodes, metadata=dict(metadata), state_dim=state_dim,
                                                  action_shape=action_shape), self.folder / name, overwrite=True)
        self.rounds.append({"file": name, "candidates": len(episodes), "ok": [bool(x) for x in ok]})
        self.extra = dict(extra)
        write_json(self.folder / self.STATE, {"settings": self.settings, "rounds": self.rounds, "extra": self.extra})

    def remove(self) -> None:
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)


def best_of_n(model: Any, domain: Domain, sampler: StartSampler, quotas: Mapping[str, int], cfg: GenerateConfig,
              horizons: Mapping[str, int] | None = None, oracle: Callable[[list[Episode]], np.ndarray] | None = None,
              progress: bool = True, desc: str = "imagine", store: RoundStore | None = None) -> BestOfN:
    """Generate candidates per task until each task has its quota of kept rollouts or its
    budget (``ceil(cfg.budget * quota)`` candidates) is spent.

    Each round asks, per unfinished task, for as many candidates as its kept rate so far
    (Laplace-smoothed) predicts are needed, within the remaining budget.  ``unfiltered`` holds
    each task's first ``quota`` candidates, i.e. the data plain generation would give.
    ``oracle`` (keep mode ``oracle`` only) further checks honest-kept rollouts with the simulator.
    ``store``: rounds are saved there as they finish and a killed run continues from them.
    """
    gen = torch.Generator().manual_seed(cfg.seed)
    budget = {t: int(math.ceil(cfg.budget * q)) for t, q in quotas.items()}
    kept: dict[str, list[Episode]] = {t: [] for t in quotas}
    first: dict[str, list[Episode]] = {t: [] for t in quotas}
    tried = {t: 0 for t in quotas}
    honest = {t: 0 for t in quotas}
    candidates: list[Episode] = []
    oracle_checked = 0
    seconds = 0.0
    steps = 0
    total = sum(quotas.values())
    bar = tqdm(total=total, desc=desc, unit="kept", disable=not progress)

    def take(eps: list[Episode], ok: np.ndarray) -> None:
        before = sum(len(v) for v in kept.values())
        for ep, good in zip(eps, ok):
            t = ep.task
            tried[t] += 1
            honest[t] += int(good)
            candidates.append(ep)
            if len(first[t]) < quotas[t]:
                first[t].append(ep)
            if good and len(kept[t]) < quotas[t]:
                kept[t].append(ep)
        bar.update(sum(len(v) for v in kept.values()) - before)

    if store is not None:
        done = store.load()
        for eps, ok in done:
            take(eps, ok)
        if done:
            sampler.count = int(store.extra["sampler_count"])
            gen.set_state(torch.tensor(store.extra["gen_state"], dtype=torch.uint8))
            seconds, steps = float(store.extra["seconds"]), int(store.extra["steps"])
            oracle_checked = int(store.extra.get("oracle_checked", 0))
            logger.info("Resuming %s from %d finished rounds (%d candidates) in %s.", desc, len(done),
                        len(candidates), store.folder)
    action_shape = () if domain.discrete_actions else (domain.action_dim,)
    while True:
        requests: list[tuple[str, int]] = []
        for t, q in quotas.items():
            need = q - len(kept[t])
            left = budget[t] - tried[t]
            if need <= 0 or left <= 0:
                continue
            rate = (len(kept[t]) + 1) / (tried[t] + 2)
            requests.append((t, int(min(left, max(need, math.ceil(need / rate))))))
        if not requests:
            break
        starts = [sampler.draw(t) for t, k in requests for _ in range(k)]
        hz = [horizons[s.task.name] if horizons else domain.task_horizon(s.task) for s in starts]
        eps, th = imagine(model, domain, starts, cfg, progress=False, gen=gen, horizons=hz)
        seconds += th["seconds"]
        steps += th["imagined_steps"]
        ok = np.asarray([honest_ok(domain, ep) for ep in eps], bool)
        if oracle is not None and ok.any():
            idx = np.flatnonzero(ok)
            ok[idx] = oracle([eps[i] for i in idx])
            oracle_checked += len(idx)
        take(eps, ok)
        bar.set_postfix(candidates=len(candidates), steps_per_s=f"{steps / seconds:.0f}" if seconds > 0 else "-")
        if store is not None:
            store.append(eps, ok, {"source": "imaginary", "partial": True}, domain.state_dim, action_shape,
                         sampler_count=sampler.count, gen_state=[int(x) for x in gen.get_state().tolist()],
                         seconds=seconds, steps=steps, oracle_checked=oracle_checked)
    bar.close()
    per_task = {t: {"quota": quotas[t], "kept": len(kept[t]), "candidates": tried[t], "passed": honest[t],
                    "budget": budget[t]} for t in quotas}
    throughput = {"seconds": seconds, "imagined_steps": steps,
                  "steps_per_second": steps / seconds if seconds > 0 else math.inf,
                  "rollouts_per_second": len(candidates) / seconds if seconds > 0 else math.inf}
    return BestOfN(kept=_round_robin(kept), unfiltered=_round_robin(first),
                   candidates=candidates, per_task=per_task, throughput=throughput, oracle_checked=oracle_checked)


def _announce(env_id: str, level: str, quotas: Mapping[str, int], horizons: Mapping[str, int],
              cfg: GenerateConfig, model: Any, progress: bool) -> None:
    """Say before a level starts what it may cost: its quota, the candidate budget and the
    longest rollouts; the bar's ETA then follows the kept rate measured round by round."""
    total = sum(quotas.values())
    most = sum(int(math.ceil(cfg.budget * q)) for q in quotas.values())
    worst_steps = sum(int(math.ceil(cfg.budget * q)) * horizons[t] for t, q in quotas.items())
    depth = (len(model.decoder.layers), "late entry" if getattr(model, "late_entry", False) else "every layer")
    msg = (f"imagine {env_id}/{level}: {total:,} rollouts over {len(quotas)} tasks; at most {most:,} candidates "
           f"(budget {cfg.budget:g}) and {worst_steps:,} imagined steps; numbers run through {depth[0]} decoder "
           f"layers ({depth[1]}). The bar's ETA follows the kept rate, from the first round on.")
    logger.info(msg)
    if progress:
        tqdm.write(msg)


@dataclass
class GenerateResult:
    """One level's imagination run."""

    level: str
    path: Path
    episodes: int
    generated: int
    dropped: int
    throughput: dict[str, float]
    quality: dict[str, Any]




def generate_level(
    env_id: str,
    level: str,
    model: Any,
    checkpoint_meta: dict[str, Any],
    checkpoint_dir: Path | str,
    profile: str | None = None,
    episodes: int | None = None,
    cfg: GenerateConfig | None = None,
    overwrite: bool = False,
    progress: bool = True,
    score: bool = True,
    candidate_sample: int = 2000,
) -> GenerateResult:
    """Imagine ``level``'s rollouts with best-of-N per task, keep them by ``cfg.keep``, save.

    Files (``dataset_path(env_id, "imaginary", level, profile)`` = ``imaginary-<level>.npz``):
    the kept rollouts under the keep mode's name (honest: ``imaginary-<level>.npz``; oracle:
    ``imaginary-<level>.oracle.npz``; none: ``imaginary-<level>.unfiltered.npz``); with keep
    ``honest``/``oracle`` also the unfiltered data of the same run (each task's first ``quota``
    candidates) as ``imaginary-<level>.unfiltered.npz``, and a random sample of at most
    ``candidate_sample`` candidates as ``imaginary-<level>.candidates.npz`` (quality of "all").
    The quality report (kept and all; per task: quota, kept, candidates) goes beside the kept
    file as ``.quality.json``.  ``score=False`` skips the simulator-based quality metrics
    (run ``imaginebench imagine quality`` later).
    """
    from imaginebench import __version__
    from imaginebench.config import get_profile
    from imaginebench.data.hub import imaginary_path
    from imaginebench.data.storage import save_dataset
    from imaginebench.domains.base import check_level
    from imaginebench.envs.registry import load_domain
    from imaginebench.errors import choice_error
    from imaginebench.imagination.quality import check_rollouts, quality_path, write_quality

    cfg = cfg or GenerateConfig()
    check_level(level)
    if level not in IMAGINARY_LEVELS:
        raise choice_error("imaginary level", level, IMAGINARY_LEVELS)
    prof = get_profile(profile)
    base_path = imaginary_path(env_id, level, prof.name)
    path = imaginary_path(env_id, level, prof.name, KEEP_VARIANT[cfg.keep])
    extra_paths = [] if cfg.keep == "none" else [imaginary_path(env_id, level, prof.name, "unfiltered"),
                                                  base_path.with_name(f"{base_path.stem}.candidates.npz")]
    for p in (path, *extra_paths):
        if p.exists() and not overwrite:
            raise FileExistsError(f"{p} already exists; pass --overwrite to replace it.")
    if checkpoint_meta.get("env_id") not in (None, env_id):
        raise ValueError(f"The checkpoint at {checkpoint_dir} was trained on {checkpoint_meta['env_id']}, "
                         f"not {env_id}.")
    domain = load_domain(env_id)
    if model.state_dim != domain.state_dim or model.action_dim != domain.action_dim:
        raise ValueError(f"The checkpoint's state/action sizes ({model.state_dim}, {model.action_dim}) do not "
                         f"match {env_id} ({domain.state_dim}, {domain.action_dim}).")
    n = episodes if episodes is not None else prof.episodes(env_id, "imaginary", level)
    if n <= 0:
        raise UsageError(f"episodes must be positive, got {n}.")

    sampler = StartSampler(env_id, level, seed=cfg.seed)
    try:
        names = sampler.task_names
        quotas = task_quotas(names, n)
        horizons = {t.name: domain.task_horizon(t) for t in domain.tasks(level)}
        cap_floor: dict[str, int] = {}
        if cfg.max_steps is not None:
            cap_floor = required_steps(env_id, level)
            horizons = {t: min(h, max(cfg.max_steps, cap_floor[t])) for t, h in horizons.items()}
        oracle = None
        if cfg.keep == "oracle":
            def oracle(eps: list[Episode]) -> np.ndarray:
                checks = check_rollouts(env_id, level, eps, replay=False)
                return checks.transitions_ok & checks.legal
        run_cfg = replace(cfg, budget=1.0) if cfg.keep == "none" else cfg
        store = RoundStore(path.with_name(f"{path.stem}.partial"), {
            "env_id": env_id, "level": level, "profile": prof.name, "quotas": quotas, "horizons": horizons,
            "sampling": asdict(run_cfg), "checkpoint": str(checkpoint_dir),
            "checkpoint_step": (checkpoint_meta.get("loaded") or {}).get("step", checkpoint_meta.get("step")),
            "model": model.config.to_dict()})
        if overwrite:
            store.remove()
        _announce(env_id, level, quotas, horizons, run_cfg, model, progress)
        result = best_of_n(model, domain, sampler, quotas, run_cfg, horizons,
                           oracle if cfg.keep != "none" else None, progress, desc=f"imagine {env_id}/{level}",
                           store=store)
        kept = result.unfiltered if cfg.keep == "none" else result.kept
    finally:
        sampler.close()
    short = {t: v for t, v in result.per_task.items() if v["kept"] < v["quota"]}
    if not kept:
        raise ValueError(f"No imagined {level} rollout passed the {cfg.keep} filter within the budget "
                         f"({result.generated} candidates); nothing saved. Train the rollout model longer, "
                         "raise --budget, or generate with --keep none.")
    device = str(model.device)
    gpu = torch.cuda.get_device_name(model.device) if model.device.type == "cuda" else None
    metadata = {
        "domain": env_id, "level": level, "source": "imaginary", "generator": "rollout-lm",
        "profile": prof.name, "seed": cfg.seed, "episodes": len(kept), "generated": result.generated,
        "state_dim": domain.state_dim, "discrete_actions": domain.discrete_actions, "action_dim": domain.action_dim,
        "backbone": model.backbone_name, "backbone_source": model.backbone_source,
        "model": model.config.to_dict(), "checkpoint": str(checkpoint_dir),
        "checkpoint_step": (checkpoint_meta.get("loaded") or {}).get("step", checkpoint_meta.get("step")),
        "checkpoint_last_step": checkpoint_meta.get("step"), "checkpoint_ended": checkpoint_meta.get("ended"),
        "prompt": ROLLOUT_PROMPT, "sampling": asdict(cfg), "filter": cfg.keep, "oracle": cfg.keep == "oracle",
        "filtered": cfg.keep != "none", "dropped": result.generated - len(kept),
        "quota_shortfall_tasks": len(short), "device": device, "device_name": gpu,
        "step_cap": {"max_steps": cfg.max_steps, "floor": cap_floor} if cfg.max_steps is not None else None,
        "package_version": __version__,
    }
    action_shape = () if domain.discrete_actions else (domain.action_dim,)

    def dataset(eps: list[Episode], **md: Any) -> EpisodeDataset:
        return EpisodeDataset.from_episodes(eps, metadata={**metadata, **md, "episodes": len(eps)},
                                            state_dim=domain.state_dim, action_shape=action_shape)

    save_dataset(dataset(kept), path, overwrite=overwrite)
    rng = np.random.default_rng(cfg.seed)
    sample = result.candidates
    if len(sample) > candidate_sample:
        sample = [sample[i] for i in sorted(rng.choice(len(sample), candidate_sample, replace=False))]
    if cfg.keep != "none":
        save_dataset(dataset(result.unfiltered, filter="none", oracle=False, filtered=False, dropped=0),
                     extra_paths[0], overwrite=overwrite)
        save_dataset(dataset(sample, filter="candidates", oracle=False, filtered=False, dropped=0),
                     extra_paths[1], overwrite=overwrite)
    report: dict[str, Any] = {"env_id": env_id, "level": level, "episodes": len(kept)}
    if score:
        report = check_rollouts(env_id, level, kept, progress=progress).report.to_dict()
        report["all"] = check_rollouts(env_id, level, sample, progress=progress).report.to_dict()
    report.update({
        "filter": cfg.keep, "oracle": cfg.keep == "oracle", "filtered": cfg.keep != "none",
        "kept": len(kept), "generated": result.generated, "dropped": result.generated - len(kept),
        "candidates_per_kept": result.generated / len(kept), "per_task": result.per_task,
        "tasks_short_of_quota": sorted(short), "throughput": result.throughput, "dataset": str(path),
        "checkpoint": str(checkpoint_dir), "sampling": asdict(cfg), "backbone": model.backbone_name,
        "device": device, "device_name": gpu, "scored": bool(score),
    })
    write_quality(quality_path(path), report)
    store.remove()  # the level is saved: its rounds are no longer needed
    return GenerateResult(level=level, path=path, episodes=len(kept), generated=result.generated,
                          dropped=result.generated - len(kept), throughput=result.throughput, quality=report)
