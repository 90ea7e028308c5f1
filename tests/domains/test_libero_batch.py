"""LIBERO-v0's array code gives the per-row answers: ``outcome_batch`` equals ``outcome`` and
``is_legal_batch`` equals ``is_legal`` row by row, and the array geometry equals the per-row
geometry.

Batches mix real expert transitions (when ``libero`` and ``robosuite`` are installed),
transitions scored against other tasks, states placed on and around every task's success
threshold (and the in-basket and lift latches of the progress record), random states inside and
outside the legal bounds, progress records with latches closed, open and at their 0.5 edge, and
non-finite entries.  The per-row code compares with ``<=``, ``<``, ``>=`` and ``>``, so states
built to sit *exactly* on a threshold (or within 1e-12 of it) are the rows where a flipped
comparison or a different rounding would show.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable

import numpy as np
import pytest

from imaginebench.domains.base import Domain, Task
from imaginebench.domains.libero import layout as L
from imaginebench.domains.libero import success as S
from imaginebench.domains.libero.domain import (
    EEF_BOUNDS, FINGER_TOLERANCE, JOINT_LIMITS, JOINT_TOLERANCE, MAX_HEIGHT, MIN_HEIGHT, MIN_SEPARATION,
    QUAT_TOLERANCE, WORKSPACE_BOUNDS, LiberoDomain, legality_errors,
)
from tests.domains.test_outcome_batch import Row, batch_of, cross_tasks, shuffled
from tests.domains.test_outcome_batch import each_task_decides_both_ways, legality_agrees, mixed_order_agrees
from tests.domains.test_outcome_batch import outcome_rows_agree

pytestmark = [pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated:DeprecationWarning"),  # robosuite
              pytest.mark.filterwarnings("ignore::RuntimeWarning"),  # the per-row code on non-finite rows
              pytest.mark.xdist_group("libero-batch")]  # the module's simulator rows are made once, in one worker

DOMAIN = LiberoDomain()
"""Built directly: the env needs ``libero``/``robosuite``, which only the real rows need."""
LEVELS = ("train", "easy", "hard")
ALL_TASKS: tuple[Task, ...] = tuple(t for level in LEVELS for t in DOMAIN.tasks(level))
FACTORS = (0.0, 0.5, 1.0 - 1e-6, 1.0 - 1e-12, 1.0, 1.0 + 1e-12, 1.0 + 1e-6, 1.5, 3.0)
"""Multiples of a threshold a built state's thresholded value is placed at."""
LATCHES = (0.0, 1.0)
ODD_LATCHES = (0.5, float(np.nextafter(0.5, 0.0)), 2.0, -1.0)
"""Latch values on and beside the record's ``>= 0.5`` test, and out of range."""
REAL_EPISODES = ("basket_all", "aside_cheese")
"""The hard level's expert episodes the real rows come from: every object lifted, carried and put
in the basket in turn (every latch closes), and one set down aside.  One episode per task of
every level costs ~85 s here (a LIBERO env takes ~5 s to build and ~20 ms a step); these two
~15 s, and every task scores them (:func:`cross_tasks`)."""


# ---------------------------------------------------------------------------- states
def unit2(rng: np.random.Generator) -> np.ndarray:
    angle = rng.uniform(-math.pi, math.pi)
    return np.array([math.cos(angle), math.sin(angle)])


def unit3(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def random_quat(rng: np.random.Generator) -> np.ndarray:
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def factor(rng: np.random.Generator) -> float:
    return float(rng.choice(FACTORS))


def put(s: np.ndarray, entity: str, position) -> None:
    s[L.pos_slice(entity)] = position


def scene_state(rng: np.random.Generator, spread: float = 0.0) -> np.ndarray:
    """A state of the scene: joints in their ranges, the end effector in front of the robot, the
    basket in its start region and each object resting in its own, lying in the basket or lifted
    (the end effector at it); unit quaternions.  ``spread`` adds that much uniform noise to every
    position and joint (and scales quaternions by up to ``1 ± spread``)."""
    s = np.zeros(L.STATE_DIM)
    s[L.JOINTS] = rng.uniform(JOINT_LIMITS[:, 0], JOINT_LIMITS[:, 1])
    s[L.EEF_POS] = rng.uniform((-0.3, -0.4, 0.02), (0.3, 0.4, 0.5))
    s[L.EEF_QUAT] = random_quat(rng)
    s[L.GRIPPER] = (rng.uniform(0.0, L.FINGER_OPEN), -rng.uniform(0.0, L.FINGER_OPEN))
    (x0, x1), (y0, y1) = L.START_REGIONS["basket"]
    basket = np.array([rng.uniform(x0, x1), rng.uniform(y0, y1), L.REST_Z["basket"]])
    put(s, "basket", basket)
    s[L.quat_slice("basket")] = L.REST_QUAT["basket"]
    for obj in L.OBJECTS:
        (x0, x1), (y0, y1) = L.START_REGIONS[obj]
        where = rng.random()
        if where < 0.2:  # in the basket, resting on its floor
            p = basket + (*(unit2(rng) * rng.uniform(0.0, 0.05)), L.BASKET_FLOOR + L.HALF_HEIGHT[obj])
        else:
            p = np.array([rng.uniform(x0, x1), rng.uniform(y0, y1), L.REST_Z[obj]])
            if where < 0.45:  # lifted, the end effector at it
                p[2] += rng.uniform(0.0, 0.2)
                s[L.EEF_POS] = p + unit3(rng) * rng.uniform(0.0, 0.08)
        put(s, obj, p)
        s[L.quat_slice(obj)] = L.REST_QUAT[obj] if rng.random() < 0.6 else random_quat(rng)
    if spread:
        s[:L.GRIPPER.start] += rng.uniform(-spread, spread, L.GRIPPER.start)
        for entity in L.ENTITIES:
            s[L.pos_slice(entity)] += rng.uniform(-spread, spread, 3)
            s[L.quat_slice(entity)] *= 1.0 + rng.uniform(-spread, spread)
    return s


def legal_state(rng: np.random.Generator) -> np.ndarray:
    """A :func:`scene_state` that :func:`legality_errors` accepts (objects in the basket may overlap)."""
    while True:
        s = scene_state(rng)
        if not legality_errors(s):
            return s


def random_progress(rng: np.random.Generator, s0: np.ndarray) -> np.ndarray:
    """A record: the objects' start xy (``s0``'s, or moved a little), then random latches (some
    on or beside their 0.5 edge or out of range)."""
    start = np.concatenate([L.pos(s0, obj)[:2] for obj in L.OBJECTS])
    if rng.random() < 0.3:
        start = start + rng.uniform(-0.1, 0.1, start.shape)
    latches = [rng.choice(LATCHES) if rng.random() < 0.9 else rng.choice(ODD_LATCHES) for _ in range(6)]
    return np.concatenate([start, latches]).astype(np.float64)


def offset(rng: np.random.Generator, radius: float, dim: int, exact: bool) -> np.ndarray:
    """A random multiple (:data:`FACTORS`) of ``radius`` in a random direction (``dim`` 2 or 3);
    along ±x when ``exact``: from a centre whose x is 0.0 the distance is then the multiple
    itself, so rows land *exactly* on a threshold (factor 1), not just within rounding of it."""
    length = radius * factor(rng)
    if exact:
        out = np.zeros(dim)
        out[0] = length if rng.random() < 0.5 else -length
        return out
    return (unit2(rng) if dim == 2 else unit3(rng)) * length


def basket_edge(s: np.ndarray, obj: str, rng: np.random.Generator, exact: bool = False) -> None:
    """Put ``obj`` on the in-basket test's xy radius or on one of its height bounds (``exact``:
    the basket's x and z at 0.0, so the bound is met exactly)."""
    if exact:
        s[L.pos_slice("basket").start] = s[L.pos_slice("basket").start + 2] = 0.0
    b = L.pos(s, "basket")
    if rng.random() < 0.5:
        xy, dz = b[:2] + offset(rng, S.IN_BASKET_RADIUS, 2, exact), rng.uniform(0.0, 0.1)
    else:
        inside = np.zeros(2) if exact else unit2(rng) * rng.uniform(0.0, 0.07)
        xy, dz = b[:2] + inside, S.IN_BASKET_Z[int(rng.integers(2))] * factor(rng)
    put(s, obj, (xy[0], xy[1], b[2] + dz))


def rest_edge(s: np.ndarray, obj: str, rng: np.random.Generator) -> None:
    """Put ``obj``'s height on the resting test's bound (or anywhere below it)."""
    s[L.pos_slice(obj).start + 2] = L.REST_Z[obj] + S.REST_TOLERANCE * factor(rng)


def lift_edge(s: np.ndarray, obj: str, rng: np.random.Generator) -> None:
    """Put ``obj``'s height on the lift test's bound (``REST_Z + LIFT_HEIGHT`` exactly at factor 1)."""
    s[L.pos_slice(obj).start + 2] = L.REST_Z[obj] + S.LIFT_HEIGHT * factor(rng)


def around(s: np.ndarray, obj: str, centre: np.ndarray, radius: float, rng: np.random.Generator,
           exact: bool) -> None:
    """Put ``obj``'s xy at a random multiple of ``radius`` from ``centre`` (xy; its x is set to
    0.0 first when ``exact``: ``centre`` is a view into the state or the record)."""
    if exact:
        centre[0] = 0.0
    xy = centre[:2] + offset(rng, radius, 2, exact)
    s[L.pos_slice(obj).start:L.pos_slice(obj).start + 2] = xy


def at_threshold(task: Task, s: np.ndarray, progress: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``s`` with the quantities ``task``'s success test compares placed at random multiples
    (:data:`FACTORS`) of their thresholds, and (for any task: the record latches every object)
    some other object on the lift or in-basket edge.  A third of the time the distances are
    laid along x from a centre at x = 0.0, exactly on the threshold at factor 1; for *aside* the
    centre is the record's start xy, which is then changed in place."""
    s = s.copy()
    objects, family = task.params["objects"], task.family
    obj = objects[0]
    exact = rng.random() < 0.3
    if rng.random() < 0.5:
        other = L.OBJECTS[int(rng.integers(3))]
        if rng.random() < 0.5:
            lift_edge(s, other, rng)
        else:
            basket_edge(s, other, rng, exact)
    if family in ("reach", "pick"):
        if family == "pick":
            lift_edge(s, obj, rng)
        if exact:
            s[L.pos_slice(obj).start] = 0.0
        s[L.EEF_POS] = L.pos(s, obj) + offset(rng, S.REACH_RADIUS if family == "reach" else S.PICK_RADIUS, 3, exact)
    elif family in ("place", "pick_place"):
        basket_edge(s, obj, rng, exact)
    elif family in ("next_to", "aside", "out_of_basket"):
        if family == "next_to":
            around(s, obj, s[L.pos_slice(task.params["reference"])], S.NEXT_TO_RADIUS, rng, exact)
        elif family == "aside":
            i = L.OBJECTS.index(obj)
            around(s, obj, progress[2 * i:2 * i + 2], S.ASIDE_DISTANCE, rng, exact)
        else:
            around(s, obj, s[L.pos_slice("basket")], S.OUT_RADIUS, rng, exact)
        rest_edge(s, obj, rng)
        if family != "out_of_basket" and rng.random() < 0.2:  # the basket under it: not next to / aside
            put(s, "basket", L.pos(s, obj) - (0.0, 0.0, rng.uniform(0.0, 0.1)))
    elif family == "sequential":
        for o in objects:
            if rng.random() < 0.7:
                basket_edge(s, o, rng, exact)
    else:
        raise AssertionError(f"no threshold builder for {family!r}")
    return s


def with_non_finite(row: Row, rng: np.random.Generator) -> Row:
    """``row`` with one entry of its state, next state or progress record NaN or ±inf."""
    value = float(rng.choice([np.nan, np.inf, -np.inf]))
    where = int(rng.integers(3))
    if where == 2:
        p = row.progress.copy()
        p[int(rng.integers(S.PROGRESS_DIM))] = value
        return row._replace(progress=p)
    s = (row.state if where == 0 else row.next_state).copy()
    s[int(rng.integers(L.STATE_DIM))] = value
    return row._replace(state=s) if where == 0 else row._replace(next_state=s)


def action(rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, L.ACTION_DIM)


def built_rows(task: Task, rng: np.random.Generator, n: int = 120) -> list[Row]:
    """Transitions of ``task``: into states on its thresholds (from a scene state, from a
    threshold state, or standing still), between random states in and out of the bounds, and
    with non-finite entries."""
    rows = []
    for _ in range(n):
        base = scene_state(rng)
        progress = random_progress(rng, base)
        nxt = at_threshold(task, base, progress, rng)
        kind = rng.random()
        before = nxt if kind < 0.15 else at_threshold(task, base, progress, rng) if kind < 0.5 else base
        rows.append(Row(task, before, action(rng), nxt, progress))
    for _ in range(n // 4):
        base = scene_state(rng, spread=0.1)
        rows.append(Row(task, base, action(rng), scene_state(rng, spread=0.1), random_progress(rng, base)))
    for _ in range(n // 10):  # anything: far out of bounds
        base = rng.normal(0.0, 0.5, L.STATE_DIM)
        rows.append(Row(task, base, action(rng), rng.normal(0.0, 0.5, L.STATE_DIM), random_progress(rng, base)))
    rows += [with_non_finite(rows[int(rng.integers(n))], rng) for _ in range(n // 6)]
    return rows


def simulator_rows(level: str, names: tuple[str, ...]) -> list[Row]:
    """Every transition of one expert episode (seed 0) of each named task of ``level``."""
    import imaginebench

    env = imaginebench.make("LIBERO-v0", level=level, encode_instruction=False).unwrapped
    rows: list[Row] = []
    try:
        for name in names:
            _, info = env.reset(seed=0, options={"task": name})
            task, state, done = DOMAIN.task(name), info["state"], False
            progress = DOMAIN.initial_progress(task, state)
            while not done:
                act = env.expert_action()
                _, _, terminated, truncated, info = env.step(act)
                rows.append(Row(task, state, act, info["state"], progress))
                state, progress, done = info["state"], env.progress.copy(), terminated or truncated
    finally:
        env.close()
    return rows


@pytest.fixture(scope="module")
def real_rows() -> list[Row]:
    """Real transitions: the expert episodes of :data:`REAL_EPISODES`; empty without the simulator."""
    if importlib.util.find_spec("libero") is None or importlib.util.find_spec("robosuite") is None:
        return []
    return simulator_rows("hard", REAL_EPISODES)


# ---------------------------------------------------------------------------- comparisons
def assert_same_outcomes(rows: list[Row]) -> tuple[np.ndarray, np.ndarray]:
    """``outcome_batch`` equals ``outcome`` row by row (reward to 1e-12: a BLAS may sum a dot
    product in another order than the array code; where it does not,
    :func:`test_the_array_code_alone_is_exact_here` checks the rewards bit for bit); returns the
    per-row success and new progress records, each of shape (S.PROGRESS_DIM,)."""
    success, progress = outcome_rows_agree(DOMAIN, rows, atol=1e-12)
    after = np.array(progress)
    assert after.shape == (len(rows), *(S.PROGRESS_DIM,))
    return success, after


def assert_same_legality(states: np.ndarray) -> np.ndarray:
    return legality_agrees(DOMAIN, states)


def assert_latches_move(rows: list[Row], after: np.ndarray) -> None:
    """Every in-basket and lift latch of the record both closes and stays open in ``rows``."""
    before = np.array([r.progress for r in rows])
    for k in range(S.LATCH_START, S.PROGRESS_DIM):
        assert ((before[:, k] == 0) & (after[:, k] == 1)).any(), S.PROGRESS_LAYOUT[k]
        assert ((before[:, k] == 0) & (after[:, k] == 0)).any(), S.PROGRESS_LAYOUT[k]
    np.testing.assert_array_equal(after[:, :S.LATCH_START], before[:, :S.LATCH_START])  # start xy kept


# ---------------------------------------------------------------------------- geometry
def geometry_states(rng: np.random.Generator) -> np.ndarray:
    """Scene states (some near the basket and lift edges, some out of bounds) and normal noise."""
    states = []
    for i in range(600):
        s = scene_state(rng, spread=0.05 if i % 3 == 0 else 0.0)
        obj = L.OBJECTS[i % 3]
        (basket_edge if i % 2 else lift_edge)(s, obj, rng)
        states.append(s)
    return np.array(states + [rng.normal(0.0, 0.5, L.STATE_DIM) for _ in range(100)])


def geometry_pairs() -> list[tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], object]]]:
    """(array function, per-row function) of every length and test the rules read."""
    pairs: list[tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], object]]] = []
    for obj in L.OBJECTS:
        pairs += [
            (lambda a, o=obj: S.eef_distance_rows(a, o), lambda s, o=obj: S.eef_distance(s, o)),
            (lambda a, o=obj: S.in_basket_rows(a, o)[0], lambda s, o=obj: S.in_basket(s, o)),
            (lambda a, o=obj: S.lifted_rows(a, o), lambda s, o=obj: S.lifted(s, o)),
            (lambda a, o=obj: S.resting_rows(a, o), lambda s, o=obj: S.resting(s, o)),
            (lambda a, o=obj: S._to_basket_rows(a, o)[0], lambda s, o=obj: S._to_basket(s, o)),
            (lambda a, o=obj: S._approach_rows(a, o), lambda s, o=obj: S._approach(s, o)),
        ]
        for ref in (*L.OBJECTS, "basket"):
            if ref != obj:
                pairs.append((lambda a, o=obj, r=ref: S._xy_distance_rows(a[:, L.pos_slice(o)], a[:, L.pos_slice(r)]),
                              lambda s, o=obj, r=ref: L.xy_distance(L.pos(s, o), L.pos(s, r))))
    return pairs


def test_array_geometry_equals_the_per_row_geometry():
    """The lengths and tests the rules read, to rounding (bit for bit where the arithmetic
    allows: :func:`test_the_array_code_alone_is_exact_here`), and the advanced record exactly."""
    rng = np.random.default_rng(0)
    states = geometry_states(rng)
    for rows_fn, row_fn in geometry_pairs():
        np.testing.assert_allclose(rows_fn(states), np.array([row_fn(s) for s in states]), rtol=0, atol=1e-12)
    inside = np.array([S.in_basket(s, "cream_cheese") for s in states])
    assert inside.any() and not inside.all()
    progress = np.array([random_progress(rng, s) for s in states])
    advanced, _ = S.advance_progress_rows(progress, states)
    np.testing.assert_array_equal(advanced, [S.advance_progress(p, s) for p, s in zip(progress, states)])


# ---------------------------------------------------------------------------- outcomes
@pytest.mark.parametrize("level", LEVELS)
def test_outcome_batch_matches_outcome_for_every_task(real_rows, level):
    """Every task of the level, batched alone: real transitions (its own expert episode where it
    has one, and every real transition scored against it) and built rows; each task succeeds on
    some rows and fails on others, and every latch of the record both closes and stays open."""
    rng = np.random.default_rng(LEVELS.index(level))
    for task in DOMAIN.tasks(level):
        own = [r for r in real_rows if r.task.name == task.name]
        scored_as = [r._replace(task=task) for r in cross_tasks(real_rows, rng, 150)] if real_rows else []
        rows = own + scored_as + built_rows(task, rng)
        success, after = assert_same_outcomes(rows)
        assert success.any() and not success.all(), task.name
        if own:
            assert DOMAIN.outcome(*own[-1]).success, task.name  # the episode's last step
        finite = [i for i, r in enumerate(rows) if np.isfinite(r.progress).all()]
        assert_latches_move([rows[i] for i in finite], after[finite])


def test_real_rows_are_not_vacuous(real_rows):
    """The real episodes succeed, and every task of every level but those they do not act out
    (next to, aside of another object) scores some of their transitions as successes: the
    cross-task rows are not vacuous."""
    if not real_rows:
        pytest.skip("needs the LIBERO simulator (libero, robosuite)")
    names = [r.task.name for r in real_rows]
    assert set(names) == set(REAL_EPISODES)
    for name in REAL_EPISODES:
        last = max(i for i, n in enumerate(names) if n == name)
        assert DOMAIN.outcome(*real_rows[last]).success, name
    acted = [t for t in ALL_TASKS if t.family != "next_to" and (t.family != "aside" or t.name in REAL_EPISODES)]
    missed = [t.name for t in acted if not assert_same_outcomes([r._replace(task=t) for r in real_rows])[0].any()]
    assert not missed and len(acted) == 18, missed
    assert all(DOMAIN.is_legal_batch(np.array([r.next_state for r in real_rows])))


def test_rows_on_the_thresholds_decide_as_per_row():
    """Success hinges on comparisons made at (or within 1e-12 of) their thresholds: many rows
    per task, both sides present."""
    rng = np.random.default_rng(11)
    rows = []
    for task in ALL_TASKS:
        for _ in range(120):
            base = scene_state(rng)
            progress = random_progress(rng, base)
            nxt = at_threshold(task, base, progress, rng)
            rows.append(Row(task, nxt, action(rng), nxt, progress))
    success, _ = assert_same_outcomes(rows)
    each_task_decides_both_ways(rows, success, ALL_TASKS)


def test_mixed_task_batch_in_random_order(real_rows):
    """Rows of every task of every level in one shuffled batch: the grouping by task keeps each
    row's answer in its place (compared with the per-row answers and with the same rows
    batched in order)."""
    rng = np.random.default_rng(20)
    rows = [r._replace(task=ALL_TASKS[int(rng.integers(len(ALL_TASKS)))]) for r in real_rows[::2]]
    for task in ALL_TASKS:
        rows += built_rows(task, rng, n=24)
    mixed_order_agrees(DOMAIN, rows, rng, assert_same_outcomes)


def test_rows_off_the_thresholds_need_no_per_row_fallback(monkeypatch):
    """Random scene transitions of every task (none placed on a threshold) are scored by the
    array code alone: the per-row fallback is for the rare rows within 1e-9 of a threshold."""
    rng = np.random.default_rng(25)
    rows = [Row(task, scene_state(rng, spread=0.05), action(rng), scene_state(rng, spread=0.05),
                random_progress(rng, scene_state(rng))) for task in ALL_TASKS for _ in range(40)]
    want = [DOMAIN.outcome(*row) for row in rows]
    fallback: list[int] = []
    per_row = S.reward_terms
    monkeypatch.setattr(S, "reward_terms", lambda *args: (fallback.append(1), per_row(*args))[1])
    got = batch_of(DOMAIN, rows)
    assert not fallback
    np.testing.assert_array_equal(got.success, [w.success for w in want])
    np.testing.assert_array_equal(np.array(got.progress), np.array([w.progress for w in want]))
    assert got.success.any()


def test_non_finite_rows_as_per_row():
    """NaN and ±inf in states, next states and progress records, for every task: the per-row
    code gives answers (some of them successes: ``max(0.0, nan)`` is 0.0, a NaN latch stays
    open), the batch the same."""
    rng = np.random.default_rng(30)
    rows = []
    for task in ALL_TASKS:
        for _ in range(40):
            base = scene_state(rng)
            progress = random_progress(rng, base)
            rows.append(with_non_finite(Row(task, base, action(rng), at_threshold(task, base, progress, rng),
                                            progress), rng))
    success, after = assert_same_outcomes(rows)
    assert success.any() and not success.all()
    assert np.isnan(after).any() and np.isinf(after).any()  # non-finite records pass through
    rewards = batch_of(DOMAIN, rows).reward
    assert np.isnan(rewards).any() and np.isinf(rewards).any()


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    """Rewards and progress to 1e-12, as :func:`assert_same_outcomes` compares them: the array
    code and the row loop may sum a dot product in another order (bit for bit where they do
    not: :func:`test_the_array_code_alone_is_exact_here`)."""
    np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-12)


def test_default_loop_shape_checks_and_unknown_tasks():
    """The base class's row loop gives the same batch; bad shapes get its one-line
    ``ValueError``s; an unknown family raises what the per-row code raises, a task the domain
    does not list is scored from its family and parameters as per row; empty batches work."""
    rng = np.random.default_rng(40)
    rows = shuffled([row for task in ALL_TASKS for row in built_rows(task, rng, n=12)], rng)[:80]
    n, d, a = len(rows), L.STATE_DIM, L.ACTION_DIM
    tasks, states = [r.task for r in rows], np.array([r.state for r in rows])
    actions, nexts = np.array([r.action for r in rows]), np.array([r.next_state for r in rows])
    progress = [r.progress for r in rows]
    default = Domain.outcome_batch(DOMAIN, tasks, states, actions, nexts, progress)  # the per-row loop
    override = DOMAIN.outcome_batch(tasks, states, actions, nexts, progress)
    np.testing.assert_array_equal(default.success, override.success)
    assert_close(default.reward, override.reward)
    assert_close(np.array(default.progress), np.array(override.progress))
    # records as lists, and as (3, 4) arrays: each reshapes to (12,), as per row
    for odd in ([p.tolist() for p in progress], [p.reshape(3, 4) for p in progress]):
        assert_close(DOMAIN.outcome_batch(tasks, states, actions, nexts, odd).reward, override.reward)

    def error(*args) -> str:
        with pytest.raises(ValueError) as caught:
            DOMAIN.outcome_batch(*args)
        assert "\n" not in str(caught.value)
        return str(caught.value)

    assert f"expected states of shape ({n}, {d}), got ({n}, {d + 1})" in error(
        tasks, np.zeros((n, d + 1)), actions, nexts, progress)
    assert f"expected next_states of shape ({n}, {d}), got ({n - 1}, {d})" in error(
        tasks, states, actions, nexts[:-1], progress)
    assert f"expected actions of shape ({n}, {a}), got ({n}, 3)" in error(
        tasks, states, actions[:, :3], nexts, progress)
    assert f"expected progress of length {n}, got {n - 1}" in error(tasks, states, actions, nexts, progress[:-1])
    assert f"expected progress of shape ({n}, {S.PROGRESS_DIM}), got ({n}, 2)" in error(
        tasks, states, actions, nexts, [np.zeros(2)] * n)
    with pytest.raises(ValueError, match=rf"expected states of shape \(N, {d}\), got \({d},\)"):
        DOMAIN.is_legal_batch(states[0])
    with pytest.raises(ValueError, match=rf"expected states of shape \(N, {d}\), got \({n}, {d - 1}\)"):
        DOMAIN.is_legal_batch(states[:, :-1])
    # an unknown family: the batch raises what the per-row code raises
    juggle = Task("juggle", family="juggle", level="train", instructions=("juggle",),
                  params={"objects": ("cream_cheese",)})
    with pytest.raises(ValueError) as per_row:
        DOMAIN.outcome(juggle, states[0], actions[0], nexts[0], progress[0])
    assert str(per_row.value) == error([juggle] * n, states, actions, nexts, progress)
    # a task the domain does not list: the per-row code reads only its family and parameters
    unlisted = Task("fetch_cheese", family="pick", level="hard", instructions=("fetch the cheese",),
                    params={"objects": ("cream_cheese",)})
    assert_same_outcomes([r._replace(task=unlisted) for r in rows])
    empty = DOMAIN.outcome_batch([], np.zeros((0, d)), np.zeros((0, a)), np.zeros((0, d)), [])
    assert empty.success.shape == empty.reward.shape == (0,) and empty.progress == []
    assert DOMAIN.is_legal_batch(np.zeros((0, d))).shape == (0,)


# ---------------------------------------------------------------------------- exactness
def arithmetic_differs() -> str | None:
    """Why numpy's arithmetic here may differ from the per-row code's in the last bit (the BLAS
    sums ``x @ y`` in another order, ``hypot`` over arrays is not ``hypot`` of one element), or
    ``None``."""
    rng = np.random.default_rng(99)
    v = rng.normal(size=(4000, 4)) * rng.choice([1e-3, 1.0, 1e3], size=(4000, 1))
    for k in (3, 4):
        sequential = 0.0 + v[:, 0] * v[:, 0]  # written here, not taken from the code under test
        for j in range(1, k):
            sequential = sequential + v[:, j] * v[:, j]
        if not np.array_equal(sequential, [x[:k] @ x[:k] for x in v]):
            return f"the BLAS sums {k}-vector dot products in another order"
        if not np.array_equal(np.sqrt(sequential), [np.linalg.norm(x[:k]) for x in v]):
            return f"np.linalg.norm of a {k}-vector is not the square root of its dot product"
    if not np.array_equal(np.hypot(v[:, 0], v[:, 1]), [np.hypot(x, y) for x, y in v[:, :2]]):
        return "np.hypot over an array differs from np.hypot of one element"
    return None


def test_the_array_code_alone_is_exact_here(monkeypatch, real_rows):
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
    rows = [r._replace(task=ALL_TASKS[int(rng.integers(len(ALL_TASKS)))]) for r in real_rows[1::2]]
    for task in ALL_TASKS:
        for _ in range(60):
            base = scene_state(rng)
            progress = random_progress(rng, base)
            rows.append(Row(task, scene_state(rng), action(rng), at_threshold(task, base, progress, rng), progress))
        rows += built_rows(task, rng, n=30)
    want = [DOMAIN.outcome(*row) for row in rows]
    got = batch_of(DOMAIN, rows)
    np.testing.assert_array_equal(got.success, [w.success for w in want])
    np.testing.assert_array_equal(got.reward, [w.reward for w in want])  # NaN == NaN here
    np.testing.assert_array_equal(np.array(got.progress), np.array([w.progress for w in want]))
    legal = [legal_state(rng) for _ in range(120)]
    variants = illegal_variants(legal, rng)
    assert_same_legality(np.array(legal + [s for group in variants.values() for s in group]))


# ---------------------------------------------------------------------------- legality
def _with(s: np.ndarray, column: int, value: float) -> np.ndarray:
    out = s.copy()
    out[column] = value
    return out


def edge(rng: np.random.Generator, bound: float) -> float:
    """A value just inside, on or just outside ``bound``."""
    return bound + float(rng.choice([-1e-3, -1e-12, 0.0, 1e-12, 1e-3]))


def near_one(rng: np.random.Generator, tolerance: float) -> float:
    """A scale that puts a unit quaternion's norm on, or within 1e-13 or 1e-6 of, ``1 ± tolerance``."""
    return float(rng.choice([1 - tolerance, 1 + tolerance]) + rng.choice([-1e-6, -1e-13, 0.0, 1e-13, 1e-6]))


def illegal_variants(base: list[np.ndarray], rng: np.random.Generator) -> dict[str, list[np.ndarray]]:
    """Copies of legal states with one check pushed to its edge, keyed by words of the reason
    :func:`legality_errors` gives."""
    out: dict[str, list[np.ndarray]] = {k: [] for k in (
        "joint", "finger", "reachable box", "end-effector quaternion", "outside the workspace",
        "inside the floor", "quaternion norm", "overlap")}
    finger_bounds = ((L.GRIPPER.start, -FINGER_TOLERANCE), (L.GRIPPER.start, L.FINGER_OPEN + FINGER_TOLERANCE),
                     (L.GRIPPER.start + 1, -L.FINGER_OPEN - FINGER_TOLERANCE), (L.GRIPPER.start + 1, FINGER_TOLERANCE))
    for s in base:
        side = int(rng.integers(2))
        j = int(rng.integers(7))
        joint_bound = JOINT_LIMITS[j, side] + (JOINT_TOLERANCE if side else -JOINT_TOLERANCE)
        out["joint"].append(_with(s, j, edge(rng, joint_bound)))
        column, bound = finger_bounds[int(rng.integers(4))]
        out["finger"].append(_with(s, column, edge(rng, bound)))
        k = int(rng.integers(3))
        out["reachable box"].append(_with(s, L.EEF_POS.start + k, edge(rng, EEF_BOUNDS[side][k])))
        scaled = s.copy()
        scaled[L.EEF_QUAT] *= near_one(rng, QUAT_TOLERANCE)
        out["end-effector quaternion"].append(scaled)
        entity = L.ENTITIES[int(rng.integers(4))]
        start = L.pos_slice(entity).start
        if rng.random() < 0.7:
            k = int(rng.integers(2))
            out["outside the workspace"].append(_with(s, start + k, edge(rng, WORKSPACE_BOUNDS[side][k])))
        else:
            out["outside the workspace"].append(_with(s, start + 2, edge(rng, MAX_HEIGHT)))
        low = [e for e in L.ENTITIES if e == "basket" or not S.in_basket(s, e)]  # not onto a basket mate
        floor = low[int(rng.integers(len(low)))]
        out["inside the floor"].append(_with(s, L.pos_slice(floor).start + 2, edge(rng, MIN_HEIGHT[floor])))
        scaled = s.copy()
        scaled[L.quat_slice(entity)] *= near_one(rng, QUAT_TOLERANCE)
        out["quaternion norm"].append(scaled)
        a, b = rng.choice(L.OBJECTS, size=2, replace=False)
        close = s.copy()
        put(close, a, (*L.pos(s, a)[:2], L.REST_Z[a] + 0.1))  # both in the air: no other check fails
        put(close, b, L.pos(close, a) + unit3(rng) * MIN_SEPARATION * factor(rng))
        if L.pos(close, b)[2] >= MIN_HEIGHT[b]:
            out["overlap"].append(close)
    return out


def test_is_legal_batch_matches_is_legal(real_rows):
    """Every check pushed to its edge one at a time (each hit, each failing only some rows),
    real states, random states in and out of bounds and non-finite rows."""
    rng = np.random.default_rng(50)
    legal = [r.next_state for r in real_rows[::5]] + [legal_state(rng) for _ in range(150)]
    variants = illegal_variants(legal[-150:], rng)
    for reason, states in variants.items():  # every check is hit, and fails some rows only
        errors = [" ".join(legality_errors(s)) for s in states]
        assert any(reason in e for e in errors), reason
        assert any(not e for e in errors), reason
        assert all(reason in e for e in errors if e), reason  # nothing else broke
    wild = [scene_state(rng, spread=0.1) for _ in range(200)] + [rng.normal(0.0, 0.5, L.STATE_DIM) for _ in range(20)]
    non_finite = [_with(s, int(rng.integers(L.STATE_DIM)), float(rng.choice([np.nan, np.inf, -np.inf])))
                  for s in legal[:30]]
    states = np.array(legal + [s for group in variants.values() for s in group] + wild + non_finite)
    want = assert_same_legality(states)
    assert want[: len(legal)].all() and not want[-len(non_finite):].any()
    assert 0.2 < want.mean() < 0.9
    np.testing.assert_array_equal(Domain.is_legal_batch(DOMAIN, states), want)  # the base default loop
