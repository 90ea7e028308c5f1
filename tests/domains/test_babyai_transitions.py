"""BabyAI transition correctness by the paper's rule (agent moves more than two cells)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("minigrid")

import imaginebench
from imaginebench.data.collect import episode_seed, rollout
from imaginebench.domains.babyai import layout as L
from imaginebench.domains.babyai.transitions import (
    PAPER_MAX_AGENT_CELLS,
    paper_transition_ok,
    paper_transitions_ok,
)


@pytest.fixture(scope="module")
def expert_transitions() -> tuple[np.ndarray, np.ndarray]:
    states, next_states = [], []
    for level in ("train", "easy", "hard"):
        env = imaginebench.make("BabyAI-v0", level=level, encode_instruction=False).unwrapped
        for i, task in enumerate(env.tasks[:: max(1, len(env.tasks) // 10)]):
            ep = rollout(env, task, episode_seed(3, i))
            states.append(ep.states[:-1])
            next_states.append(ep.states[1:])
    return np.concatenate(states), np.concatenate(next_states)


def moved(state: np.ndarray, d_row: float, d_col: float) -> np.ndarray:
    ns = np.array(state, dtype=np.float64, copy=True)
    ns[L.AGENT_ROW] += d_row
    ns[L.AGENT_COL] += d_col
    return ns


def test_every_expert_transition_is_ok(expert_transitions):
    s, ns = expert_transitions
    assert len(s) > 50
    assert paper_transitions_ok(s, ns).all()
    assert all(paper_transition_ok(a, b) for a, b in zip(s[:40], ns[:40]))
    # the stricter physical bound holds for real transitions too
    assert paper_transitions_ok(s, ns, max_cells=1).all()


def test_teleports(expert_transitions):
    s = expert_transitions[0][0]
    assert not paper_transition_ok(s, moved(s, 3, 0))
    assert not paper_transition_ok(s, moved(s, 0, -3))
    assert not paper_transition_ok(s, moved(s, 2, 1))  # three cells, diagonal-ish
    assert paper_transition_ok(s, moved(s, 1, 1))  # two cells: tolerated by the paper's rule
    assert not paper_transition_ok(s, moved(s, 1, 1), max_cells=1)  # but not physically possible
    assert PAPER_MAX_AGENT_CELLS == 2


def test_non_finite_is_wrong(expert_transitions):
    s = expert_transitions[0][0]
    bad = s.copy()
    bad[0] = np.nan
    assert not paper_transition_ok(s, bad)
    assert not paper_transition_ok(bad, s)
    inf = s.copy()
    inf[L.AGENT_ROW] = np.inf
    assert not paper_transition_ok(s, inf)


def test_batch_matches_single(expert_transitions):
    s, ns = (a[:20].copy() for a in expert_transitions)
    ns[3] = moved(s[3], 0, 4)
    ns[5, 2] = np.nan
    batch = paper_transitions_ok(s, ns)
    assert batch.dtype == bool and batch.shape == (20,)
    assert batch.tolist() == [paper_transition_ok(a, b) for a, b in zip(s, ns)]
    assert not batch[3] and not batch[5] and batch.sum() == 18


def test_bad_shapes_raise():
    with pytest.raises(ValueError, match="17"):
        paper_transitions_ok(np.zeros((2, 16)), np.zeros((2, 16)))
    with pytest.raises(ValueError, match="differ"):
        paper_transitions_ok(np.zeros((2, 17)), np.zeros((3, 17)))
