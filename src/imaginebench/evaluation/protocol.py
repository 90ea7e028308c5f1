"""The evaluation protocol (docs/benchmark.md §7).

* At each checkpoint a policy is evaluated on the ``train`` level and on the run's target
  level, with episodes **balanced over that level's tasks**: ``episodes_per_task × n_tasks``
  episodes, every task the same count, each from a fixed reset seed (the same seeds at every
  checkpoint, so curves compare like with like).
* An episode counts as a success when ``info["is_success"]`` is true at its last step.
* The score of a run is the mean success over its **last five checkpoints**
  (:data:`LAST_CHECKPOINTS`; fewer when the run has fewer).

:class:`Evaluator` runs the episodes of one level in lockstep over a pool of environments,
so the policy sees one batch of observations per step instead of one call per episode.  A policy
with memory (:class:`EpisodicPolicy`, e.g. Decision Transformer) is also told when each slot's
episode starts, and each row's slot and last reward.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from imaginebench.envs.registry import domain_class, make
from imaginebench.fileio import first_line

LAST_CHECKPOINTS = 5
"""How many final checkpoints a run's score averages."""

DEFAULT_POOL = 16
"""Environments stepped in lockstep by an :class:`Evaluator`."""

_LEVEL_TAG = {"train": 0, "rephrase": 1, "easy": 2, "hard": 3}

Policy = Callable[[np.ndarray], np.ndarray]
"""Maps a batch of observations ``(n, state ⊕ embedding)`` to a batch of actions."""


@runtime_checkable
class EpisodicPolicy(Protocol):
    """A policy that remembers each running episode (e.g. Decision Transformer's history and
    return-to-go).  The evaluator calls :meth:`start_episode` when an episode starts in one of
    its slots, then :meth:`act` with every running episode's observation, slot and last reward
    (0 at an episode's first step)."""

    def start_episode(self, slot: int) -> None: ...

    def act(self, observations: np.ndarray, slots: Sequence[int], rewards: Sequence[float]) -> np.ndarray: ...


def eval_seed(run_seed: int, level: str, index: int) -> int:
    """Reset seed of evaluation episode ``index`` at ``level`` for a run seeded ``run_seed``."""
    return int(np.random.SeedSequence([int(run_seed), 0xE7A1, _LEVEL_TAG.get(level, 9), int(index)])
               .generate_state(1)[0])


def eval_levels(level: str) -> tuple[str, ...]:
    """Levels evaluated at each checkpoint of a run targeting ``level``: train first."""
    return ("train",) if level == "train" else ("train", level)


def last_checkpoints_mean(values: Sequence[float], last: int = LAST_CHECKPOINTS) -> float:
    """Mean of the last ``last`` values (all of them if fewer); NaN for none."""
    tail = list(values)[-last:]
    return float(np.mean(tail)) if tail else float("nan")


@dataclass(frozen=True)
class LevelResult:
    """Outcome of one evaluation of one level.

    Attributes:
        level: the evaluated level.
        success_rate: fraction of successful episodes.
        per_task: success rate of each task (each task ran the same number of episodes).
        episodes: number of episodes.
        mean_length: mean episode length in steps.
    """

    level: str
    success_rate: float
    per_task: Mapping[str, float]
    episodes: int
    mean_length: float

    def to_dict(self) -> dict[str, Any]:
        return {"success": self.success_rate, "episodes": self.episodes, "mean_length": self.mean_length,
                "per_task": dict(self.per_task)}


@dataclass
class Evaluator:
    """Balanced, seeded evaluation of one level, run in lockstep over ``pool`` environments.

    Args:
        env_id: environment id.
        level: level to evaluate.
        episodes_per_task: episodes of every task.
        seed: the run's seed (reset seeds follow :func:`eval_seed`).
        encoder: instruction encoder (``encode(list[str])``); observations are
            ``state ⊕ embedding`` exactly as ``imaginebench.make`` builds them.
        pool: environments stepped together.
        env_factory: ``level -> raw env`` (default ``imaginebench.make(env_id, level,
            encode_instruction=False)``).
    """

    env_id: str
    level: str
    episodes_per_task: int
    seed: int
    encoder: Any
    pool: int = DEFAULT_POOL
    env_factory: Callable[[str], Any] | None = None
    raw: bool = False
    """Call the policy as ``policy(states, instructions)`` (float32 state vectors and the
    instruction strings) instead of with ``state ⊕ embedding`` rows: for methods with their own
    language encoder."""
    retrieve: Any = None
    """A :class:`~imaginebench.evaluation.retrieval.NearestTrainInstruction`: every episode's instruction
    is replaced by its nearest train phrasing before the policy sees it (the retrieval baseline)."""
    envs: list = field(default_factory=list, repr=False)
    """The environments it steps, made as needed and closed by :meth:`close`.  Evaluators of the
    same env and level may be handed one list to share (a training's seeds and baselines): they
    run one at a time and every episode starts from a seeded reset, so sharing changes no
    result, and memory stays at one pool per level (a LIBERO env holds ~200 MB)."""
    _embeddings: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.episodes_per_task <= 0:
            raise ValueError(f"episodes_per_task must be positive, got {self.episodes_per_task}.")

    def _make(self):
        if self.env_factory is not None:
            return self.env_factory(self.level)

        return make(self.env_id, level=self.level, encode_instruction=False)

    @property
    def tasks(self) -> tuple[str, ...]:
        if not self.envs:
            self.envs.append(self._make())
        return tuple(self.envs[0].unwrapped.tasks)

    def schedule(self) -> list[tuple[str, int]]:
        """``(task, reset seed)`` of every episode: each task ``episodes_per_task`` times."""
        tasks = self.tasks
        order = [tasks[i % len(tasks)] for i in range(len(tasks) * self.episodes_per_task)]
        return [(task, eval_seed(self.seed, self.level, i)) for i, task in enumerate(order)]

    def _prefetch(self) -> None:
        """Encode the level's whole instruction bank in one batch (episodes draw from it)."""
        if self._embeddings:
            return
        unwrapped = self.envs[0].unwrapped
        try:
            bank = list(unwrapped.domain.instruction_bank(self.level))
        except AttributeError:  # not an InstructionEnv: embed lazily
            return
        if bank:
            self._embeddings.update(zip(bank, np.asarray(self.encoder.encode(bank), dtype=np.float32)))

    def _embed_row(self, instruction: str) -> np.ndarray:
        """The embedding part of an observation (empty for a raw policy: it gets the text)."""
        return np.zeros(0, dtype=np.float32) if self.raw else self._embed(instruction)

    def _embed(self, instruction: str) -> np.ndarray:
        if instruction not in self._embeddings:
            self._embeddings[instruction] = np.asarray(self.encoder.encode([instruction])[0], dtype=np.float32)
        return self._embeddings[instruction]

    def _env_cap(self) -> int | None:
        """The domain card's ``eval_envs`` (``None`` for an env the registry does not know)."""
        try:
            return domain_class(self.env_id).eval_envs
        except (KeyError, ValueError, AttributeError, ImportError):
            return None

    def __call__(self, policy: Policy | EpisodicPolicy) -> LevelResult:
        jobs = self.schedule()
        width = max(1, min(self.pool, len(jobs), self._env_cap() or len(jobs)))
        while len(self.envs) < width:
            self.envs.append(self._make())
        envs = self.envs[:width]
        if not self.raw:
            self._prefetch()
        successes: dict[str, list[bool]] = {t: [] for t in self.tasks}
        lengths: list[int] = []
        slots: list[tuple[str, np.ndarray, int] | None] = [None] * width  # task, embedding, steps
        obs = [None] * width
        texts = [""] * width  # each slot's instruction (raw policies)
        domain = envs[0].unwrapped.domain if hasattr(envs[0].unwrapped, "domain") else None
        rewards = [0.0] * width  # each slot's last reward (episodic policies)
        episodic = isinstance(policy, EpisodicPolicy)
        cursor = 0

        def start(i: int) -> None:
            nonlocal cursor
            if cursor >= len(jobs):
                slots[i] = None
                return
            task, reset_seed = jobs[cursor]
            cursor += 1
            state, info = envs[i].reset(seed=reset_seed, options={"task": task})
            instruction = info["instruction"]
            if self.retrieve is not None:
                instruction = self.retrieve.text([instruction])[0]
            texts[i] = instruction
            emb = self._embed_row(instruction)
            slots[i] = (task, emb, 0)
            rewards[i] = 0.0
            if episodic:
                policy.start_episode(i)
            obs[i] = np.concatenate([np.asarray(state, dtype=np.float32), emb])

        for i in range(width):
            start(i)
        while any(s is not None for s in slots):
            active = [i for i, s in enumerate(slots) if s is not None]
            batch = np.stack([obs[i] for i in active])
            try:
                if episodic:
                    out = policy.act(batch, active, [rewards[i] for i in active])
                elif self.raw:
                    out = policy(batch, [texts[i] for i in active])
                else:
                    out = policy(batch)
            except Exception as exc:  # noqa: BLE001  (a user's policy: say what failed, in one line)
                text = first_line(exc) if str(exc).strip() else ""
                # chained, so a library user sees their own traceback under this line (the CLI shows the line)
                raise ValueError(f"The policy raised {type(exc).__name__}{': ' + text if text else ''} when called "
                                 f"with a batch of {len(active)} observations.") from exc
            actions = check_actions(out, len(active), domain)
            for a, i in zip(actions, active):
                task, emb, steps = slots[i]  # type: ignore[misc]
                action = int(a) if np.ndim(a) == 0 else np.asarray(a, dtype=np.float64)
                state, reward, terminated, truncated, info = envs[i].step(action)
                rewards[i] = float(reward)
                if terminated or truncated:
                    successes[task].append(bool(info["is_success"]))
                    lengths.append(steps + 1)
                    start(i)
                else:
                    slots[i] = (task, emb, steps + 1)
                    obs[i] = np.concatenate([np.asarray(state, dtype=np.float32), emb])
        flat = [s for v in successes.values() for s in v]
        return LevelResult(level=self.level, success_rate=float(np.mean(flat)) if flat else float("nan"),
                           per_task={t: float(np.mean(v)) for t, v in successes.items()},
                           episodes=len(flat), mean_length=float(np.mean(lengths)) if lengths else 0.0)

    def close(self) -> None:
        for env in self.envs:
            env.close()
        self.envs.clear()


def check_actions(actions: Any, rows: int, domain: Any) -> np.ndarray:
    """A policy's output for a batch of ``rows`` observations, as an array the envs take; anything
    else (wrong batch size, shape or type, NaN) is a one-line ``ValueError`` saying what was expected."""
    if hasattr(actions, "detach") and hasattr(actions, "cpu"):  # a torch tensor, gradients attached or not
        actions = actions.detach().cpu().numpy()
    try:
        out = np.asarray(actions)
    except Exception as exc:  # noqa: BLE001  (ragged lists and other objects numpy refuses)
        raise ValueError(f"The policy must return an array of actions; got a {type(actions).__name__} numpy "
                         f"cannot read as one ({first_line(exc)}).") from None
    if domain is None:  # an env without a domain (tests' stand-ins): shape checks only
        if out.ndim == 0 or len(out) != rows:
            raise ValueError(f"The policy must return one action per observation ({rows}), got {out.shape}.")
        return out
    if domain.discrete_actions:
        want = f"an integer array of shape ({rows},) with values in 0..{domain.action_dim - 1}"
        if out.shape in ((rows, 1),):
            out = out.reshape(rows)
        if out.shape != (rows,) or out.dtype.kind not in "iuf":
            raise ValueError(f"The policy must return {want}; got {_describe(out)}.")
        if out.dtype.kind == "f" and not (np.all(np.isfinite(out)) and np.all(out == np.round(out))):
            raise ValueError(f"The policy must return {want}; got non-integer or NaN values.")
        if np.any(out < 0) or np.any(out >= domain.action_dim):
            raise ValueError(f"The policy must return {want}; got values from {out.min():g} to {out.max():g}.")
        return out.astype(np.int64)
    want = f"a float array of shape ({rows}, {domain.action_dim})"
    if out.shape != (rows, domain.action_dim) or out.dtype.kind not in "iuf":
        raise ValueError(f"The policy must return {want}; got {_describe(out)}.")
    if not np.all(np.isfinite(out)):
        raise ValueError(f"The policy must return {want} of finite values; got NaN or inf.")
    return out.astype(np.float64)


def _describe(array: np.ndarray) -> str:
    return "None" if array.dtype == object and array.ndim == 0 else f"shape {array.shape}, dtype {array.dtype}"


def d3rlpy_policy(algo, target_return: float | None = None) -> Policy | EpisodicPolicy:
    """The greedy policy of a d3rlpy algorithm (its observation scaler applied).

    A transformer algorithm (Decision Transformer) gets an :class:`EpisodicPolicy` with one
    history per running episode, conditioned on ``target_return`` (default: the one the run's
    config attached, see :meth:`imaginebench.algos.dt.config.DecisionTransformerBase.attach`).
    """
    from imaginebench.algos.dt.trajectories import TransformerPolicy, is_transformer, target_return_of

    if is_transformer(algo):
        target = target_return if target_return is not None else target_return_of(algo)
        if target is None:
            raise ValueError(f"{type(algo).__name__} acts towards a target return; pass target_return= (a run "
                             "records the one it used under config.derived.target_return).")
        return TransformerPolicy(algo, target)

    def act(observations: np.ndarray) -> np.ndarray:
        return algo.predict(observations)

    return act
