"""HalfCheetah-v0's array code gives the per-row answers: ``physics.lowest_points`` equals
MuJoCo's ``lowest_point``, ``is_legal_batch`` equals ``is_legal`` and ``outcome_batch`` equals
``outcome``, on random states, states built to hit every legality check, real env states
(random actions and the jump experts) and random progress records of every task."""

from __future__ import annotations

import importlib.util
import time
from typing import NamedTuple

import numpy as np
import pytest

pytest.importorskip("mujoco")

from imaginebench.domains.base import Domain, Task  # noqa: E402
from imaginebench.domains.halfcheetah import physics as P  # noqa: E402
from imaginebench.domains.halfcheetah import success as S  # noqa: E402
from imaginebench.domains.halfcheetah.domain import HalfCheetahDomain, legality_errors  # noqa: E402
from tests.domains.test_outcome_batch import outcome_rows_agree  # noqa: E402

DOMAIN = HalfCheetahDomain()
TASKS: tuple[Task, ...] = tuple(t for level in ("train", "rephrase", "easy", "hard") for t in DOMAIN.tasks(level))
LIMITS = P.joint_range()


class Row(NamedTuple):
    task: Task
    state: np.ndarray
    action: np.ndarray
    next_state: np.ndarray
    progress: np.ndarray


def random_states(rng: np.random.Generator, n: int) -> np.ndarray:
    """States over the whole pose space: pitch in [−π, π], joints across and 0.6 rad beyond
    their limits, roots from buried to high in the air, moderate velocities."""
    s = np.zeros((n, P.STATE_DIM))
    s[:, P.DX] = rng.normal(0.0, 0.1, n)
    s[:, P.ROOTZ] = rng.uniform(-0.6, 1.2, n)
    s[:, P.ROOTY] = rng.uniform(-np.pi, np.pi, n)
    s[:, P.JOINT_SLICE] = rng.uniform(LIMITS[:, 0] - 0.6, LIMITS[:, 1] + 0.6, (n, 6))
    s[:, P.QVEL_SLICE] = rng.normal(0.0, 3.0, (n, 9))
    return s


@pytest.fixture(scope="module")
def env_states() -> np.ndarray:
    """States of real env steps: random actions on every task of every level, plus the experts'
    jump episodes when their weights load (real flights)."""
    from imaginebench.envs.registry import make

    rng = np.random.default_rng(7)
    states = []
    for level in ("train", "easy", "hard"):
        env = make("HalfCheetah-v0", level=level, encode_instruction=False)
        for k, name in enumerate(env.unwrapped.tasks):
            env.reset(seed=10 * k, options={"task": name})
            for _ in range(60):
                _, _, terminated, truncated, info = env.step(rng.uniform(-1, 1, P.ACTION_DIM))
                states.append(info["state"])
                if terminated or truncated:
                    break
    if importlib.util.find_spec("safetensors") is not None:  # what the experts' weights load with
        for name, level in (("jump_in_place", "hard"), ("jump_forward", "train"), ("jump_backward", "train")):
            env = make("HalfCheetah-v0", level=level, encode_instruction=False)
            env.reset(seed=3, options={"task": name})
            done = False
            while not done:
                _, _, terminated, truncated, info = env.step(env.expert_action())
                states.append(info["state"])
                done = terminated or truncated
    return np.array(states)


# ---------------------------------------------------------------- lowest points
def test_lowest_points_equal_mujoco_on_random_and_real_states(env_states):
    rng = np.random.default_rng(0)
    states = np.concatenate([random_states(rng, 600), env_states])
    states[:20, P.ROOTY] = rng.uniform(-12.0, 12.0, 20)  # pitches past a full turn
    want = np.array([P.lowest_point(s) for s in states])
    got = P.lowest_points(states)
    assert got.shape == want.shape and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    assert (want < S.AIR_CLEARANCE).any() and (want >= S.AIR_CLEARANCE).any()
    assert P.lowest_points(np.zeros((0, P.STATE_DIM))).shape == (0,)


def test_lowest_points_of_non_finite_states_as_mujoco():
    s = np.zeros((5, P.STATE_DIM))
    s[0, P.ROOTZ], s[1, P.ROOTZ], s[2, P.ROOTY], s[3, 5], s[4, P.VX] = np.inf, -np.inf, np.nan, np.inf, np.nan
    np.testing.assert_allclose(P.lowest_points(s), [P.lowest_point(r) for r in s], rtol=0, atol=1e-12)


@pytest.mark.parametrize("edit, named", [
    ('axisangle="0 1 0 .87" name="head"', "'head'"),  # a geom turned about x
    ('axis="0 1 0" damping="6" name="bthigh"', "'bthigh'"),  # a hinge about x
])
def test_a_non_planar_model_is_refused(edit, named):
    import mujoco

    with open(P.model_path()) as f:
        xml = f.read()
    assert edit in xml
    model = mujoco.MjModel.from_xml_string(xml.replace(edit, edit.replace("0 1 0", "1 0 0")))
    with pytest.raises(ValueError, match=named):
        P._planar_chain(model)
    P._planar_chain(mujoco.MjModel.from_xml_string(xml))  # the shipped model is planar


def test_lowest_points_follow_mujoco_on_an_edited_planar_model():
    """Turned body frames, hinge anchors off the body origin and joint reference angles: paths
    the shipped model does not take, against MuJoCo on the edited model."""
    import mujoco

    with open(P.model_path()) as f:
        xml = f.read()
    edits = {'<body name="bthigh" pos="-.5 0 0">': '<body name="bthigh" pos="-.5 0 0" axisangle="0 1 0 0.4">',
             'name="bshin" pos="0 0 0"': 'name="bshin" pos="0.03 0 -0.05"',
             'name="fthigh" pos="0 0 0"': 'name="fthigh" pos="-0.02 0 0.04" ref="0.3"',
             '<body name="fshin" pos="-.14 0 -.24">': '<body name="fshin" pos="-.14 0 -.24" axisangle="0 -1 0 0.7">',
             'axis="0 1 0" damping="3" name="fshin"': 'axis="0 -1 0" damping="3" name="fshin"',
             'name="fshin" pos="0 0 0"': 'name="fshin" pos="0.04 0 0.02"'}
    for old, new in edits.items():
        assert old in xml, old
        xml = xml.replace(old, new)
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    geoms = np.arange(1, model.ngeom)  # the floor is geom 0
    states = random_states(np.random.default_rng(8), 300)
    want = []
    for s in states:
        data.qpos[0], data.qpos[1:] = 0.0, s[P.QPOS_SLICE]
        mujoco.mj_kinematics(model, data)
        low = (data.geom_xpos[geoms, 2] - np.abs(data.geom_xmat[geoms, 8]) * model.geom_size[geoms, 1]
               - model.geom_size[geoms, 0])
        want.append(low.min())
    got = P._chain_lowest_points(P._planar_chain(model), states)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    assert np.abs(got - P.lowest_points(states)).max() > 0.01  # the edits moved the body


# ---------------------------------------------------------------- legality
def illegal_variants(base: np.ndarray, rng: np.random.Generator) -> dict[str, list[np.ndarray]]:
    """Copies of legal states with one check pushed just past (or just inside) its bound, keyed
    by words of the reason ``legality_errors`` gives."""
    tol = 0.3  # domain.JOINT_TOLERANCE
    out: dict[str, list[np.ndarray]] = {k: [] for k in (
        "angle", "root height", "displacement", "root velocity", "pitch rate", "joint rates", "inside the floor")}
    for s in base:
        j = int(rng.integers(6))
        edge = rng.choice([LIMITS[j, 0] - tol, LIMITS[j, 1] + tol]) + rng.choice([-0.05, -1e-9, 1e-9, 0.05])
        out["angle"].append(_with(s, 3 + j, edge))
        out["root height"].append(_with(s, P.ROOTZ, rng.choice([-1.0, 2.0, -1.02, 2.01, 2.0 + 1e-12])))
        out["displacement"].append(_with(s, P.DX, rng.choice([-1.6, 1.5, 1.51, -1.5])))
        out["root velocity"].append(_with(s, int(rng.choice([P.VX, P.VZ])), rng.choice([-30.5, 30.0, 31.0])))
        out["pitch rate"].append(_with(s, P.VZ + 1, rng.choice([-61.0, 60.0, 60.5])))
        out["joint rates"].append(_with(s, int(rng.integers(12, 18)), rng.choice([-100.0, 100.5, -101.0])))
        out["inside the floor"].append(_with(s, P.ROOTZ, rng.uniform(-0.9, -0.05)))
    return out


def _with(state: np.ndarray, column: int, value: float) -> np.ndarray:
    s = state.copy()
    s[column] = value
    return s


def test_is_legal_batch_matches_is_legal(env_states):
    rng = np.random.default_rng(1)
    real = env_states[rng.permutation(len(env_states))[:200]]
    variants = illegal_variants(real[:80], rng)
    for reason, states in variants.items():  # every check is hit, and fails some rows only
        errors = [" ".join(legality_errors(s)) for s in states]
        assert any(reason in e for e in errors), reason
        assert any(not e for e in errors), reason
    non_finite = [_with(s, int(rng.integers(18)), rng.choice([np.nan, np.inf, -np.inf])) for s in real[:30]]
    states = np.concatenate([real, *map(np.array, variants.values()), non_finite, random_states(rng, 300)])
    want = np.array([DOMAIN.is_legal(s) for s in states])
    got = DOMAIN.is_legal_batch(states)
    assert got.dtype == bool and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert want[: len(real)].all() and not want[-330:-300].any()  # real states legal, non-finite not
    assert 0.1 < want.mean() < 0.9
    assert DOMAIN.is_legal_batch(np.zeros((0, P.STATE_DIM))).shape == (0,)
    with pytest.raises(ValueError, match=r"expected states of shape \(N, 18\)"):
        DOMAIN.is_legal_batch(states[:, :-1])


# ---------------------------------------------------------------- outcomes
T_BEFORE = (0, 1, 50, 98, 99, 100, 101, 150, 198, 199, 200, 250)
"""Steps before the transition: 99→100 sets the first half's displacement, 199→200 ends a
sequence's horizon."""


def random_progress(rng: np.random.Generator) -> np.ndarray:
    """A progress record that any family's rule can pass or fail from."""
    p = S.initial_progress()
    p[S.P_T] = rng.choice(T_BEFORE) if rng.random() < 0.8 else rng.integers(0, 200)
    p[S.P_X] = rng.uniform(-20.0, 20.0) if rng.random() < 0.5 else rng.uniform(-1.5, 1.5)
    if p[S.P_T] >= S.HALF:
        p[S.P_HALF] = rng.uniform(-6.0, 6.0)
        if rng.random() < 0.5:
            p[S.P_X] = p[S.P_HALF] + rng.uniform(-6.0, 6.0)
    p[S.P_JUMPS] = rng.integers(0, 4)
    p[S.P_IN_JUMP] = rng.integers(0, 2)
    p[S.P_MAX_ABS] = abs(p[S.P_X]) + (0.0 if rng.random() < 0.5 else rng.uniform(0.0, 1.0))
    return p


def next_states(rng: np.random.Generator, real: np.ndarray, n: int) -> np.ndarray:
    """Real states, random ones, and flights: high roots (some exactly at the jump height),
    upright or not (some exactly at the pitch limit), legs tucked."""
    s = np.concatenate([real[rng.integers(len(real), size=n // 3)], random_states(rng, n - n // 3)])
    fly = rng.random(len(s)) < 0.4
    s[fly, P.ROOTZ] = rng.choice([S.JUMP_HEIGHT, 0.2, 0.4, 0.6, 0.9], size=fly.sum())
    s[fly, P.ROOTY] = rng.choice([S.MAX_PITCH, -S.MAX_PITCH, 0.0, 0.5, 1.5], size=fly.sum())
    s[fly, P.JOINT_SLICE] = 0.0
    s[:, P.DX] = rng.uniform(-0.25, 0.25, len(s))
    return s


def random_rows(rng: np.random.Generator, real: np.ndarray, n: int) -> list[Row]:
    after = next_states(rng, real, n)
    before = real[rng.integers(len(real), size=n)]
    actions = rng.uniform(-1.0, 1.0, (n, P.ACTION_DIM))
    return [Row(TASKS[int(rng.integers(len(TASKS)))], before[i], actions[i], after[i], random_progress(rng))
            for i in range(n)]


def assert_same_outcomes(rows: list[Row]) -> tuple[np.ndarray, np.ndarray]:
    """``outcome_batch`` equals ``outcome`` row by row; returns per-row success and new progress."""
    success, progress = outcome_rows_agree(DOMAIN, rows, atol=1e-12)
    return success, np.array(progress)


def test_outcome_batch_matches_outcome_on_random_rows(env_states):
    rng = np.random.default_rng(2)
    rows = random_rows(rng, env_states, 1500)
    success, after = assert_same_outcomes(rows)
    families = np.array([r.task.family for r in rows])
    for family in S.FAMILIES:  # every family passes somewhere and fails somewhere
        ok = success[families == family]
        assert ok.any() and not ok.all(), family
    before = np.array([r.progress for r in rows])
    assert (after[:, S.P_JUMPS] > before[:, S.P_JUMPS]).any()  # flights counted
    assert ((before[:, S.P_IN_JUMP] == 1) & (after[:, S.P_IN_JUMP] == 0)).any()  # landings
    assert ((before[:, S.P_IN_JUMP] == 1) & (after[:, S.P_IN_JUMP] == 1)).any()  # flights go on
    assert (after[before[:, S.P_T] == S.HALF - 1, S.P_HALF] != before[before[:, S.P_T] == S.HALF - 1, S.P_HALF]).all()


def test_outcome_batch_matches_outcome_along_real_episodes(env_states):
    """Consecutive real states with the progress the episode carried, for every task."""
    rng = np.random.default_rng(3)
    rows = []
    for task in TASKS:
        progress = S.initial_progress()
        for i in range(len(env_states) - 1):
            row = Row(task, env_states[i], rng.uniform(-1, 1, P.ACTION_DIM), env_states[i + 1], progress)
            rows.append(row)
            progress = DOMAIN.outcome(*row).progress
    assert_same_outcomes(rows)


def test_outcome_batch_on_non_finite_rows_as_per_row(env_states):
    rng = np.random.default_rng(4)
    rows = random_rows(rng, env_states, 200)
    for k, row in enumerate(rows[:60]):
        bad = row.next_state.copy() if k % 2 else row.progress.copy()
        bad[int(rng.integers(len(bad)))] = rng.choice([np.nan, np.inf, -np.inf])
        rows[k] = row._replace(next_state=bad) if k % 2 else row._replace(progress=bad)
    with np.errstate(invalid="ignore"):
        assert_same_outcomes(rows)


def test_batch_checks_and_default_loop(env_states):
    rng = np.random.default_rng(5)
    rows = random_rows(rng, env_states, 50)
    batch = ([r.task for r in rows], np.array([r.state for r in rows]), np.array([r.action for r in rows]),
             np.array([r.next_state for r in rows]), [r.progress for r in rows])
    default, override = Domain.outcome_batch(DOMAIN, *batch), DOMAIN.outcome_batch(*batch)
    np.testing.assert_array_equal(default.success, override.success)
    np.testing.assert_allclose(default.reward, override.reward, rtol=0, atol=1e-12)
    tasks, states, actions, nexts, progress = batch
    with pytest.raises(ValueError, match=r"expected actions of shape \(50, 6\)"):
        DOMAIN.outcome_batch(tasks, states, actions[:, :5], nexts, progress)
    with pytest.raises(ValueError, match=r"expected progress of shape \(50, 6\), got \(50, 5\)"):
        DOMAIN.outcome_batch(tasks, states, actions, nexts, [p[:5] for p in progress])
    odd = Task("spin", family="spin", level="hard", params={}, instructions=("spin",))
    with pytest.raises(ValueError, match="Unknown HalfCheetah-v0 task family 'spin'"):
        DOMAIN.outcome_batch([odd] + tasks[1:], states, actions, nexts, progress)
    empty = DOMAIN.outcome_batch([], np.zeros((0, 18)), np.zeros((0, 6)), np.zeros((0, 18)), [])
    assert empty.success.shape == empty.reward.shape == (0,) and empty.progress == []


def test_speed_of_outcome_batch_on_jump_tasks(env_states):
    """Printed, not asserted: ``outcome_batch`` against the row loop on 4,096 jump-task rows."""
    rng = np.random.default_rng(6)
    jumps = [t for t in TASKS if t.family in S.JUMP_FAMILIES]
    rows = [r._replace(task=jumps[i % len(jumps)]) for i, r in enumerate(random_rows(rng, env_states, 4096))]
    batch = ([r.task for r in rows], np.array([r.state for r in rows]), np.array([r.action for r in rows]),
             np.array([r.next_state for r in rows]), [r.progress for r in rows])
    DOMAIN.outcome_batch(*batch)
    start = time.perf_counter()
    DOMAIN.outcome_batch(*batch)
    fast = time.perf_counter() - start
    start = time.perf_counter()
    Domain.outcome_batch(DOMAIN, *batch)
    slow = time.perf_counter() - start
    print(f"\nHalfCheetah outcome_batch on 4096 jump rows: {fast * 1e3:.1f} ms; "
          f"row loop {slow * 1e3:.1f} ms; {slow / fast:.0f}x")
