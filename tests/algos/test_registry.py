"""The algorithm registry contract: every registered algorithm builds and trains on tiny data."""

from __future__ import annotations

import numpy as np
import pytest

from imaginebench.algos import ALGORITHMS, AlgoSpec, BCConfig, DiscreteCQLConfig, fitting, get_spec, register, resolve
from tests.algos.helpers import HashEncoder
from tests.data.helpers import random_dataset

TINY = {"hidden_units": (16, 16)}


def _source(discrete: bool):
    from imaginebench.algos.sampler import MixedReplaySource

    real = random_dataset(12, discrete=discrete, seed=0)
    imaginary = random_dataset(8, discrete=discrete, seed=1)
    return MixedReplaySource({"real": real, "imaginary": imaginary}, encoder=HashEncoder(), seed=0)


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_algorithm_builds_and_updates(name):
    import torch

    from imaginebench.algos.factory import build_algorithm
    from imaginebench.algos.dt.trajectories import TransformerPolicy, is_transformer

    spec = get_spec(name)
    source = _source(spec.discrete)
    torch.manual_seed(0)
    config = spec.default_config(**TINY)
    algo = build_algorithm(config, source, batch_size=8)
    for _ in range(3):
        loss = config.update(algo, source, 8)
    assert loss and all(np.isfinite(v) for v in loss.values())
    observations = source.sample_transition_batch(4).observations
    if is_transformer(algo):  # acts from a history: each row starts an episode of its own
        policy = TransformerPolicy(algo, target_return=1.0)
        for slot in range(4):
            policy.start_episode(slot)
        actions = policy.act(observations, range(4), [0.0] * 4)
    else:
        actions = algo.predict(observations)
    if spec.discrete:
        assert actions.shape == (4,) and actions.min() >= 0 and actions.max() < source.action_size
    else:
        assert actions.shape == (4, source.action_size)


def test_fit_consumes_the_source_on_an_unbuilt_algorithm(tmp_path):
    from d3rlpy.logging import NoopAdapterFactory

    from imaginebench.algos import BuildContext

    source = _source(discrete=True)
    ctx = BuildContext(batch_size=8, state_dim=source.state_dim, embedding_dim=source.embedding_dim,
                       action_size=source.action_size, discrete=True,
                       observation_scaler=source.observation_scaler("all"))
    algo = DiscreteCQLConfig(hidden_units=(16,)).create(ctx)
    result = algo.fit(source, n_steps=4, n_steps_per_epoch=2, show_progress=False,
                      logger_adapter=NoopAdapterFactory())
    assert len(result) == 2 and algo.grad_step == 4


def test_register_rejects_duplicates():
    with pytest.raises(ValueError, match="already registered"):
        register(AlgoSpec("bc", "bc", "BC", BCConfig))


def test_defaults_follow_the_benchmark_scale():
    for spec in ALGORITHMS.values():
        config = spec.default_config()
        assert config.hidden_units == ((128,) if spec.family == "dt" else (256, 256))  # DT: the paper's width
        assert config.gamma == 0.99
        assert spec.config_cls.__doc__ and "Attributes:" in spec.config_cls.__doc__


def test_config_validation_uses_value_error():
    with pytest.raises(ValueError, match="learning_rate"):
        BCConfig(learning_rate=0)
    with pytest.raises(ValueError, match="no field"):
        BCConfig().replace(not_a_field=1)


def test_family_names_resolve_to_the_fitting_version():
    assert resolve("bc", discrete=True).name == "discrete_bc"
    assert resolve("cql", discrete=True).name == "discrete_cql"
    assert resolve("bc", discrete=False).name == "bc"
    assert resolve("discrete_sac", discrete=True).name == "discrete_sac"
    assert set(fitting(True)) == {"discrete_bc", "discrete_cql", "discrete_bcq", "discrete_sac", "discrete_dt"}


def test_misfit_and_unknown_algorithms_name_the_choices():
    with pytest.raises(ValueError) as err:
        resolve("td3bc", discrete=True, env_id="CLEVR-v0", action_space="Discrete(40)")
    msg = str(err.value)
    assert "td3bc" in msg and "Discrete(40)" in msg and "discrete_bc" in msg and "discrete_cql" in msg
    with pytest.raises(ValueError, match="continuous actions.*Algorithms that fit: bc, cql"):
        resolve("discrete_bc", discrete=False, env_id="HalfCheetah-v0")
    with pytest.raises(ValueError, match="Did you mean 'td3bc'.*Valid choices"):
        get_spec("td3_bc")


def test_each_family_folder_declares_its_algorithms_and_the_registry_holds_exactly_those():
    from imaginebench.algos.registry import FAMILIES

    declared = [spec.name for family in FAMILIES for spec in family.SPECS]
    assert sorted(declared) == sorted(ALGORITHMS) and len(set(declared)) == len(declared)
    for family in FAMILIES:
        for spec in family.SPECS:
            assert spec.family == family.__name__.rsplit(".", 1)[1]
            assert spec.config_cls.__module__ == f"{family.__name__}.config"
            if spec.stacked:
                assert spec.stacked.startswith(f"{family.__name__}.")


def test_an_algorithm_registered_from_outside_is_trainable_stacked():
    from imaginebench.algos.vectorised import stacked_trainers

    spec = AlgoSpec("my_bc", "my_bc", "My BC", BCConfig, stacked="imaginebench.algos.bc.stacked:StackedBC")
    try:
        register(spec)
        assert get_spec("my_bc") is spec and resolve("my_bc", discrete=False) is spec
        assert stacked_trainers()["BC"].__name__ == "StackedBC"
    finally:
        ALGORITHMS.pop("my_bc", None)
