"""MetaWorld-v0: state layout against metaworld's own model, success rules, legality, resets,
set_state transitions, the composite scenes and the expert."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("metaworld")

import imaginebench  # noqa: E402
from imaginebench.domains.metaworld import layout as L  # noqa: E402
from imaginebench.domains.metaworld import success as S  # noqa: E402
from imaginebench.domains.metaworld.domain import MetaWorldDomain  # noqa: E402
from imaginebench.domains.metaworld.env import MetaWorldEnv  # noqa: E402
from imaginebench.domains.metaworld.expert import metaworld_obs  # noqa: E402
from imaginebench.domains.metaworld.instructions import LEXICON, REPHRASE_FRAMES, TRAIN_FRAMES  # noqa: E402
from imaginebench.domains.metaworld.tasks import rule_of  # noqa: E402
from imaginebench.imagination.quality import transition_tolerance  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Constant\\(s\\) may be too high:UserWarning")

DOMAIN = MetaWorldDomain()
TRAIN = ("reach", "push", "pick_place", "button_press", "door_unlock", "door_open", "window_open",
         "faucet_open", "coffee_push", "coffee_button")
EASY = ("reach_wall", "push_wall", "pick_place_wall", "button_press_wall", "door_lock", "door_close",
        "window_close", "faucet_close")
HARD = ("make_coffee", "locked_door_open", "hammer", "soccer")
LOCKED = 1.5708
"""Lock angle of a turned-shut lock (door-unlock's reset)."""


@pytest.fixture(scope="module")
def envs():
    made = {level: MetaWorldEnv(level) for level in ("train", "easy", "hard")}
    yield made
    for env in made.values():
        env.close()


def state(hand=(0.0, 0.6, 0.2), grip=1.0, goal=(0.0, 0.8, 0.1), **slots) -> np.ndarray:
    """A hand-built state: ``slots`` maps an entity to ``pos`` or ``(pos, quat)``."""
    s = np.zeros(L.STATE_DIM)
    s[L.HAND], s[L.GRIPPER], s[L.GOAL] = hand, grip, goal
    for entity, value in slots.items():
        if len(value) == 2:
            pos, quat = value
        else:
            pos, quat = value, L.IDENTITY_QUAT
        s[L.slot_slice(entity)] = np.concatenate([np.asarray(pos, dtype=float), L.canonical_quat(quat)])
    return s


def succeeds(task_name: str, s: np.ndarray, progress=None) -> bool:
    task = DOMAIN.task(task_name)
    p = DOMAIN.initial_progress(task, s) if progress is None else np.asarray(progress, dtype=float)
    return DOMAIN.outcome(task, s, np.zeros(4), s, p).success


def about(axis, angle) -> np.ndarray:
    return L.axis_angle_quat(np.asarray(axis, dtype=float), angle)


# ---------------------------------------------------------------- interface
def test_layout_tasks_and_spaces(envs):
    assert DOMAIN.state_dim == 91 == len(DOMAIN.state_layout)
    assert DOMAIN.state_layout[:7] == ("hand_x", "hand_y", "hand_z", "gripper_opening", "goal_x", "goal_y", "goal_z")
    assert L.ENTITIES == ("task_object", "button", "lock", "handle", "window", "faucet", "wall",
                          "coffee_machine", "coffee_button", "hammer", "nail", "soccer_ball")
    assert DOMAIN.state_layout[7:14] == tuple(f"task_object_{c}" for c in ("x", "y", "z", "qw", "qx", "qy", "qz"))
    assert DOMAIN.state_layout[-7] == "soccer_ball_x"
    assert tuple(t.name for t in DOMAIN.tasks("train")) == TRAIN
    assert tuple(t.name for t in DOMAIN.tasks("rephrase")) == TRAIN
    assert tuple(t.name for t in DOMAIN.tasks("easy")) == EASY
    assert tuple(t.name for t in DOMAIN.tasks("hard")) == HARD
    assert dict(DOMAIN.task("push").params) == {"motion": "push", "object": "puck"}
    assert dict(DOMAIN.task("door_unlock").params) == {"motion": "unlock", "object": "door"}
    assert DOMAIN.task_horizon(DOMAIN.task("reach")) == 100
    assert DOMAIN.task_horizon(DOMAIN.task("locked_door_open")) > DOMAIN.task_horizon(DOMAIN.task("make_coffee")) > 100
    env = imaginebench.make("MetaWorld-v0", level="train", encode_instruction=False)
    assert env.observation_space.shape == (91,)
    assert env.action_space.shape == (4,) and np.all(env.action_space.low == -1) and np.all(env.action_space.high == 1)
    obs, info = env.reset(seed=0, options={"task": "reach"})
    assert obs.shape == (91,) and obs.dtype == np.float32 and DOMAIN.is_legal(obs)
    assert info["instruction"] in DOMAIN.task("reach").instructions
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert isinstance(info["is_success"], bool) and set(info["reward_terms"]) == {"shaping", "success_bonus"}
    env.close()


def test_unknown_task_and_level_list_choices(envs):
    with pytest.raises(ValueError, match="Valid choices: .*make_coffee") as err:
        envs["hard"].reset(options={"task": "make_tea"})
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="belongs to the 'train' level"):
        envs["hard"].reset(options={"task": "reach"})
    with pytest.raises(ValueError, match="train, rephrase, easy, hard"):
        imaginebench.make("MetaWorld-v0", level="medium")


def test_seeded_reset_is_reproducible_and_has_one_distractor(envs):
    env = envs["train"]
    first, info1 = env.reset(seed=7, options={"task": "push"})
    other = MetaWorldEnv("train")
    again, info2 = other.reset(seed=7, options={"task": "push"})
    np.testing.assert_array_equal(first, again)
    assert info1["instruction"] == info2["instruction"]
    for action in np.random.default_rng(0).uniform(-1, 1, (5, 4)):
        np.testing.assert_array_equal(env.step(action)[0], other.step(action)[0])
    other.close()
    different, _ = env.reset(seed=8, options={"task": "push"})
    assert not np.array_equal(first, different)
    distractors = set()
    for seed in range(12):
        obs, _ = env.reset(seed=seed, options={"task": "push"})
        occupied = {L.ENTITIES[i] for i, row in enumerate(L.slots(obs)) if np.any(row != 0)}
        assert "task_object" in occupied and len(occupied) == 2
        (extra,) = occupied - {"task_object"}
        distractors.add(extra)
        for _ in range(3):  # the distractor stays put
            nxt, *_ = env.step(np.array([1.0, 0.0, 0.0, 1.0]))
            np.testing.assert_array_equal(nxt[L.slot_slice(extra)], obs[L.slot_slice(extra)])
    assert len(distractors) > 3


def test_start_states_do_not_already_succeed(envs):
    for level, env in envs.items():
        for task in env.tasks:
            obs, _ = env.reset(seed=3, options={"task": task})
            assert not DOMAIN.success(DOMAIN.task(task), obs), task


# ---------------------------------------------------------------- layout against metaworld's own model
def _check_slots(env: MetaWorldEnv, task: str, steps: int = 25) -> None:
    """Run the expert a little, then compare the slots with metaworld's bodies and observation."""
    env.reset(seed=11, options={"task": task})
    for _ in range(steps):
        env.step(env.expert_action())
    s, scene = env.state, env.scene
    d = scene.data
    mw = metaworld_obs(scene)  # metaworld's own 39-dim observation of this scene
    np.testing.assert_allclose(s[L.HAND], d.body("hand").xpos, atol=1e-9)
    np.testing.assert_allclose(s[L.HAND], mw[0:3], atol=1e-9)
    np.testing.assert_allclose(s[L.GRIPPER], mw[3], atol=1e-9)
    if task not in ("make_coffee", "locked_door_open"):
        np.testing.assert_allclose(s[L.GOAL], scene.env._target_pos, atol=1e-9)
    observed = mw[4:7]
    if task in ("reach", "push", "pick_place", "coffee_push", "push_wall"):
        np.testing.assert_allclose(L.pos(s, "task_object"), observed, atol=1e-9)
        xyzw = mw[7:11]
        q = L.canonical_quat(np.r_[xyzw[3], xyzw[:3]])
        np.testing.assert_allclose(L.quat(s, "task_object"), q, atol=1e-6)
    if task == "push_wall":
        np.testing.assert_allclose(L.pos(s, "wall"), d.body("wall").xpos, atol=1e-9)
    if task == "button_press":
        np.testing.assert_allclose(L.pos(s, "button"), observed, atol=1e-9)
    if task == "door_unlock":
        np.testing.assert_allclose(L.pos(s, "lock"), d.body("lock_link").xpos, atol=1e-9)
        np.testing.assert_allclose(S.lock_site(s, S.LOCK_SITE_UNLOCK), observed, atol=1e-9)
        np.testing.assert_allclose(S.lock_site(s, S.LOCK_SITE_LOCK), d.site("lockStartLock").xpos, atol=1e-9)
    if task == "door_open":
        np.testing.assert_allclose(L.pos(s, "handle"), observed, atol=1e-9)
        np.testing.assert_allclose(L.quat(s, "handle"), L.canonical_quat(d.body("door_link").xquat), atol=1e-9)
        assert S.door_angle(s) == pytest.approx(float(d.joint("doorjoint").qpos[0]), abs=1e-9)
    if task == "window_open":
        np.testing.assert_allclose(S.window_handle(s, S.WINDOW_OPEN_HANDLE), observed, atol=1e-9)
    if task == "faucet_open":
        np.testing.assert_allclose(S.faucet_point(s, True) - S.FAUCET_OPEN_SHIFT, observed, atol=1e-9)
        np.testing.assert_allclose(S.faucet_point(s, False), d.site("handleStartClose").xpos + S.FAUCET_OBS_SHIFT,
                                   atol=1e-9)
    if task == "coffee_button":
        np.testing.assert_allclose(L.pos(s, "coffee_button"), observed, atol=1e-9)
        np.testing.assert_allclose(L.pos(s, "coffee_machine"), d.body("coffee_machine").xpos, atol=1e-9)
        np.testing.assert_allclose(L.pos(s, "task_object"), d.body("obj").xpos, atol=1e-9)
        np.testing.assert_allclose(S.coffee_button_target(s), scene.env._target_pos, atol=1e-9)
    if task == "hammer":
        np.testing.assert_allclose(L.pos(s, "hammer"), observed, atol=1e-9)
        np.testing.assert_allclose(L.pos(s, "nail"), mw[11:14], atol=1e-9)
        assert S.nail_depth(s) == pytest.approx(float(d.joint("NailSlideJoint").qpos[0]), abs=1e-9)
    if task == "soccer":
        np.testing.assert_allclose(L.pos(s, "soccer_ball"), observed, atol=1e-9)
    if task == "make_coffee":
        np.testing.assert_allclose(S.mug_goal(s), scene.env._target_pos, atol=1e-9)
    if task == "locked_door_open":
        assert S.door_angle(s) == pytest.approx(float(d.joint("doorjoint").qpos[0]), abs=1e-9)
    # every filled slot is the scene's own entities plus one distractor
    occupied = {L.ENTITIES[i] for i, row in enumerate(L.slots(s)) if np.any(row != 0)}
    assert set(scene.entities) <= occupied and len(occupied) == len(scene.entities) + 1


@pytest.mark.parametrize("level,tasks", [
    ("train", ("reach", "button_press", "door_unlock", "door_open", "window_open", "faucet_open", "coffee_button")),
    ("easy", ("push_wall",)),
    ("hard", ("hammer", "soccer", "make_coffee", "locked_door_open")),
])
def test_slots_match_metaworld_bodies_and_observation(envs, level, tasks):
    for task in tasks:
        _check_slots(envs[level], task)


# ---------------------------------------------------------------- success rules on hand-built states
def test_reach_rule():
    tcp = np.array([0.0, 0.6, 0.2]) + S.TCP_OFFSET
    assert succeeds("reach", state(goal=tcp + [0.045, 0, 0]))
    assert not succeeds("reach", state(goal=tcp + [0.055, 0, 0]))
    assert succeeds("reach_wall", state(goal=tcp + [0, 0, 0.049]))
    # a closed gripper shifts the finger midpoint to +y by up to 0.005 (left finger at its limit)
    assert S.tcp(state(grip=0.3))[1] - S.tcp(state(grip=1.0))[1] == pytest.approx(0.005)


def test_place_rules_use_metaworld_radii_and_the_right_slot():
    goal = np.array([0.05, 0.85, 0.02])
    near = state(goal=goal, task_object=goal + [0.045, 0, 0])
    middle = state(goal=goal, task_object=goal + [0.06, 0, 0])
    far = state(goal=goal, task_object=goal + [0.075, 0, 0])
    assert succeeds("push", near) and not succeeds("push", middle)  # 0.05
    for task in ("pick_place", "push_wall", "pick_place_wall", "coffee_push"):  # 0.07
        assert succeeds(task, middle) and not succeeds(task, far), task
    assert not succeeds("soccer", middle)  # soccer reads the ball, not the puck slot
    assert succeeds("soccer", state(goal=goal, soccer_ball=goal + [0, 0.065, 0]))


def test_button_rules():
    goal = np.array([0.0, 0.78, 0.115])
    assert succeeds("button_press", state(goal=goal, button=goal - [0, 0.015, 0]))
    assert not succeeds("button_press", state(goal=goal, button=goal - [0, 0.025, 0]))
    assert succeeds("button_press_wall", state(goal=goal, button=goal - [0, 0.025, 0]))  # 0.03
    assert not succeeds("button_press_wall", state(goal=goal, button=goal - [0, 0.035, 0]))
    assert succeeds("coffee_button", state(goal=goal, coffee_button=goal - [0, 0.015, 0]))
    assert not succeeds("coffee_button", state(goal=goal, coffee_button=goal - [0, 0.03, 0]))


def test_lock_rules_derive_the_sites_from_the_lock_pose():
    lock = np.array([0.0, 0.72, 0.21])
    unlock_goal = lock + [0.1, -0.04, 0.0]  # door-unlock's target
    lock_goal = lock + [0.0, -0.04, -0.1]  # door-lock's target
    turned_shut = (lock, about([0, 1, 0], LOCKED))
    turned_open = (lock, L.IDENTITY_QUAT)
    assert succeeds("door_unlock", state(goal=unlock_goal, lock=turned_open))
    assert not succeeds("door_unlock", state(goal=unlock_goal, lock=turned_shut))
    assert not succeeds("door_unlock", state(goal=unlock_goal, lock=(lock, about([0, 1, 0], 0.6))))
    assert succeeds("door_lock", state(goal=lock_goal, lock=turned_shut))
    assert not succeeds("door_lock", state(goal=lock_goal, lock=turned_open))


def test_door_rules():
    goal = np.array([-0.3, 0.45, 0.15])
    assert succeeds("door_open", state(goal=goal, handle=goal + [0.07, 0.2, 0]))  # x only
    assert not succeeds("door_open", state(goal=goal, handle=goal + [0.09, 0, 0]))
    assert succeeds("door_close", state(goal=goal, handle=goal + [0.05, 0.05, 0]))  # 3-D, 0.08
    assert not succeeds("door_close", state(goal=goal, handle=goal + [0.06, 0.06, 0]))
    assert S.door_angle(state(handle=(goal, about([0, 0, 1], -1.2)))) == pytest.approx(-1.2)


def test_window_and_faucet_rules():
    sash = np.array([0.1, 0.75, 0.16])
    open_handle = sash + S.WINDOW_OPEN_HANDLE
    assert succeeds("window_open", state(goal=open_handle + [0.045, 0.1, 0], window=sash))
    assert not succeeds("window_open", state(goal=open_handle + [0.055, 0, 0], window=sash))
    close_handle = sash + S.WINDOW_CLOSE_HANDLE
    assert succeeds("window_close", state(goal=close_handle - [0.04, 0, 0], window=sash))
    assert not succeeds("window_close", state(goal=open_handle - [0.06, 0, 0], window=sash))
    knob = np.array([0.0, 0.8, 0.124])
    point = knob + S.FAUCET_OPEN_HANDLE + S.FAUCET_OBS_SHIFT + S.FAUCET_OPEN_SHIFT
    assert succeeds("faucet_open", state(goal=point + [0.06, 0, 0], faucet=knob))
    assert not succeeds("faucet_open", state(goal=point + [0.08, 0, 0], faucet=knob))
    # the knob's rotation moves the handle: turned by 90 degrees the handle points along +x
    turned = state(faucet=(knob, about([0, 0, 1], np.pi / 2)))
    np.testing.assert_allclose(S.faucet_point(turned, False), knob + [0.175, 0.015, -0.01], atol=1e-12)
    close_point = knob + S.FAUCET_CLOSE_HANDLE + S.FAUCET_OBS_SHIFT
    assert succeeds("faucet_close", state(goal=close_point + [0, 0.069, 0], faucet=knob))
    assert not succeeds("faucet_close", state(goal=close_point + [0, 0.071, 0], faucet=knob))


def test_hammer_rule_reads_the_nail_depth():
    assert succeeds("hammer", state(nail=(0.24, S.NAIL_ZERO_Y + 0.095, 0.11)))
    assert not succeeds("hammer", state(nail=(0.24, S.NAIL_ZERO_Y + 0.085, 0.11)))


def _coffee(mug_offset=(0.0, 0.0, 0.0), pressed=0.0) -> np.ndarray:
    machine = np.array([0.0, 0.9, 0.0])
    return state(goal=machine + S.COFFEE_BUTTON_TARGET_OFFSET, coffee_machine=machine,
                 task_object=machine + S.MUG_GOAL_OFFSET + mug_offset,
                 coffee_button=machine + [0, -0.22 + pressed, 0.3])


def test_make_coffee_needs_both_stages_in_order():
    task = DOMAIN.task("make_coffee")
    start = _coffee(mug_offset=(0.0, -0.2, 0.0))
    p0 = DOMAIN.initial_progress(task, start)
    assert p0[0] == 0
    in_place = _coffee()
    first = DOMAIN.outcome(task, start, np.zeros(4), in_place, p0)
    assert not first.success and first.progress[0] == 1  # the mug under the machine alone is not coffee
    pressed = _coffee(pressed=0.025)
    done = DOMAIN.outcome(task, in_place, np.zeros(4), pressed, first.progress)
    assert done.success and done.reward > 1.0
    # pressing with the mug away does not count, even after the first stage
    assert not DOMAIN.outcome(task, in_place, np.zeros(4), _coffee((0, -0.2, 0), 0.025), first.progress).success
    # nor does pressing first: the stage latches only with the button not pressed
    assert not succeeds("make_coffee", pressed)
    assert not succeeds("coffee_button", _coffee(pressed=0.005)) and succeeds("coffee_button", pressed)


def _locked_door(lock_angle: float, door_angle: float) -> np.ndarray:
    leaf = about([0, 0, 1], door_angle)
    lock = L.quat_mul(leaf, about([0, 1, 0], lock_angle))
    return state(goal=(-0.3, 0.4, 0.15), lock=((0.0, 0.72, 0.21), lock),
                 handle=((0.19 if abs(door_angle) < 0.1 else -0.27, 0.6, 0.1), leaf))


def test_locked_door_open_needs_the_unlock_first():
    task = DOMAIN.task("locked_door_open")
    locked = _locked_door(LOCKED, 0.0)
    p0 = DOMAIN.initial_progress(task, locked)
    unlocked = _locked_door(0.0, 0.0)
    first = DOMAIN.outcome(task, locked, np.zeros(4), unlocked, p0)
    assert not first.success and first.progress[0] == 1  # unlocking alone is not enough
    opened = _locked_door(0.0, -1.4)
    assert DOMAIN.outcome(task, unlocked, np.zeros(4), opened, first.progress).success
    assert not succeeds("locked_door_open", opened, progress=[0.0])  # open without the unlock stage
    # the lock rule is measured in the door's frame: an open door keeps its lock open
    rule = rule_of(task)
    assert S.lock_open(rule, opened) and not S.lock_open(rule, _locked_door(LOCKED, -1.4))


def test_reward_is_shaping_plus_bonus():
    task = DOMAIN.task("push")
    goal = np.array([0.0, 0.85, 0.02])
    far = state(hand=(0.0, 0.62, 0.065), goal=goal, task_object=(0.0, 0.65, 0.02))
    closer = state(hand=(0.0, 0.72, 0.065), goal=goal, task_object=(0.0, 0.75, 0.02))
    out = DOMAIN.outcome(task, far, np.zeros(4), closer, DOMAIN.initial_progress(task, far))
    assert out.terms["shaping"] == pytest.approx(0.1, abs=1e-9) and out.terms["success_bonus"] == 0
    done = state(hand=(0.0, 0.79, 0.065), goal=goal, task_object=(0.0, 0.82, 0.02))
    out = DOMAIN.outcome(task, closer, np.zeros(4), done, DOMAIN.initial_progress(task, closer))
    assert out.success and out.terms["success_bonus"] == S.SUCCESS_BONUS and out.reward > 1.0


def test_outcome_batch_matches_rows():
    tasks = [DOMAIN.task("push"), DOMAIN.task("make_coffee"), DOMAIN.task("locked_door_open")]
    states = [state(goal=(0, 0.85, 0.02), task_object=(0, 0.7, 0.02)), _coffee(), _locked_door(0.0, 0.0)]
    nexts = [state(goal=(0, 0.85, 0.02), task_object=(0, 0.84, 0.02)), _coffee(pressed=0.025), _locked_door(0.0, -1.4)]
    progress = [np.zeros(1), np.ones(1), np.ones(1)]
    batch = DOMAIN.outcome_batch(tasks, np.array(states), np.zeros((3, 4)), np.array(nexts), progress)
    assert batch.success.tolist() == [True, True, True]
    for i, task in enumerate(tasks):
        assert batch.reward[i] == DOMAIN.outcome(task, states[i], np.zeros(4), nexts[i], progress[i]).reward


# ---------------------------------------------------------------- legality
def test_is_legal():
    good = state(task_object=(0.0, 0.7, 0.02), soccer_ball=(0.05, 0.65, 0.03))
    assert DOMAIN.is_legal(good)
    assert not DOMAIN.is_legal(good[:-1])
    bad = good.copy()
    bad[0] = 0.9  # hand outside metaworld's hand box
    assert not DOMAIN.is_legal(bad)
    bad = good.copy()
    bad[L.GRIPPER] = 1.3
    assert not DOMAIN.is_legal(bad)
    bad = good.copy()
    bad[L.slot_slice("task_object").start + 3] = 0.5  # not a unit quaternion
    assert not DOMAIN.is_legal(bad)
    bad = good.copy()
    bad[L.slot_slice("task_object").start + 2] = -0.5  # below the table
    assert not DOMAIN.is_legal(bad)
    two_extra = state(task_object=(0.0, 0.7, 0.02), soccer_ball=(0.05, 0.65, 0.03), hammer=(0.0, 0.45, 0.0))
    assert not DOMAIN.is_legal(two_extra)  # a scene plus two distractors
    assert not DOMAIN.is_legal(state())  # no scene at all
    bad = good.copy()
    bad[5] = np.nan
    assert not DOMAIN.is_legal(bad)
    assert DOMAIN.is_legal_batch(np.array([good, two_extra])).tolist() == [True, False]


def test_live_states_are_legal(envs):
    env = envs["hard"]
    rng = np.random.default_rng(1)
    for task in ("soccer", "hammer"):
        obs, _ = env.reset(seed=2, options={"task": task})
        for _ in range(40):
            obs, *_ = env.step(rng.uniform(-1, 1, 4))
            assert DOMAIN.is_legal(obs), DOMAIN.legality_errors(obs)


# ---------------------------------------------------------------- set_state
def test_tolerance_entry():
    assert transition_tolerance("MetaWorld-v0") == MetaWorldDomain.transition_tolerance
    assert 0 < MetaWorldDomain.transition_tolerance <= 0.1


@pytest.mark.parametrize("level,task", [("train", "pick_place"), ("train", "door_open"), ("hard", "make_coffee")])
def test_set_state_then_step_agrees_with_the_live_env(envs, level, task):
    env, replay = envs[level], MetaWorldEnv(level)
    obs, _ = env.reset(seed=4, options={"task": task})
    states, actions = [obs.astype(np.float64)], []
    for _ in range(60):
        action = env.expert_action()
        obs, _, terminated, _, _ = env.step(action)
        states.append(env.state.copy())
        actions.append(action)
        if terminated:
            break
    replay.reset(seed=99, options={"task": task})
    tolerance = transition_tolerance("MetaWorld-v0")
    for t, action in enumerate(actions):
        replay.set_state(states[t])
        back = np.abs(replay.state - states[t])  # the state reads back unchanged...
        assert back[L.HAND].max() < 5e-3 and back[3:].max() < 1e-6  # ...up to the arm's IK at the reach's edge
        _, _, _, _, info = replay.step(action)
        assert np.max(np.abs(info["state"] - states[t + 1])) <= tolerance, t
    # setting the same state twice gives the same step (velocities zero, IK from a fixed posture)
    replay.set_state(states[5])
    a = replay.step(actions[5])[0]
    replay.set_state(states[5])
    np.testing.assert_array_equal(replay.step(actions[5])[0], a)
    replay.close()


def test_set_state_rejects_illegal_states(envs):
    env = envs["train"]
    obs, _ = env.reset(seed=0, options={"task": "reach"})
    bad = obs.astype(np.float64).copy()
    bad[0] = 5.0
    with pytest.raises(ValueError, match="hand"):
        env.set_state(bad)


# ---------------------------------------------------------------- composite scenes and the expert
def test_locked_door_stays_shut_until_unlocked(envs):
    env = envs["hard"]
    env.reset(seed=5, options={"task": "locked_door_open"})
    door_open = env.expert.policy("door-open-v3")
    for _ in range(80):  # door-open's own policy pulls on the handle of the locked door
        env.step(door_open.get_action(metaworld_obs(env.scene, L.pos(env.state, "handle"))))
    assert abs(S.door_angle(env.state)) < S.DOOR_CLOSED_ANGLE
    assert not S.lock_open(rule_of("locked_door_open"), env.state)


@pytest.mark.parametrize("level,task", [("train", "reach"), ("train", "door_open"), ("easy", "door_lock"),
                                        ("easy", "window_close"), ("hard", "make_coffee"),
                                        ("hard", "locked_door_open"), ("hard", "hammer")])
def test_expert_solves(envs, level, task):
    env = envs[level]
    for attempt in range(3):
        env.reset(seed=1000 + attempt, options={"task": task})
        done, info = False, {}
        while not done:
            _, _, terminated, truncated, info = env.step(env.expert_action())
            done = terminated or truncated
        if info["is_success"]:
            return
    pytest.fail(f"the expert failed {task} three times")


@pytest.mark.parametrize("seed", [10, 17, 31])
def test_soccer_expert_goes_over_a_ball_that_rolled_past_the_hand(envs, seed):
    """metaworld's soccer policy alone pushes these balls off the table (checked when written);
    the expert's ``over`` phase crosses above the ball and scores within the horizon."""
    env = envs["hard"]
    env.reset(seed=seed, options={"task": "soccer"})
    phases, done, info = set(), False, {}
    while not done:
        _, _, terminated, truncated, info = env.step(env.expert_action())
        phases.add(env.expert.last_phase)
        done = terminated or truncated
    assert info["is_success"]
    assert "over" in phases


# ---------------------------------------------------------------- instructions
def test_instruction_banks():
    train = {s for t in DOMAIN.tasks("train") for s in t.instructions}
    rephrase = {s for t in DOMAIN.tasks("train") for s in t.rephrasings}
    novel = {s for lv in ("easy", "hard") for t in DOMAIN.tasks(lv) for s in t.instructions}
    assert not train & rephrase and not train & novel and not rephrase & novel
    assert not set(TRAIN_FRAMES) & set(REPHRASE_FRAMES)
    for task in DOMAIN.tasks("train"):
        assert len(set(task.instructions)) >= 20 and len(set(task.rephrasings)) >= 10
        train_acts = set(LEXICON[task.name]["acts"])
        assert not train_acts & set(LEXICON[task.name]["rephrase_acts"])
    for task in DOMAIN.tasks("easy") + DOMAIN.tasks("hard"):
        assert len(set(task.instructions)) >= 20 and not task.rephrasings
    assert len(train | rephrase | novel) == sum(
        len(t.instructions) + len(t.rephrasings) for lv in ("train", "easy", "hard") for t in DOMAIN.tasks(lv))


def test_a_state_of_another_scene_is_refused_not_mixed():
    env = MetaWorldEnv("train")
    env.reset(seed=3, options={"task": "push"})
    push_state = env.state - env.distractor  # the push scene alone: legal, no faucet
    env.reset(seed=3, options={"task": "faucet_open"})
    before = env.state.copy()
    with pytest.raises(ValueError, match=r"under task 'faucet_open': its scene needs faucet"):
        env.set_state(push_state)
    np.testing.assert_array_equal(env.state, before)  # the episode is untouched
    env.close()
