"""The nearest-instruction retrieval baseline: a policy trained on real data only, given for every
evaluation instruction the train-level phrasing nearest to it under the instruction encoder.

Rephrased instructions name the train tasks in other words, so much of the rephrase level is solved by
mapping a phrasing back to a known one; imagination earns its place only above this baseline.  The
retriever reads the domain's *train*-level instruction bank and the encoder, nothing else: no novel-level
data, no simulator.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from imaginebench.envs.registry import load_domain
from imaginebench.language import get_encoder

RETRIEVAL_LEVEL = "train"
"""The level whose phrasings instructions are mapped to (the only one a real-only policy has seen)."""


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


class NearestTrainInstruction:
    """Maps instructions (or their embeddings) to the nearest train-level phrasing of ``env_id`` by
    cosine similarity of ``encoder`` embeddings.

    Args:
        env_id: the domain whose train-level instruction bank is the target.
        encoder: the instruction encoder the policy's data was embedded with (an object with
            ``encode(list[str])`` and ``dim``; ``None``: the package's default encoder).
    """

    def __init__(self, env_id: str, encoder: Any = None) -> None:
        if encoder is None or isinstance(encoder, str):
            encoder = get_encoder(encoder)
        self.env_id = env_id
        self.encoder = encoder
        self.bank: tuple[str, ...] = tuple(load_domain(env_id).instruction_bank(RETRIEVAL_LEVEL))
        if not self.bank:
            raise ValueError(f"{env_id} has no train-level instructions to retrieve from.")
        self.embeddings = np.asarray(encoder.encode(list(self.bank)), dtype=np.float32)
        self._unit = _unit(self.embeddings)
        self._cache: dict[str, str] = {}

    def nearest_index(self, embeddings: np.ndarray) -> np.ndarray:
        """Index into :attr:`bank` of the nearest train phrasing of each embedding row ``(n, dim)``."""
        e = np.asarray(embeddings, dtype=np.float64)
        if e.ndim != 2 or e.shape[1] != self.embeddings.shape[1]:
            raise ValueError(f"embeddings must be (n, {self.embeddings.shape[1]}), got shape {e.shape}.")
        return np.argmax(_unit(e) @ self._unit.T, axis=1)

    def text(self, instructions: Sequence[str]) -> list[str]:
        """The nearest train phrasing of each instruction (a train phrasing maps to itself)."""
        todo = [t for t in dict.fromkeys(instructions) if t not in self._cache]
        if todo:
            idx = self.nearest_index(np.asarray(self.encoder.encode(todo), dtype=np.float32))
            self._cache.update({t: self.bank[i] for t, i in zip(todo, idx)})
        return [self._cache[t] for t in instructions]

    def embedding(self, embeddings: np.ndarray) -> np.ndarray:
        """The embedding of the nearest train phrasing of each embedding row (same shape)."""
        return self.embeddings[self.nearest_index(embeddings)]


class RetrievalPolicy:
    """Any policy with the nearest-train-instruction baseline in front of it.

    A policy of observations ``(n, state_dim + dim)`` (state ⊕ instruction embedding, as
    ``imaginebench.make`` and :func:`~imaginebench.evaluation.evaluate` build them) gets each row's
    embedding replaced by the nearest train phrasing's; a ``raw`` policy ``policy(states, instructions)``
    gets the nearest train phrasings' text.  Use :func:`with_retrieval` (it keeps episodic policies episodic).
    """

    def __init__(self, policy: Callable[..., Any], retriever: NearestTrainInstruction, raw: bool = False) -> None:
        self.policy, self.retriever, self.raw = policy, retriever, raw

    def _rows(self, observations: np.ndarray) -> np.ndarray:
        obs = np.array(observations, dtype=np.float32, copy=True)
        dim = self.retriever.embeddings.shape[1]
        if obs.ndim != 2 or obs.shape[1] <= dim:
            raise ValueError(f"observations must be (n, state_dim + {dim}) rows ending in the instruction "
                             f"embedding, got shape {obs.shape}; pass raw=True for a policy of (states, instructions).")
        obs[:, -dim:] = self.retriever.embedding(obs[:, -dim:])
        return obs

    def __call__(self, observations: Any, instructions: Sequence[str] | None = None) -> Any:
        if self.raw:
            if instructions is None:
                raise ValueError("a raw policy is called as policy(states, instructions); no instructions given.")
            return self.policy(observations, self.retriever.text(list(instructions)))
        return self.policy(self._rows(observations))


class _EpisodicRetrievalPolicy(RetrievalPolicy):
    """:class:`RetrievalPolicy` of a policy with memory (:class:`~imaginebench.evaluation.protocol.EpisodicPolicy`)."""

    def start_episode(self, slot: int) -> None:
        self.policy.start_episode(slot)

    def act(self, observations: np.ndarray, slots: Sequence[int], rewards: Sequence[float]) -> Any:
        return self.policy.act(self._rows(observations), slots, rewards)


def with_retrieval(policy: Callable[..., Any], env_id: str, encoder: Any = None, *, raw: bool = False
                   ) -> RetrievalPolicy:
    """``policy`` evaluated on the nearest train phrasing of every instruction (see :class:`RetrievalPolicy`).
    ``encoder``: the one the policy's observations are embedded with (``None``: the default)."""
    retriever = NearestTrainInstruction(env_id, encoder)
    if hasattr(policy, "act") and hasattr(policy, "start_episode"):
        return _EpisodicRetrievalPolicy(policy, retriever, raw)
    if not callable(policy):
        raise ValueError(f"policy must be callable, got {type(policy).__name__}.")
    return RetrievalPolicy(policy, retriever, raw)
