"""HalfCheetah-v0: state layout, success rules on constructed state sequences, rewards,
legality and set_state."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("mujoco")

from imaginebench.domains.halfcheetah import physics as P  # noqa: E402
from imaginebench.domains.halfcheetah import success as S  # noqa: E402
from imaginebench.domains.halfcheetah.domain import HalfCheetahDomain, legality_errors  # noqa: E402
from imaginebench.domains.halfcheetah.env import HalfCheetahEnv  # noqa: E402

DOMAIN = HalfCheetahDomain()


def pose(rootz: float = 0.0, pitch: float = 0.0, dx: float = 0.0) -> np.ndarray:
    """A rest-pose state at root height ``rootz`` and pitch, having moved ``dx`` this step."""
    s = np.zeros(P.STATE_DIM)
    s[P.DX], s[P.ROOTZ], s[P.ROOTY] = dx, rootz, pitch
    return s


def run(task_name: str, states: list[np.ndarray]) -> list[bool]:
    """Per-step success of ``task_name`` along ``states`` (the first one is the start)."""
    task = DOMAIN.task(task_name)
    _, success = DOMAIN.score_rollout(task, np.array(states), np.zeros((len(states) - 1, P.ACTION_DIM)))
    return success.tolist()


def steady(dx: float, steps: int) -> list[np.ndarray]:
    return [pose(dx=0.0)] + [pose(dx=dx) for _ in range(steps)]


# ---------------------------------------------------------------- layout
def test_state_is_displacement_then_gymnasiums_observation():
    import gymnasium as gym

    bare = gym.make("HalfCheetah-v5")
    sim = P.Simulator()
    obs, _ = bare.reset(seed=3)
    state = sim.reset(3)
    np.testing.assert_allclose(state[1:], obs, atol=1e-12)
    assert state[P.DX] == 0.0
    rng = np.random.default_rng(0)
    for _ in range(20):
        action = rng.uniform(-1, 1, P.ACTION_DIM)
        x_before = float(bare.unwrapped.data.qpos[0])
        obs, *_ = bare.step(action)
        state = sim.step(action)
        np.testing.assert_allclose(state[1:], obs, atol=1e-9)
        assert state[P.DX] == pytest.approx(float(bare.unwrapped.data.qpos[0]) - x_before, abs=1e-12)
    assert P.STATE_LAYOUT[:4] == ("dx", "rootz", "rooty", "bthigh") and len(P.STATE_LAYOUT) == 18


def test_spaces_levels_and_tasks():
    env = HalfCheetahEnv("train")
    assert env.observation_space.shape == (18,) and env.action_space.shape == (6,)
    assert env.tasks == ("run_forward", "run_backward", "jump_forward", "jump_backward")
    assert HalfCheetahEnv("easy").tasks == ("run_forward_faster", "run_backward_faster")
    assert HalfCheetahEnv("hard").tasks == ("run_forward_then_backward", "run_backward_then_forward", "jump_in_place")
    assert env.horizon == 200


def test_unknown_task_and_level_give_one_line_errors():
    env = HalfCheetahEnv("train")
    with pytest.raises(ValueError, match="Unknown HalfCheetah-v0 task 'run_sideways'.*Valid choices") as err:
        env.reset(seed=0, options={"task": "run_sideways"})
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="belongs to the 'hard' level"):
        env.reset(seed=0, options={"task": "jump_in_place"})
    with pytest.raises(ValueError, match="Unknown level 'expert'"):
        HalfCheetahEnv("expert")


# ---------------------------------------------------------------- running
def test_run_needs_the_average_speed_over_the_first_100_steps():
    ok = run("run_forward", steady(0.08, 120))  # 1.6 m/s
    assert not any(ok[:99]) and ok[99]  # judged from step 100 on
    assert not any(run("run_forward", steady(0.06, 150)))  # 1.2 m/s
    assert not any(run("run_forward", steady(-0.08, 150)))  # the wrong way
    assert run("run_backward", steady(-0.08, 100))[-1]
    assert not any(run("run_backward", steady(0.08, 150)))


def test_faster_needs_three_metres_per_second():
    assert run("run_forward_faster", steady(0.16, 100))[-1]  # 3.2 m/s
    assert not any(run("run_forward_faster", steady(0.1, 200)))  # 2 m/s: a run, not faster
    assert run("run_forward", steady(0.1, 100))[-1]
    assert run("run_backward_faster", steady(-0.16, 100))[-1]
    assert not any(run("run_backward_faster", steady(0.16, 200)))


def _two_halves(first: float, second: float) -> list[np.ndarray]:
    return [pose()] + [pose(dx=first) for _ in range(100)] + [pose(dx=second) for _ in range(100)]


def test_sequences_check_the_order_of_the_halves():
    forward_back = _two_halves(0.04, -0.04)  # +4 m, then -4 m
    ok = run("run_forward_then_backward", forward_back)
    assert ok[-1] and not any(ok[:-1])  # judged at the end of the horizon
    assert not any(run("run_backward_then_forward", forward_back))
    back_forward = _two_halves(-0.04, 0.04)
    assert run("run_backward_then_forward", back_forward)[-1]
    assert not any(run("run_forward_then_backward", back_forward))
    assert not any(run("run_forward_then_backward", _two_halves(0.04, 0.04)))  # never came back
    assert not any(run("run_forward_then_backward", _two_halves(0.029, -0.04)))  # 2.9 m out: too short


# ---------------------------------------------------------------- jumping
STANDING = -0.08
"""Root height of the rest pose with its lowest capsule on the floor (the rest pose at rootz 0
hangs 7.6 cm above it)."""
GROUND = pose(STANDING)
APEX = pose(0.5)  # torso 0.58 m above standing, feet clear of the floor


def test_constructed_poses_are_what_the_jump_rule_reads():
    assert P.lowest_point(GROUND) < S.AIR_CLEARANCE
    assert P.lowest_point(APEX) > S.AIR_CLEARANCE and S.is_jump_apex(APEX)
    assert P.lowest_point(pose(0.1)) > S.AIR_CLEARANCE and not S.is_jump_apex(pose(0.1))  # airborne, too low
    assert not S.is_jump_apex(pose(0.5, pitch=2.0))  # a flip is not a jump


def _hops(dx: float, flights: int, flight_steps: int = 3) -> list[np.ndarray]:
    seq = [GROUND]
    for _ in range(flights):
        seq += [pose(0.5, dx=dx) for _ in range(flight_steps)] + [pose(STANDING, dx=dx)]
    return seq


def test_a_flight_counts_once_and_jumps_need_two_flights():
    ok = run("jump_forward", _hops(0.2, 2))
    assert ok[-1]
    assert not any(run("jump_forward", _hops(0.4, 1)))  # one long flight: one jump
    progress = S.initial_progress()
    for s in _hops(0.0, 3)[1:]:
        progress = S.advance(progress, s)
    assert progress[S.P_JUMPS] == 3


def test_directed_jumps_need_net_travel_in_their_direction():
    assert run("jump_forward", _hops(0.2, 2))[-1]  # 1.6 m forward
    assert not any(run("jump_forward", _hops(0.05, 2)))  # 0.4 m: hopping in place
    assert not any(run("jump_forward", _hops(-0.2, 2)))
    assert run("jump_backward", _hops(-0.2, 2))[-1]
    assert not any(run("jump_backward", _hops(0.2, 2)))
    assert not any(run("jump_forward", steady(0.2, 150)))  # running is not jumping


def test_jump_in_place_stays_near_the_start():
    assert run("jump_in_place", _hops(0.02, 2))[-1]
    assert not any(run("jump_in_place", _hops(0.2, 3)))  # travels 2.4 m
    wander = [GROUND] + [pose(dx=0.1) for _ in range(6)] + [pose(dx=-0.1) for _ in range(6)] + _hops(0.0, 2)[1:]
    assert not any(run("jump_in_place", wander))  # went 0.6 m away before coming back
    assert not any(run("jump_in_place", [GROUND] * 50))


# ---------------------------------------------------------------- rewards
def test_rewards_per_task():
    a = np.full(P.ACTION_DIM, 0.5)
    ctrl = -S.CTRL_COST * 6 * 0.25
    p0 = S.initial_progress()
    moved = pose(dx=0.1)  # 2 m/s
    assert DOMAIN.outcome(DOMAIN.task("run_forward"), GROUND, a, moved, p0).reward == pytest.approx(2.0 + ctrl)
    assert DOMAIN.outcome(DOMAIN.task("run_backward"), GROUND, a, moved, p0).reward == pytest.approx(-2.0 + ctrl)
    seq = DOMAIN.task("run_forward_then_backward")
    late = p0.copy()
    late[S.P_T] = 150
    assert DOMAIN.outcome(seq, GROUND, a, moved, p0).reward == pytest.approx(2.0 + ctrl)
    assert DOMAIN.outcome(seq, GROUND, a, moved, late).reward == pytest.approx(-2.0 + ctrl)
    jump = DOMAIN.task("jump_forward")
    high = pose(0.5, dx=0.1)
    terms = DOMAIN.outcome(jump, GROUND, a, high, p0).terms
    assert terms["height"] == pytest.approx(10 * (0.5 - S.STANDING_ROOTZ)) and terms["drift"] == pytest.approx(1.0)  # drift capped at 1 m/s
    assert DOMAIN.outcome(jump, GROUND, a, pose(STANDING, dx=0.1), p0).terms["height"] == 0.0  # on the ground
    assert DOMAIN.outcome(jump, GROUND, a, pose(0.5, pitch=2.0), p0).terms["height"] == 0.0  # tumbling
    in_place = DOMAIN.task("jump_in_place")
    assert DOMAIN.outcome(in_place, GROUND, a, high, p0).terms["drift"] == pytest.approx(-2.0)  # 0.1 m: free zone
    away = p0.copy()
    away[S.P_X] = -0.5  # 0.5 m behind the start, stepping 0.1 m back toward it
    pull = S.IN_PLACE_PULL * (0.4 - S.IN_PLACE_FREE)
    assert DOMAIN.outcome(in_place, GROUND, a, high, away).terms["drift"] == pytest.approx(-2.0 - pull)


# ---------------------------------------------------------------- legality and set_state
def test_legality():
    env = HalfCheetahEnv("train")
    env.reset(seed=0, options={"task": "run_forward"})
    rng = np.random.default_rng(1)
    for _ in range(200):
        env.step(rng.uniform(-1, 1, 6))
        assert legality_errors(env.state) == []
    bad = env.state.copy()
    bad[5] = 3.0
    assert any("bfoot angle" in e for e in legality_errors(bad))
    fast = env.state.copy()
    fast[P.VX] = 80.0
    assert any("root velocity" in e for e in legality_errors(fast))
    assert legality_errors(np.full(18, np.nan)) == ["non-finite values"]
    assert "expected 18 values" in legality_errors(np.zeros(5))[0]
    buried = pose(-0.5)
    assert any("inside the floor" in e for e in legality_errors(buried))
    with pytest.raises(ValueError, match="Cannot set an illegal HalfCheetah-v0 state"):
        env.set_state(bad)


def test_expert_states_are_legal():
    """The real data's hardest states (the fast runners push joints past their soft limits and
    feet into the floor) pass the legality check."""
    pytest.importorskip("safetensors")
    env = HalfCheetahEnv("easy")
    for task in env.tasks:
        env.reset(seed=3, options={"task": task})
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.expert_action())
            assert legality_errors(env.state) == [], (task, env.elapsed_steps)
            done = terminated or truncated


def test_set_state_then_step_agrees_with_the_live_env():
    live, replay = HalfCheetahEnv("train"), HalfCheetahEnv("train")
    live.reset(seed=5, options={"task": "run_forward"})
    replay.reset(seed=99, options={"task": "run_forward"})
    rng = np.random.default_rng(2)
    for _ in range(30):
        live.step(rng.uniform(-1, 1, 6))
    worst = 0.0
    for _ in range(50):
        action = rng.uniform(-1, 1, 6)
        replay.set_state(live.state)
        before = live.state.copy()
        live.step(action)
        replay.step(action)
        assert replay.state[P.DX] != before[P.DX] or before[P.DX] == 0.0
        worst = max(worst, float(np.max(np.abs(replay.state - live.state))))
    assert worst < 1e-6
