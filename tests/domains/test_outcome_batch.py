"""``outcome_batch`` and ``is_legal_batch`` give exactly the per-row answers (CLEVR and BabyAI).

Batches mix real transitions (expert episodes of every task of a level, whose last steps
succeed), transitions scored against other tasks, perturbed and random states, states on
the success thresholds, and illegal, non-integer and non-finite states.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import pytest

import imaginebench
from imaginebench.domains.base import Domain, Task

LEVELS = ("train", "easy", "hard")
COLOURS_CLEVR = ("red", "blue", "green", "purple", "cyan")
"""CLEVR ball order in the state (``clevr.physics.COLOURS``, which needs mujoco to import)."""


class Row(NamedTuple):
    task: Task
    state: np.ndarray
    action: Any
    next_state: np.ndarray
    progress: np.ndarray


def expert_rows(env_id: str, level: str, tries: int = 3) -> tuple[Domain, list[Row]]:
    """Every transition of one expert episode per task of ``level`` (up to ``tries`` seeds
    per task until one succeeds)."""
    env = imaginebench.make(env_id, level=level, encode_instruction=False).unwrapped
    domain = env.domain
    rows: list[Row] = []
    for i, name in enumerate(env.tasks):
        for attempt in range(tries):
            _, info = env.reset(seed=100 * i + attempt, options={"task": name})
            task, state, episode = domain.task(name), info["state"], []
            progress, done = domain.initial_progress(task, state), False
            while not done:
                action = env.expert_action()
                _, _, terminated, truncated, info = env.step(action)
                episode.append(Row(task, state, action, info["state"], progress))
                state, progress, done = info["state"], env.progress.copy(), terminated or truncated
            rows += episode
            if info["is_success"]:
                break
    return domain, rows


def cross_tasks(rows: list[Row], rng: np.random.Generator, n: int) -> list[Row]:
    """Real transitions scored against tasks of other rows of the level."""
    picks = rng.integers(len(rows), size=(n, 2))
    return [rows[i]._replace(task=rows[j].task) for i, j in picks]


def batch_of(domain: Domain, rows: list[Row]):
    return domain.outcome_batch(
        [r.task for r in rows],
        np.array([r.state for r in rows]).reshape(len(rows), domain.state_dim),
        np.array([r.action for r in rows]),
        np.array([r.next_state for r in rows]).reshape(len(rows), domain.state_dim),
        [r.progress for r in rows],
    )


def without_raising_rows(domain: Domain, rows: list[Row]) -> list[Row]:
    """The rows ``outcome`` scores; each row it raises on must raise the same in a batch."""
    kept = []
    for row in rows:
        try:
            domain.outcome(*row)
        except (ValueError, IndexError, OverflowError) as error:
            with pytest.raises(type(error)):
                batch_of(domain, [row])
        else:
            kept.append(row)
    return kept


def outcome_rows_agree(domain: Domain, rows: list[Row], atol: float = 1e-9) -> tuple[np.ndarray, list[np.ndarray]]:
    """``outcome_batch`` equals ``outcome`` row by row (success and progress exactly, reward to
    ``atol``); returns the per-row success and new progress records."""
    want = [domain.outcome(*row) for row in rows]
    got = batch_of(domain, rows)
    success = np.array([w.success for w in want], dtype=bool)
    assert got.success.dtype == bool and got.success.shape == (len(rows),)
    assert got.reward.dtype == np.float64 and got.reward.shape == (len(rows),)
    np.testing.assert_array_equal(got.success, success)
    np.testing.assert_allclose(got.reward, [w.reward for w in want], rtol=0, atol=atol, equal_nan=True)
    assert len(got.progress) == len(rows)
    for g, w in zip(got.progress, want):
        assert g.dtype == np.float64
        np.testing.assert_array_equal(g, w.progress)
    return success, list(got.progress)


def legality_agrees(domain: Domain, states: np.ndarray) -> np.ndarray:
    """``is_legal_batch`` equals ``is_legal`` row by row; returns the per-row answers."""
    want = np.array([domain.is_legal(s) for s in states], dtype=bool)
    got = domain.is_legal_batch(states)
    assert got.dtype == bool and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    return want


def assert_same_outcomes(domain: Domain, rows: list[Row]) -> np.ndarray:
    """``outcome_batch`` equals ``outcome`` row by row; returns the per-row success."""
    return outcome_rows_agree(domain, rows)[0]


def assert_same_legality(domain: Domain, states: np.ndarray) -> np.ndarray:
    want = legality_agrees(domain, states)
    np.testing.assert_array_equal(Domain.is_legal_batch(domain, states), want)  # the default loop
    assert want.any() and not want.all()
    return want


def assert_successes_per_family(domain: Domain, rows: list[Row], success: np.ndarray) -> None:
    """Every family of the batch succeeds somewhere and fails somewhere (no vacuous pass)."""
    families = np.array([r.task.family for r in rows])
    for family in set(families):
        ok = success[families == family]
        assert ok.any() and not ok.all(), (domain.env_id, family, ok.sum(), ok.size)


def shuffled(rows: list[Row], rng: np.random.Generator) -> list[Row]:
    return [rows[i] for i in rng.permutation(len(rows))]


def each_task_decides_both_ways(rows: list[Row], success: np.ndarray, tasks) -> None:
    """Every task of ``tasks`` succeeds on some of its rows and fails on others (no vacuous pass)."""
    for task in tasks:
        mine = success[[r.task.name == task.name for r in rows]]
        assert mine.any() and not mine.all(), task.name


def mixed_order_agrees(domain: Domain, rows: list[Row], rng: np.random.Generator, same_outcomes) -> None:
    """``rows`` shuffled into one batch: ``same_outcomes`` (the per-row comparison, returning success
    and progress) holds, and each answer equals the same row's answer in the in-order batch."""
    order = rng.permutation(len(rows))
    mixed = [rows[i] for i in order]
    success, after = same_outcomes(mixed)
    assert len({r.task.name for r in mixed[:50]}) > 10  # really interleaved
    in_order = batch_of(domain, rows)
    np.testing.assert_array_equal(success, in_order.success[order])
    np.testing.assert_array_equal(after, np.array(in_order.progress)[order])


# ---------------------------------------------------------------------------- CLEVR
CLEVR_X, CLEVR_Y = (-0.6, 0.6), (-0.4, 0.67)


def clevr_random_state(rng: np.random.Generator) -> np.ndarray:
    return np.stack([rng.uniform(*CLEVR_X, 5), rng.uniform(*CLEVR_Y, 5)], axis=1).reshape(-1)


def threshold_pair(task: Task, rng: np.random.Generator) -> tuple[int, int]:
    """Two balls whose relative position ``task``'s success test reads: (moved ball, reference)."""
    colour = COLOURS_CLEVR.index
    params = task.params
    if task.family in ("relation", "sequential_move"):
        ball, _, anchor = params["goals"][int(rng.integers(len(params["goals"])))]
        return colour(ball), colour(anchor)
    if task.family == "one_step_move":
        return colour(params["ball"]), colour(params["ball"])
    if task.family == "make_line":
        k = int(rng.integers(4))
        return colour(params["order"][k + 1]), colour(params["order"][k])
    if task.family == "make_circle":
        centre = colour(params["centre"])
        return int(rng.choice([i for i in range(5) if i != centre])), centre
    i, j = rng.choice(5, size=2, replace=False)
    return int(i), int(j)


def on_threshold(row: Row, rng: np.random.Generator) -> Row:
    """``row`` with the next state's ball placed from its reference (another ball, or for a
    one-step move the same ball at the episode start) at a threshold length and a multiple of
    7.5 degrees: the relation, move, line and circle success tests sit on such boundaries."""
    i, j = threshold_pair(row.task, rng)
    origin = row.progress if row.task.family == "one_step_move" else row.next_state
    p = row.next_state.reshape(5, 2).copy()
    r = rng.choice([0.05, 0.1, 0.15, 0.3, 0.39, 0.2])
    angle = math.radians(7.5 * int(rng.integers(-24, 24)))
    p[i] = origin.reshape(5, 2)[j] + r * np.array([math.cos(angle), math.sin(angle)])
    return row._replace(next_state=p.reshape(-1))


def clevr_variants(rows: list[Row], rng: np.random.Generator) -> list[Row]:
    out: list[Row] = []
    for row in rows:
        out.append(row._replace(state=row.state + rng.normal(0.0, 0.03, 10),
                                next_state=row.next_state + rng.normal(0.0, 0.03, 10)))
        out += [on_threshold(row, rng), on_threshold(row, rng)]
        out.append(row._replace(state=clevr_random_state(rng), next_state=clevr_random_state(rng),
                                progress=clevr_random_state(rng)))
    for row in rows[:: max(1, len(rows) // 40)]:  # a few non-finite states
        bad = row.next_state.copy()
        bad[rng.integers(10)] = rng.choice([np.nan, np.inf, -np.inf])
        out.append(row._replace(next_state=bad))
    return out


def unit(degrees: float) -> np.ndarray:
    return np.array([math.cos(math.radians(degrees)), math.sin(math.radians(degrees))])


def test_clevr_success_exactly_on_thresholds():
    """Rows whose success hinges on one comparison made exactly at its threshold, where
    numpy's SIMD ``arctan2``/``hypot`` and ``math`` can disagree in the last bit."""
    pytest.importorskip("mujoco")
    from imaginebench.domains.clevr.domain import ClevrDomain
    from imaginebench.domains.clevr.success import RELATION_ANGLES

    domain, rng, rows = ClevrDomain(), np.random.default_rng(5), []
    colour = {c: i for i, c in enumerate(COLOURS_CLEVR)}
    for _ in range(1500):
        # one-step move: a displacement of length 0.05 or at 67.5 degrees from the direction
        task = domain.tasks("easy")[int(rng.integers(20))]
        start = clevr_random_state(rng)
        i = colour[task.params["ball"]]
        heading = math.degrees(RELATION_ANGLES[task.params["direction"]]) + 7.5 * int(rng.integers(-12, 13))
        nxt = start.copy()
        nxt[2 * i : 2 * i + 2] += rng.choice([0.05, 0.1]) * unit(heading)
        rows.append(Row(task, start, 0, nxt, start))
        # make-line: one gap at exactly 30 degrees, the others flat
        line = domain.task("make_line")
        p = np.zeros((5, 2))
        p[0] = (rng.uniform(-0.5, -0.4), rng.uniform(-0.2, 0.4))
        tilted = int(rng.integers(4))
        for k in range(4):
            angle = rng.choice([-30.0, 30.0]) if k == tilted else 7.5 * int(rng.integers(-3, 4))
            p[k + 1] = p[k] + rng.choice([0.1, 0.15, 0.2]) * unit(angle)
        state = p[[colour[c] for c in line.params["order"]]].reshape(-1)
        rows.append(Row(line, start, 0, state, start))
        # relation: the ball at exactly 45 degrees off the direction, or exactly 0.39 away
        task = domain.tasks("train")[int(rng.integers(80))]
        ball, direction, anchor = task.params["goals"][0]
        heading = math.degrees(RELATION_ANGLES[direction]) + rng.choice([-45.0, 45.0, 0.0])
        nxt = start.copy()
        nxt[2 * colour[ball] : 2 * colour[ball] + 2] = (
            start[2 * colour[anchor] : 2 * colour[anchor] + 2] + rng.choice([0.2, 0.39]) * unit(heading)
        )
        rows.append(Row(task, start, 0, nxt, start))
    success = assert_same_outcomes(domain, rows)
    assert success.any() and not success.all()


@pytest.fixture(scope="module", params=LEVELS)
def clevr_level(request) -> tuple[Domain, list[Row]]:
    pytest.importorskip("mujoco")
    return expert_rows("CLEVR-v0", request.param)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the per-row code on NaN states
def test_clevr_outcome_batch_matches_outcome(clevr_level):
    domain, real = clevr_level
    rng = np.random.default_rng(0)
    rows = shuffled(real + cross_tasks(real, rng, len(real)) + clevr_variants(real, rng), rng)
    success = assert_same_outcomes(domain, rows)
    assert_successes_per_family(domain, rows, success)
    assert success.sum() >= len({r.task.name for r in real}) // 2


def test_clevr_is_legal_batch_matches_is_legal(clevr_level):
    domain, real = clevr_level
    rng = np.random.default_rng(1)
    states = [r.next_state for r in real]
    states += [s + rng.normal(0.0, 0.05, 10) for s in states]
    states += [clevr_random_state(rng) for _ in range(200)]
    touching = np.array([0.0, 0.0, 0.1, 0.0, -0.45, 0.5, 0.45, 0.5, 0.45, -0.25])
    states += [touching, touching + [0.0, 0.0, -0.0101, 0, 0, 0, 0, 0, 0, 0], touching + [0.51, 0, *[0] * 8]]
    for k, value in enumerate([np.nan, np.inf, -np.inf] * 3):
        bad = states[k].copy()
        bad[k] = value
        states.append(bad)
    assert_same_legality(domain, np.array(states))


# ---------------------------------------------------------------------------- BabyAI
def babyai_variants(rows: list[Row], rng: np.random.Generator) -> list[Row]:
    out: list[Row] = []
    for row in rows:
        s, ns = row.state.copy(), row.next_state.copy()
        for a in (s, ns):  # one or two entries nudged or replaced
            for i in rng.choice(17, size=int(rng.integers(1, 3)), replace=False):
                a[i] = a[i] + rng.choice([-1, 1]) if rng.random() < 0.5 else rng.integers(-1, 9)
        flags = rng.integers(0, 2, size=2)
        out.append(row._replace(state=s, next_state=ns,
                                progress=np.array([rng.integers(0, 128), *flags], dtype=np.float64)))
        out.append(row._replace(progress=np.array([row.progress[0], *flags], dtype=np.float64)))
    for row in rows[:: max(1, len(rows) // 60)]:  # non-integer and huge entries
        odd = row.next_state.copy()
        odd[rng.integers(17)] += rng.choice([0.5, -0.75, 1e12, -1e12, 2.0**31])
        out.append(row._replace(next_state=odd))
    for _ in range(len(rows) // 4):  # random integer states, mostly illegal, some off the grid
        s, ns = rng.integers(-2, 10, size=(2, 17)).astype(np.float64)
        out.append(rows[int(rng.integers(len(rows)))]._replace(state=s, next_state=ns))
    return out


@pytest.fixture(scope="module", params=LEVELS)
def babyai_level(request) -> tuple[Domain, list[Row]]:
    pytest.importorskip("minigrid")
    return expert_rows("BabyAI-v0", request.param, tries=1)


def test_babyai_outcome_batch_matches_outcome(babyai_level):
    domain, real = babyai_level
    rng = np.random.default_rng(2)
    rows = shuffled(real + cross_tasks(real, rng, len(real)) + babyai_variants(real, rng), rng)
    rows = without_raising_rows(domain, rows)  # huge entries can send the per-row line/pile code off its table
    success = assert_same_outcomes(domain, rows)
    assert_successes_per_family(domain, rows, success)
    assert success.sum() >= len({r.task.name for r in real})  # every expert episode's last step


def test_babyai_non_finite_rows_behave_as_per_row(babyai_level):
    """A non-finite entry: the batch gives the per-row answer, or raises where it raises."""
    domain, real = babyai_level
    rng = np.random.default_rng(3)
    rows = []
    for row in real[:: max(1, len(real) // 30)]:
        bad = row.next_state.copy()
        bad[rng.integers(17)] = rng.choice([np.nan, np.inf])
        rows.append(row._replace(next_state=bad))
    kept = without_raising_rows(domain, rows)
    assert 0 < len(kept) < len(rows)
    assert_same_outcomes(domain, kept)


def test_babyai_is_legal_batch_matches_is_legal(babyai_level):
    domain, real = babyai_level
    rng = np.random.default_rng(4)
    states = [r.next_state for r in real]
    nudged = []
    for s in states:
        s = s.copy()
        s[rng.integers(17)] += rng.choice([-1.0, 1.0, 0.5, 1e12])
        nudged.append(s)
    states += nudged + list(rng.integers(-2, 10, size=(300, 17)).astype(np.float64))
    for k, value in enumerate([np.nan, np.inf, -np.inf] * 3):
        bad = states[k].copy()
        bad[k] = value
        states.append(bad)
    assert_same_legality(domain, np.array(states))


# ---------------------------------------------------------------------------- shared
@pytest.mark.parametrize("env_id", ["CLEVR-v0", "BabyAI-v0"])
def test_default_loop_and_shape_checks(env_id):
    pytest.importorskip("mujoco" if env_id == "CLEVR-v0" else "minigrid")
    domain, rows = expert_rows(env_id, "hard", tries=1)
    rows = rows[:40]
    batch = ([r.task for r in rows], np.array([r.state for r in rows]), np.array([r.action for r in rows]),
             np.array([r.next_state for r in rows]), [r.progress for r in rows])
    default, override = Domain.outcome_batch(domain, *batch), domain.outcome_batch(*batch)
    np.testing.assert_array_equal(default.success, override.success)
    np.testing.assert_allclose(default.reward, override.reward, rtol=0, atol=1e-9)

    tasks, states, actions, next_states, progress = batch
    d = domain.state_dim
    with pytest.raises(ValueError, match=rf"expected states of shape \(40, {d}\), got \(40, {d + 1}\)"):
        domain.outcome_batch(tasks, np.zeros((40, d + 1)), actions, next_states, progress)
    with pytest.raises(ValueError, match=r"expected next_states of shape \(40, \d+\), got \(39, \d+\)"):
        domain.outcome_batch(tasks, states, actions, next_states[:39], progress)
    with pytest.raises(ValueError, match=r"expected actions of shape \(40,\), got \(40, 2\)"):
        domain.outcome_batch(tasks, states, np.zeros((40, 2), dtype=int), next_states, progress)
    with pytest.raises(ValueError, match=r"expected progress"):
        domain.outcome_batch(tasks, states, actions, next_states, progress[:39])
    with pytest.raises(ValueError, match=rf"expected states of shape \(N, {d}\), got \({d},\)"):
        domain.is_legal_batch(states[0])
    with pytest.raises(ValueError, match=r"expected states of shape"):
        Domain.is_legal_batch(domain, states[:, :-1])

    empty = domain.outcome_batch([], np.zeros((0, d)), np.zeros(0, dtype=int), np.zeros((0, d)), [])
    assert empty.success.shape == empty.reward.shape == (0,) and empty.progress == []
    assert domain.is_legal_batch(np.zeros((0, d))).shape == (0,)
