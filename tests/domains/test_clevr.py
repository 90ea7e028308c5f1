"""CLEVR-Robot: physics, success rules, instruction banks, env API and the expert."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("mujoco")

import imaginebench  # noqa: E402
from imaginebench.domains.clevr import success as S  # noqa: E402
from imaginebench.domains.clevr.domain import ClevrDomain  # noqa: E402
from imaginebench.domains.clevr.physics import (  # noqa: E402
    BALL_RADIUS,
    COLOURS,
    DIRECTION_NAMES,
    DIRECTIONS,
    TABLE_X,
    TABLE_Y,
    Physics,
    encode_action,
    sample_positions,
)

RED, BLUE, GREEN, PURPLE, CYAN = range(5)


def make_state(**balls: tuple[float, float]) -> np.ndarray:
    """A state with the named balls placed, the others parked in separate far corners."""
    parking = {"red": (-0.45, 0.52), "blue": (0.45, 0.52), "green": (-0.45, -0.25),
               "purple": (0.45, -0.25), "cyan": (0.0, 0.52)}
    parking.update(balls)
    return np.concatenate([parking[c] for c in COLOURS]).astype(np.float64)


def xs_then_ys(state: np.ndarray) -> np.ndarray:
    """The same ball positions in the WRONG layout [x0..x4, y0..y4] (the SPEC §8 pitfall)."""
    p = state.reshape(5, 2)
    return np.concatenate([p[:, 0], p[:, 1]])


@pytest.fixture(scope="module")
def domain() -> ClevrDomain:
    return ClevrDomain()


@pytest.fixture(scope="module")
def physics() -> Physics:
    return Physics()


def raw_env(level: str = "train"):
    return imaginebench.make("CLEVR-v0", level=level, encode_instruction=False)


# ------------------------------------------------------------------------------ spaces / layout
def test_layout_and_spaces(domain):
    assert domain.state_dim == 10 and len(domain.state_layout) == 10
    assert domain.state_layout[:4] == ("red_x", "red_y", "blue_x", "blue_y")
    assert domain.action_dim == 40 and domain.discrete_actions
    env = raw_env()
    assert env.action_space.n == 40
    assert env.observation_space.shape == (10,)
    obs, info = env.reset(seed=0)
    assert obs.shape == (10,) and obs.dtype == np.float32
    assert info["task"] in env.unwrapped.tasks and info["instruction"]


def test_task_counts_and_horizons(domain):
    assert len(domain.tasks("train")) == 80 and domain.tasks("rephrase") == domain.tasks("train")
    assert len(domain.tasks("easy")) == 20
    hard = domain.tasks("hard")
    families = [t.family for t in hard]
    assert families.count("sequential_move") >= 10
    assert {"make_line", "put_pile", "make_circle"} <= set(families)
    assert all(domain.task_horizon(t) == 1 for t in domain.tasks("easy"))
    assert all(domain.task_horizon(t) == 50 for t in domain.tasks("train") + hard)
    sizes = {len(t.params["goals"]) for t in hard if t.family == "sequential_move"}
    assert sizes == {2, 3}


def test_direction_order():
    assert DIRECTION_NAMES[0] == "right" and DIRECTION_NAMES[2] == "behind"
    assert DIRECTION_NAMES[4] == "left" and DIRECTION_NAMES[6] == "front"
    for k in range(8):
        angle = math.atan2(DIRECTIONS[k, 1], DIRECTIONS[k, 0]) % (2 * math.pi)
        assert angle == pytest.approx(k * math.pi / 4)


# ------------------------------------------------------------------------------ physics
def test_free_push_moves_ball_between_0_1_and_0_2(physics):
    state = make_state(red=(0.0, 0.1))
    for k in range(8):
        nxt = physics.push(state, encode_action(RED, k))
        moved = nxt[:2] - state[:2]
        assert 0.1 <= np.linalg.norm(moved) <= 0.2
        assert moved @ DIRECTIONS[k] / np.linalg.norm(moved) > 0.999
        np.testing.assert_array_equal(nxt[2:], state[2:])  # nothing else moved


def test_collision_moves_touching_ball(physics):
    state = make_state(red=(0.0, 0.1), blue=(2 * BALL_RADIUS, 0.1))
    nxt = physics.push(state, encode_action(RED, 0))  # push red right, into blue
    assert nxt[2] - state[2] > 0.05  # blue was knocked to the right
    assert abs(nxt[3] - state[3]) < 1e-6
    # a ball further along the path is hit too
    state = make_state(red=(0.0, 0.1), blue=(0.15, 0.1))
    assert physics.push(state, encode_action(RED, 0))[2] > 0.15 + 0.02


def test_wall_stops_ball(physics):
    state = make_state(red=(TABLE_X[1] - 0.03, 0.1))
    nxt = physics.push(state, encode_action(RED, 0))
    assert nxt[0] <= TABLE_X[1] + 0.01
    state = make_state(red=(0.0, TABLE_Y[0] + 0.02))
    assert physics.push(state, encode_action(RED, 6))[1] >= TABLE_Y[0] - 0.01


def test_free_push_prediction_matches_simulation(physics):
    rng = np.random.default_rng(3)
    for _ in range(40):
        state = sample_positions(rng)
        actions = list(range(40))
        nexts, clear = physics.free_pushes(state, actions)
        for a in np.flatnonzero(clear)[:5]:
            np.testing.assert_allclose(nexts[a], physics.push(state, int(a)), atol=1e-9)


def test_pushes_keep_states_legal(domain, physics):
    rng = np.random.default_rng(0)
    for _ in range(5):
        state = sample_positions(rng)
        for _ in range(30):
            state = physics.push(state, int(rng.integers(40)))
            assert domain.is_legal(state)


# ------------------------------------------------------------------------------ legality
def test_is_legal(domain):
    assert domain.is_legal(sample_positions(np.random.default_rng(1)))
    assert domain.is_legal(make_state(red=(0.0, 0.0), blue=(2 * BALL_RADIUS, 0.0)))  # touching
    assert not domain.is_legal(make_state(red=(0.0, 0.0), blue=(0.05, 0.0)))  # overlapping
    assert not domain.is_legal(make_state(red=(0.7, 0.0)))  # off the table
    assert not domain.is_legal(make_state(red=(0.0, -0.45)))
    bad = make_state()
    bad[3] = np.nan
    assert not domain.is_legal(bad)
    assert not domain.is_legal(np.zeros(9))


# ------------------------------------------------------------------------------ success rules
def test_relation_rule():
    # red 0.2 left of blue
    s = make_state(red=(-0.2, 0.0), blue=(0.0, 0.0))
    assert S.relation_holds(s, "red", "left", "blue")
    assert not S.relation_holds(s, "red", "right", "blue")
    assert not S.relation_holds(s, "red", "front", "blue")
    assert S.relation_holds(s, "blue", "right", "red")
    # distance limit 0.39 (strict)
    assert S.relation_holds(make_state(red=(-0.38, 0.0), blue=(0.0, 0.0)), "red", "left", "blue")
    assert not S.relation_holds(make_state(red=(-0.40, 0.0), blue=(0.0, 0.0)), "red", "left", "blue")
    # 90-degree sector: 40 degrees off is inside, 50 is outside
    for deg, ok in ((40, True), (-40, True), (50, False), (-50, False)):
        a = math.radians(180 + deg)
        s = make_state(red=(0.25 * math.cos(a), 0.25 * math.sin(a)), blue=(0.0, 0.0))
        assert S.relation_holds(s, "red", "left", "blue") is ok
    # front is -y, behind is +y
    s = make_state(red=(0.0, -0.2), blue=(0.0, 0.0))
    assert S.relation_holds(s, "red", "front", "blue") and not S.relation_holds(s, "red", "behind", "blue")


def test_relation_task_uses_task_params(domain):
    task = domain.task("red_left_of_blue")
    assert domain.success(task, make_state(red=(-0.2, 0.0), blue=(0.0, 0.0)))
    assert not domain.success(task, make_state(red=(0.2, 0.0), blue=(0.0, 0.0)))
    assert domain.success(domain.task("cyan_behind_purple"), make_state(cyan=(0.1, 0.3), purple=(0.0, 0.0)))


def test_one_step_move_rule(domain):
    task = domain.task("move_red_right")
    start = make_state(red=(0.0, 0.0))
    for (dx, dy), ok in (((0.15, 0.0), True), ((0.1, 0.1), True),  # 45 degrees off
                         ((0.03, 0.0), False),  # too short
                         ((0.0, 0.15), False), ((-0.15, 0.0), False),
                         ((0.06 * math.cos(1.2), 0.06 * math.sin(1.2)), False)):  # 69 degrees off
        assert domain.success(task, make_state(red=(dx, dy)), start) is ok
    # the same displacement of another ball does not count
    assert not domain.success(task, make_state(red=(0.0, 0.0), blue=(0.6, 0.52)), start)
    # front is -y
    assert domain.success(domain.task("move_blue_front"), make_state(blue=(0.45, 0.4)),
                          make_state(blue=(0.45, 0.52)))


def test_sequential_rule(domain):
    task = domain.task("seq_red_left_of_blue_and_green_right_of_blue")
    both = make_state(red=(-0.2, 0.0), blue=(0.0, 0.0), green=(0.2, 0.0))
    one = make_state(red=(-0.2, 0.0), blue=(0.0, 0.0), green=(0.2, 0.3))
    assert domain.success(task, both)
    assert not domain.success(task, one)
    three = domain.task(
        "seq_red_left_of_green_and_blue_right_of_green_and_purple_behind_green")
    s = make_state(red=(-0.2, 0.0), green=(0.0, 0.0), blue=(0.2, 0.0), purple=(0.0, 0.2))
    assert domain.success(three, s)
    s[2 * PURPLE + 1] = -0.2  # purple now in front of green
    assert not domain.success(three, s)


LINE = make_state(red=(-0.4, 0.0), blue=(-0.2, 0.05), green=(0.0, 0.0), purple=(0.2, -0.05),
                  cyan=(0.4, 0.0))
PILE = make_state(red=(0.3, -0.1), blue=(0.4, -0.1), green=(0.2, -0.1), purple=(0.3, 0.0),
                  cyan=(0.3, -0.2))
CIRCLE = make_state(green=(0.0, 0.1), red=(0.15, 0.25), blue=(-0.15, 0.25),
                    purple=(-0.15, -0.05), cyan=(0.15, -0.05))


def test_make_line_rule(domain):
    task = domain.task("make_line")
    assert domain.success(task, LINE)
    swapped = LINE.copy()
    swapped[[0, 1, 2, 3]] = LINE[[2, 3, 0, 1]]  # blue left of red
    assert not domain.success(task, swapped)
    steep = LINE.copy()
    steep[2 * GREEN + 1] = 0.15  # blue -> green rises 0.1 over 0.2: 37 degrees
    assert not domain.success(task, steep)


def test_put_pile_rule(domain):
    task = domain.task("put_pile")
    assert domain.success(task, PILE)
    spread = PILE.copy()
    spread[2 * CYAN + 1] = -0.28
    assert not domain.success(task, spread)
    assert not domain.success(task, LINE)


def test_make_circle_rule(domain):
    task = domain.task("make_circle")
    assert domain.success(task, CIRCLE)
    far = CIRCLE.copy()
    far[2 * RED : 2 * RED + 2] = (0.3, 0.4)  # 0.33 from green: outside the ring
    assert not domain.success(task, far)
    same_side = CIRCLE.copy()
    same_side[2 * BLUE : 2 * BLUE + 2] = (0.05, 0.3)  # blue joins red's quadrant
    assert not domain.success(task, same_side)
    # the centre is the green ball: the same layout around red fails
    around_red = CIRCLE.copy()
    around_red[[0, 1, 4, 5]] = CIRCLE[[4, 5, 0, 1]]
    assert not domain.success(task, around_red)


@pytest.mark.parametrize("name, state", [("make_line", LINE), ("put_pile", PILE), ("make_circle", CIRCLE)])
def test_hard_checks_read_the_interleaved_layout(domain, name, state):
    """SPEC §8 pitfall: the state is (x, y) per ball, not all x then all y."""
    task = domain.task(name)
    assert domain.success(task, state)
    assert not domain.success(task, xs_then_ys(state))


def test_wrong_layout_line_is_not_accepted(domain):
    """A line written in the wrong layout [x0..x4, y0..y4] must fail the check."""
    wrong = np.array([-0.4, -0.2, 0.0, 0.2, 0.4, 0.0, 0.0, 0.0, 0.0, 0.0])
    assert not domain.success(domain.task("make_line"), wrong)


def test_success_implies_zero_distance(domain):
    """The task distance vanishes on the success set, for every task."""
    rng = np.random.default_rng(0)
    states = [sample_positions(rng) for _ in range(120)] + [LINE, PILE, CIRCLE]
    tasks = domain.tasks("train") + domain.tasks("hard")
    for state in states:
        for task in tasks:
            d = domain.distance(task, state)
            assert d >= 0
            if domain.success(task, state):
                assert d < 1e-12, task.name
    start = make_state(red=(0.0, 0.0))
    for k in range(8):
        nxt = make_state(red=tuple(0.12 * DIRECTIONS[k]))
        for task in domain.tasks("easy"):
            if domain.success(task, nxt, start):
                assert domain.distance(task, nxt, start) < 1e-12


def test_reward_terms(domain):
    task = domain.task("red_left_of_blue")
    far = make_state(red=(0.4, 0.0), blue=(0.0, 0.0))
    near = make_state(red=(0.25, 0.0), blue=(0.0, 0.0))
    done = make_state(red=(-0.2, 0.0), blue=(0.0, 0.0))
    out = domain.outcome(task, far, 0, near, far)
    assert out.terms["success_bonus"] == 0 and out.reward == pytest.approx(out.terms["shaping"])
    # on the wrong side the nearest point of the sector is blue's centre: 0.4 -> 0.25
    assert out.terms["shaping"] == pytest.approx(0.15 * S.SHAPING_SCALE)
    out = domain.outcome(task, near, 4, done, far)
    assert out.success and out.terms["success_bonus"] == S.SUCCESS_BONUS
    assert out.terms["shaping"] > 0
    assert out.reward == pytest.approx(sum(out.terms.values()))
    back = domain.outcome(task, done, 0, near, far)
    assert not back.success and back.terms["shaping"] < 0


# ------------------------------------------------------------------------------ instructions
def test_rephrase_bank_disjoint_from_train(domain):
    train, rephrase = set(), set()
    for task in domain.tasks("train"):
        assert len(task.instructions) >= 10 and len(task.rephrasings) >= 10
        assert not set(task.instructions) & set(task.rephrasings)
        train |= set(task.instructions)
        rephrase |= set(task.rephrasings)
    assert not train & rephrase
    from imaginebench.domains.clevr import instructions as text

    assert not set(text.RELATION_TEMPLATES) & set(text.RELATION_REPHRASE_TEMPLATES)
    assert len(text.RELATION_REPHRASE_TEMPLATES) >= 10


def test_easy_and_hard_instructions_not_in_real_data(domain):
    real = {s for t in domain.tasks("train") for s in t.instructions}
    held_out = {s for t in domain.tasks("train") for s in t.rephrasings}
    for level in ("easy", "hard"):
        for task in domain.tasks(level):
            assert len(task.instructions) >= 10, task.name
            assert not set(task.instructions) & real, task.name
            assert not set(task.instructions) & held_out, task.name


def test_instructions_name_the_task(domain):
    for task in domain.tasks("train"):
        ball, direction, anchor = task.params["goals"][0]
        for s in task.instructions + task.rephrasings:
            assert ball in s and anchor in s and s.index(ball) != s.index(anchor)
    words = {"left": ("left",), "right": ("right",), "front": ("forward", "front"),
             "behind": ("back",)}
    opposite = {"left": "right", "right": "left", "front": "behind", "behind": "front"}
    for task in domain.tasks("easy"):
        direction = task.params["direction"]
        for s in task.instructions:
            assert task.params["ball"] in s
            assert any(w in s for w in words[direction])
            assert not any(w in s for w in words[opposite[direction]])


# ------------------------------------------------------------------------------ env API
def test_set_state_then_step_matches_env_step():
    env, replay = raw_env(), raw_env()
    env.reset(seed=5, options={"task": "red_left_of_blue"})
    replay.reset(seed=99, options={"task": "red_left_of_blue"})
    rng = np.random.default_rng(0)
    for _ in range(10):
        state = env.unwrapped.state.copy()
        action = int(rng.integers(40))
        obs, *_ = env.step(action)
        replay.set_state(state)
        obs2, *_ = replay.step(action)
        np.testing.assert_array_equal(env.unwrapped.state, replay.unwrapped.state)
        np.testing.assert_array_equal(obs, obs2)


def test_set_state_accepts_illegal_but_finite_states(domain):
    env = raw_env()
    env.reset(seed=0, options={"task": "red_left_of_blue"})
    overlapping = make_state(red=(0.0, 0.0), blue=(0.03, 0.0), green=(0.7, 0.0))
    env.set_state(overlapping)
    obs, *_ = env.step(encode_action(CYAN, 4))
    assert np.all(np.isfinite(obs)) and domain.is_legal(obs.astype(np.float64))
    bad = overlapping.copy()
    bad[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        env.set_state(bad)
    with pytest.raises(ValueError, match="10"):
        env.set_state(np.zeros(9))


def test_env_docstring_states_the_thresholds():
    from imaginebench.domains.clevr.env import ClevrEnv

    doc = " ".join(ClevrEnv.__doc__.split())
    for number in (S.RELATION_MAX_DISTANCE, S.MOVE_MIN_DISTANCE, math.degrees(S.MOVE_HALF_ANGLE),
                   round(math.degrees(S.LINE_HALF_ANGLE)), S.PILE_RADIUS, *S.CIRCLE_RING):
        assert f"{number:g}" in doc, number
    for section in ("Description", "Instructions", "Actions", "Observation", "Reward",
                    "Success/Termination", "Registered ids", "Version history"):
        assert f"## {section}" in ClevrEnv.__doc__


def test_seeded_reset_is_deterministic():
    a, b = raw_env("hard"), raw_env("hard")
    for seed in (0, 1, 7):
        oa, ia = a.reset(seed=seed)
        ob, ib = b.reset(seed=seed)
        np.testing.assert_array_equal(oa, ob)
        assert ia["task"] == ib["task"] and ia["instruction"] == ib["instruction"]
        for _ in range(3):
            xa, xb = a.expert_action(), b.expert_action()
            assert xa == xb
            np.testing.assert_array_equal(a.step(xa)[0], b.step(xb)[0])


def test_initial_state_does_not_satisfy_task(domain):
    env = raw_env("hard")
    for seed, name in enumerate(env.unwrapped.tasks):
        obs, _ = env.reset(seed=seed, options={"task": name})
        assert domain.is_legal(obs.astype(np.float64))
        assert not domain.success(domain.task(name), env.unwrapped.state)


def test_episode_ends_on_success_and_at_horizon():
    env = raw_env("easy")
    env.reset(seed=0, options={"task": "move_red_right"})
    _, reward, terminated, truncated, info = env.step(encode_action(RED, 0))
    assert terminated and not truncated and info["is_success"] and reward > 1.0
    env.reset(seed=0, options={"task": "move_red_right"})
    _, _, terminated, truncated, info = env.step(encode_action(RED, 4))  # wrong way
    assert truncated and not terminated and not info["is_success"]
    env = raw_env("train")
    env.reset(seed=0, options={"task": "red_left_of_blue"})
    for t in range(50):
        _, _, terminated, truncated, info = env.step(encode_action(CYAN, 0))
        assert "is_success" in info and "reward_terms" in info
        if terminated:
            break
    assert terminated or (truncated and t == 49)


def test_unknown_task_lists_choices():
    env = raw_env()
    with pytest.raises(ValueError, match="red_left_of_blue"):
        env.reset(seed=0, options={"task": "red_left_of_bleu"})
    with pytest.raises(ValueError, match="make_line"):
        raw_env("hard").reset(options={"task": "nope"})


def test_score_rollout_matches_env_rewards(domain):
    env = raw_env("hard")
    env.reset(seed=3, options={"task": "put_pile"})
    states, actions, rewards = [env.unwrapped.state.copy()], [], []
    done = False
    while not done:
        a = env.expert_action()
        _, r, te, tr, info = env.step(a)
        states.append(env.unwrapped.state.copy()), actions.append(a), rewards.append(r)
        done = te or tr
    scored, success = domain.score_rollout(domain.task("put_pile"), np.array(states), np.array(actions))
    np.testing.assert_allclose(scored, rewards, rtol=1e-5, atol=1e-6)
    assert success[-1] == info["is_success"]


# ------------------------------------------------------------------------------ expert
def _expert_solves(env, task: str, seeds) -> bool:
    for seed in seeds:
        env.reset(seed=seed, options={"task": task})
        done, info = False, {"is_success": False}
        while not done:
            _, _, te, tr, info = env.step(env.expert_action())
            done = te or tr
        if info["is_success"]:
            return True
    return False


@pytest.mark.parametrize("level, episodes", [("train", 2), ("easy", 2), ("hard", 3)])
def test_expert_solves_every_task(level, episodes):
    """Every task is solved within a bounded number of tries (3), on fresh seeds per episode."""
    env = raw_env(level)
    for i, task in enumerate(env.unwrapped.tasks):
        for ep in range(episodes):
            seeds = [1000 * i + 10 * ep + k for k in range(3)]
            assert _expert_solves(env, task, seeds), task


def test_success_and_distance_in_one_pass_equals_the_two_functions():
    from imaginebench.domains.clevr.success import success_and_distance, task_distance, task_success

    domain = ClevrDomain()
    rng = np.random.default_rng(5)
    tasks = [t for lv in ("train", "easy", "hard") for t in domain.tasks(lv)]
    for i in range(400):
        task = tasks[i % len(tasks)]
        start, state = sample_positions(rng), sample_positions(rng)
        for s in (state, state.astype(np.float32)):  # datasets hold float32 states
            got = success_and_distance(task.family, task.params, s, start)
            assert got == (task_success(task.family, task.params, s, start),
                           task_distance(task.family, task.params, s, start)), task.name
