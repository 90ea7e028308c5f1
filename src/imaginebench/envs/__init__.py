"""Environment registry, :func:`make` and wrappers."""

from imaginebench.envs.registry import (
    ENV_SPECS, env_ids, env_spec, is_available, load_domain, make, make_vec, register_domain, register_envs,
    unregister_domain,
)


def __getattr__(name: str):
    if name == "ENV_IDS":  # computed on access: a domain registered later is in it
        return env_ids()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ENV_IDS", "ENV_SPECS", "env_ids", "env_spec", "is_available", "load_domain", "make", "make_vec",
           "register_domain", "register_envs", "unregister_domain"]
