"""Vectorised, mixed replay for offline RL: real and imaginary transitions in fixed shares.

:class:`MixedReplaySource` flattens one or more :class:`~imaginebench.data.EpisodeDataset`
sources into shared arrays once, then builds every batch with a handful of numpy gathers —
never one transition at a time (d3rlpy's own ``ReplayBuffer`` picks transitions in a Python
loop).  Observations are ``state ⊕ instruction embedding``; the embedding is looked up by
instruction id in a small table, so it is stored once per phrasing, not once per step::

    states     (S, D)   every source's episode states, one after another
    obs_rows   (M,)     row of s in ``states`` for each transition; s' is the next row
    instr      (M,)     row of the instruction in ``embeddings`` (K, E)
    actions    (M, 1) discrete (as float) or (M, A)
    rewards, terminals  (M, 1) float32
    source k = transitions [offset_k, offset_k + count_k)

    batch: idx = concat_k(offset_k + randint(count_k, size=n_k))   n_k = exact share of B
           observation = [states[obs_rows[idx]] | embeddings[instr[idx]]]

Discounting: ``terminals`` is the environment's *terminated* flag only; a time-limit
truncation is not terminal, so its target keeps ``γ·V(s')`` with the real final state as
``s'``.  (d3rlpy zeroes ``s'`` of terminal transitions; here ``s'`` is always the real next
state, which the ``1 − terminal`` factor ignores.)

The class implements d3rlpy's ``ReplayBufferBase``, so ``algo.fit(source, ...)`` works on an
un-built algorithm, and ``algo.update(source.sample_transition_batch(n))`` in a loop.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence

import numpy as np

from imaginebench.algos._d3rlpy import load as _load_d3rlpy
from imaginebench.data.dataset import EpisodeDataset
from imaginebench.errors import UsageError, choice_error

_load_d3rlpy()

from d3rlpy.constants import ActionSpace  # noqa: E402
from d3rlpy.dataset import (  # noqa: E402
    DatasetInfo,
    ReplayBufferBase,
    Signature,
    Transition,
    TransitionMiniBatch,
)

STANDARDIZE_MODES = ("none", "embedding", "all")
"""What :meth:`MixedReplaySource.observation_scaler` standardises: nothing, the embedding
columns, or every column (state and embedding)."""

MIN_STD = 1e-3
"""Floor on a column's standard deviation before dividing by it."""


class Encoder(Protocol):
    """Anything with ``encode(list of str) -> (n, E) float32`` (see :mod:`imaginebench.language`)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def split_counts(batch_size: int, weights: Sequence[float]) -> np.ndarray:
    """Exact per-source counts of a batch: largest-remainder rounding of ``batch_size · w``."""
    w = np.asarray(weights, dtype=np.float64)
    if np.any(w < 0) or not np.isclose(w.sum(), 1.0):
        raise ValueError(f"Source weights must be non-negative and sum to 1, got {list(weights)}.")
    raw = batch_size * w
    counts = np.floor(raw).astype(np.int64)
    rest = batch_size - int(counts.sum())
    if rest:
        counts[np.argsort(-(raw - counts), kind="stable")[:rest]] += 1
    return counts


class MixedReplaySource(ReplayBufferBase):
    """Batches drawn from named sources in fixed shares, assembled by array indexing.

    Args:
        sources: ``{name: dataset}``, e.g. ``{"real": real, "imaginary": imaginary}``; all of
            one domain (same state size and action kind).
        weights: ``{name: share of each batch}`` summing to 1 (default: equal shares).
        encoder: instruction encoder (``encode(list[str])``), or a precomputed table via
            ``embeddings``.
        embeddings: ``{instruction: vector}``; used instead of ``encoder`` when given.
        action_size: number of discrete actions (default: the datasets' metadata
            ``action_dim``, else the largest action + 1); ignored for continuous actions.
        seed: seed of the batch-index generator.
    """

    def __init__(self, sources: Mapping[str, EpisodeDataset], weights: Mapping[str, float] | None = None, *,
                 encoder: Encoder | None = None, embeddings: Mapping[str, np.ndarray] | None = None,
                 action_size: int | None = None, seed: int = 0) -> None:
        if not sources:
            raise ValueError("MixedReplaySource needs at least one source.")
        empty = [name for name, ds in sources.items() if ds.num_transitions == 0]
        if empty:
            raise ValueError(f"Source(s) {empty} hold no transitions.")
        self.names: tuple[str, ...] = tuple(sources)
        weights = dict(weights) if weights is not None else {n: 1.0 / len(sources) for n in sources}
        if set(weights) != set(sources):
            raise ValueError(f"weights name {sorted(weights)}, sources are {sorted(sources)}.")
        self.weights = np.array([float(weights[n]) for n in self.names])
        split_counts(1, self.weights)  # validates
        datasets = [sources[n] for n in self.names]
        dims = {ds.state_dim for ds in datasets}
        kinds = {ds.discrete_actions for ds in datasets}
        if len(dims) != 1 or len(kinds) != 1:
            raise ValueError(f"Sources disagree on state size {sorted(dims)} or action kind; use one domain.")
        self.state_dim = dims.pop()
        self.discrete = kinds.pop()

        # instruction table shared by all sources
        instructions: dict[str, int] = {}
        for ds in datasets:
            for s in ds.instructions:
                instructions.setdefault(s, len(instructions))
        self.instructions: tuple[str, ...] = tuple(instructions)
        if embeddings is not None:
            missing = [s for s in self.instructions if s not in embeddings]
            if missing:
                raise ValueError(f"No embedding for {len(missing)} instruction(s), e.g. {missing[0]!r}.")
            table = np.stack([np.asarray(embeddings[s], dtype=np.float32) for s in self.instructions])
        elif encoder is not None:
            table = np.asarray(encoder.encode(list(self.instructions)), dtype=np.float32)
        else:
            raise ValueError("Pass an instruction encoder or an embeddings table.")
        self.embeddings = np.ascontiguousarray(table)
        self.embedding_dim = int(table.shape[1])

        # flatten every source into shared arrays
        states, obs_rows, instr, actions, next_actions, rewards, terminals = [], [], [], [], [], [], []
        offsets, counts, state_base = [], [], 0
        total = 0
        for ds in datasets:
            ep = np.repeat(np.arange(len(ds), dtype=np.int64), ds.lengths)
            rows = np.arange(ds.num_transitions, dtype=np.int64) + ep + state_base
            imap = np.array([instructions[s] for s in ds.instructions], dtype=np.int32)
            last = np.zeros(ds.num_transitions, dtype=bool)
            last[np.cumsum(ds.lengths)[ds.lengths > 0] - 1] = True
            nxt = np.arange(ds.num_transitions) + 1
            nxt[last] = np.arange(ds.num_transitions)[last]
            act = ds.actions.reshape(ds.num_transitions, -1).astype(np.float32)
            nact = act[nxt].copy()
            nact[last] = 0.0
            states.append(ds.states.astype(np.float32, copy=False))
            obs_rows.append(rows)
            instr.append(imap[ds.instruction_ids][ep])
            actions.append(act)
            next_actions.append(nact)
            rewards.append(ds.rewards.astype(np.float32).reshape(-1, 1))
            terminals.append(ds.terminals.astype(np.float32).reshape(-1, 1))
            offsets.append(total)
            counts.append(ds.num_transitions)
            total += ds.num_transitions
            state_base += len(ds.states)
        self._states = np.ascontiguousarray(np.concatenate(states))
        self._obs_rows = np.concatenate(obs_rows)
        self._instr = np.concatenate(instr)
        self._actions = np.concatenate(actions)
        self._next_actions = np.concatenate(next_actions)
        self._rewards = np.concatenate(rewards)
        self._terminals = np.concatenate(terminals)
        self.offsets = np.array(offsets, dtype=np.int64)
        self.counts = np.array(counts, dtype=np.int64)
        self.episode_counts = {n: len(ds) for n, ds in zip(self.names, datasets)}

        if self.discrete:
            if action_size is None:
                meta = [ds.metadata.get("action_dim") for ds in datasets]
                action_size = int(meta[0]) if meta[0] is not None else int(self._actions.max()) + 1
            self.action_size = int(action_size)
            if self._actions.max() >= self.action_size or self._actions.min() < 0:
                raise ValueError(f"Actions outside 0..{self.action_size - 1} in the data.")
        else:
            self.action_size = int(self._actions.shape[1])
        self.rng = np.random.default_rng(seed)
        self._returns_cache: dict[float, np.ndarray] = {}
        self._episode_starts: np.ndarray | None = None
        self._slot_cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._intervals = np.ones((0, 1), dtype=np.float32)

    # ------------------------------------------------------------------ sampling
    @property
    def observation_dim(self) -> int:
        return self.state_dim + self.embedding_dim

    def batch_counts(self, batch_size: int) -> dict[str, int]:
        """How many transitions of each source every batch of ``batch_size`` holds."""
        return dict(zip(self.names, split_counts(batch_size, self.weights).tolist()))

    def _slots(self, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
        """Per batch position: the offset and size of the source that fills it (cached)."""
        if batch_size not in self._slot_cache:
            n = split_counts(batch_size, self.weights)
            self._slot_cache[batch_size] = (np.repeat(self.offsets, n), np.repeat(self.counts, n).astype(np.float64))
        return self._slot_cache[batch_size]

    def sample_indices(self, batch_size: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """Flat transition indices of one batch: each source's exact share, sources in order.

        One uniform draw per position (from ``rng``, default :attr:`rng`), scaled to the size of
        the source that owns the position.
        """
        offsets, sizes = self._slots(batch_size)
        return offsets + ((self.rng if rng is None else rng).random(batch_size) * sizes).astype(np.int64)

    def source_of(self, indices: np.ndarray) -> np.ndarray:
        """Index into :attr:`names` of the source each flat transition index belongs to."""
        return np.searchsorted(self.offsets, indices, side="right") - 1

    def observations(self, rows: np.ndarray, instr: np.ndarray) -> np.ndarray:
        """``state ⊕ embedding`` for state rows and instruction ids (one gather each)."""
        out = np.empty((len(rows), self.observation_dim), dtype=np.float32)
        np.take(self._states, rows, axis=0, out=out[:, : self.state_dim])
        np.take(self.embeddings, instr, axis=0, out=out[:, self.state_dim:])
        return out

    def batch_from_indices(self, indices: np.ndarray) -> TransitionMiniBatch:
        """The d3rlpy mini-batch of the given flat transition indices."""
        rows = self._obs_rows[indices]
        instr = self._instr[indices]
        n = len(indices)
        if len(self._intervals) < n:
            self._intervals = np.ones((n, 1), dtype=np.float32)
        return TransitionMiniBatch(
            observations=self.observations(rows, instr),
            actions=self._actions[indices],
            rewards=self._rewards[indices],
            next_observations=self.observations(rows + 1, instr),
            next_actions=self._next_actions[indices],
            terminals=self._terminals[indices],
            intervals=self._intervals[:n],
            transitions=(),
        )

    def episode_starts(self) -> np.ndarray:
        """Flat index of each episode's first transition (an episode's transitions have consecutive
        state rows; every episode has one more state row than transitions).  Computed once."""
        if self._episode_starts is None:
            first = np.ones(len(self._obs_rows), dtype=bool)
            first[1:] = self._obs_rows[1:] != self._obs_rows[:-1] + 1
            self._episode_starts = np.flatnonzero(first)
        return self._episode_starts

    def returns_to_go(self, gamma: float) -> np.ndarray:
        """``(M, 1)`` float32: each transition's discounted return from its step to the end of its
        episode, ``r_t + γ r_{t+1} + …`` (Monte-Carlo returns, what Cal-QL calibrates against;
        a time-limited episode's return stops at its last step).  Computed once per ``γ``."""
        gamma = float(gamma)
        if gamma not in self._returns_cache:
            m = len(self._obs_rows)
            ends = np.append(self.episode_starts()[1:], m) - 1  # each episode's last transition
            to_end = ends[np.searchsorted(ends, np.arange(m))] - np.arange(m)  # steps left after t
            order = np.argsort(to_end, kind="stable")
            bounds = np.searchsorted(to_end[order], np.arange(int(to_end.max()) + 2))
            g = self._rewards[:, 0].astype(np.float64)
            for k in range(1, int(to_end.max()) + 1):  # all steps k before an episode's end at once
                idx = order[bounds[k]:bounds[k + 1]]
                g[idx] += gamma * g[idx + 1]
            self._returns_cache[gamma] = g.astype(np.float32).reshape(-1, 1)
        return self._returns_cache[gamma]

    def sample_transition_batch(self, batch_size: int) -> TransitionMiniBatch:
        return self.batch_from_indices(self.sample_indices(batch_size))

    def sample_transition(self) -> Transition:
        i = int(self.sample_indices(1)[0])
        b = self.batch_from_indices(np.array([i]))
        return Transition(observation=b.observations[0], action=b.actions[0], reward=b.rewards[0],
                          next_observation=b.next_observations[0], next_action=b.next_actions[0],
                          terminal=float(b.terminals[0, 0]), interval=1, rewards_to_go=b.rewards[:1])

    # ------------------------------------------------------------------ standardisation
    def observation_stats(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and std of each observation column under the batch distribution (sources weighted)."""
        mean = np.zeros(self.observation_dim)
        second = np.zeros(self.observation_dim)
        for w, off, cnt in zip(self.weights, self.offsets, self.counts):
            if w == 0:
                continue
            sl = slice(off, off + cnt)
            st = self._states[self._obs_rows[sl]].astype(np.float64)
            uses = np.bincount(self._instr[sl], minlength=len(self.embeddings)).astype(np.float64) / cnt
            emb = self.embeddings.astype(np.float64)
            mean += w * np.concatenate([st.mean(0), uses @ emb])
            second += w * np.concatenate([(st**2).mean(0), uses @ emb**2])
        std = np.sqrt(np.maximum(second - mean**2, 0.0))
        return mean.astype(np.float32), std.astype(np.float32)

    def observation_scaler(self, mode: str = "all"):
        """A fitted d3rlpy ``StandardObservationScaler`` for ``mode`` (``None`` for ``"none"``).

        ``"embedding"`` standardises only the embedding columns (state columns get mean 0,
        std 1); ``"all"`` also the state columns.  Sentence embeddings of one domain's
        instructions differ in a few small directions (MiniLM: cosine 0.989 between "left of"
        and "right of"); standardising stretches exactly those directions.  The scaler is part
        of the d3rlpy config, so it is saved with the model and applied at prediction time.
        """
        if mode not in STANDARDIZE_MODES:
            raise choice_error("standardize mode", mode, STANDARDIZE_MODES)
        if mode == "none":
            return None
        from d3rlpy.preprocessing import StandardObservationScaler

        mean, std = self.observation_stats()
        std = np.maximum(std, MIN_STD)
        if mode == "embedding":
            mean[: self.state_dim] = 0.0
            std[: self.state_dim] = 1.0
        return StandardObservationScaler(mean=mean, std=std, eps=0.0)

    def action_scaler(self):
        """A d3rlpy ``MinMaxActionScaler`` over the actions of every source with weight (each
        dimension's range maps to [-1, 1]; a dimension the data never varies keeps its scale)."""
        from d3rlpy.preprocessing import MinMaxActionScaler

        if self.discrete:
            raise UsageError("Action scaling is for continuous actions; this data's actions are discrete.")
        used = [self._actions[off:off + cnt] for w, off, cnt in zip(self.weights, self.offsets, self.counts) if w > 0]
        actions = np.concatenate(used).astype(np.float64)
        low, high = actions.min(0), actions.max(0)
        flat = high - low < 1e-6
        low, high = np.where(flat, low - 1.0, low), np.where(flat, high + 1.0, high)
        return MinMaxActionScaler(minimum=low.astype(np.float32), maximum=high.astype(np.float32))

    # ------------------------------------------------------------------ d3rlpy protocol
    @property
    def dataset_info(self) -> DatasetInfo:
        action_shape = [1] if self.discrete else [self.action_size]
        return DatasetInfo(
            observation_signature=Signature(dtype=[np.dtype(np.float32)], shape=[[self.observation_dim]]),
            action_signature=Signature(dtype=[np.dtype(np.float32)], shape=[action_shape]),
            reward_signature=Signature(dtype=[np.dtype(np.float32)], shape=[[1]]),
            action_space=ActionSpace.DISCRETE if self.discrete else ActionSpace.CONTINUOUS,
            action_size=self.action_size,
        )

    @property
    def transition_count(self) -> int:
        return int(self.counts.sum())

    def size(self) -> int:
        return int(sum(self.episode_counts.values()))

    def summary(self) -> dict[str, Any]:
        """Sources, sizes and batch shares (for run records)."""
        return {"sources": [{"name": n, "episodes": self.episode_counts[n], "transitions": int(c),
                             "weight": float(w)} for n, c, w in zip(self.names, self.counts, self.weights)],
                "instructions": len(self.instructions), "observation_dim": self.observation_dim}

    def _read_only(self, *_: Any, **__: Any):
        raise NotImplementedError("MixedReplaySource is a read-only offline source; it cannot be appended to, "
                                  "dumped, or sliced into trajectories.")

    append = append_episode = clip_episode = dump = sample_trajectory = sample_trajectory_batch = _read_only

    @classmethod
    def from_episode_generator(cls, *args: Any, **kwargs: Any):
        raise NotImplementedError("Build a MixedReplaySource from EpisodeDatasets.")

    @classmethod
    def load(cls, *args: Any, **kwargs: Any):
        raise NotImplementedError("Build a MixedReplaySource from EpisodeDatasets.")

    @property
    def episodes(self):
        raise NotImplementedError("MixedReplaySource keeps no d3rlpy episodes: give the algorithm a fitted "
                                  "observation scaler (MixedReplaySource.observation_scaler()) instead of an "
                                  "unfitted one.")

    @property
    def buffer(self):
        raise NotImplementedError("MixedReplaySource has no d3rlpy buffer.")

    @property
    def transition_picker(self):
        raise NotImplementedError("MixedReplaySource picks transitions by array indexing, not a picker.")

    @property
    def trajectory_slicer(self):
        raise NotImplementedError("MixedReplaySource does not slice trajectories.")

    def __repr__(self) -> str:
        parts = ", ".join(f"{n}={c} ({w:.0%})" for n, c, w in zip(self.names, self.counts, self.weights))
        return f"MixedReplaySource({parts}; obs {self.state_dim}+{self.embedding_dim}, actions {self.action_size})"


def to_d3rlpy_buffer(dataset: EpisodeDataset, encoder: Encoder | None = None, *,
                     embeddings: Mapping[str, np.ndarray] | None = None, action_size: int | None = None):
    """The same data as a d3rlpy ``ReplayBuffer`` (``state ⊕ embedding`` per step).

    Terminated episodes end with a terminal transition; truncated ones keep their last
    transition too (the final state is appended with a dummy action and ``terminated=False``,
    which d3rlpy reads as "bootstrap from the last observation").
    """
    from d3rlpy.dataset import Episode, InfiniteBuffer, ReplayBuffer

    if embeddings is None:
        if encoder is None:
            raise ValueError("Pass an instruction encoder or an embeddings table.")
        embeddings = dict(zip(dataset.instructions, encoder.encode(list(dataset.instructions))))
    episodes = []
    for ep in dataset:
        t = len(ep)
        emb = np.asarray(embeddings[ep.instruction], dtype=np.float32)
        terminated = bool(ep.terminals[-1]) if t else False
        n_obs = t if terminated else t + 1
        obs = np.concatenate([ep.states[:n_obs].astype(np.float32), np.repeat(emb[None], n_obs, 0)], axis=1)
        act = np.asarray(ep.actions).reshape(t, -1).astype(np.float32 if not dataset.discrete_actions else np.int64)
        rew = ep.rewards.reshape(-1, 1).astype(np.float32)
        if not terminated:
            act = np.concatenate([act, np.zeros_like(act[:1])])
            rew = np.concatenate([rew, np.zeros((1, 1), np.float32)])
        episodes.append(Episode(observations=obs, actions=act, rewards=rew, terminated=terminated))
    kwargs: dict[str, Any] = {}
    if dataset.discrete_actions:
        kwargs = {"action_space": ActionSpace.DISCRETE,
                  "action_size": action_size or int(dataset.metadata.get("action_dim", dataset.actions.max() + 1))}
    return ReplayBuffer(InfiniteBuffer(), episodes=episodes, **kwargs)


def torch_batch(batch: TransitionMiniBatch, algo, returns_to_go: np.ndarray | None = None):
    """``batch`` as the ``TorchMiniBatch`` that ``algo.update`` would build, without copying.

    d3rlpy's ``update`` copies every array into a new tensor; our batches are fresh arrays
    that nothing else holds, so ``torch.from_numpy`` can share their memory.  The algorithm's
    scalers are applied exactly as d3rlpy applies them.  ``returns_to_go`` (``(B, 1)``, from
    :meth:`MixedReplaySource.returns_to_go`) fills the field d3rlpy computes transition by
    transition for algorithms that need it (Cal-QL); zeros otherwise, as d3rlpy.
    """
    import torch
    from d3rlpy.torch_utility import TorchMiniBatch

    device = algo.impl.device
    config = algo.config

    def tensor(a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(a).to(device)

    obs, next_obs = tensor(batch.observations), tensor(batch.next_observations)
    actions, next_actions, rewards = tensor(batch.actions), tensor(batch.next_actions), tensor(batch.rewards)
    if config.observation_scaler is not None:
        obs, next_obs = config.observation_scaler.transform(obs), config.observation_scaler.transform(next_obs)
    if config.action_scaler is not None:
        actions, next_actions = config.action_scaler.transform(actions), config.action_scaler.transform(next_actions)
    if config.reward_scaler is not None:
        rewards = config.reward_scaler.transform(rewards)
    return TorchMiniBatch(observations=obs, actions=actions, rewards=rewards, next_observations=next_obs,
                          next_actions=next_actions,
                          returns_to_go=torch.zeros_like(rewards) if returns_to_go is None else tensor(returns_to_go),
                          terminals=tensor(batch.terminals), intervals=tensor(batch.intervals), device=device,
                          numpy_batch=batch)


def fast_update(algo, batch: TransitionMiniBatch, returns_to_go: np.ndarray | None = None) -> dict[str, float]:
    """One gradient step, equivalent to ``algo.update(batch)`` but without d3rlpy's tensor copies.

    Algorithms that need returns-to-go (Cal-QL) take them as ``returns_to_go``; without them
    this falls back to d3rlpy's own ``update``.
    """
    if algo.need_returns_to_go and returns_to_go is None:
        return algo.update(batch)
    step = algo.grad_step
    loss = algo.impl.update(torch_batch(batch, algo, returns_to_go), step)
    algo.set_grad_step(step + 1)
    return loss
