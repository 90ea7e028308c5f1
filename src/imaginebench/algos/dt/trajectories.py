"""Trajectory windows for Decision Transformer: training batches from a mixed source, and an
episodic policy for evaluation.

Training (:func:`sample_trajectory_batch`) reads the flat arrays of a
:class:`~imaginebench.algos.sampler.MixedReplaySource` and builds d3rlpy's
``TrajectoryMiniBatch`` with a few gathers, with the semantics of d3rlpy's
``ReplayBuffer.sample_trajectory_batch`` + ``BasicTrajectorySlicer``::

    end e   one per window, uniform over the transitions of its source; each source fills its
            exact share of the batch (``source.sample_indices``, drawn from ``source.rng``)
    window  transitions [max(e − K + 1, episode start), e], left-padded to K
    rtg_t   r_t + r_{t+1} + … + r_T          undiscounted, to the episode's end (as d3rlpy)
    time_t  t − episode start + 1           1-based, capped at max_timestep; 0 on padding
    mask    1 on the window's transitions, 0 on padding (padded rows are zeros, as d3rlpy)

Episode boundaries come from the source's layout: the transitions of one episode have
consecutive state rows (``s'`` is the next row), so a row that is not its predecessor's + 1
starts a new episode.

Evaluation (:class:`TransformerPolicy`) keeps one d3rlpy ``StatefulTransformerWrapper`` per
evaluator slot, reset when an episode starts there, and feeds it each step's reward so the
return-to-go falls as the episode earns it.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from imaginebench.algos._d3rlpy import load as _load_d3rlpy
from imaginebench.algos.sampler import MixedReplaySource

_load_d3rlpy()

from d3rlpy.dataset import TrajectoryMiniBatch  # noqa: E402

REAL_PREFIX = "real"
"""Sources whose name starts with this hold real (expert) episodes: ``real``, ``real-<level>``."""


@dataclass(frozen=True)
class TrajectoryIndex:
    """Per-transition episode bookkeeping of one source (built once, see :meth:`of`).

    Attributes:
        starts: ``(M,)`` flat index of the first transition of each transition's episode.
        returns_to_go: ``(M,)`` float32 undiscounted return from each transition to its episode's end.
        episode_starts: ``(N,)`` flat index of each episode's first transition.
        episode_returns: ``(N,)`` float64 undiscounted return of each episode.
        episode_sources: ``(N,)`` index into ``source.names`` of each episode's source.
    """

    starts: np.ndarray
    returns_to_go: np.ndarray
    episode_starts: np.ndarray
    episode_returns: np.ndarray
    episode_sources: np.ndarray

    @classmethod
    def of(cls, source: MixedReplaySource) -> "TrajectoryIndex":
        """The index of ``source`` (cached for the source's lifetime)."""
        index = _INDEXES.get(source)
        if index is None:
            index = _INDEXES[source] = cls.build(source)
        return index

    @classmethod
    def build(cls, source: MixedReplaySource) -> "TrajectoryIndex":
        episode_starts = source.episode_starts()
        starts = episode_starts[np.searchsorted(episode_starts, np.arange(source.transition_count), side="right") - 1]
        rtg = source.returns_to_go(1.0)[:, 0]
        episode_returns = np.add.reduceat(source._rewards[:, 0].astype(np.float64), episode_starts)
        return cls(starts=starts, returns_to_go=rtg, episode_starts=episode_starts,
                   episode_returns=episode_returns, episode_sources=source.source_of(episode_starts))

    def real_episodes(self, source: MixedReplaySource) -> np.ndarray:
        """Bool ``(N,)``: episodes of a real source (all of them if the source has no real part)."""
        real = np.array([name.startswith(REAL_PREFIX) for name in source.names])
        mask = real[self.episode_sources]
        return mask if mask.any() else np.ones_like(mask)


_INDEXES: "weakref.WeakKeyDictionary[MixedReplaySource, TrajectoryIndex]" = weakref.WeakKeyDictionary()


def target_return(source: MixedReplaySource) -> float:
    """The return Decision Transformer is conditioned on: the highest return of a real episode
    (the expert's best, as DT conditions on the expert's return)."""
    index = TrajectoryIndex.of(source)
    return float(index.episode_returns[index.real_episodes(source)].max())


def return_scale(source: MixedReplaySource) -> float:
    """``1 / max |episode return|`` over every episode of ``source`` (1 when all returns are 0), so
    scaled returns-to-go lie in [-1, 1]."""
    largest = float(np.abs(TrajectoryIndex.of(source).episode_returns).max())
    return 1.0 / largest if largest > 0 else 1.0


def sample_trajectory_batch(source: MixedReplaySource, batch_size: int, context_size: int, max_timestep: int,
                            rng: np.random.Generator | None = None) -> TrajectoryMiniBatch:
    """``batch_size`` windows of ``context_size`` steps (layout in the module docstring); every
    source contributes its exact share of windows, drawn from ``rng`` (default ``source.rng``)."""
    if context_size <= 0:
        raise ValueError(f"context_size must be positive, got {context_size}.")
    index = TrajectoryIndex.of(source)
    ends = source.sample_indices(batch_size, rng)
    starts = index.starts[ends][:, None]
    pos = ends[:, None] + np.arange(1 - context_size, 1)[None, :]
    valid = pos >= starts
    pos = np.where(valid, pos, ends[:, None])  # any in-episode row; zeroed below
    pad = ~valid
    flat = pos.ravel()
    observations = source.observations(source._obs_rows[flat], source._instr[flat])
    observations = observations.reshape(batch_size, context_size, -1)
    observations[pad] = 0.0

    def gather(values: np.ndarray) -> np.ndarray:
        out = values[pos]
        out[pad] = 0.0
        return out

    timesteps = np.minimum(pos - starts + 1, max_timestep).astype(np.float32)
    timesteps[pad] = 0.0
    return TrajectoryMiniBatch(
        observations=observations, actions=gather(source._actions), rewards=gather(source._rewards),
        returns_to_go=gather(index.returns_to_go[:, None]), terminals=gather(source._terminals),
        timesteps=timesteps, masks=valid.astype(np.float32), length=context_size,
    )


def masked_cross_entropy(impl: Any, batch: Any) -> Any:
    """d3rlpy's discrete Decision Transformer loss averaged over a window's real steps only.

    d3rlpy 2.8 averages the cross-entropy over every window position, padding included, whose
    "action" is the pad value 0: with episodes shorter than K (most CLEVR episodes) most of the
    loss then teaches action 0 on padding.  The continuous loss, and the paper's, skip padding;
    this does the same for discrete actions (same forward pass as d3rlpy's ``compute_loss``).
    """
    import torch.nn.functional as F

    _, logits = impl._modules.transformer(batch.observations, batch.actions, batch.returns_to_go, batch.timesteps,
                                          1 - batch.masks)
    loss = F.cross_entropy(logits.view(-1, impl._action_size), batch.actions.view(-1).long(), reduction="none")
    masks = batch.masks.reshape(-1)
    return (loss * masks).sum() / masks.sum().clamp_min(1.0)


def use_masked_cross_entropy(algo: Any) -> None:
    """Make a built discrete Decision Transformer train on :func:`masked_cross_entropy`."""
    impl = algo.impl
    impl.compute_loss = lambda batch: masked_cross_entropy(impl, batch)


# ---------------------------------------------------------------------- evaluation
_TARGET_ATTR = "_imaginebench_target_return"


def set_target_return(algo: Any, value: float) -> None:
    """Remember on a built transformer ``algo`` the return its evaluation policy aims for."""
    setattr(algo, _TARGET_ATTR, float(value))


def target_return_of(algo: Any) -> float | None:
    """The target return set by :func:`set_target_return`, or ``None``."""
    return getattr(algo, _TARGET_ATTR, None)


def is_transformer(algo: Any) -> bool:
    """Whether ``algo`` is one of d3rlpy's transformer algorithms (acts from a history)."""
    from d3rlpy.algos import TransformerAlgoBase

    return isinstance(algo, TransformerAlgoBase)


class TransformerPolicy:
    """A transformer algorithm acting in several episodes at once, one history per slot.

    Implements :class:`imaginebench.evaluation.protocol.EpisodicPolicy`: the evaluator calls
    :meth:`start_episode` when an episode starts in a slot, then :meth:`act` each step with the
    observation, slot and last reward (0 at an episode's first step) of every running episode.
    Discrete actions are the greedy (arg-max) ones, like every other algorithm's evaluation.

    Args:
        algo: a built d3rlpy transformer algorithm.
        target_return: the return each episode starts conditioned on.
    """

    def __init__(self, algo: Any, target_return: float) -> None:
        from d3rlpy.algos import GreedyTransformerActionSampler, IdentityTransformerActionSampler
        from d3rlpy.constants import ActionSpace

        self.algo = algo
        self.target_return = float(target_return)
        discrete = algo.get_action_type() == ActionSpace.DISCRETE
        self._sampler = GreedyTransformerActionSampler() if discrete else IdentityTransformerActionSampler()
        self._histories: dict[int, Any] = {}

    def start_episode(self, slot: int) -> None:
        """Clear the history of ``slot`` (a new episode starts there)."""
        history = self._histories.get(slot)
        if history is None:
            self._histories[slot] = self.algo.as_stateful_wrapper(self.target_return, self._sampler)
        else:
            history.reset()

    def act(self, observations: np.ndarray, slots: Sequence[int], rewards: Sequence[float]) -> np.ndarray:
        """One action per row: row ``i`` continues the episode of ``slots[i]``, which earned
        ``rewards[i]`` on its previous step."""
        missing = [s for s in slots if s not in self._histories]
        if missing:
            raise ValueError(f"No episode was started in slot(s) {missing}; call start_episode first.")
        return np.stack([np.asarray(self._histories[s].predict(np.asarray(o, dtype=np.float32), float(r)))
                         for o, s, r in zip(observations, slots, rewards)])
