"""Decision Transformer: trajectory batches, end-to-end runs, resume, and the episodic policy."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from imaginebench.envs.registry import is_available
from imaginebench.evaluation import stable_view
from imaginebench.training import RunSpec, run_dir, train
from imaginebench.run_folder import CHECKPOINT_NAME, MODEL_NAME
from tests.algos.helpers import HASH_ENCODER, HashEncoder, build_toy_data, save_imaginary, toy_envs  # noqa: F401
from tests.data.helpers import random_dataset

K = 4
TINY_DT = (("hidden_units", (16,)), ("context_size", K), ("num_layers", 1), ("batch_size", 8), ("warmup_steps", 5))
TINY_DISCRETE_DT = (("hidden_units", (16,)), ("context_size", K), ("num_layers", 1), ("batch_size", 8),
                    ("warmup_tokens", 64), ("final_tokens", 4096))


def _source(weights: dict[str, float], discrete: bool = False):
    from imaginebench.algos.sampler import MixedReplaySource

    real = random_dataset(30, seed=0, discrete=discrete)
    imaginary = random_dataset(12, seed=1, discrete=discrete)
    return MixedReplaySource({"real": real, "imaginary": imaginary}, weights, encoder=HashEncoder(), seed=0), \
        (real, imaginary)


def _d3rlpy_episodes(datasets, encoder):
    """Every episode as a d3rlpy ``Episode`` (observation of each step = state ⊕ embedding), in the
    source's flat order, with the flat index of its first transition."""
    from d3rlpy.dataset import Episode

    episodes, first, offset = [], [], 0
    for ds in datasets:
        for ep in ds:
            t = len(ep)
            emb = encoder.encode([ep.instruction])[0]
            obs = np.concatenate([ep.states[:t], np.repeat(emb[None], t, 0)], axis=1).astype(np.float32)
            episodes.append(Episode(observations=obs, actions=np.asarray(ep.actions, np.float32).reshape(t, -1),
                                    rewards=ep.rewards.reshape(-1, 1).astype(np.float32),
                                    terminated=bool(ep.terminals[-1])))
            first.append(offset)
            offset += t
    return episodes, np.array(first)


@pytest.mark.parametrize("discrete", [False, True])
def test_windows_equal_d3rlpys_slicer_and_never_cross_an_episode(discrete):
    from d3rlpy.dataset import BasicTrajectorySlicer

    from imaginebench.algos.dt.trajectories import sample_trajectory_batch

    source, datasets = _source({"real": 0.5, "imaginary": 0.5}, discrete)
    episodes, first = _d3rlpy_episodes(datasets, HashEncoder())
    slicer = BasicTrajectorySlicer()
    for draw in range(5):
        batch = sample_trajectory_batch(source, 32, K, max_timestep=1000, rng=np.random.default_rng(draw))
        ends = source.sample_indices(32, np.random.default_rng(draw))  # the same draws
        assert batch.observations.shape == (32, K, source.observation_dim) and batch.length == K
        assert batch.actions.shape == (32, K, 1 if discrete else 3)
        assert batch.rewards.shape == batch.returns_to_go.shape == batch.terminals.shape == (32, K, 1)
        assert batch.timesteps.shape == batch.masks.shape == (32, K)
        for row, end in enumerate(ends):
            e = int(np.searchsorted(first, end, side="right") - 1)  # the episode holding the window's end
            expected = slicer(episodes[e], int(end - first[e]), K)
            for name in ("observations", "actions", "rewards", "returns_to_go", "terminals", "timesteps", "masks"):
                np.testing.assert_allclose(getattr(batch, name)[row], np.asarray(getattr(expected, name)).reshape(
                    getattr(batch, name)[row].shape), rtol=1e-5, atol=1e-5, err_msg=name)
            # returns-to-go: the undiscounted sum of the episode's rewards from each step on
            t_end = int(end - first[e])
            valid = batch.masks[row] > 0
            steps = np.arange(t_end - int(valid.sum()) + 1, t_end + 1)
            rewards = episodes[e].rewards[:, 0].astype(np.float64)
            np.testing.assert_allclose(batch.returns_to_go[row, valid, 0], [rewards[t:].sum() for t in steps],
                                       rtol=1e-5, atol=1e-5)
            assert not batch.observations[row, ~valid].any()  # padding is zeros, on the left
            assert valid[-1] and np.all(np.diff(valid.astype(int)) >= 0)


@pytest.mark.parametrize("ratio", [0.5, 0.25])
def test_every_batch_holds_each_sources_exact_share_of_windows(ratio):
    from imaginebench.algos.dt.trajectories import sample_trajectory_batch

    source, _ = _source({"real": 1 - ratio, "imaginary": ratio})
    for _ in range(20):
        peek = copy.deepcopy(source.rng)
        ends = source.sample_indices(40, peek)
        batch = sample_trajectory_batch(source, 40, K, max_timestep=1000)  # draws from source.rng (checkpointed)
        assert source.rng.bit_generator.state == peek.bit_generator.state
        np.testing.assert_array_equal(batch.rewards[:, -1], source._rewards[ends])  # windows end at the draws
        counts = np.bincount(source.source_of(ends), minlength=2).tolist()
        assert counts == list(source.batch_counts(40).values()) == [40 - int(40 * ratio), int(40 * ratio)]


def test_target_return_and_scale_come_from_the_data():
    from imaginebench.algos.dt.trajectories import return_scale, target_return

    source, (real, imaginary) = _source({"real": 0.5, "imaginary": 0.5})

    def returns(ds):
        return np.array([float(ep.rewards.astype(np.float64).sum()) for ep in ds])

    assert target_return(source) == pytest.approx(returns(real).max())
    biggest = max(np.abs(returns(real)).max(), np.abs(returns(imaginary)).max())
    assert return_scale(source) == pytest.approx(1 / biggest)


def test_timesteps_are_capped_at_max_timestep():
    from imaginebench.algos.dt.trajectories import sample_trajectory_batch

    source, _ = _source({"real": 0.5, "imaginary": 0.5})
    batch = sample_trajectory_batch(source, 64, K, max_timestep=3)
    assert batch.timesteps.max() == 3 and batch.timesteps[batch.masks == 0].max(initial=0) == 0


def test_discrete_loss_ignores_padded_steps():
    import torch
    from d3rlpy.torch_utility import TorchTrajectoryMiniBatch

    from imaginebench.algos import DiscreteDecisionTransformerConfig
    from imaginebench.algos.factory import build_algorithm
    from imaginebench.algos.dt.trajectories import sample_trajectory_batch

    source, _ = _source({"real": 0.5, "imaginary": 0.5}, discrete=True)
    torch.manual_seed(0)
    config = DiscreteDecisionTransformerConfig(hidden_units=(16,), context_size=K, num_layers=1, dropout=0.0)
    algo = build_algorithm(config, source, batch_size=8)
    batch = sample_trajectory_batch(source, 32, K, max_timestep=1000)
    assert (batch.masks == 0).any()
    relabelled = copy.deepcopy(batch)
    relabelled.actions[batch.masks == 0] = 3.0  # what padding claims the action was

    def losses(b):
        tb = TorchTrajectoryMiniBatch.from_batch(b, algo.impl.device, algo.config.observation_scaler,
                                                 reward_scaler=algo.config.reward_scaler)
        with torch.no_grad():
            return float(algo.impl.compute_loss(tb)), float(type(algo.impl).compute_loss(algo.impl, tb))

    (ours, d3rlpys), (ours_relabelled, d3rlpys_relabelled) = losses(batch), losses(relabelled)
    assert ours == pytest.approx(ours_relabelled, rel=1e-6) and d3rlpys != pytest.approx(d3rlpys_relabelled)


def test_config_validation():
    from imaginebench.algos import DecisionTransformerConfig

    with pytest.raises(ValueError, match="num_heads"):
        DecisionTransformerConfig(num_heads=3)
    with pytest.raises(ValueError, match="instruction_projection"):
        DecisionTransformerConfig(instruction_projection=16)
    with pytest.raises(ValueError, match="position_encoding"):
        DecisionTransformerConfig(position_encoding="rotary")


# ---------------------------------------------------------------------- runs
def _check_record(result, algo: str, env: str) -> None:
    import d3rlpy

    from imaginebench.evaluation.protocol import d3rlpy_policy

    rec = result.record
    assert rec["algo"] == algo and rec["algo_family"] == "dt" and rec["algo_label"] == "DT" and rec["env"] == env
    assert rec["algo_requested"] == "dt"
    assert 0.0 <= rec["success"] <= 1.0 and all(np.isfinite(v) for v in rec["curve"][-1]["loss"].values())
    derived = rec["config"]["derived"]
    assert derived["target_return"] > 0 and derived["return_scale"] > 0
    model = d3rlpy.load_learnable(str(result.path / MODEL_NAME))
    assert model.config.reward_scaler.multiplier == pytest.approx(derived["return_scale"])
    policy = d3rlpy_policy(model, target_return=derived["target_return"])
    policy.start_episode(0)
    obs = np.zeros((1, rec["config"]["state_dim"] + rec["config"]["embedding_dim"]), np.float32)
    assert len(policy.act(obs, [0], [0.0])) == 1


@pytest.mark.skipif(not is_available("HalfCheetah-v0"), reason="needs imaginebench[halfcheetah]")
def test_dt_trains_and_evaluates_on_halfcheetah():
    from imaginebench.data.hub import build_real

    build_real("HalfCheetah-v0", "train", "tiny", episodes=12, progress=False)
    result = train(RunSpec("HalfCheetah-v0", "dt", profile="tiny", encoder=HASH_ENCODER, train_steps=4,
                           checkpoint_every=2, algo_options=TINY_DT), progress=False)
    _check_record(result, "dt", "HalfCheetah-v0")
    rec = result.record
    assert rec["eval"]["episodes"] == {"train": 4} and [c["step"] for c in rec["curve"]] == [2, 4]


@pytest.mark.skipif(not is_available("CLEVR-v0"), reason="needs CLEVR-v0's dependencies")
def test_dt_on_clevr_resolves_to_discrete_dt_and_evaluates():
    from imaginebench.data.hub import build_real

    build_real("CLEVR-v0", "train", "tiny", episodes=40, progress=False)
    result = train(RunSpec("CLEVR-v0", "dt", profile="tiny", encoder=HASH_ENCODER, train_steps=2,
                           checkpoint_every=2, algo_options=TINY_DISCRETE_DT), progress=False)
    _check_record(result, "discrete_dt", "CLEVR-v0")
    rec = result.record
    assert rec["curve"][-1]["loss"]["learning_rate"] > 0


class Stop(Exception):
    pass


@pytest.mark.parametrize("env_id", ["Toy-v0", "ToyCont-v0"])
def test_killed_run_resumes_to_the_uninterrupted_record(toy_envs, env_id):
    import shutil

    build_toy_data(env_id, ("train", "easy"), episodes=20)
    save_imaginary(env_id, "easy")
    options = TINY_DISCRETE_DT if env_id == "Toy-v0" else TINY_DT
    spec = RunSpec(env_id, "dt", level="easy", seed=1, profile="tiny", encoder=HASH_ENCODER, train_steps=12,
                   checkpoint_every=4, eval_episodes_per_task=2, algo_options=options)

    def kill_after_second(step, entry):
        if step == 8:
            raise Stop

    with pytest.raises(Stop):
        train(spec, progress=False, on_checkpoint=kill_after_second)
    assert (run_dir(spec) / CHECKPOINT_NAME).exists()
    resumed = train(spec, progress=False)
    assert resumed.resumed_from == 8 and [c["step"] for c in resumed.record["curve"]] == [4, 8, 12]
    shutil.rmtree(run_dir(spec))
    straight = train(spec, progress=False)
    assert stable_view(straight.record) == stable_view(resumed.record)
    assert [s["weight"] for s in straight.record["sources"]] == [0.5, 0.5]


# ---------------------------------------------------------------------- the episodic policy
@pytest.fixture
def toy_dt(toy_envs):
    """An untrained (randomly initialised) continuous DT on ToyCont-v0's observations."""
    import torch

    from imaginebench.algos import DecisionTransformerConfig
    from imaginebench.algos.factory import build_algorithm
    from imaginebench.algos.sampler import MixedReplaySource
    from imaginebench.data.collect import collect

    data = collect("ToyCont-v0", "train", 10, seed=0, progress=False)
    source = MixedReplaySource({"real": data}, encoder=HashEncoder(), seed=0)
    torch.manual_seed(0)
    config = DecisionTransformerConfig(hidden_units=(16,), context_size=K, num_layers=1)
    return build_algorithm(config, source, batch_size=8)


def _episode(policy, env, encoder, seed: int, slot: int = 0, reset: bool = True) -> list[np.ndarray]:
    """Actions of one episode of ``env`` from reset seed ``seed`` through ``policy``'s ``slot``."""
    state, info = env.reset(seed=seed, options={"task": "go_right"})
    emb = encoder.encode([info["instruction"]])[0]
    if reset:
        policy.start_episode(slot)
    actions, reward, done = [], 0.0, False
    while not done:
        obs = np.concatenate([np.asarray(state, np.float32), emb])[None]
        action = policy.act(obs, [slot], [reward])[0]
        actions.append(action)
        state, reward, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
    return actions


def test_policy_resets_its_history_at_each_episode_start(toy_dt):
    import imaginebench
    from imaginebench.evaluation.protocol import EpisodicPolicy, d3rlpy_policy

    policy = d3rlpy_policy(toy_dt)  # the target return attached from the data
    assert isinstance(policy, EpisodicPolicy) and policy.target_return > 0
    env = imaginebench.make("ToyCont-v0", level="train", encode_instruction=False)
    encoder = HashEncoder()
    first = _episode(policy, env, encoder, seed=3)
    assert len(first) > 1
    np.testing.assert_array_equal(_episode(policy, env, encoder, seed=3), first)
    # the history matters: the same episode continued without a reset acts differently
    assert not np.allclose(np.concatenate(_episode(policy, env, encoder, seed=3, reset=False)), np.concatenate(first))


def test_evaluator_keeps_one_history_per_slot(toy_dt):
    from imaginebench.algos.dt.trajectories import TransformerPolicy, target_return_of
    from imaginebench.evaluation.protocol import Evaluator

    class Recording(TransformerPolicy):
        def __init__(self, *args) -> None:
            super().__init__(*args)
            self.log: list[tuple] = []

        def start_episode(self, slot: int) -> None:
            super().start_episode(slot)
            self.log.append(("start", slot))

        def act(self, observations, slots, rewards):
            actions = super().act(observations, slots, rewards)
            self.log += [("act", s, float(r), a.tolist()) for s, r, a in zip(slots, rewards, actions)]
            return actions

    def episodes(log) -> list[list]:
        """Each episode's (reward, action) steps, episodes in the order they started."""
        out, current = [], {}
        for entry in log:
            if entry[0] == "start":
                current[entry[1]] = []
                out.append(current[entry[1]])
            else:
                current[entry[1]].append(entry[2:])
        return out

    target = target_return_of(toy_dt)
    runs = {}
    for pool in (1, 3):
        evaluator = Evaluator("ToyCont-v0", "train", episodes_per_task=3, seed=0, encoder=HashEncoder(), pool=pool)
        policy = Recording(toy_dt, target)
        result = evaluator(policy)
        assert result.episodes == 6 and sum(e[0] == "start" for e in policy.log) == 6
        assert evaluator(policy) == result  # a second evaluation starts every history afresh
        runs[pool] = episodes(policy.log)
        assert runs[pool][:6] == runs[pool][6:]
        assert all(steps[0][0] == 0.0 for steps in runs[pool])  # no reward before an episode's first step
    assert runs[1] == runs[3]  # interleaving episodes over slots changes nothing
