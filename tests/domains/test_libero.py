"""LIBERO-v0: layout, tasks and banks, success rules on hand-built states, legality, resets,
set_state, bad input and one expert episode per task family."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("libero")
pytest.importorskip("robosuite")

import imaginebench  # noqa: E402
from imaginebench.domains.libero import layout as L  # noqa: E402
from imaginebench.domains.libero import success as S  # noqa: E402
from imaginebench.domains.libero.domain import JOINT_LIMITS, LiberoDomain, legality_errors  # noqa: E402
from imaginebench.domains.libero.env import LiberoEnv  # noqa: E402
from imaginebench.domains.libero.tasks import HORIZONS, start_of  # noqa: E402
from tests.expert_episodes import expert_episodes, group  # noqa: E402

DOMAIN = LiberoDomain()
TRAIN = ("pick_soup", "pick_cheese", "pick_dressing", "place_soup", "place_cheese", "place_dressing")
EASY = ("pick_place_soup", "pick_place_cheese", "pick_place_dressing",
        "place_soup_next_to_cheese", "place_soup_next_to_dressing", "place_cheese_next_to_soup",
        "place_cheese_next_to_dressing", "place_dressing_next_to_soup", "place_dressing_next_to_cheese",
        "reach_soup", "reach_cheese", "reach_dressing")
HARD = ("basket_soup_then_cheese", "basket_soup_then_dressing", "basket_cheese_then_dressing", "basket_all",
        "aside_soup", "aside_cheese", "aside_dressing", "out_of_basket_dressing")


@pytest.fixture(scope="module")
def envs():
    made = {level: LiberoEnv(level) for level in ("train", "easy", "hard")}
    yield made
    for env in made.values():
        env.close()


def resting_state(**moves) -> np.ndarray:
    """A hand-built state: the arm at LIBERO's reset pose, every body resting at the centre of its
    start region; ``moves`` maps an entity to a new position."""
    s = np.zeros(L.STATE_DIM)
    s[L.JOINTS] = (0.0, -0.161, 0.0, -2.4446, 0.0, 2.2268, 0.7854)
    s[L.EEF_POS] = (-0.148, 0.0, 0.261)
    s[L.EEF_QUAT] = (1.0, 0.0, 0.0, 0.0)
    s[L.GRIPPER] = (0.02, -0.02)
    for entity, ((x0, x1), (y0, y1)) in L.START_REGIONS.items():
        s[L.pos_slice(entity)] = ((x0 + x1) / 2, (y0 + y1) / 2, L.REST_Z[entity])
        s[L.quat_slice(entity)] = L.REST_QUAT[entity]
    for entity, p in moves.items():
        if entity == "eef":
            s[L.EEF_POS] = p
        else:
            s[L.pos_slice(entity)] = p
    return s


def in_basket_point(s: np.ndarray, obj: str) -> np.ndarray:
    b = L.pos(s, "basket")
    return np.array([b[0], b[1], b[2] + L.BASKET_FLOOR + L.HALF_HEIGHT[obj]])


def succeeds(name: str, s: np.ndarray, progress=None) -> bool:
    task = DOMAIN.task(name)
    p = DOMAIN.initial_progress(task, s) if progress is None else np.asarray(progress, dtype=float)
    return DOMAIN.outcome(task, s, np.zeros(7), s, p).success


# ---------------------------------------------------------------- interface
def test_layout_tasks_and_spaces():
    assert DOMAIN.state_dim == 44 == len(DOMAIN.state_layout)
    assert DOMAIN.state_layout[7:10] == ("eef_x", "eef_y", "eef_z")
    assert DOMAIN.state_layout[16:23] == tuple(f"alphabet_soup_{c}" for c in ("x", "y", "z", "qx", "qy", "qz", "qw"))
    assert DOMAIN.state_layout[37] == "basket_x"
    assert tuple(t.name for t in DOMAIN.tasks("train")) == TRAIN
    assert tuple(t.name for t in DOMAIN.tasks("rephrase")) == TRAIN
    assert tuple(t.name for t in DOMAIN.tasks("easy")) == EASY
    assert tuple(t.name for t in DOMAIN.tasks("hard")) == HARD
    assert dict(DOMAIN.task("basket_soup_then_cheese").params)["objects"] == ("alphabet_soup", "cream_cheese")
    assert dict(DOMAIN.task("place_cheese_next_to_soup").params)["reference"] == "alphabet_soup"
    for task in (*DOMAIN.tasks("train"), *DOMAIN.tasks("easy"), *DOMAIN.tasks("hard")):
        assert DOMAIN.task_horizon(task) <= 500
    assert DOMAIN.task_horizon(DOMAIN.task("basket_all")) == HORIZONS["sequential_all"] == 500
    assert start_of("place_soup") == "held" and start_of("out_of_basket_dressing") == "basket"


def test_make_reset_step():
    env = imaginebench.make("LIBERO-v0", level="train", encode_instruction=False)
    try:
        assert env.observation_space.shape == (44,)
        assert env.action_space.shape == (7,) and np.all(env.action_space.low == -1)
        obs, info = env.reset(seed=0, options={"task": "pick_soup"})
        assert obs.shape == (44,) and obs.dtype == np.float32 and DOMAIN.is_legal(obs)
        assert info["instruction"] in DOMAIN.task("pick_soup").instructions
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert isinstance(info["is_success"], bool) and set(info["reward_terms"]) == {"shaping", "success_bonus"}
        # the state is LIBERO's own observation keys, read from the simulator after the step
        live = env.unwrapped.scene.observations()
        np.testing.assert_allclose(info["state"], live, atol=1e-9)
        np.testing.assert_allclose(obs, live, atol=1e-6)  # float32
    finally:
        env.close()


def test_joint_limits_match_the_model(envs):
    scene = envs["train"].scene
    model = scene.sim.model
    for i in range(7):
        np.testing.assert_allclose(model.jnt_range[model.joint_name2id(f"robot0_joint{i + 1}")], JOINT_LIMITS[i],
                                   atol=1e-3)


# ---------------------------------------------------------------- bad input
def test_unknown_task_level_and_bad_states(envs):
    with pytest.raises(ValueError, match="Valid choices: .*basket_all"):
        envs["hard"].reset(options={"task": "basket_everything"})
    with pytest.raises(ValueError, match="belongs to the 'train' level"):
        envs["hard"].reset(options={"task": "pick_soup"})
    with pytest.raises(ValueError, match="train, rephrase, easy, hard"):
        imaginebench.make("LIBERO-v0", level="medium")
    with pytest.raises(ValueError, match=r"shape \(44,\)"):
        DOMAIN.outcome(DOMAIN.task("pick_soup"), np.zeros(43), np.zeros(7), np.zeros(43), np.zeros(S.PROGRESS_DIM))
    envs["train"].reset(seed=0, options={"task": "pick_soup"})
    bad = envs["train"].state.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        envs["train"].set_state(bad)
    with pytest.raises(ValueError, match="expected 44 values"):
        envs["train"].set_state(np.zeros(10))
    with pytest.raises(ValueError, match="action of shape"):
        envs["train"].step(np.zeros(4))
    with pytest.raises(ValueError, match="render_state needs 44"):
        envs["train"].render_state(np.zeros(3))


# ---------------------------------------------------------------- success rules on hand-built states
def test_reach_and_pick_rules():
    s = resting_state()
    soup = L.pos(s, "alphabet_soup")
    assert not succeeds("reach_soup", s)
    assert succeeds("reach_soup", resting_state(eef=soup + [0, 0, 0.04]))
    assert not succeeds("reach_soup", resting_state(eef=soup + [0, 0, 0.06]))
    assert not succeeds("reach_cheese", resting_state(eef=soup))
    # pick: gripper at the object and the object lifted by 0.05
    lifted = soup + [0, 0, S.LIFT_HEIGHT + 0.005]
    assert succeeds("pick_soup", resting_state(alphabet_soup=lifted, eef=lifted))
    assert not succeeds("pick_soup", resting_state(eef=soup))  # at it, not lifted
    assert not succeeds("pick_soup", resting_state(alphabet_soup=lifted, eef=lifted + [0.06, 0, 0]))  # not held
    assert not succeeds("pick_cheese", resting_state(alphabet_soup=lifted, eef=lifted))


def test_in_basket_rule_follows_the_basket_geometry():
    s = resting_state()
    inside = in_basket_point(s, "cream_cheese")
    assert succeeds("place_cheese", resting_state(cream_cheese=inside))
    assert succeeds("pick_place_cheese", resting_state(cream_cheese=inside + [0.05, 0.05, 0]))
    assert not succeeds("place_cheese", resting_state(cream_cheese=inside + [0.1, 0, 0]))  # beyond the wall
    assert not succeeds("place_cheese", resting_state(cream_cheese=inside + [0, 0, 0.15]))  # held above the rim
    assert not succeeds("place_soup", resting_state(cream_cheese=inside))
    # the basket moved: the rule follows it
    moved = L.pos(s, "basket") + [0.1, -0.05, 0]
    s2 = resting_state(basket=moved, salad_dressing=moved + [0, 0, L.BASKET_FLOOR + L.HALF_HEIGHT["salad_dressing"]])
    assert succeeds("place_dressing", s2)


def test_next_to_aside_and_out_of_basket_rules():
    s = resting_state()
    cheese = L.pos(s, "cream_cheese")
    near = cheese + [0.09, 0, 0]
    near[2] = L.REST_Z["alphabet_soup"]
    assert succeeds("place_soup_next_to_cheese", resting_state(alphabet_soup=near))
    assert not succeeds("place_soup_next_to_dressing", resting_state(alphabet_soup=near))
    assert not succeeds("place_soup_next_to_cheese", resting_state(alphabet_soup=near + [0.05, 0, 0]))
    assert not succeeds("place_soup_next_to_cheese", resting_state(alphabet_soup=near + [0, 0, 0.05]))  # held
    # aside: against the start kept in the progress record
    start = resting_state()
    task = DOMAIN.task("aside_dressing")
    p0 = DOMAIN.initial_progress(task, start)
    d = L.pos(start, "salad_dressing")
    up = resting_state(salad_dressing=d + [0.04, 0, S.LIFT_HEIGHT + 0.01])
    lifted_p = DOMAIN.outcome(task, start, np.zeros(7), up, p0).progress
    assert S.was_lifted(lifted_p, "salad_dressing") and not S.was_lifted(lifted_p, "alphabet_soup")
    assert not DOMAIN.success(task, resting_state(salad_dressing=d + [0.05, 0, 0]), lifted_p)
    assert DOMAIN.success(task, resting_state(salad_dressing=d + [0.08, 0, 0]), lifted_p)
    assert not DOMAIN.success(task, resting_state(salad_dressing=d + [0.08, 0, 0.05]), lifted_p)  # still held
    # pushed (or knocked over) 0.08 away without ever being lifted: not placed aside
    assert not DOMAIN.success(task, resting_state(salad_dressing=d + [0.08, 0, 0]), p0)
    pushed = DOMAIN.outcome(task, start, np.zeros(7), resting_state(salad_dressing=d + [0.08, 0, 0]), p0)
    assert not pushed.success and not S.was_lifted(pushed.progress, "salad_dressing")
    assert not DOMAIN.holds(task, start)
    # out of the basket
    b = L.pos(s, "basket")
    inside = in_basket_point(s, "salad_dressing")
    assert not succeeds("out_of_basket_dressing", resting_state(salad_dressing=inside))
    assert succeeds("out_of_basket_dressing", resting_state(salad_dressing=(b[0] + 0.16, b[1], L.REST_Z["salad_dressing"])))
    assert not succeeds("out_of_basket_dressing", resting_state(salad_dressing=(b[0] + 0.12, b[1], L.REST_Z["salad_dressing"])))


def test_sequential_latches_every_named_object():
    task = DOMAIN.task("basket_soup_then_cheese")
    s0 = resting_state()
    p = DOMAIN.initial_progress(task, s0)
    soup_in = resting_state(alphabet_soup=in_basket_point(s0, "alphabet_soup"))
    out = DOMAIN.outcome(task, s0, np.zeros(7), soup_in, p)
    assert not out.success and S.latched(out.progress, "alphabet_soup") and not S.latched(out.progress, "cream_cheese")
    # the soup again (taken out and put back) never makes up for the cheese
    again = DOMAIN.outcome(task, soup_in, np.zeros(7), s0, out.progress)
    again = DOMAIN.outcome(task, s0, np.zeros(7), soup_in, again.progress)
    assert not again.success
    # an object that is not named does not count either
    dressing_in = resting_state(salad_dressing=in_basket_point(s0, "salad_dressing"))
    assert not DOMAIN.outcome(task, soup_in, np.zeros(7), dressing_in, again.progress).success
    # the cheese in, after the soup was taken out again: both latched -> success
    cheese_in = resting_state(cream_cheese=in_basket_point(s0, "cream_cheese"))
    final = DOMAIN.outcome(task, s0, np.zeros(7), cheese_in, again.progress)
    assert final.success and final.terms["success_bonus"] == 1.0
    # all three: two placed is not enough
    all3 = DOMAIN.task("basket_all")
    p = DOMAIN.initial_progress(all3, s0)
    for obj in ("alphabet_soup", "cream_cheese"):
        p = DOMAIN.outcome(all3, s0, np.zeros(7), resting_state(**{obj: in_basket_point(s0, obj)}), p).progress
    assert not DOMAIN.success(all3, s0, p)
    assert DOMAIN.success(all3, resting_state(salad_dressing=in_basket_point(s0, "salad_dressing")), p)


def test_reward_shapes_toward_the_goal():
    task = DOMAIN.task("pick_place_soup")
    s0 = resting_state()
    p = DOMAIN.initial_progress(task, s0)
    closer = resting_state(eef=L.pos(s0, "alphabet_soup") + [0, 0, 0.1])
    out = DOMAIN.outcome(task, s0, np.zeros(7), closer, p)
    assert out.terms["shaping"] > 0 and out.terms["success_bonus"] == 0 and out.reward == pytest.approx(out.terms["shaping"])
    back = DOMAIN.outcome(task, closer, np.zeros(7), s0, p)
    assert back.terms["shaping"] == pytest.approx(-out.terms["shaping"])


# ---------------------------------------------------------------- legality
def test_legality_errors_name_the_problem(envs):
    obs, _ = envs["easy"].reset(seed=3, options={"task": "reach_soup"})
    assert legality_errors(obs) == [] and DOMAIN.is_legal(obs)
    assert DOMAIN.is_legal(resting_state())

    def errors(**change):
        s = np.asarray(obs, dtype=np.float64).copy()
        for key, (index, value) in change.items():
            s[index] = value
        return " ".join(legality_errors(s))

    assert "non-finite" in errors(x=(20, np.inf))
    assert "joint 4" in errors(x=(3, 0.5))
    assert "finger" in errors(x=(14, 0.06))
    assert "quaternion" in errors(x=(L.quat_slice("basket"), (0.0, 0.0, 2.0, 0.0)))
    assert "inside the floor" in errors(x=(L.pos_slice("alphabet_soup").start + 2, -0.02))
    assert "outside the workspace" in errors(x=(L.pos_slice("salad_dressing").start, 2.0))
    assert "end effector" in errors(x=(L.EEF_POS.start + 2, -0.2))
    s = np.asarray(obs, dtype=np.float64).copy()
    s[L.pos_slice("cream_cheese")] = L.pos(s, "alphabet_soup") + [0.01, 0, 0]
    assert any("overlap" in e for e in legality_errors(s))
    assert legality_errors(np.zeros(5)) == ["expected 44 values, got shape (5,)"]
    assert not DOMAIN.is_legal_batch(np.stack([obs, s])).tolist()[1]


# ---------------------------------------------------------------- resets and set_state
def test_seeded_reset_is_reproducible_and_varies(envs):
    env = envs["easy"]
    first, info1 = env.reset(seed=7, options={"task": "reach_cheese"})
    again, info2 = env.reset(seed=7, options={"task": "reach_cheese"})
    np.testing.assert_allclose(first, again, atol=1e-9)
    assert info1["instruction"] == info2["instruction"]
    other, _ = env.reset(seed=8, options={"task": "reach_cheese"})
    assert L.xy_distance(L.pos(first, "cream_cheese"), L.pos(other, "cream_cheese")) > 1e-4
    for entity, ((x0, x1), (y0, y1)) in L.START_REGIONS.items():
        x, y, _ = L.pos(other, entity)
        assert x0 - 0.01 <= x <= x1 + 0.01 and y0 - 0.01 <= y <= y1 + 0.01


def test_start_kinds(envs):
    held, _ = envs["train"].reset(seed=1, options={"task": "place_cheese"})
    assert S.picked(held, "cream_cheese") and not S.in_basket(held, "cream_cheese")
    in_basket, _ = envs["hard"].reset(seed=1, options={"task": "out_of_basket_dressing"})
    assert S.in_basket(in_basket, "salad_dressing") and not DOMAIN.holds(DOMAIN.task("out_of_basket_dressing"), in_basket)


def test_set_state_restores_the_configuration(envs):
    env = envs["easy"]
    env.reset(seed=2, options={"task": "pick_place_soup"})
    states, actions = [env.state.copy()], []
    for _ in range(45):  # approach, descend, grasp: the hand touches the can
        actions.append(env.expert_action())
        states.append(env.step(actions[-1])[4]["state"])
    target = states[30]
    env.set_state(target)
    np.testing.assert_allclose(env.state, target, atol=1e-6)  # every number, the eef recomputed from the joints
    # re-simulating recorded transitions lands close to the recorded next states
    errors = []
    for t in range(30, 45):
        env.set_state(states[t])
        errors.append(np.abs(env.step(actions[t])[0] - states[t + 1]).max())
    assert max(errors) < 0.02


# ---------------------------------------------------------------- the expert, one episode per family
@pytest.mark.parametrize("level, name", [
    ("train", "pick_soup"), ("train", "place_cheese"), ("easy", "pick_place_dressing"),
    ("easy", "place_dressing_next_to_cheese"), ("easy", "reach_cheese"), ("hard", "basket_cheese_then_dressing"),
    ("hard", "aside_cheese"), ("hard", "out_of_basket_dressing"),
])
def test_expert_solves_one_episode_per_family(envs, level, name):
    env = envs[level]
    obs, info = env.reset(seed=11, options={"task": name})
    assert not DOMAIN.holds(DOMAIN.task(name), obs)
    for _ in range(env.horizon):
        obs, reward, terminated, truncated, info = env.step(env.expert_action())
        if terminated or truncated:
            break
    assert terminated and info["is_success"], f"{name}: expert failed (last phase {env.last_phase})"
    # the same state-based functions say so from the recorded states alone
    assert DOMAIN.success(DOMAIN.task(name), obs, env.progress)


@group("LIBERO-v0")
def test_real_expert_rollouts_pass_the_quality_checks():
    """The transition tolerance (0.05) and the legality check are measured on real data: expert
    rollouts of a pick and a place task re-simulate within tolerance and are legal."""
    from imaginebench.imagination.quality import check_rollouts, transition_tolerance

    data = expert_episodes("LIBERO-v0", "train", 4)  # three picks and a place (the conformance suite's first 4)
    report = check_rollouts("LIBERO-v0", "train", data, replay=False).report
    assert report.episodes == 4 and "place_soup" in data.tasks
    assert report.transition_correctness == 1.0 and report.legality == 1.0 and report.consistency == 1.0
    assert report.mean_transition_error < transition_tolerance("LIBERO-v0") / 2
