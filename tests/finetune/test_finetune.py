"""Online fine-tuning: the start's policy at step 0, the exact budget, resume after a kill,
scratch vs checkpoint starts, BC starts, offline-data batches and bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from imaginebench.errors import UsageError
from imaginebench.evaluation import stable_view
from imaginebench.training import RunSpec, train
from imaginebench.finetune import FinetuneSpec, finetune
from imaginebench.finetune.runner import _loop, _prepare, area_under_curve, steps_to_reach
from imaginebench.run_folder import CHECKPOINT_NAME
from tests.algos.helpers import HASH_ENCODER, HashEncoder, build_toy_data, save_imaginary

HIDDEN = (("hidden_units", (16, 16)),)
OFFLINE = dict(profile="tiny", encoder=HASH_ENCODER, train_steps=60, checkpoint_every=30, eval_episodes_per_task=2,
               batch_size=16, algo_options=HIDDEN)
FT = dict(profile="tiny", budget=48, eval_every=16, num_envs=4, batch_size=16, eval_episodes_per_task=2,
          algo_options=HIDDEN)


class Stop(Exception):
    pass


@pytest.fixture
def starts(toy_envs):
    build_toy_data("Toy-v0", ("train",), episodes=30)
    build_toy_data("ToyCont-v0", ("train",), episodes=30)
    save_imaginary("Toy-v0", "easy")
    for data in ("real", "imaginary"):
        train(RunSpec("Toy-v0", "discrete_cql", level="easy", seed=0, data=data, **OFFLINE), progress=False)
    train(RunSpec("Toy-v0", "discrete_bc", level="easy", seed=0, data="real", **OFFLINE), progress=False)
    train(RunSpec("ToyCont-v0", "td3bc", level="train", seed=0, **OFFLINE), progress=False)
    return toy_envs


def _obs(n: int = 32) -> np.ndarray:
    rng = np.random.default_rng(0)
    emb = HashEncoder().encode(["go to the left end", "go to the right end"])
    return np.concatenate([rng.integers(0, 5, (n, 1)), emb[rng.integers(0, 2, n)]], axis=1).astype(np.float32)


def test_step_zero_acts_as_the_offline_checkpoint(starts, data_home):
    import d3rlpy

    run = _prepare(FinetuneSpec("Toy-v0", "easy", start="discrete_cql/imaginary", **FT), HashEncoder(), "cpu:0")
    offline = d3rlpy.load_learnable(str(data_home / "runs/Toy-v0/tiny/easy/imaginary/discrete_cql/seed0/model.d3"))
    obs = _obs()
    assert np.array_equal(run.algo.predict(obs), offline.predict(obs))
    assert run.moved == {"q_funcs": "q_funcs", "targ_q_funcs": "targ_q_funcs"}
    run.interaction.close()
    run.lock.release()


def test_budget_is_respected_exactly_and_the_record_holds_the_curve(starts, data_home):
    run = _prepare(FinetuneSpec("Toy-v0", "easy", start="discrete_cql/real", **FT), HashEncoder(), "cpu:0")
    _loop(run, False, None)
    assert run.env_steps == 48 and len(run.buffer) == 48
    run.interaction.close()
    run.lock.release()  # the folder's writer lock (finetune() releases its own)
    (run.folder.path / CHECKPOINT_NAME).unlink()
    result = finetune(FinetuneSpec("Toy-v0", "easy", start="discrete_cql/real", **FT), progress=False,
                      encoder=HashEncoder())
    rec = result.record
    assert result.path == data_home / "finetune/Toy-v0/tiny/easy/discrete_cql-real/discrete_cql/seed0"
    assert [c["env_steps"] for c in rec["curve"]] == [0, 16, 32, 48]
    assert rec["budget"] == 48 and rec["start"]["label"] == "offline real" and rec["start"]["model_sha256"]
    # one gradient step per environment step once the buffer holds a batch (16 = 4 vector steps of 4 envs)
    assert rec["curve"][-1]["grad_steps"] == 48 - 16 + 4
    assert rec["score"]["final"] == rec["curve"][-1]["success"]
    assert rec["score"]["auc"] == pytest.approx(area_under_curve(rec["curve"]))
    assert rec["timing"]["env_steps_per_s"] > 0 and rec["timing"]["grad_steps_per_s"] > 0
    assert rec["curve"][-1]["online"]["episodes"] > 0
    json.dumps(rec)
    again = finetune(FinetuneSpec("Toy-v0", "easy", start="discrete_cql/real", **FT), progress=False,
                     encoder=HashEncoder())
    assert again.skipped


def test_killed_finetune_resumes_to_the_uninterrupted_record(starts, data_home):
    spec = FinetuneSpec("Toy-v0", "easy", start="discrete_cql/imaginary", **FT)
    whole = finetune(spec, progress=False, encoder=HashEncoder())
    for name in ("record.json", "model.d3"):
        (whole.path / name).unlink()

    def stop(step, entry):
        if step == 16:
            raise Stop

    with pytest.raises(Stop):
        finetune(spec, progress=False, encoder=HashEncoder(), on_checkpoint=stop)
    assert (whole.path / CHECKPOINT_NAME).exists()
    resumed = finetune(spec, progress=False, encoder=HashEncoder())
    assert resumed.resumed_from == 16
    assert stable_view(resumed.record) == stable_view(whole.record)


def test_scratch_and_checkpoint_starts_differ_only_in_initial_parameters(starts):
    import torch

    scratch = _prepare(FinetuneSpec("Toy-v0", "easy", start="scratch", method="discrete_cql", **FT), HashEncoder(),
                       "cpu:0")
    loaded = _prepare(FinetuneSpec("Toy-v0", "easy", start="discrete_cql/real", **FT), HashEncoder(), "cpu:0")
    assert scratch.config == loaded.config and scratch.method == loaded.method
    a, b = scratch.settings(), loaded.settings()
    assert a.pop("start_model_sha256") is None and b.pop("start_model_sha256")
    assert a == b
    sa, sb = scratch.algo.config.observation_scaler, loaded.algo.config.observation_scaler
    assert np.array_equal(np.asarray(sa.mean), np.asarray(sb.mean)) and np.array_equal(np.asarray(sa.std), np.asarray(sb.std))
    q_a, q_b = scratch.algo.impl.modules.q_funcs, loaded.algo.impl.modules.q_funcs
    assert not all(torch.equal(x, y) for x, y in zip(q_a.state_dict().values(), q_b.state_dict().values()))
    for name in ("q_funcs", "targ_q_funcs"):
        getattr(scratch.algo.impl.modules, name).load_state_dict(getattr(loaded.algo.impl.modules, name).state_dict())
    obs = _obs()
    assert np.array_equal(scratch.algo.predict(obs), loaded.algo.predict(obs))
    assert type(scratch.explorer) is type(loaded.explorer)
    assert np.array_equal(scratch.states, loaded.states)  # same environments, same first episodes
    for run in (scratch, loaded):
        run.interaction.close()
        run.lock.release()


def test_bc_start_gets_a_fresh_critic_and_its_actor(starts):
    run = _prepare(FinetuneSpec("Toy-v0", "easy", start="discrete_bc/real", **FT), HashEncoder(), "cpu:0")
    assert run.method == "discrete_sac"
    assert run.moved == {"policy": "imitator"}
    import d3rlpy

    bc = d3rlpy.load_learnable(str(run.start.run / "model.d3"))
    obs = _obs()
    assert np.array_equal(run.algo.predict(obs), bc.predict(obs))
    run.interaction.close()
    run.lock.release()


def test_continuous_finetune_with_offline_batches(starts):
    spec = FinetuneSpec("ToyCont-v0", "train", start="td3bc/real", offline_ratio=0.5, **FT)
    rec = finetune(spec, progress=False, encoder=HashEncoder()).record
    assert rec["method"] == "td3bc" and rec["config"]["explorer"].startswith("Gaussian")
    assert [s["name"] for s in rec["config"]["offline_data"]] == ["real"]
    assert rec["config"]["initialised"]["policy"] == "policy"
    assert len(rec["curve"]) == 4


def test_curve_summaries():
    curve = [{"env_steps": 0, "success": 0.0}, {"env_steps": 10, "success": 0.5}, {"env_steps": 20, "success": 1.0}]
    assert area_under_curve(curve) == pytest.approx(0.5)
    assert steps_to_reach(curve, 0.5) == 10 and steps_to_reach(curve, 1.1) is None


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(budget=50), UsageError, "multiples of num_envs"),
    (dict(budget=48, eval_every=32), UsageError, "multiple of the evaluation interval"),
    (dict(offline_ratio=1.0), UsageError, "offline_ratio"),
    (dict(method="bc"), UsageError, "online method"),
])
def test_bad_settings_are_one_line_errors(kwargs, error, words):
    with pytest.raises(error, match=words):
        FinetuneSpec("Toy-v0", "easy", **{**FT, **kwargs})


def test_bad_starts_and_methods(starts):
    with pytest.raises(UsageError, match="needs --method"):
        finetune(FinetuneSpec("Toy-v0", "easy", start="scratch", **FT), encoder=HashEncoder())
    with pytest.raises(FileNotFoundError, match="imaginebench train --env Toy-v0 --algo discrete_cql --level hard"):
        finetune(FinetuneSpec("Toy-v0", "hard", start="discrete_cql/real", **FT), encoder=HashEncoder())
    with pytest.raises(UsageError, match="Methods that fit: td3bc"):
        finetune(FinetuneSpec("ToyCont-v0", "train", start="td3bc/real", method="double_dqn", **FT),
                 encoder=HashEncoder())


def test_env_snapshot_restores_the_episode_exactly():
    import imaginebench

    a = imaginebench.make("CLEVR-v0", level="hard", encode_instruction=False)
    b = imaginebench.make("CLEVR-v0", level="hard", encode_instruction=False)
    a.reset(seed=5)
    for t in range(3):
        a.step(t)
    b.reset(seed=9)
    b.unwrapped.restore(a.unwrapped.snapshot())
    for t in range(6):
        ra, rb = a.step(7 * t % 40), b.step(7 * t % 40)
        assert np.array_equal(ra[0], rb[0]) and ra[1:4] == rb[1:4]
    assert a.reset()[1]["instruction"] == b.reset()[1]["instruction"]  # the random stream too


def test_interaction_cycles_through_the_level_tasks(toy_envs):
    from imaginebench.finetune.interaction import Interaction

    inter = Interaction("Toy-v0", "train", 3, seed=0)
    inter.reset()
    tasks = list(inter.vec.unwrapped.get_attr("tasks")[0])
    seen = [[t] for t in inter.vec.get_attr("task")]
    for _ in range(40):
        step = inter.step(np.zeros(3, dtype=np.int64))
        for i in np.flatnonzero(step.terminated | step.truncated):
            seen[i].append(inter.vec.get_attr("task")[i])
    inter.close()
    flat = [t.name for per_env in seen for t in per_env]
    counts = {t: flat.count(t) for t in tasks}
    assert max(counts.values()) - min(counts.values()) <= 3  # one cycle each, started at different tasks
    for i, per_env in enumerate(seen):  # env i takes tasks i, i+3, i+6, ... modulo the task count
        assert [t.name for t in per_env] == [tasks[(i + 3 * k) % len(tasks)] for k in range(len(per_env))]


def test_calql_continues_with_returns_of_finished_online_episodes(toy_envs):
    from imaginebench.finetune.buffer import OnlineBuffer

    build_toy_data("ToyCont-v0", ("train",), episodes=30)
    train(RunSpec("ToyCont-v0", "calql", level="train", seed=0, **OFFLINE), progress=False)
    rec = finetune(FinetuneSpec("ToyCont-v0", "train", start="calql/real", offline_ratio=0.25, **FT), progress=False,
                   encoder=HashEncoder()).record
    assert rec["method"] == "calql" and rec["config"]["explorer"] == "policy samples"
    assert all(np.isfinite(v) for c in rec["curve"][1:] for v in c["loss"].values())
    buf = OnlineBuffer(8, 1, (1,), slots=2, gamma=0.5)
    ones = np.ones((2, 1), np.float32)
    buf.add(ones, np.zeros(2, np.int64), ones, np.array([1.0, 2.0]), ones, np.zeros(2), np.array([False, False]))
    buf.add(ones, np.zeros(2, np.int64), ones, np.array([4.0, 8.0]), ones, np.zeros(2), np.array([True, False]))
    # slot 0 finished: G = 1 + 0.5·4 and 4; slot 1 still running: no return yet
    assert buf.returns[[0, 2], 0].tolist() == [3.0, 4.0]
    assert np.isneginf(buf.returns[[1, 3], 0]).all()
