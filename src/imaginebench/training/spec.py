"""What an offline run is: its spec (algorithm, level, training data, sizes), the objects its ids
name, resolved once, and its folder under the data home (:mod:`imaginebench.run_folder`)::

    runs/<env id>/<profile>/<level>/<data>/<algo>[@<tag>]/seed<k>/
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from imaginebench import limits
from imaginebench.algos.registry import resolve
from imaginebench.config import Profile, get_profile
from imaginebench.domains.base import check_level
from imaginebench.envs.registry import domain_class, load_domain
from imaginebench.errors import UsageError, choice_error
from imaginebench.evaluation.protocol import LAST_CHECKPOINTS
from imaginebench.evaluation.records import runs_root
from imaginebench.language.encoders import DEFAULT_ENCODER
from imaginebench.run_folder import RunFolder

DATA_VARIANTS = ("imaginary", "imaginary-unfiltered", "imaginary-oracle", "imaginary-grounded", "real",
                 "real-retrieval", "real-upper-bound")
"""Training data of a run: real + the level's imaginary rollouts kept by the honest filter
(the default; ``train``: real only); real + every generated imaginary rollout (unfiltered);
real + imaginary rollouts kept by the oracle filter (reads the simulator: a diagnostic);
real + imaginary rollouts grounded by dynamics models learned from real train data;
real rollouts only; real rollouts only, evaluated with each novel instruction replaced by its
nearest train phrasing (the retrieval baseline, :mod:`imaginebench.evaluation.retrieval`); real + expert rollouts of the level's tasks (the "Real" upper bound)."""

IMAGINARY_DATA = {"imaginary": "honest", "imaginary-unfiltered": "unfiltered", "imaginary-oracle": "oracle",
                  "imaginary-grounded": "grounded"}
"""Training-data variant -> stored imaginary dataset variant (:data:`imaginebench.data.hub.IMAGINARY_VARIANTS`)."""

DEFAULT_MIX_RATIO = 0.5
"""Share of every batch taken from the second source (imaginary or upper-bound data)."""

_TAG = re.compile(r"[A-Za-z0-9_.-]{1,40}")


@dataclass(frozen=True)
class RunSpec:
    """What to train and how; every size not given comes from the profile.

    Attributes:
        env_id: environment id, e.g. ``"CLEVR-v0"``.
        algo: algorithm name (``bc`` on a discrete domain means ``discrete_bc``; see
            :func:`imaginebench.algos.resolve`).
        level: target level (``train``, ``rephrase``, ``easy``, ``hard``).
        seed: run seed (network initialisation, batches, evaluation episodes).
        profile: size profile name (``None``: ``$IMAGINEBENCH_PROFILE`` or ``small``).
        data: one of :data:`DATA_VARIANTS`.
        mix_ratio: share of each batch from the second source (imaginary / upper-bound data).
        encoder: instruction encoder name (``None``: the default encoder).
        standardize: observation standardisation, ``none``, ``embedding`` or ``all``.
        train_steps, checkpoint_every, eval_episodes_per_task, batch_size: profile overrides.
        algo_options: ``(field, value)`` overrides of the algorithm's default config.
        eval_pool: environments stepped together during evaluation.
        tag: a name for a non-default variant (e.g. ``"nostd"``); runs with a tag live in
            ``<algo>@<tag>`` so they never collide with the default runs.
        curve: evaluate at every checkpoint (the learning curve in the record); ``False``: only
            at the last five, the ones the score averages.  The score is the same either way
            (a seed's evaluation episodes are the same at every checkpoint); a 10-checkpoint run
            spends half the evaluation time, which dominates on slow simulators (LIBERO).
    """

    env_id: str
    algo: str
    level: str = "train"
    seed: int = 0
    profile: str | None = None
    data: str = "imaginary"
    mix_ratio: float = DEFAULT_MIX_RATIO
    encoder: str | None = None
    standardize: str = "all"
    train_steps: int | None = None
    checkpoint_every: int | None = None
    eval_episodes_per_task: int | None = None
    batch_size: int | None = None
    algo_options: tuple[tuple[str, Any], ...] = ()
    eval_pool: int = 16
    tag: str | None = None
    curve: bool = True

    def __post_init__(self) -> None:
        check_level(self.level)
        if self.tag is not None and not _TAG.fullmatch(self.tag):
            raise UsageError(f"tag must be letters, digits, '.', '_' or '-', got {self.tag!r}.")
        if self.data not in DATA_VARIANTS:
            raise choice_error("training data variant", self.data, DATA_VARIANTS)
        if self.data == "real-upper-bound" and self.level == "train":
            raise UsageError("The Real upper bound needs a novel level (rephrase, easy or hard), not train.")
        if self.data == "real-retrieval" and self.level == "train":
            raise UsageError("The retrieval baseline needs a novel level (rephrase, easy or hard), not train.")
        if not 0.0 < self.mix_ratio < 1.0:
            raise UsageError(f"mix_ratio must lie strictly between 0 and 1, got {self.mix_ratio}.")
        for name in ("train_steps", "checkpoint_every", "eval_episodes_per_task", "batch_size"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise UsageError(f"{name} must be positive, got {value}.")
        if self.eval_episodes_per_task is not None:
            limits.count("--eval-episodes", self.eval_episodes_per_task, high=limits.MAX_EPISODES_PER_TASK)
        _ = self.profile_obj  # validates the name

    # ------------------------------------------------------------------ derived
    @cached_property
    def profile_obj(self) -> Profile:
        """The profile, looked up once (``None``: ``$IMAGINEBENCH_PROFILE`` or ``small``)."""
        return get_profile(self.profile)

    @property
    def profile_name(self) -> str:
        return self.profile_obj.name

    @property
    def steps(self) -> int:
        return self.train_steps or self.profile_obj.steps_for(domain_class(self.env_id))

    @property
    def every(self) -> int:
        every = self.checkpoint_every or self.profile_obj.checkpoint_every_for(domain_class(self.env_id))
        return min(every, self.steps)

    @property
    def episodes_per_task(self) -> int:
        return self.eval_episodes_per_task or self.profile_obj.eval_episodes_per_task

    @property
    def batch(self) -> int:
        return self.batch_size or self.profile_obj.batch_size

    def checkpoint_steps(self) -> list[int]:
        """The steps a checkpoint is taken at: every :attr:`every` steps, and the last step."""
        return [*range(self.every, self.steps, self.every), self.steps]

    @property
    def evaluated_checkpoints(self) -> int:
        """How many checkpoints are evaluated: all with :attr:`curve`, else the scored ones."""
        total = -(-self.steps // self.every)
        return total if self.curve else min(total, LAST_CHECKPOINTS)

    def evaluates_at(self, step: int) -> bool:
        """Whether the checkpoint at ``step`` is evaluated: all of them with :attr:`curve`, else
        the last :data:`~imaginebench.evaluation.protocol.LAST_CHECKPOINTS` (the scored ones)."""
        total = -(-self.steps // self.every)
        index = total if step >= self.steps else step // self.every  # 1-based
        return self.curve or index > total - LAST_CHECKPOINTS

    def settings(self) -> dict[str, Any]:
        """Everything besides the folder's identity that changes a run's results."""
        # the resolved encoder name: a run made under an older default never passes for a new one
        return {"steps": self.steps, "checkpoint_every": self.every, "eval_episodes_per_task": self.episodes_per_task,
                "batch_size": self.batch, "mix_ratio": self.mix_ratio, "encoder": self.encoder or DEFAULT_ENCODER,
                "standardize": self.standardize, "algo_options": {k: list(v) if isinstance(v, tuple) else v
                                                                  for k, v in self.algo_options}}

    @property
    def data_tag(self) -> str:
        """``real`` for the train level's default data (it has no imaginary rollouts)."""
        return "real" if self.level == "train" and self.data == "imaginary" else self.data


@dataclass(frozen=True)
class ResolvedRun:
    """A :class:`RunSpec` with its ids looked up once, at the entrance (:func:`resolve_run`), so
    nothing further in needs the registries again.

    Attributes:
        spec: the run.
        domain: the env id's :class:`~imaginebench.domains.base.Domain`.
        algo: the algorithm's :class:`~imaginebench.algos.registry.AlgoSpec`.
        folder: the run's folder.
    """

    spec: RunSpec
    domain: Any
    algo: Any
    folder: RunFolder

    @property
    def env_id(self) -> str:
        return str(self.domain.env_id)

    def config(self) -> Any:
        """The algorithm's config for this run: its defaults, then the domain card's settings for
        it (``Domain.algo_defaults``), then the run's own ``algo_options``."""
        card = dict(self.domain.algo_defaults.get(self.algo.name, {}))
        return self.algo.default_config(**{**card, **dict(self.spec.algo_options)})


def resolve_run(spec: RunSpec) -> ResolvedRun:
    """Look ``spec``'s env id, algorithm and profile up once (an unknown one is a one-line error)."""
    domain = load_domain(spec.env_id)
    space = f"Discrete({domain.action_dim})" if domain.discrete_actions else f"Box({domain.action_dim},)"
    algo = resolve(spec.algo, domain.discrete_actions, domain.env_id, space)
    return ResolvedRun(spec, domain, algo, RunFolder(_run_path(spec, domain.env_id, algo.name)))


def _run_path(spec: RunSpec, env_id: str, algo_name: str) -> Path:
    folder = f"{algo_name}@{spec.tag}" if spec.tag else algo_name
    return runs_root() / env_id / spec.profile_name / spec.level / spec.data_tag / folder / f"seed{spec.seed}"


def run_dir(spec: RunSpec) -> Path:
    """The folder of ``spec``'s run."""
    return resolve_run(spec).folder.path
