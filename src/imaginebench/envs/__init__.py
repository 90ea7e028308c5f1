"""Environment registry, :func:`make` and wrappers."""

from imaginebench.envs.registry import ENV_IDS, ENV_SPECS, env_spec, is_available, load_domain, make, make_vec, register_envs

__all__ = ["ENV_IDS", "ENV_SPECS", "env_spec", "is_available", "load_domain", "make", "make_vec", "register_envs"]
