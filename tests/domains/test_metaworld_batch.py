"""MetaWorld-v0's array code gives the per-row answers: ``outcome_batch`` equals ``outcome`` and
``is_legal_batch`` equals ``is_legal`` row by row, and the array geometry equals the per-row
geometry.

Batches mix real expert transitions (when ``metaworld`` is installed), transitions scored
against other tasks, states placed on and around every task's success threshold (and each
composite task's stage latch), random states inside and outside the legal bounds, progress
records at every stage, and non-finite entries.  The success thresholds are compared with ``<=``
by the per-row code, so states built to sit *exactly* on them are the rows where an off-by-one
comparison or a different rounding would show.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable

import numpy as np
import pytest

from imaginebench.domains.base import Domain, Task
from imaginebench.domains.metaworld import layout as L
from imaginebench.domains.metaworld import success as S
from imaginebench.domains.metaworld.domain import (
    BOUND_TOLERANCE, GRIPPER_TOLERANCE, HAND_BOUNDS, QUAT_TOLERANCE, WORKSPACE_BOUNDS, MetaWorldDomain,
    legality_errors,
)
from imaginebench.domains.metaworld.tasks import rule_of, spec_of
from tests.domains.test_outcome_batch import Row, batch_of, cross_tasks, expert_rows, shuffled
from tests.domains.test_outcome_batch import each_task_decides_both_ways, legality_agrees, mixed_order_agrees
from tests.domains.test_outcome_batch import outcome_rows_agree

pytestmark = [pytest.mark.filterwarnings("ignore:Constant\\(s\\) may be too high:UserWarning"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]  # the per-row code on non-finite rows

DOMAIN = MetaWorldDomain()
"""Built directly: the registry's ``load_domain`` asks for ``metaworld``, which only the real rows need."""
LEVELS = ("train", "easy", "hard")
ALL_TASKS: tuple[Task, ...] = tuple(t for level in LEVELS for t in DOMAIN.tasks(level))
SCENES = tuple(L.SCENE_ENTITIES)
FACTORS = (0.0, 0.5, 1.0 - 1e-6, 1.0 - 1e-12, 1.0, 1.0 + 1e-12, 1.0 + 1e-6, 1.5, 3.0)
"""Multiples of a threshold a built state's thresholded value is placed at."""
STAGES = (0.0, 1.0)
ODD_STAGES = (0.5, 2.0, -1.0)


# ---------------------------------------------------------------------------- states
def about(axis: tuple[float, float, float], angle: float) -> np.ndarray:
    return L.axis_angle_quat(np.asarray(axis, dtype=float), angle)


def random_quat(rng: np.random.Generator) -> np.ndarray:
    """A hinge turn about x, y or z (as the scenes' parts turn) or any rotation."""
    if rng.random() < 0.6:
        return L.canonical_quat(about(tuple(np.eye(3)[rng.integers(3)]), rng.uniform(-math.pi, math.pi)))
    return L.canonical_quat(rng.normal(size=4))


def scene_state(rng: np.random.Generator, scene: str, spread: float = 0.0) -> np.ndarray:
    """A state of ``scene`` plus one distractor, positions in their boxes (widened by
    ``spread`` on each side), unit quaternions, any gripper opening (some at 0.4, where the
    tool centre's shift starts)."""
    s = np.zeros(L.STATE_DIM)
    lo, hi = WORKSPACE_BOUNDS
    s[L.HAND] = rng.uniform(HAND_BOUNDS[0] - spread, HAND_BOUNDS[1] + spread)
    s[L.GRIPPER] = rng.choice([rng.uniform(-spread, 1.0 + spread), 0.4, 0.0, 1.0])
    s[L.GOAL] = rng.uniform(lo - spread, hi + spread)
    entities = L.SCENE_ENTITIES[scene]
    others = [e for e in L.ENTITIES if e not in entities]
    for entity in (*entities, others[int(rng.integers(len(others)))]):
        s[L.slot_slice(entity)] = np.concatenate([rng.uniform(lo - spread, hi + spread), random_quat(rng)])
    return s


def task_scene_state(rng: np.random.Generator, task: Task) -> np.ndarray:
    return scene_state(rng, spec_of(task).scene)


def _set_slot_pos(s: np.ndarray, entity: str, position: np.ndarray) -> None:
    s[L.slot_slice(entity).start:L.slot_slice(entity).start + 3] = position


def _set_slot_quat(s: np.ndarray, entity: str, q: np.ndarray) -> None:
    start = L.slot_slice(entity).start + 3
    s[start:start + 4] = L.canonical_quat(q)


def unit_vector(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def lock_turn_for(shift: float, rng: np.random.Generator) -> float:
    """A lock angle about the door's y axis that puts ``lockStartUnlock`` at x = ``shift`` from the
    hinge (:func:`S.lock_unlock_shift`; x = 0.09 cos θ − 0.01 sin θ)."""
    x, z = S.LOCK_SITE_UNLOCK[0], S.LOCK_SITE_UNLOCK[2]
    radius, phase = math.hypot(x, z), math.atan2(-z, x)
    turn = math.acos(max(-1.0, min(1.0, shift / radius)))
    return (turn if rng.random() < 0.5 else -turn) - phase


def at_threshold(task: Task, s: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``s`` with the quantity ``task``'s success test (and, for composite tasks, its stage
    latch) compares placed at a random multiple (:data:`FACTORS`) of its threshold."""
    s = s.copy()
    rule, family = rule_of(task), task.family

    def factor() -> float:
        return float(rng.choice(FACTORS))

    def sign() -> float:
        return float(rng.choice([-1.0, 1.0]))

    goal = s[L.GOAL]  # a view: edits below move the goal
    if family == "reach":
        goal[:] = S.tcp(s) + unit_vector(rng) * rule["radius"] * factor()
    elif family == "place":
        goal[:] = L.pos(s, rule["slot"]) + unit_vector(rng) * rule["radius"] * factor()
    elif family == "button":
        goal[1] = L.pos(s, "button")[1] + sign() * rule["radius"] * factor()
    elif family == "coffee_button":
        goal[1] = L.pos(s, "coffee_button")[1] + sign() * rule["radius"] * factor()
    elif family == "door_lock":
        goal[2] = S.lock_site(s, S.LOCK_SITE_LOCK)[2] + sign() * rule["radius"] * factor()
    elif family == "door_unlock":
        goal[0] = S.lock_site(s, S.LOCK_SITE_UNLOCK)[0] + sign() * rule["radius"] * factor()
    elif family == "door_open":
        goal[0] = L.pos(s, "handle")[0] + sign() * rule["radius"] * factor()
    elif family == "door_close":
        goal[:] = L.pos(s, "handle") + unit_vector(rng) * rule["radius"] * factor()
    elif family in ("window_open", "window_close"):
        offset = S.WINDOW_OPEN_HANDLE if family == "window_open" else S.WINDOW_CLOSE_HANDLE
        goal[0] = S.window_handle(s, offset)[0] + sign() * rule["radius"] * factor()
    elif family in ("faucet_open", "faucet_close"):
        goal[:] = S.faucet_point(s, family == "faucet_open") + unit_vector(rng) * rule["radius"] * factor()
    elif family == "hammer":
        nail = L.pos(s, "nail")
        _set_slot_pos(s, "nail", [nail[0], S.NAIL_ZERO_Y + rule["depth"] * factor(), nail[2]])
    elif family == "make_coffee":
        _set_slot_pos(s, "task_object", S.mug_goal(s) + unit_vector(rng) * rule["mug_radius"] * factor())
        button = L.pos(s, "coffee_button")
        y = S.coffee_button_target(s)[1] + sign() * rule["button_radius"] * factor()
        _set_slot_pos(s, "coffee_button", [button[0], y, button[2]])
    elif family == "locked_door_open":
        leaf = about((0, 0, 1), sign() * S.DOOR_CLOSED_ANGLE * factor())
        shift = S.LOCK_UNLOCK_SHIFT - rule["lock_radius"] * float(rng.choice(FACTORS[2:]))
        _set_slot_quat(s, "handle", leaf)
        _set_slot_quat(s, "lock", L.quat_mul(leaf, about((0, 1, 0), lock_turn_for(shift, rng))))
        handle = L.pos(s, "handle")
        _set_slot_pos(s, "handle", [goal[0] + sign() * rule["door_radius"] * factor(), handle[1], handle[2]])
    else:
        raise AssertionError(f"no threshold builder for {family!r}")
    return s


def random_progress(rng: np.random.Generator) -> np.ndarray:
    stages = rng.choice(STAGES) if rng.random() < 0.9 else rng.choice(ODD_STAGES)
    return np.array([stages], dtype=np.float64)


def with_non_finite(row: Row, rng: np.random.Generator) -> Row:
    """``row`` with one entry of its state, next state or progress record NaN or ±inf (state
    entries among the hand, gripper, goal and the slots the task's scene fills)."""
    value = float(rng.choice([np.nan, np.inf, -np.inf]))
    where = int(rng.integers(3))
    if where == 2:
        return row._replace(progress=np.array([value]))
    columns = list(range(7)) + [c for e in L.SCENE_ENTITIES[spec_of(row.task).scene]
                                for c in range(L.slot_slice(e).start, L.slot_slice(e).stop)]
    s = (row.state if where == 0 else row.next_state).copy()
    s[int(rng.choice(columns))] = value
    return row._replace(state=s) if where == 0 else row._replace(next_state=s)


def action(rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, L.ACTION_DIM)


def built_rows(task: Task, rng: np.random.Generator, n: int = 120) -> list[Row]:
    """Transitions of ``task``: into states on its thresholds (from a state of its scene, from a
    threshold state, or standing still), between random states of any scene, in and out of the
    bounds, and with non-finite entries."""
    rows = []
    for _ in range(n):
        base = task_scene_state(rng, task)
        nxt = at_threshold(task, base, rng)
        kind = rng.random()
        before = nxt if kind < 0.15 else at_threshold(task, base, rng) if kind < 0.5 else base
        rows.append(Row(task, before, action(rng), nxt, random_progress(rng)))
    for _ in range(n // 4):
        rows.append(Row(task, scene_state(rng, SCENES[int(rng.integers(len(SCENES)))], spread=0.3), action(rng),
                        scene_state(rng, SCENES[int(rng.integers(len(SCENES)))], spread=0.3), random_progress(rng)))
    for _ in range(n // 10):  # anything: no scene, every slot full, far out of bounds
        rows.append(Row(task, rng.normal(0.0, 1.0, L.STATE_DIM), action(rng), rng.normal(0.0, 1.0, L.STATE_DIM),
                        random_progress(rng)))
    rows += [with_non_finite(rows[int(rng.integers(n))], rng) for _ in range(n // 6)]
    return rows


@pytest.fixture(scope="module", params=LEVELS)
def level_rows(request) -> tuple[str, list[Row]]:
    """Real transitions of the level: one expert episode per task (up to two seeds until one
    succeeds); empty without ``metaworld``."""
    if importlib.util.find_spec("metaworld") is None:
        return request.param, []
    domain, rows = expert_rows("MetaWorld-v0", request.param, tries=2)
    assert type(domain) is type(DOMAIN)
    return request.param, rows


# ---------------------------------------------------------------------------- comparisons
def assert_same_outcomes(rows: list[Row]) -> tuple[np.ndarray, np.ndarray]:
    """``outcome_batch`` equals ``outcome`` row by row (reward to 1e-12: a BLAS may sum a dot
    product in another order than the array code; where it does not,
    :func:`test_the_array_code_alone_is_exact_here` checks the rewards bit for bit); returns the
    per-row success and new progress records, each of shape (1,)."""
    success, progress = outcome_rows_agree(DOMAIN, rows, atol=1e-12)
    after = np.array(progress)
    assert after.shape == (len(rows), *(1,))
    return success, after


def assert_same_legality(states: np.ndarray) -> np.ndarray:
    return legality_agrees(DOMAIN, states)


# ---------------------------------------------------------------------------- geometry
def geometry_states(rng: np.random.Generator) -> np.ndarray:
    """States of every scene (some out of bounds) and normal noise (every slot full)."""
    return np.array([scene_state(rng, SCENES[i % len(SCENES)], spread=0.2) for i in range(600)]
                    + [rng.normal(0.0, 1.0, L.STATE_DIM) for _ in range(100)])


def geometry_pairs() -> list[tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]]:
    """(array function, per-row function) of every point and length the rules read."""
    return [
        (S.tcp_rows, S.tcp),
        (lambda a: S._local_point_rows(a, "lock", S.LOCK_SITE_LOCK), lambda s: S.lock_site(s, S.LOCK_SITE_LOCK)),
        (lambda a: S._local_point_rows(a, "lock", S.LOCK_SITE_UNLOCK),
         lambda s: S.lock_site(s, S.LOCK_SITE_UNLOCK)),
        (lambda a: S._local_point_rows(a, "window", S.WINDOW_OPEN_HANDLE),
         lambda s: S.window_handle(s, S.WINDOW_OPEN_HANDLE)),
        (lambda a: S._local_point_rows(a, "window", S.WINDOW_CLOSE_HANDLE),
         lambda s: S.window_handle(s, S.WINDOW_CLOSE_HANDLE)),
        (lambda a: S.faucet_point_rows(a, True), lambda s: S.faucet_point(s, True)),
        (lambda a: S.faucet_point_rows(a, False), lambda s: S.faucet_point(s, False)),
        (lambda a: S._local_point_rows(a, "hammer", S.HAMMER_HEAD_OFFSET),
         lambda s: L.local_point(s, "hammer", S.HAMMER_HEAD_OFFSET)),
        (S.lock_unlock_shift_rows, S.lock_unlock_shift),
        (lambda a: S._dist_rows(S.tcp_rows(a), a[:, L.GOAL]), lambda s: S._dist(S.tcp(s), L.goal(s))),
        (S.door_angle_rows, S.door_angle),
    ]


def test_array_geometry_equals_the_per_row_geometry():
    """The points the rules read, to rounding (bit for bit where the arithmetic allows:
    :func:`test_the_array_code_alone_is_exact_here`), on states of every scene, empty slots
    (zero quaternions) included."""
    rng = np.random.default_rng(0)
    states = geometry_states(rng)
    for rows_fn, row_fn in geometry_pairs():
        np.testing.assert_allclose(rows_fn(states), np.array([row_fn(s) for s in states]), rtol=0, atol=1e-12)
    assert (states[:, L.slot_slice("lock").start + 3] == 0).any()  # some locks empty: rotate's zero path
    angles = np.array([S.door_angle(s) for s in states])
    assert (np.abs(angles) < S.DOOR_CLOSED_ANGLE).any() and (np.abs(angles) > 1.0).any()


# ---------------------------------------------------------------------------- outcomes
def test_outcome_batch_matches_outcome_for_every_task(level_rows):
    """Every task of the level, batched alone: real transitions (its own expert episode and the
    level's other tasks' episodes scored against it) and built rows; each task succeeds on
    some rows and fails on others, and a composite task's latch both closes and stays open."""
    level, real = level_rows
    rng = np.random.default_rng(LEVELS.index(level))
    for task in DOMAIN.tasks(level):
        own = [r for r in real if r.task.name == task.name]
        scored_as = [r._replace(task=task) for r in cross_tasks(real, rng, 150)] if real else []
        rows = own + scored_as + built_rows(task, rng)
        success, after = assert_same_outcomes(rows)
        assert success.any() and not success.all(), task.name
        if real:
            assert own and DOMAIN.outcome(*own[-1]).success, task.name  # the episode's last step
        if task.family in S.STAGED_RULES:
            before = np.array([r.progress[0] for r in rows])
            assert ((before == 0) & (after[:, 0] == 1)).any(), task.name  # the latch closes...
            assert ((before == 0) & (after[:, 0] == 0)).any(), task.name  # ...or stays open
            assert (success & (before == 1)).any() and not (success & (before == 0) & (after[:, 0] == 0)).any()
        else:
            np.testing.assert_array_equal(after[:, 0], [r.progress[0] for r in rows])


def test_rows_on_the_thresholds_decide_as_per_row():
    """Success hinges on one comparison made at (or within 1e-12 of) its threshold: many rows
    per task, both sides present."""
    rng = np.random.default_rng(11)
    rows = []
    for task in ALL_TASKS:
        for _ in range(150):
            nxt = at_threshold(task, task_scene_state(rng, task), rng)
            rows.append(Row(task, nxt, action(rng), nxt, random_progress(rng)))
    success, _ = assert_same_outcomes(rows)
    each_task_decides_both_ways(rows, success, ALL_TASKS)


def test_mixed_task_batch_in_random_order(level_rows):
    """Rows of every task of every level in one shuffled batch: the grouping by task keeps each
    row's answer in its place (compared with the per-row answers and with the same rows
    batched in order)."""
    level, real = level_rows
    rng = np.random.default_rng(20 + LEVELS.index(level))
    rows = [r._replace(task=ALL_TASKS[int(rng.integers(len(ALL_TASKS)))]) for r in real]
    for task in ALL_TASKS:
        rows += built_rows(task, rng, n=24)
    mixed_order_agrees(DOMAIN, rows, rng, assert_same_outcomes)


def test_non_finite_rows_as_per_row():
    """NaN and ±inf in states, next states and progress records, for every task: the per-row
    code gives answers (some of them successes: ``max(0.0, nan)`` is 0.0), the batch the same."""
    rng = np.random.default_rng(30)
    rows = []
    for task in ALL_TASKS:
        for _ in range(40):
            base = task_scene_state(rng, task)
            rows.append(with_non_finite(Row(task, base, action(rng), at_threshold(task, base, rng),
                                            random_progress(rng)), rng))
    success, after = assert_same_outcomes(rows)
    assert success.any() and not success.all()
    assert np.isnan(after).any()  # NaN progress records pass through
    rewards = batch_of(DOMAIN, rows).reward
    assert not np.isfinite(rewards).all()


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    """Rewards and progress to 1e-12, as :func:`assert_same_outcomes` compares them: the array
    code and the row loop may sum a dot product in another order (bit for bit where they do
    not: :func:`test_the_array_code_alone_is_exact_here`)."""
    np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-12)


def test_default_loop_shape_checks_and_unknown_tasks():
    """The base class's row loop gives the same batch; bad shapes get its one-line
    ``ValueError``s; unknown tasks and families raise what the per-row code raises; empty
    batches work."""
    rng = np.random.default_rng(40)
    rows = shuffled([row for task in ALL_TASKS for row in built_rows(task, rng, n=12)], rng)[:60]
    n, d = len(rows), L.STATE_DIM
    tasks, states = [r.task for r in rows], np.array([r.state for r in rows])
    actions, nexts = np.array([r.action for r in rows]), np.array([r.next_state for r in rows])
    progress = [r.progress for r in rows]
    default = Domain.outcome_batch(DOMAIN, tasks, states, actions, nexts, progress)  # the per-row loop
    override = DOMAIN.outcome_batch(tasks, states, actions, nexts, progress)
    np.testing.assert_array_equal(default.success, override.success)
    assert_close(default.reward, override.reward)
    assert_close(np.array(default.progress), np.array(override.progress))
    # progress records as scalars (each reshapes to (1,), as per row)
    scalars = DOMAIN.outcome_batch(tasks, states, actions, nexts, [float(p[0]) for p in progress])
    assert_close(scalars.reward, override.reward)

    def error(*args) -> str:
        with pytest.raises(ValueError) as caught:
            DOMAIN.outcome_batch(*args)
        assert "\n" not in str(caught.value)
        return str(caught.value)

    assert f"expected states of shape ({n}, {d}), got ({n}, {d + 1})" in error(
        tasks, np.zeros((n, d + 1)), actions, nexts, progress)
    assert f"expected next_states of shape ({n}, {d}), got ({n - 1}, {d})" in error(
        tasks, states, actions, nexts[:-1], progress)
    assert f"expected actions of shape ({n}, 4), got ({n}, 3)" in error(tasks, states, actions[:, :3], nexts, progress)
    assert f"expected progress of length {n}, got {n - 1}" in error(tasks, states, actions, nexts, progress[:-1])
    assert f"expected progress of shape ({n}, 1), got ({n}, 2)" in error(
        tasks, states, actions, nexts, [np.zeros(2)] * n)
    with pytest.raises(ValueError, match=rf"expected states of shape \(N, {d}\), got \({d},\)"):
        DOMAIN.is_legal_batch(states[0])
    with pytest.raises(ValueError, match=rf"expected states of shape \(N, {d}\), got \({n}, {d - 1}\)"):
        DOMAIN.is_legal_batch(states[:, :-1])
    # unknown tasks: the batch raises what the per-row code raises
    for odd in (Task("make_tea", family="reach", level="hard", instructions=("make tea",)),
                Task("reach", family="juggle", level="train", instructions=("juggle",))):
        with pytest.raises(ValueError) as per_row:
            DOMAIN.outcome(odd, states[0], actions[0], nexts[0], progress[0])
        assert str(per_row.value) == error([odd] * n, states, actions, nexts, progress)
    empty = DOMAIN.outcome_batch([], np.zeros((0, d)), np.zeros((0, 4)), np.zeros((0, d)), [])
    assert empty.success.shape == empty.reward.shape == (0,) and empty.progress == []
    assert DOMAIN.is_legal_batch(np.zeros((0, d))).shape == (0,)


# ---------------------------------------------------------------------------- exactness
def arithmetic_differs() -> str | None:
    """Why numpy's arithmetic here may differ from the per-row code's in the last bit (the BLAS
    sums ``x @ y`` in another order, numpy's trigonometry is not libm's), or ``None``."""
    rng = np.random.default_rng(99)
    v = rng.normal(size=(4000, 4)) * rng.choice([1e-3, 1.0, 1e3], size=(4000, 1))
    for k in (3, 4):
        if not np.array_equal(S._dot_rows(v[:, :k], v[:, :k]), [x[:k] @ x[:k] for x in v]):
            return f"the BLAS sums {k}-vector dot products in another order"
    if not np.array_equal(S._dot_rows(v[:, 1:], S.DOOR_AXIS), [np.dot(x[1:], S.DOOR_AXIS) for x in v]):
        return "the BLAS sums dot products with an axis in another order"
    a, b = v[:, 0], v[:, 1]
    if not (np.array_equal(np.arctan2(a, b), [math.atan2(x, y) for x, y in zip(a, b)])
            and np.array_equal(np.sin(a), [math.sin(x) for x in a])
            and np.array_equal(np.cos(a), [math.cos(x) for x in a])):
        return "numpy's trigonometry differs from libm's"
    return None


def test_the_array_code_alone_is_exact_here(monkeypatch):
    """Where numpy's arithmetic is the per-row code's (the refinement's reason absent), the
    array code with the refinement switched off gives every answer bit for bit, rows exactly
    on the thresholds included: the per-row fallback hides no error of the array code."""
    why = arithmetic_differs()
    if why:
        pytest.skip(why)
    monkeypatch.setattr(S, "REFINE_TOLERANCE", -1.0)
    rng = np.random.default_rng(60)
    states = geometry_states(rng)
    for rows_fn, row_fn in geometry_pairs():
        np.testing.assert_array_equal(rows_fn(states), np.array([row_fn(s) for s in states]))
    rows = []
    for task in ALL_TASKS:
        for _ in range(60):
            nxt = at_threshold(task, task_scene_state(rng, task), rng)
            rows.append(Row(task, task_scene_state(rng, task), action(rng), nxt, random_progress(rng)))
        rows += built_rows(task, rng, n=30)
    want = [DOMAIN.outcome(*row) for row in rows]
    got = batch_of(DOMAIN, rows)
    np.testing.assert_array_equal(got.success, [w.success for w in want])
    np.testing.assert_array_equal(got.reward, [w.reward for w in want])  # NaN == NaN here
    np.testing.assert_array_equal(np.array(got.progress), np.array([w.progress for w in want]))
    legal = [scene_state(rng, SCENES[i % len(SCENES)]) for i in range(120)]
    variants = illegal_variants(legal, rng)
    assert_same_legality(np.array(legal + variants["quaternion norm"] + variants["occupied slots"]))


# ---------------------------------------------------------------------------- legality
def _with(s: np.ndarray, column: int, value: float) -> np.ndarray:
    out = s.copy()
    out[column] = value
    return out


def edge(rng: np.random.Generator, bound: float) -> float:
    """A value just inside, on or just outside ``bound``."""
    return bound + float(rng.choice([-1e-3, -1e-12, 0.0, 1e-12, 1e-3]))


def illegal_variants(base: list[np.ndarray], rng: np.random.Generator) -> dict[str, list[np.ndarray]]:
    """Copies of legal states with one check pushed to its edge, keyed by words of the reason
    :func:`legality_errors` gives."""
    tol, (lo, hi) = BOUND_TOLERANCE, WORKSPACE_BOUNDS
    out: dict[str, list[np.ndarray]] = {k: [] for k in (
        "hand", "gripper", "goal", "position", "quaternion norm", "occupied slots")}
    for s in base:
        k = int(rng.integers(3))
        side = int(rng.integers(2))
        hand_bound = HAND_BOUNDS[side][k] + (tol if side else -tol)
        out["hand"].append(_with(s, k, edge(rng, hand_bound)))
        out["gripper"].append(_with(s, L.GRIPPER, edge(rng, rng.choice([-GRIPPER_TOLERANCE,
                                                                         1 + GRIPPER_TOLERANCE]))))
        ws_bound = (hi[k] + tol) if side else (lo[k] - tol)
        out["goal"].append(_with(s, 4 + k, edge(rng, ws_bound)))
        occupied = [i for i, row in enumerate(L.slots(s)) if np.any(row != 0)]
        slot = L.SLOTS_START + L.SLOT_SIZE * occupied[int(rng.integers(len(occupied)))]
        out["position"].append(_with(s, slot + k, edge(rng, ws_bound)))
        scaled = s.copy()
        norm = rng.choice([1 - QUAT_TOLERANCE, 1 + QUAT_TOLERANCE]) + rng.choice([-1e-6, -1e-13, 0.0, 1e-13, 1e-6])
        scaled[slot + 3:slot + 7] *= norm
        out["quaternion norm"].append(scaled)
        empty = [i for i in range(L.N_SLOTS) if i not in occupied]
        extra = L.SLOTS_START + L.SLOT_SIZE * empty[int(rng.integers(len(empty)))]
        out["occupied slots"].append(_with(s, extra + int(rng.integers(7)),
                                           float(rng.choice([1e-3, -1e-3, 1.0001e-3, 0.5]))))
    return out


def test_is_legal_batch_matches_is_legal(level_rows):
    level, real = level_rows
    rng = np.random.default_rng(50 + LEVELS.index(level))
    legal = [r.next_state for r in real[::3]] + [scene_state(rng, SCENES[i % len(SCENES)]) for i in range(120)]
    variants = illegal_variants(legal[-120:], rng)
    for reason, states in variants.items():  # every check is hit, and fails some rows only
        errors = [" ".join(legality_errors(s)) for s in states]
        assert any(reason in e for e in errors), reason
        assert any(not e for e in errors), reason
    no_scene = [np.zeros(L.STATE_DIM)] + [s - np.concatenate([np.zeros(7), s[7:]]) * (rng.random(91) < 0.5)
                                          for s in legal[:20]]
    wild = [scene_state(rng, SCENES[i % len(SCENES)], spread=0.1) for i in range(200)]
    non_finite = [_with(s, int(rng.integers(L.STATE_DIM)), float(rng.choice([np.nan, np.inf, -np.inf])))
                  for s in legal[:30]]
    states = np.array(legal + [s for group in variants.values() for s in group] + no_scene + wild + non_finite)
    want = assert_same_legality(states)
    assert want[: len(legal)].all() and not want[-len(non_finite):].any()
    assert 0.2 < want.mean() < 0.9
    np.testing.assert_array_equal(Domain.is_legal_batch(DOMAIN, states), want)  # the base default loop
