"""Stacked training: S seeds in one update give, per seed, d3rlpy's own numbers for that seed."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from torch import nn

from imaginebench.algos.factory import build_algorithm
from imaginebench.algos.registry import get_spec
from imaginebench.algos.sampler import MixedReplaySource, fast_update
from imaginebench.algos.vectorised import stacked_trainers, trainer_for
from imaginebench.algos.vectorised.batches import StackedSampler
from imaginebench.data import Episode, EpisodeDataset

STACKED_ALGOS = ["bc", "discrete_bc", "td3bc", "discrete_cql", "iql", "discrete_sac", "discrete_bcq", "cql", "sac", "rebrac", "calql", "bcq", "prdc"]
OPTIONS: dict = {"discrete_cql": {"target_update_interval": 5}, "discrete_sac": {"target_update_interval": 5},
           # a tight flexibility, so the imitator's mask really removes actions from the max
           "discrete_bcq": {"target_update_interval": 5, "action_flexibility": 0.9}}
SEEDS = [0, 1, 2]
BATCH = 32


def dataset(discrete: bool, seed: int, n: int = 40) -> EpisodeDataset:
    rng = np.random.default_rng(seed)
    episodes = []
    for i in range(n):
        t = int(rng.integers(3, 12))
        term = np.zeros(t, bool)
        term[-1] = rng.random() < 0.7
        actions = rng.integers(0, 6, t) if discrete else rng.uniform(-1, 1, (t, 3)).astype(np.float32)
        episodes.append(Episode(task=f"t{i % 3}", instruction=f"say {seed} {i % 5}",
                                states=rng.normal(size=(t + 1, 4)).astype(np.float32), actions=actions,
                                rewards=rng.normal(size=t).astype(np.float32), terminals=term,
                                truncations=~term & (np.arange(t) == t - 1), successes=term.copy()))
    return EpisodeDataset.from_episodes(episodes, metadata={"action_dim": 6 if discrete else 3})


def source(discrete: bool) -> MixedReplaySource:
    real, imaginary = dataset(discrete, 0), dataset(discrete, 1)
    rng = np.random.default_rng(5)
    table = {s: rng.normal(size=8).astype(np.float32) for s in real.instructions + imaginary.instructions}
    return MixedReplaySource({"real": real, "imaginary": imaginary}, embeddings=table, seed=0)


def build(name: str, src: MixedReplaySource, seed: int, total_steps: int | None = None, **options):
    """A d3rlpy algorithm built as a lone run builds it, and its random stream right after."""
    config = get_spec(name).default_config(hidden_units=(32, 32), **options)
    torch.manual_seed(seed)
    algo = build_algorithm(config, src, batch_size=BATCH, standardize="all", total_steps=total_steps)
    generator = torch.Generator()
    generator.set_state(torch.get_rng_state())
    return algo, generator


def params_of(algo) -> dict[str, torch.Tensor]:
    out = {}
    for f in dataclasses.fields(algo.impl.modules):
        module = getattr(algo.impl.modules, f.name)
        if isinstance(module, nn.Module):
            out.update({f"{f.name}.{k}": v.detach().clone() for k, v in module.named_parameters()})
    return out


def assert_close(a: dict, b: dict, atol: float = 2e-4) -> None:
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], atol=atol, rtol=1e-4, msg=k)


def lone_d3rlpy(name: str, src, seed: int, steps: int, **options):
    """The seed trained alone through d3rlpy's update (global RNG, the run's sampler draws)."""
    algo, generator = build(name, src, seed, **options)
    torch.set_rng_state(generator.get_state())
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        idx = src.sample_indices(BATCH, rng)
        returns = src.returns_to_go(algo.config.gamma)[idx] if algo.need_returns_to_go else None  # Cal-QL
        fast_update(algo, src.batch_from_indices(idx), returns)
    return algo


def stacked(name: str, src, seeds, steps: int, **options):
    built = [build(name, src, s, **options) for s in seeds]
    trainer = trainer_for([a for a, _ in built], [g for _, g in built])
    sampler = StackedSampler(src, [np.random.default_rng(s) for s in seeds], "cpu",
                             built[0][0].config.observation_scaler, built[0][0].config.action_scaler)
    for _ in range(steps):
        trainer.step(sampler.sample(BATCH))
    trainer.write_back()
    return trainer, [a for a, _ in built]


def test_every_stacked_algorithm_is_covered():
    names = {type(build(n, source(get_spec(n).discrete), 0)[0]).__name__ for n in STACKED_ALGOS}
    assert names | {"COMBO"} == set(stacked_trainers())  # COMBO's own test: tests/algos/test_combo.py


@pytest.mark.parametrize("name", STACKED_ALGOS)
def test_stacked_seeds_equal_each_seed_trained_alone_by_d3rlpy(name):
    src = source(get_spec(name).discrete)
    options = OPTIONS.get(name, {})
    trainer, algos = stacked(name, src, SEEDS, steps=12, **options)
    for seed, algo in zip(SEEDS, algos):
        alone = lone_d3rlpy(name, src, seed, steps=12, **options)
        assert_close(params_of(algo), params_of(alone))
        assert algo.grad_step == alone.grad_step == 12
    # the seeds really differ (nothing shared between rows)
    first, second = params_of(algos[0]), params_of(algos[1])
    assert any(not torch.allclose(first[k], second[k]) for k in first)


@pytest.mark.parametrize("name", ["discrete_bc", "td3bc", "cql"])
def test_a_seed_does_not_depend_on_its_neighbours(name):
    src = source(get_spec(name).discrete)
    _, three = stacked(name, src, [0, 1, 2], steps=8)
    _, one = stacked(name, src, [1], steps=8)
    assert_close(params_of(three[1]), params_of(one[0]), atol=1e-5)


def test_write_back_carries_adam_state_so_a_new_trainer_continues_exactly():
    src = source(False)
    built = [build("td3bc", src, s) for s in SEEDS]
    algos, gens = [a for a, _ in built], [g for _, g in built]
    trainer = trainer_for(algos, gens)
    rngs = [np.random.default_rng(s) for s in SEEDS]
    sampler = StackedSampler(src, rngs, "cpu", algos[0].config.observation_scaler)
    for _ in range(5):
        trainer.step(sampler.sample(BATCH))
    trainer.write_back()
    # a second trainer read from the written-back algorithms, versus the first one going on
    saved = [r.bit_generator.state for r in rngs], [g.get_state() for g in gens]
    resumed = trainer_for(algos, gens)
    assert resumed.grad_step == 5
    for name, optim in trainer.optimizers.items():
        for p_old, p_new in zip(optim.param_groups[0]["params"], resumed.optimizers[name].param_groups[0]["params"]):
            torch.testing.assert_close(optim.state[p_old]["exp_avg"], resumed.optimizers[name].state[p_new]["exp_avg"])
    for _ in range(4):
        trainer.step(sampler.sample(BATCH))
    for r, st in zip(rngs, saved[0]):
        r.bit_generator.state = st
    for g, st in zip(gens, saved[1]):
        g.set_state(st)
    for _ in range(4):
        resumed.step(sampler.sample(BATCH))
    for k in trainer.params:
        torch.testing.assert_close(trainer.params[k], resumed.params[k], atol=0, rtol=0)


@pytest.mark.parametrize("name", ["bc", "discrete_bc"])
def test_a_cosine_learning_rate_schedule_is_stepped_as_d3rlpy_steps_it(name):
    src = source(get_spec(name).discrete)
    trainer, algos = stacked(name, src, SEEDS, steps=12, lr_decay="cosine", total_steps=16)
    assert not trainer.graphable  # a captured graph would freeze the rate
    for seed, algo in zip(SEEDS, algos):
        alone = lone_d3rlpy(name, src, seed, steps=12, lr_decay="cosine", total_steps=16)
        assert_close(params_of(algo), params_of(alone))
        ours, theirs = algo.impl.modules.optim, alone.impl.modules.optim
        assert ours.optim.param_groups[0]["lr"] == pytest.approx(theirs.optim.param_groups[0]["lr"])
        assert ours._lr_scheduler.last_epoch == theirs._lr_scheduler.last_epoch == 12
    # half a cosine from 1e-3 over 16 steps: at step 12 the rate is (1 + cos(12π/16)) / 2 of it
    assert algos[0].impl.modules.optim.optim.param_groups[0]["lr"] == pytest.approx(1e-3 * (1 + np.cos(0.75 * np.pi)) / 2)
    # a constant rate gives different weights: the schedule really acted
    _, constant = stacked(name, src, SEEDS[:1], steps=12)
    assert any(not torch.allclose(a, b) for a, b in zip(params_of(constant[0]).values(), params_of(algos[0]).values()))


@pytest.mark.parametrize("name", ["td3bc", "bc", "iql"])
def test_min_max_action_scaling_trains_as_d3rlpy_and_predicts_in_the_datas_units(name):
    src = source(False)
    _, algos = stacked(name, src, SEEDS[:2], steps=10, action_scaling="minmax")
    scaler = algos[0].config.action_scaler
    assert type(scaler).__name__ == "MinMaxActionScaler"
    actions = src._actions
    np.testing.assert_allclose(scaler.minimum, actions.min(0)), np.testing.assert_allclose(scaler.maximum, actions.max(0))
    for seed, algo in zip(SEEDS[:2], algos):
        assert_close(params_of(algo), params_of(lone_d3rlpy(name, src, seed, steps=10, action_scaling="minmax")))
    # unscaled training differs, and predictions come back in the data's range
    _, plain = stacked(name, src, SEEDS[:1], steps=10)
    assert any(not torch.allclose(a, b) for a, b in zip(params_of(plain[0]).values(), params_of(algos[0]).values()))
    obs = np.random.default_rng(0).normal(size=(64, src.observation_dim)).astype(np.float32)
    predicted = algos[0].predict(obs)
    assert (predicted >= scaler.minimum - 1e-5).all() and (predicted <= scaler.maximum + 1e-5).all()


def test_action_scaling_is_refused_on_discrete_actions_and_keeps_a_constant_dimension_finite():
    from imaginebench.errors import UsageError

    with pytest.raises(UsageError, match="discrete action space; action_scaling must be 'none'"):
        get_spec("discrete_bc").default_config(action_scaling="minmax")
    with pytest.raises(UsageError, match="action_scaling must be one of none, minmax"):
        get_spec("td3bc").default_config(action_scaling="standard")
    real = dataset(False, 0)
    real.actions[:, 1] = 0.25  # a dimension the data never varies
    src = MixedReplaySource({"real": real}, embeddings={s: np.ones(8, np.float32) for s in real.instructions}, seed=0)
    scaler = src.action_scaler()
    assert scaler.minimum[1] == pytest.approx(-0.75) and scaler.maximum[1] == pytest.approx(1.25)


@pytest.mark.parametrize("name", ["td3bc", "rebrac"])
def test_each_td3_optimiser_anneals_over_the_steps_it_takes(name):
    src = source(False)
    trainer, algos = stacked(name, src, SEEDS[:2], steps=10, lr_decay="cosine", total_steps=10)
    for seed, algo in zip(SEEDS[:2], algos):
        alone = lone_d3rlpy(name, src, seed, steps=10, lr_decay="cosine", total_steps=10)
        assert_close(params_of(algo), params_of(alone))
        for field in ("actor_optim", "critic_optim"):  # the actor steps every second update: 5 of 10
            ours, theirs = getattr(algo.impl.modules, field), getattr(alone.impl.modules, field)
            assert ours._lr_scheduler.last_epoch == theirs._lr_scheduler.last_epoch == (5 if field == "actor_optim" else 10)
            assert ours.optim.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)


def test_a_resumed_stacked_trainer_continues_the_schedule_where_it_stopped():
    src = source(False)
    built = [build("bc", src, s, lr_decay="cosine", total_steps=10) for s in SEEDS]
    algos, gens = [a for a, _ in built], [g for _, g in built]
    trainer = trainer_for(algos, gens)
    sampler = StackedSampler(src, [np.random.default_rng(s) for s in SEEDS], "cpu", algos[0].config.observation_scaler)
    for _ in range(6):
        trainer.step(sampler.sample(BATCH))
    trainer.write_back()
    resumed = trainer_for(algos, gens)
    assert resumed.schedulers["optim"].last_epoch == 6
    assert resumed.optimizers["optim"].param_groups[0]["lr"] == pytest.approx(
        trainer.optimizers["optim"].param_groups[0]["lr"])
    for _ in range(4):
        resumed.step(sampler.sample(BATCH))
    assert resumed.optimizers["optim"].param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)


def test_a_learning_rate_schedule_needs_the_runs_length():
    from imaginebench.errors import UsageError

    with pytest.raises(UsageError, match="needs the run's total gradient steps"):
        build("bc", source(False), 0, lr_decay="cosine")
    with pytest.raises(UsageError, match="lr_decay must be one of none, cosine"):
        get_spec("bc").default_config(lr_decay="linear")


def test_a_shared_encoder_is_one_stacked_tensor_trained_by_both_losses():
    src = source(True)
    trainer, algos = stacked("discrete_bcq", src, [0, 1], steps=3, **OPTIONS["discrete_bcq"], share_encoder=True)
    shared = [n for n in trainer.params if n.startswith("imitator._encoder.")]
    assert shared and all(trainer.params[n] is trainer.params["q_funcs.0" + n[len("imitator"):]] for n in shared)
    for algo in algos:  # still one module in d3rlpy after the write-back
        assert algo.impl.modules.imitator._encoder is algo.impl.modules.q_funcs[0]._encoder


def test_discrete_bcq_with_a_shared_encoder_equals_d3rlpy():
    src = source(True)
    options = dict(OPTIONS["discrete_bcq"], share_encoder=True)
    trainer, algos = stacked("discrete_bcq", src, [0, 1], steps=8, **options)
    assert trainer.shared
    for seed, algo in zip([0, 1], algos):
        assert_close(params_of(algo), params_of(lone_d3rlpy("discrete_bcq", src, seed, steps=8, **options)))


def test_unsupported_settings_say_why():
    src = source(False)
    algo, _ = build("bc", src, 0, policy_type="stochastic")
    with pytest.raises(ValueError, match="deterministic policy only"):
        trainer_for([algo])
    prdc, _ = build("prdc", src, 0)
    prdc.impl.index = None
    with pytest.raises(ValueError, match="neighbour index attached"):
        trainer_for([prdc])
    dt, _ = build("dt", src, 0)
    with pytest.raises(ValueError, match="has no stacked trainer"):
        trainer_for([dt])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("name", STACKED_ALGOS)
def test_cuda_graph_steps_equal_eager_steps(name):
    src = source(get_spec(name).discrete)
    options = OPTIONS.get(name, {})
    runs = []
    for graph in (False, True):
        built = []
        for s in SEEDS:
            config = get_spec(name).default_config(hidden_units=(32, 32), **options)
            torch.manual_seed(s)
            built.append(build_algorithm(config, src, batch_size=BATCH, standardize="all", device="cuda:0"))
        trainer = trainer_for(built, [torch.Generator().manual_seed(s) for s in SEEDS])
        sampler = StackedSampler(src, [np.random.default_rng(s) for s in SEEDS], "cuda:0",
                                 built[0].config.observation_scaler)
        for _ in range(12):
            trainer.graph_step(sampler, BATCH) if graph else trainer.step(sampler.sample(BATCH))
        trainer.write_back()
        runs.append([params_of(a) for a in built])
    for eager, graphed in zip(*runs):
        assert_close({k: v.cpu() for k, v in graphed.items()}, {k: v.cpu() for k, v in eager.items()}, atol=1e-5)
