"""Scripted expert of CLEVR-Robot: greedy pushes toward the goal, with look-ahead on a stall.

The expert predicts the outcome of each candidate push with its own copy of the simulator
(:meth:`Physics.free_pushes`, exact and analytic when the pushed ball's path is clear;
:meth:`Physics.push` otherwise) and scores each predicted state by a *planning cost*
(:func:`planning_cost`): the task distance of :mod:`~imaginebench.domains.clevr.success`,
except for make-line, where it is the distance of the balls to evenly spaced slots (the
line's task distance has plateaus where two neighbours must swap places).

State slices it reads: ``positions(state)`` — the (x, y) of every ball (``state[2i:2i+2]``
for ball ``i`` in colour order) — of the current state and of the episode's first state
(one-step moves measure the displacement from it; make-line takes its slot height from it).
Candidate pushes move only the balls the task names (:func:`task_balls`).

Phases, tried in order at every step:

1. ``finish``    — a push whose predicted next state succeeds;
2. ``greedy``    — the push that lowers the planning cost most (by at least ``MIN_GAIN``);
3. ``lookahead`` — the first push of the best two-push sequence, if that sequence lowers the
   cost; second pushes are searched for the ``LOOKAHEAD_WIDTH`` best first pushes;
4. ``shake``     — a random push of a named ball, to leave a local minimum.

Ties are broken with the caller's random generator, so a seeded episode is reproducible.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from imaginebench.domains.clevr.physics import (
    N_BALLS,
    N_DIRECTIONS,
    TABLE_X,
    TABLE_Y,
    Physics,
    encode_action,
    positions,
)
from imaginebench.domains.clevr.success import BALL_INDEX, task_distance, task_success

MIN_GAIN = 1e-4
"""Smallest cost decrease the greedy phase counts as progress."""
LOOKAHEAD_WIDTH = 12
"""First pushes (the best by one-step cost) extended by a second push in the look-ahead."""
LINE_SLOT_INSET = 0.1
"""make-line slots keep this far from the walls (slots are then 0.2 apart in x)."""
TIE = 1e-9
"""Costs this close count as a tie."""
PHASES = ("finish", "greedy", "lookahead", "shake")


def task_balls(family: str, params: Mapping[str, Any]) -> tuple[int, ...]:
    """Indices of the balls the expert may push for a task."""
    if family in ("relation", "sequential_move"):
        named = {c for goal in params["goals"] for c in (goal[0], goal[2])}
        return tuple(sorted(BALL_INDEX[c] for c in named))
    if family == "one_step_move":
        return (BALL_INDEX[params["ball"]],)
    return tuple(range(N_BALLS))


def line_slots(order: tuple[str, ...], start: np.ndarray) -> np.ndarray:
    """make-line targets, ``(5, 2)`` by ball: ``order`` evenly spread left to right at the
    median height of the episode's first state (0.2 apart, so 30 degrees allow 0.115 of
    height difference between neighbours)."""
    lo, hi = TABLE_Y[0] + LINE_SLOT_INSET, TABLE_Y[1] - LINE_SLOT_INSET
    y = float(np.clip(np.median(positions(start)[:, 1]), lo, hi))
    xs = np.linspace(TABLE_X[0] + LINE_SLOT_INSET, TABLE_X[1] - LINE_SLOT_INSET, len(order))
    slots = np.zeros((N_BALLS, 2))
    for x, colour in zip(xs, order):
        slots[BALL_INDEX[colour]] = (x, y)
    return slots


def planning_cost(family: str, params: Mapping[str, Any], state: np.ndarray, start: np.ndarray) -> float:
    """What the expert minimises: -1 on success, else the task distance (make-line: the
    summed distance of the balls to their :func:`line_slots`)."""
    d = task_distance(family, params, state, start)
    if d <= 0.0 and task_success(family, params, state, start):  # success implies d == 0
        return -1.0
    if family == "make_line":
        return float(np.linalg.norm(positions(state) - line_slots(params["order"], start), axis=1).sum())
    return d


class ClevrExpert:
    """Greedy look-ahead planner over the pushes of the task's balls (see the module docstring)."""

    def __init__(self, physics: Physics | None = None) -> None:
        self.physics = physics if physics is not None else Physics()
        self.last_phase = ""
        """Phase that chose the last action (one of :data:`PHASES`)."""

    def act(
        self,
        family: str,
        params: Mapping[str, Any],
        state: np.ndarray,
        start: np.ndarray,
        rng: np.random.Generator,
    ) -> int:
        """The expert's push for ``state`` (``start``: the episode's first state)."""
        state = np.asarray(state, dtype=np.float64)
        actions = [encode_action(b, k) for b in task_balls(family, params) for k in range(N_DIRECTIONS)]

        def cost(s: np.ndarray) -> float:
            return planning_cost(family, params, s, start)

        current = cost(state)
        # clear pushes are predicted analytically, blocked ones (wall or ball ahead) simulated
        free, clear = self.physics.free_pushes(state, actions)
        nexts = [s if ok else self.physics.push(state, a) for s, ok, a in zip(free, clear, actions)]
        costs = np.array([cost(s) for s in nexts])
        best = costs.min()
        if best < 0:
            self.last_phase = "finish"
            return self._pick(actions, costs, best, rng)
        if best < current - MIN_GAIN:
            self.last_phase = "greedy"
            return self._pick(actions, costs, best, rng)

        # lookahead: two pushes from the most promising first pushes
        two = np.full(len(actions), np.inf)
        for i in np.argsort(costs, kind="stable")[:LOOKAHEAD_WIDTH]:
            two[i] = min(cost(self.physics.predict(nexts[i], a)) for a in actions)
        best2 = two.min()
        if best2 < current - MIN_GAIN:
            self.last_phase = "lookahead"
            return self._pick(actions, two, best2, rng)

        self.last_phase = "shake"
        return int(actions[int(rng.integers(len(actions)))])

    @staticmethod
    def _pick(actions: list[int], costs: np.ndarray, best: float, rng: np.random.Generator) -> int:
        ties = np.flatnonzero(costs <= best + TIE)
        return int(actions[int(ties[int(rng.integers(len(ties)))])])
