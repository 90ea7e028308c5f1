"""Helpers for the grid tests: toy environments registered in any process (Ray workers and
subprocesses included), toy data, and a fast grid."""

from __future__ import annotations

import gymnasium as gym

from imaginebench.sweep import GridSpec
from tests.algos.helpers import HASH_ENCODER, TOY_ENVS, build_toy_data

FAST = dict(profile="tiny", encoder=HASH_ENCODER, train_steps=40, checkpoint_every=10, eval_episodes_per_task=1,
            batch_size=16, algo_options=(("hidden_units", (16,)),))
"""Grid overrides that make a toy run take about a second."""


def register_toys() -> None:
    """Register ``Toy-v0`` and ``ToyCont-v0`` for good in this process (idempotent; the ``setup``
    that Ray tasks run, since workers do not see a test's monkeypatched registry)."""
    from imaginebench.envs import registry

    for env_id, (env_cls, dom_cls) in TOY_ENVS.items():
        registry.ENV_SPECS.setdefault(env_id, registry.EnvSpec(
            env_id, f"tests.algos.helpers:{env_cls}", f"tests.algos.helpers:{dom_cls}", "toy", ()))
        full = f"{registry.NAMESPACE}/{env_id}"
        if full not in gym.registry:
            gym.register(full, entry_point=f"{registry.__name__}:create_raw", kwargs={"env_id": env_id},
                         disable_env_checker=True)


def flaky_setup() -> None:
    """:func:`register_toys`, but the first call in a data home raises a ``RuntimeError`` (a transient fault)."""
    from imaginebench.config import data_home

    register_toys()
    marker = data_home() / "flaky-once"
    if not marker.exists():
        marker.touch()
        raise RuntimeError("transient fault (first attempt)")


def toy_data() -> None:
    """Real train and easy data of ``Toy-v0`` under the current data home."""
    build_toy_data("Toy-v0", ("train", "easy"), episodes=20)


def toy_grid(seeds=(0, 1), levels=("train", "easy"), data=("real", "real-upper-bound"), **overrides) -> GridSpec:
    """``Toy-v0`` × discrete_bc × ``levels`` × ``data`` × ``seeds`` (default: 3 × 2 = 6 runs)."""
    return GridSpec(envs=("Toy-v0",), algos=("discrete_bc",), levels=levels, data=data, seeds=seeds,
                    **{**FAST, **overrides})


def kill_grid() -> GridSpec:
    """Four toy runs slow enough (about a second or more each) to be killed half-way."""
    return toy_grid(seeds=(5, 6), levels=("train", "easy"), data=("real",), train_steps=1500, checkpoint_every=500)


def run_kill_grid(store_path: str) -> None:
    """The grid job the kill-and-resume test starts (and kills) in a subprocess."""
    from imaginebench.sweep import ResultsStore, run_grid

    register_toys()
    with ResultsStore(store_path) as store:
        run_grid(kill_grid(), store, num_cpus=2, progress=False, setup=register_toys)
