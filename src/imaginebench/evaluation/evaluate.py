"""``imaginebench.evaluate``: the official evaluation of any policy, one call.

A researcher with their own method (PyTorch, JAX, anything) hands over a callable and gets the
number that ``imaginebench train`` would have reported for the same policy: the same
:class:`~imaginebench.evaluation.protocol.Evaluator` scores both (episodes balanced over the
level's tasks, fixed reset seeds per ``seed``), and the chance and expert references are run on
exactly the same ``(task, reset seed)`` schedule (:func:`~imaginebench.evaluation.reference.reference_scores`,
the ones run records and ``imaginebench report`` use), so the normalised score compares like with
like.

A run's score is the mean over its last five checkpoints; ``evaluate`` scores one policy once
(one checkpoint).  Average your own last five evaluations to report a run the way the published
rows are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from imaginebench import limits
from imaginebench.config import get_profile
from imaginebench.domains.base import check_level
from imaginebench.envs.registry import env_spec
from imaginebench.evaluation.protocol import Evaluator
from imaginebench.evaluation.reference import normalised_score, reference_scores
from imaginebench.evaluation.retrieval import NearestTrainInstruction
from imaginebench.language.encoders import as_encoder


@dataclass(frozen=True)
class EvaluationResult:
    """One evaluation of a policy on one level.

    Attributes:
        env_id, level: what was evaluated.
        success: fraction of successful episodes.
        per_task: success rate of every task (each ran ``episodes_per_task`` episodes).
        episodes: number of episodes; ``episodes_per_task`` and ``seed`` fix the schedule.
        mean_length: mean episode length in steps.
        random, expert: success of the uniformly random policy and of the expert on the same
            schedule (``None`` with ``references=False``); ``random_per_task``/``expert_per_task``.
        normalised: ``100 · (success − random) / (expert − random)`` (0 = chance, 100 = expert;
            ``None`` where the expert is not above chance or references were not computed).
        schedule: ``(task, reset seed)`` of every episode, in order.
        encoder: the instruction encoder's name (``"raw"`` for a raw policy).
        retrieval: every instruction was replaced by its nearest train phrasing (the retrieval baseline).
    """

    env_id: str
    level: str
    success: float
    per_task: Mapping[str, float]
    episodes: int
    episodes_per_task: int
    seed: int
    mean_length: float
    random: float | None
    expert: float | None
    random_per_task: Mapping[str, float] | None
    expert_per_task: Mapping[str, float] | None
    normalised: float | None
    schedule: tuple[tuple[str, int], ...]
    encoder: str
    retrieval: bool = False

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        out = asdict(self)
        out["schedule"] = [list(item) for item in self.schedule]
        return out

    def __str__(self) -> str:
        refs = ("" if self.random is None else
                f"; random {self.random:.1%}, expert {self.expert:.1%}"
                + (f", normalised {self.normalised:.1f}" if self.normalised is not None else ""))
        how = " (instructions retrieved: nearest train phrasing)" if self.retrieval else ""
        return (f"{self.env_id} {self.level}{how}: success {self.success:.1%} over {self.episodes} episodes "
                f"({self.episodes_per_task} per task, seed {self.seed}){refs}")


def evaluate(policy: Callable[..., Any], env_id: str, level: str, *, episodes_per_task: int | None = None,
             seed: int = 0, encoder: Any = None, num_envs: int = 1, profile: str | None = None, raw: bool = False,
             references: bool = True, retrieval: bool = False) -> EvaluationResult:
    """Score ``policy`` on ``level`` of ``env_id`` with the benchmark's evaluation protocol.

    Args:
        policy: a callable from a batch of observations ``(n, state_dim + embedding_dim)``
            (float32: the state vector, then the instruction embedding of ``encoder``, as
            ``imaginebench.make`` builds them) to a batch of actions: ``(n,)`` integers for a
            discrete domain, ``(n, action_dim)`` floats in [-1, 1] for a continuous one.  With
            ``raw=True`` it is called as ``policy(states, instructions)``: ``(n, state_dim)``
            float32 state vectors and a list of ``n`` instruction strings.  A policy with memory
            may implement :class:`~imaginebench.evaluation.protocol.EpisodicPolicy`.
        env_id, level: e.g. ``"CLEVR-v0"``, ``"hard"``.
        episodes_per_task: episodes of every task (default: the profile's, as ``imaginebench
            train`` evaluates).
        seed: the evaluation seed (reset seeds follow it; a run seeded ``k`` evaluates with ``k``).
        encoder: the instruction encoder — a name, an encoder object, or ``None`` for the
            package's default (the one ``imaginebench train`` uses by default).
        num_envs: environments stepped in lockstep (the policy sees up to this many rows per
            call), at most the domain card's ``eval_envs`` (LIBERO: 4, for memory); the result
            does not depend on it for a deterministic policy.
        profile: size profile for the default ``episodes_per_task``.
        raw: hand the policy raw states and instruction strings (see ``policy``).
        references: also run (or read from the data home's cache) the random and expert
            policies on the same schedule.
        retrieval: the nearest-instruction baseline: every instruction is replaced by the train-level
            phrasing nearest to it under the encoder (``encoder``; the default one for a raw policy)
            before the policy sees it (:mod:`imaginebench.evaluation.retrieval`; reads no novel-level data).
    """
    if not callable(policy) and not hasattr(policy, "act"):
        raise ValueError(f"policy must be a callable from a batch of observations to a batch of actions, got "
                         f"{type(policy).__name__}.")
    env_id = env_spec(env_id).env_id
    check_level(level)
    episodes_per_task = limits.count("episodes_per_task", episodes_per_task, allow_none=True,
                                     high=limits.MAX_EPISODES_PER_TASK) or \
        get_profile(profile).eval_episodes_per_task
    seed = limits.count("seed", seed, low=0)
    num_envs = limits.count("num_envs", num_envs)
    if raw:
        enc, encoder_name = None, "raw"
    else:
        enc = as_encoder(encoder)
        encoder_name = str(getattr(enc, "name", "custom"))
    retrieve = None
    if retrieval:
        retrieve = NearestTrainInstruction(env_id, as_encoder(encoder) if raw else enc)
    evaluator = Evaluator(env_id, level, episodes_per_task, seed, enc, pool=num_envs, raw=raw, retrieve=retrieve)
    try:
        schedule = tuple(evaluator.schedule())
        result = evaluator(policy)
    finally:
        evaluator.close()
    random = expert = None
    random_per_task = expert_per_task = None
    normalised = None
    if references:
        refs = reference_scores(env_id, level, episodes_per_task, seed)
        random, expert = float(refs["random"]["success"]), float(refs["expert"]["success"])
        random_per_task, expert_per_task = dict(refs["random"]["per_task"]), dict(refs["expert"]["per_task"])
        score = normalised_score(result.success_rate, random, expert)
        normalised = float(score) if np.isfinite(score) else None
    return EvaluationResult(env_id=env_id, level=level, success=float(result.success_rate),
                            per_task=dict(result.per_task), episodes=int(result.episodes),
                            episodes_per_task=int(episodes_per_task), seed=int(seed),
                            mean_length=float(result.mean_length), random=random, expert=expert,
                            random_per_task=random_per_task, expert_per_task=expert_per_task,
                            normalised=normalised, schedule=schedule, encoder=encoder_name,
                            retrieval=bool(retrieval))


