"""HalfCheetah-v0's shipped experts: they load, they solve their tasks, the two sequential
experts are told apart by the order check, and a bad weights file gives a one-line error.

Every expert ships (:data:`SHIPPED`)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("mujoco")
pytest.importorskip("safetensors")

from imaginebench.domains.halfcheetah import expert as E  # noqa: E402
from imaginebench.domains.halfcheetah import success as S  # noqa: E402
from imaginebench.domains.halfcheetah.env import HalfCheetahEnv  # noqa: E402


SHIPPED = E.POLICIES


def episode(env: HalfCheetahEnv, task: str, seed: int, policy_task: str | None = None) -> bool:
    """Run the expert of ``policy_task`` (default: ``task``) on ``task``; whether it succeeded."""
    env.reset(seed=seed, options={"task": task})
    acting = env.domain.task(policy_task or task)
    done, info = False, {}
    while not done:
        action = env.expert.act(acting, env.state, env.progress)
        _, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    return bool(info["is_success"])


@pytest.mark.parametrize("level,task", [("train", "run_forward"), ("train", "run_backward"),
                                        ("train", "jump_forward"), ("train", "jump_backward"),
                                        ("hard", "jump_in_place"),
                                        ("easy", "run_forward_faster"), ("easy", "run_backward_faster"),
                                        ("hard", "run_forward_then_backward"), ("hard", "run_backward_then_forward")])
def test_expert_solves_its_task(level, task):
    env = HalfCheetahEnv(level)
    wins = sum(episode(env, task, seed) for seed in (1000, 1001, 1002))
    assert wins >= 2, f"the expert solved {task} {wins}/3 times"


def test_sequential_experts_fail_each_others_order():
    env = HalfCheetahEnv("hard")
    assert episode(env, "run_forward_then_backward", 7)
    assert not episode(env, "run_backward_then_forward", 7, policy_task="run_forward_then_backward")
    assert episode(env, "run_backward_then_forward", 7)
    assert not episode(env, "run_forward_then_backward", 7, policy_task="run_backward_then_forward")


def test_jump_experts_jump_in_their_own_direction():
    """Each directed jump expert makes real (airborne, upright, high) jumps and fails the other
    direction's task."""
    env = HalfCheetahEnv("train")
    for task, other in (("jump_forward", "jump_backward"), ("jump_backward", "jump_forward")):
        assert not episode(env, other, 5, policy_task=task)
        assert env.progress[S.P_JUMPS] >= 1, task  # it jumped, in the wrong direction for `other`


def test_run_experts_do_not_solve_the_faster_tasks():
    """The run experts are trained to a moderate pace: the real run data does not already hold
    the easy level's faster runs."""
    env = HalfCheetahEnv("easy")
    assert not episode(env, "run_forward_faster", 3, policy_task="run_forward")
    assert not episode(env, "run_backward_faster", 3, policy_task="run_backward")


def test_sequential_experts_switch_at_the_midpoint():
    env = HalfCheetahEnv("hard")
    env.reset(seed=0, options={"task": "run_forward_then_backward"})
    used = []
    for _ in range(120):
        env.step(env.expert_action())
        used.append(env.expert.last_policy)
    assert used[:100] == ["run_forward"] * 100 and set(used[100:]) == {"run_backward"}


def test_shipped_weights_carry_their_training_record():
    for name in SHIPPED:
        info = E.load_policy(name).info
        assert info["policy"] == name and info["algorithm"] == "SAC (d3rlpy)"
        assert info["evaluation"]["success"] >= 0.9, (name, info["evaluation"])
        assert info["settings"]["steps"] > 0


def test_damaged_or_missing_weights_give_one_line_errors(tmp_path):
    bad = tmp_path / "run_forward.safetensors"
    bad.write_bytes(b"\x00" * 40)
    with pytest.raises(ValueError, match="Damaged expert file .*retrain it with: imaginebench experts train") as err:
        E.MLPPolicy.load(bad)
    assert "\n" not in str(err.value)
    with pytest.raises(FileNotFoundError, match="Train it with: imaginebench experts train --env HalfCheetah-v0"):
        E.MLPPolicy.load(tmp_path / "missing.safetensors")


def test_numpy_policy_matches_the_stored_tensors():
    from safetensors.numpy import load_file

    tensors = load_file(str(E.policy_path("run_forward")))
    x = np.linspace(-1, 1, 18)
    h = x
    for i in range(int(E.load_policy("run_forward").metadata["hidden_layers"])):
        h = np.maximum(tensors[f"hidden.{i}.weight"] @ h + tensors[f"hidden.{i}.bias"], 0)
    expected = np.tanh(tensors["mu.weight"] @ h + tensors["mu.bias"])
    np.testing.assert_allclose(E.load_policy("run_forward")(x), expected, rtol=1e-5, atol=1e-6)


def test_training_steps_record_matches_the_shipped_weights():
    """``experts train`` with no ``--steps`` reruns what each shipped expert was trained with."""

    from imaginebench.experts.halfcheetah import TRAIN_STEPS

    assert set(TRAIN_STEPS) == set(E.POLICIES)
    for name in SHIPPED:
        settings = E.load_policy(name).info["settings"]
        assert settings["steps"] == TRAIN_STEPS[name], name


def test_real_expert_rollouts_pass_the_imagination_quality_checks():
    """Real data is the yardstick of the transition tolerance and the legality check: expert
    rollouts of every train task are 100% correct and legal."""
    from imaginebench.data.collect import collect
    from imaginebench.imagination.quality import check_rollouts

    data = collect("HalfCheetah-v0", "train", 4, seed=3)
    report = check_rollouts("HalfCheetah-v0", "train", data, replay=False).report
    assert report.episodes == 4 and report.transitions > 100
    assert report.transition_correctness == 1.0 and report.legality == 1.0
    assert report.mean_transition_error < 1e-3
