"""The benchmark grid: environments × algorithms × levels × training data × seeds, expanded into
:class:`~imaginebench.training.RunSpec`s with a stable id each.

Combinations that make no sense are left out (:meth:`GridSpec.plan` lists them with the reason):

- level ``train`` with ``real-upper-bound`` (the upper bound needs novel tasks), with
  ``real-retrieval`` (it maps novel instructions to train phrasings) or with an
  ``imaginary-*`` variant other than ``imaginary`` (the train level has no imaginary rollouts);
- level ``train`` with ``imaginary``: on the train level that *is* the real-only run, so it is
  run once, as data ``real``;
- an algorithm that does not fit an environment's action space (e.g. ``td3bc`` on BabyAI):
  left out for that environment only (an algorithm that fits none of them is an error);
- two names for one run (``bc`` and ``discrete_bc`` on a discrete domain): run once.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from imaginebench.algos.registry import get_spec, resolve
from imaginebench.config import get_profile
from imaginebench.domains.base import LEVELS, check_level
from imaginebench.envs.registry import env_spec, load_domain
from imaginebench.errors import UsageError, choice_error
from imaginebench.training import DATA_VARIANTS, RunSpec

DEFAULT_DATA = ("real", "imaginary", "real-upper-bound")
"""Training data of the default grid: the no-imagination baseline, real + imaginary, and the Real upper bound."""


def run_config(spec: RunSpec, algo: str) -> dict[str, Any]:
    """What identifies ``spec``'s results: env, resolved algorithm ``algo``, level, data, seed,
    profile, tag and every setting that changes results (:meth:`RunSpec.settings`)."""
    return {"env": env_spec(spec.env_id).env_id, "algo": algo, "level": spec.level, "data": spec.data_tag,
            "seed": spec.seed, "profile": spec.profile_name, "tag": spec.tag,
            "settings": json.loads(json.dumps(spec.settings()))}


def run_id(config: dict[str, Any]) -> str:
    """A stable 16-hex-digit id: SHA-256 of ``config`` as canonical JSON."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class PlannedRun:
    """One run of a grid: its spec, id and config (what the results store keeps)."""

    spec: RunSpec
    run_id: str
    config: dict[str, Any]

    @property
    def label(self) -> str:
        c = self.config
        return f"{c['env']} {c['algo']} {c['level']}/{c['data']} seed {c['seed']}"


@dataclass(frozen=True)
class GridPlan:
    """The runs of a grid, and the combinations left out (``(description, reason)``)."""

    runs: tuple[PlannedRun, ...]
    excluded: tuple[tuple[str, str], ...] = ()


def _names(kind: str, values: Iterable[Any]) -> tuple[Any, ...]:
    if isinstance(values, str):
        values = [v for v in values.split(",")]
    out = tuple(dict.fromkeys(v.strip() if isinstance(v, str) else v for v in values))
    out = tuple(v for v in out if v != "")
    if not out:
        raise UsageError(f"The grid needs at least one {kind}.")
    return out


@dataclass(frozen=True)
class GridSpec:
    """A benchmark grid; sizes not given come from the profile.

    Attributes:
        envs: environment ids (``CLEVR-v0`` or ``ImagineBench/CLEVR-v0``).
        algos: algorithm names (``bc`` picks ``discrete_bc`` on a discrete domain).
        levels: target levels.
        data: training data settings (:data:`~imaginebench.training.DATA_VARIANTS`).
        seeds: run seeds (``None``: the profile's seeds).
        profile: size profile (``None``: ``$IMAGINEBENCH_PROFILE`` or ``small``, resolved when the
            grid is made).
        train_steps, checkpoint_every, eval_episodes_per_task, batch_size: profile overrides.
        encoder: instruction encoder name (``None``: the default encoder).
        algo_options: ``(field, value)`` overrides of every algorithm's default config.
        curve: evaluate every checkpoint; ``False``: only the five the score averages
            (:attr:`imaginebench.training.RunSpec.curve`; the same scores).
    """

    envs: tuple[str, ...]
    algos: tuple[str, ...]
    levels: tuple[str, ...] = LEVELS
    data: tuple[str, ...] = DEFAULT_DATA
    seeds: tuple[int, ...] | None = None
    profile: str | None = None
    train_steps: int | None = None
    checkpoint_every: int | None = None
    eval_episodes_per_task: int | None = None
    batch_size: int | None = None
    encoder: str | None = None
    algo_options: tuple[tuple[str, Any], ...] = field(default=())
    curve: bool = True

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "envs", tuple(dict.fromkeys(env_spec(e).env_id for e in _names("environment", self.envs))))
        set_(self, "algos", _names("algorithm", self.algos))
        for name in self.algos:
            get_spec(name)
        set_(self, "levels", tuple(check_level(lv) for lv in _names("level", self.levels)))
        set_(self, "data", _names("data setting", self.data))
        for name in self.data:
            if name not in DATA_VARIANTS:
                raise choice_error("training data setting", name, DATA_VARIANTS)
        profile = get_profile(self.profile)
        set_(self, "profile", profile.name)  # resolved here: workers may see another $IMAGINEBENCH_PROFILE
        seeds = profile.seeds if self.seeds is None else _names("seed", self.seeds)
        try:
            set_(self, "seeds", tuple(int(s) for s in seeds))
        except (TypeError, ValueError):
            raise UsageError(f"Seeds must be integers, got {', '.join(map(repr, seeds))}.") from None
        set_(self, "algo_options", tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in self.algo_options))
        for name in ("train_steps", "checkpoint_every", "eval_episodes_per_task", "batch_size"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise UsageError(f"{name} must be positive, got {value}.")

    def plan(self) -> GridPlan:
        """Every run of the grid in order (env, algo, level, data, seed), without the combinations
        that make no sense (see the module docstring), each with its id."""
        runs: dict[str, PlannedRun] = {}
        excluded: list[tuple[str, str]] = []
        fits: dict[str, int] = dict.fromkeys(self.algos, 0)
        for env in self.envs:
            domain = load_domain(env)
            for algo in self.algos:
                try:
                    resolved = resolve(algo, domain.discrete_actions, env).name
                except ValueError as exc:
                    excluded.append((f"{env} {algo}", str(exc)))
                    continue
                fits[algo] += 1
                for level in self.levels:
                    for data in self._data_at(level, env, algo, excluded):
                        for seed in self.seeds:
                            spec = self._spec(env, algo, level, data, seed)
                            config = run_config(spec, resolved)
                            rid = run_id(config)
                            if rid not in runs:
                                runs[rid] = PlannedRun(spec, rid, {**config, "spec": _spec_dict(spec)})
        unfit = [a for a, n in fits.items() if n == 0]
        if unfit:
            reasons = "; ".join(reason for what, reason in excluded if what.split(" ", 1)[1] in unfit)
            raise UsageError(f"No environment of the grid fits {', '.join(map(repr, unfit))}: {reasons}")
        if not runs:
            raise UsageError("The grid has no runs left (every combination was left out).")
        return GridPlan(tuple(runs.values()), tuple(excluded))

    def expand(self) -> list[RunSpec]:
        """The grid's :class:`RunSpec`s (see :meth:`plan`)."""
        return [run.spec for run in self.plan().runs]

    def _data_at(self, level: str, env: str, algo: str, excluded: list[tuple[str, str]]) -> list[str]:
        if level != "train":
            return list(self.data)
        out = []
        for data in self.data:
            if data in ("real", "imaginary"):
                out.append("real")  # the same run at the train level
            elif data == "real-upper-bound":
                excluded.append((f"{env} {algo} train/{data}", "the Real upper bound needs a novel level"))
            elif data == "real-retrieval":
                excluded.append((f"{env} {algo} train/{data}", "retrieval maps novel instructions to train ones"))
            else:
                excluded.append((f"{env} {algo} train/{data}", "the train level has no imaginary rollouts"))
        return list(dict.fromkeys(out))

    def _spec(self, env: str, algo: str, level: str, data: str, seed: int) -> RunSpec:
        return RunSpec(env, algo, level=level, seed=seed, profile=self.profile, data=data, encoder=self.encoder,
                       train_steps=self.train_steps, checkpoint_every=self.checkpoint_every,
                       eval_episodes_per_task=self.eval_episodes_per_task, batch_size=self.batch_size,
                       algo_options=self.algo_options, curve=self.curve)


def _spec_dict(spec: RunSpec) -> dict[str, Any]:
    """``spec``'s fields as JSON values (``RunSpec(**d)`` rebuilds it, tuples aside)."""
    return json.loads(json.dumps(asdict(spec)))
