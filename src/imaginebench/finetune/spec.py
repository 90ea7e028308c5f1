"""What a fine-tune is: its start, its online method, its budget — and where it lives on disk.

A fine-tune starts from ``scratch`` (random networks) or from a finished offline run, named
``ALGO/DATA`` (the run of that algorithm and training data at the fine-tune's level, profile
and seed, e.g. ``discrete_cql/real`` or ``discrete_cql/imaginary``) or by its folder.  Its
online method is an off-policy algorithm from :data:`ONLINE_METHODS`; by default the start's
own algorithm continues, and a BC start gets a critic learned online with its actor
initialised from BC (``td3`` for continuous actions, ``discrete_sac`` for discrete ones).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imaginebench import limits
from imaginebench.algos import (
    AlgoConfig, CalQLConfig, CQLConfig, DiscreteCQLConfig, DiscreteSACConfig, DoubleDQNConfig, IQLConfig, ReBRACConfig,
    SACConfig, TD3Config, TD3PlusBCConfig,
)
from imaginebench.algos.weights import MODEL_FILE
from imaginebench.config import data_home, get_profile
from imaginebench.domains.base import check_level
from imaginebench.envs.registry import env_spec
from imaginebench.errors import UsageError, choice_error
from imaginebench.evaluation.records import RECORD_NAME, read_record, train_data_flags
from imaginebench.training.spec import RunSpec, run_dir

ONLINE_METHODS: dict[str, type[AlgoConfig]] = {
    "discrete_cql": DiscreteCQLConfig, "double_dqn": DoubleDQNConfig, "discrete_sac": DiscreteSACConfig,
    "td3bc": TD3PlusBCConfig, "td3": TD3Config, "rebrac": ReBRACConfig, "cql": CQLConfig, "calql": CalQLConfig,
    "iql": IQLConfig, "sac": SACConfig,
}
"""Online methods: d3rlpy's off-policy algorithms, each with the config (and defaults) of its
offline counterpart.  The offline-only ones (BC, BCQ, PRDC, COMBO, Decision Transformer) are
not here: a BC start continues with ``td3``/``discrete_sac``."""

BC_SUCCESSOR = {False: "td3", True: "discrete_sac"}
"""Method of a BC start (by discrete actions): a critic learned online, the actor from BC."""

STOCHASTIC = ("discrete_sac", "cql", "calql", "iql", "sac")
"""Methods that explore by sampling their own policy; the others act greedily plus ε-greedy
(discrete) or Gaussian noise (continuous)."""

FINETUNE_DIR = "finetune"


@dataclass(frozen=True)
class FinetuneSpec:
    """One fine-tune (one seed).

    Attributes:
        env_id, level: the domain and the level whose tasks it interacts with and is scored on.
        start: ``"scratch"``, ``"ALGO/DATA"`` or an offline run's folder.
        method: online method (default: the start's algorithm; see the module docstring).
        budget: environment steps (default: the profile's ``finetune_budget``).
        eval_every: environment steps between evaluations (default: the profile's).
        seed: seeds the networks, the environments and the batches; an ``ALGO/DATA`` start is
            the offline run of the same seed.
        profile: size profile (``None``: ``$IMAGINEBENCH_PROFILE`` or ``small``).
        num_envs: sub-environments of the vector env (budget and interval must be multiples).
        offline_ratio: share of every batch from the offline data (0: online data only).
        updates_per_step: gradient steps per environment step.
        epsilon: ε of ε-greedy exploration (discrete, greedy methods).
        noise_std: std of the Gaussian exploration noise (continuous, deterministic methods).
        eval_episodes_per_task, batch_size: profile overrides.
        algo_options: ``(field, value)`` overrides of the method's config.
        vectorization: ``sync`` or ``async`` sub-environments.
        tag: names a non-default variant (its runs live in ``<method>@<tag>``).
    """

    env_id: str
    level: str
    start: str = "scratch"
    method: str | None = None
    budget: int | None = None
    eval_every: int | None = None
    seed: int = 0
    profile: str | None = None
    num_envs: int = 8
    offline_ratio: float = 0.0
    updates_per_step: int = 1
    epsilon: float = 0.1
    noise_std: float = 0.1
    eval_episodes_per_task: int | None = None
    batch_size: int | None = None
    algo_options: tuple[tuple[str, Any], ...] = ()
    vectorization: str = "sync"
    tag: str | None = None

    def __post_init__(self) -> None:
        check_level(self.level)
        get_profile(self.profile)
        for name in ("num_envs", "updates_per_step"):
            if getattr(self, name) < 1:
                raise UsageError(f"{name} must be at least 1, got {getattr(self, name)}.")
        for name in ("budget", "eval_every", "eval_episodes_per_task", "batch_size"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise UsageError(f"{name} must be positive, got {value}.")
        if not 0.0 <= self.offline_ratio < 1.0:
            raise UsageError(f"offline_ratio must lie in [0, 1), got {self.offline_ratio}.")
        if not 0.0 <= self.epsilon <= 1.0:
            raise UsageError(f"epsilon must lie in [0, 1], got {self.epsilon}.")
        limits.number("--noise-std", self.noise_std, low=0.0)
        if self.vectorization == "async" and self.num_envs > limits.available_cpus():  # a process per sub-env
            raise UsageError(f"--num-envs {self.num_envs} with --vectorization async starts {self.num_envs} "
                             f"processes, more than the {limits.available_cpus()} CPUs this process may use; use "
                             f"--vectorization sync (one process) or fewer environments.")
        if self.method is not None and self.method not in ONLINE_METHODS:
            raise choice_error("online method", self.method, tuple(ONLINE_METHODS))
        if self.vectorization not in ("sync", "async"):
            raise choice_error("vectorization mode", self.vectorization, ("sync", "async"))
        n, every, budget = self.num_envs, self.every, self.steps
        if budget % n or every % n:
            raise UsageError(f"The budget ({budget}) and the evaluation interval ({every}) must be multiples of "
                             f"num_envs ({n}): every vector step is {n} environment steps.")
        if budget % every:
            raise UsageError(f"The budget ({budget}) must be a multiple of the evaluation interval ({every}).")

    @property
    def steps(self) -> int:
        return int(self.budget or get_profile(self.profile).finetune_budget)

    @property
    def every(self) -> int:
        return int(min(self.eval_every or get_profile(self.profile).finetune_eval_every, self.steps))

    @property
    def episodes_per_task(self) -> int:
        return int(self.eval_episodes_per_task or get_profile(self.profile).eval_episodes_per_task)

    @property
    def batch(self) -> int:
        return int(self.batch_size or get_profile(self.profile).batch_size)

    @property
    def profile_name(self) -> str:
        return get_profile(self.profile).name

    def settings(self) -> dict[str, Any]:
        """Everything besides the folder's identity that changes the results."""
        return {"budget": self.steps, "eval_every": self.every, "num_envs": self.num_envs,
                "offline_ratio": self.offline_ratio, "updates_per_step": self.updates_per_step,
                "epsilon": self.epsilon, "noise_std": self.noise_std, "eval_episodes_per_task": self.episodes_per_task,
                "batch_size": self.batch, "algo_options": {k: list(v) if isinstance(v, tuple) else v
                                                           for k, v in self.algo_options}}


@dataclass(frozen=True)
class Start:
    """A resolved start.

    Attributes:
        name: folder name (``scratch``, ``ALGO-DATA``, or ``ALGO-DATA-<hash>`` for another folder).
        label: the start as tables write it (``scratch``, ``offline real``, ``offline real+imaginary``).
        run: the offline run's folder (``None`` for scratch).
        record: its record (``{}`` for scratch).
        model_sha256: SHA-256 of its ``model.pt`` as its record states it (checked on load).
    """

    name: str
    label: str
    run: Path | None
    record: dict[str, Any]
    model_sha256: str | None

    @property
    def algo(self) -> str | None:
        return self.record.get("algo")

    def describe(self) -> dict[str, Any]:
        return {"kind": "scratch" if self.run is None else "offline", "name": self.name, "label": self.label,
                "run": str(self.run) if self.run else None, "algo": self.algo,
                "data": self.record.get("data"), "tag": self.record.get("tag"),
                "offline_score": (self.record.get("score") or {}).get(self.record.get("level")),
                "model_sha256": self.model_sha256}


DATA_LABELS = {"real": "offline real", "imaginary": "offline real+imaginary",
               "imaginary-unfiltered": "offline real+imaginary (unfiltered)",
               "imaginary-oracle": "offline real+imaginary (oracle)",
               "imaginary-grounded": "offline real+imaginary (grounded)",
               "real-retrieval": "offline real (retrieval)", "real-upper-bound": "offline Real upper bound"}


def resolve_start(spec: FinetuneSpec) -> Start:
    """The start of ``spec``; a missing or unfinished offline run is a one-line error naming the
    command that trains it."""
    if spec.start == "scratch":
        return Start("scratch", "scratch", None, {}, None)
    canonical = None
    if "/" in spec.start and not Path(spec.start).exists():
        algo, _, data = spec.start.partition("/")
        algo, _, tag = algo.partition("@")
        data_variant = {"real": "real"}.get(data, data)
        try:
            run_spec = RunSpec(spec.env_id, algo, level=spec.level, seed=spec.seed, profile=spec.profile,
                               data=data_variant, tag=tag or None)
        except (ValueError, UsageError) as exc:
            raise UsageError(f"--from {spec.start!r}: {exc} Use scratch, ALGO/DATA (e.g. discrete_cql/real, "
                             "discrete_cql/imaginary) or a run folder.") from None
        folder = run_dir(run_spec)
        canonical = folder
        hint = (f"imaginebench train --env {spec.env_id} --algo {algo} --level {spec.level} --seeds {spec.seed}"
                f" --profile {spec.profile_name}" + (" --real-only" if data == "real" and spec.level != "train" else "")
                + (f" --tag {tag}" if tag else ""))
    else:
        folder = Path(spec.start).expanduser()
        hint = "train it with imaginebench train, or point --from at a finished run's folder"
    record_path, model_path = folder / RECORD_NAME, folder / MODEL_FILE
    if not record_path.exists():
        raise FileNotFoundError(f"No finished offline run at {folder} (needs {RECORD_NAME} and {MODEL_FILE}); {hint}.")
    record = read_record(record_path)
    if record.get("env") != _env_id(spec.env_id):
        raise UsageError(f"The run at {folder} is a {record.get('env')} run; this fine-tune is on {spec.env_id}.")
    digest = (record.get("files") or {}).get(MODEL_FILE)
    if not model_path.exists() or not isinstance(digest, str):
        # runs written before model.pt existed hold only d3rlpy's model.d3, a pickle: never loaded
        flags = train_data_flags(str(record.get("data")), str(record.get("level")))
        raise FileNotFoundError(f"The offline run at {folder} has no {MODEL_FILE} with a checksum in its record "
                                f"(runs finished before 2026-11-26 only have model.d3, which is never loaded: it "
                                f"is a pickle); train it again under a new tag, e.g. "
                                f"imaginebench train --env {spec.env_id} --algo {record.get('algo')} --level "
                                f"{record.get('level')} --seeds {record.get('seed')} --profile "
                                f"{record.get('profile')}{flags} --tag retrained, then start from "
                                f"{record.get('algo')}@retrained/{record.get('data')}.")
    name = record["algo"] + (f"@{record['tag']}" if record.get("tag") else "") + f"-{record['data']}"
    if canonical is None and folder.resolve() != _canonical_folder(spec, record).resolve():
        name += "-" + hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:8]
    label = DATA_LABELS.get(record["data"], f"offline {record['data']}")
    return Start(name, label, folder, record, digest)


def _env_id(env_id: str) -> str:
    return env_spec(env_id).env_id


def _canonical_folder(spec: FinetuneSpec, record: dict[str, Any]) -> Path:
    try:
        data = record["data"] if record["data"] != "real" or spec.level != "train" else "imaginary"
        return run_dir(RunSpec(spec.env_id, record["algo"], level=spec.level, seed=spec.seed, profile=spec.profile,
                               data=data, tag=record.get("tag")))
    except (ValueError, UsageError):
        return Path("/nonexistent")


def resolve_method(spec: FinetuneSpec, start: Start, discrete: bool) -> str:
    """The online method's name: ``spec.method``, else the start's algorithm (BC: its successor)."""
    method = spec.method
    if method is None:
        if start.run is None:
            raise UsageError("A scratch start needs --method (e.g. discrete_cql, double_dqn, discrete_sac; td3, sac, "
                             "iql, calql, cql, td3bc).")
        algo = start.algo or ""
        method = BC_SUCCESSOR[discrete] if algo in ("bc", "discrete_bc") else algo
        if method not in ONLINE_METHODS:
            raise UsageError(f"The start's algorithm {algo!r} has no online version; name one with --method "
                             f"({', '.join(m for m, c in ONLINE_METHODS.items() if c.discrete == discrete)}).")
    if ONLINE_METHODS[method].discrete != discrete:
        fits = [m for m, c in ONLINE_METHODS.items() if c.discrete == discrete]
        raise UsageError(f"Method {method!r} needs {'discrete' if not discrete else 'continuous'} actions; "
                         f"{spec.env_id} has {'discrete' if discrete else 'continuous'} ones. Methods that fit: "
                         f"{', '.join(fits)}.")
    return method


def method_config(spec: FinetuneSpec, start: Start, method: str) -> AlgoConfig:
    """The method's config: a continued algorithm keeps the offline run's values, any other
    method starts from its defaults; ``spec.algo_options`` apply last."""
    cls = ONLINE_METHODS[method]
    config = cls()
    if start.run is not None and start.algo == method:
        recorded = start.record.get("config", {}).get("algorithm", {})
        config = config.replace(**{k: tuple(v) if isinstance(v, list) else v for k, v in recorded.items()})
    return config.replace(**dict(spec.algo_options)) if spec.algo_options else config


def finetune_dir(spec: FinetuneSpec, start: Start, method: str) -> Path:
    """``<home>/finetune/<env>/<profile>/<level>/<start>/<method>[@tag]/seed<k>``."""
    folder = f"{method}@{spec.tag}" if spec.tag else method
    return (data_home() / FINETUNE_DIR / _env_id(spec.env_id) / spec.profile_name / spec.level / start.name / folder
            / f"seed{spec.seed}")
