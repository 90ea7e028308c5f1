"""Rule-based BabyAI expert: breadth-first search on the room grid, phase by phase.

The expert is a function of ``(family, params, state, progress, rng)`` only; it keeps no
memory between calls, so it can take over from any state (after ``set_state`` too).  Each
call returns ``(phase, action)``; the phases are the steps of the plan:

* ``drop``      put down what is held (on this cell if it is free, else on the nearest free one);
* ``fetch``     walk to an object and pick it up;
* ``open door`` (fetch the key if the door is locked,) walk in front of the door and toggle;
* ``go to``     walk to a set of goal cells;
* ``place``     carry the held object to its goal cell and drop it;
* ``idle``      the task already holds: an action that changes nothing.

Walking uses breadth-first search over walkable cells (the interior, plus the doorway when the
door is open); ties between shortest paths are broken with ``rng``, which varies the data
without ever lengthening a path.  Goal choices never depend on ``rng`` and stay stable while
the agent walks (the chosen goal gets one step closer each step, any other at most one), so
re-planning at every step cannot oscillate.

Line and pile: over every arrangement of the three objects (:data:`success.ARRANGEMENTS`)
and every order of moving them, the expert follows the plan
with the fewest actions (:func:`success.arrangement_plans`, exact costs); each of its actions
lowers that cost by one, so it never loops.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np

from imaginebench.domains.babyai import layout as L
from imaginebench.domains.babyai import success as S

Cell = tuple[int, int]
Plan = tuple[str, int]

_MOVE_LIST = tuple(L.MOVES.items())


# ---------------------------------------------------------------- primitives
def bfs_action(s: np.ndarray, goals, rng: np.random.Generator) -> int | None:
    """First move of a shortest walkable path from the agent to any cell of ``goals``
    (``None`` if the agent is already on a goal cell or no goal is reachable)."""
    start = S.agent(s)
    goals = set(goals)
    if start in goals:
        return None
    door = S.position(s, "door")
    door_open = S.door_state(s) == L.DOOR_OPEN
    order = [_MOVE_LIST[i] for i in rng.permutation(len(_MOVE_LIST))]
    first: dict[Cell, int] = {start: -1}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        for action, (dr, dc) in order:
            nxt = (cell[0] + dr, cell[1] + dc)
            if nxt in first or not (L.is_interior(*nxt) or (door_open and nxt == door)):
                continue
            first[nxt] = action if cell == start else first[cell]
            if nxt in goals:
                return first[nxt]
            queue.append(nxt)
    return None


def idle(s: np.ndarray) -> Plan:
    """An action that changes nothing: pick-up with full hands, or drop with empty hands."""
    return "idle", (L.PICKUP if S.carried(s) is not None else L.DROP)


def go(s: np.ndarray, goals, rng: np.random.Generator, phase: str) -> Plan | None:
    action = bfs_action(s, goals, rng)
    return None if action is None else (phase, action)


def drop(s: np.ndarray, rng: np.random.Generator) -> Plan:
    """Put the held object down here, or on the nearest interior cell without an object."""
    taken = S.floor_cells(s)
    here = S.agent(s)
    if L.is_interior(*here) and here not in taken:
        return "drop", L.DROP
    free = [c for c in L.INTERIOR_CELLS if c not in taken]
    return go(s, free, rng, "drop") or ("drop", L.DROP)


def fetch(s: np.ndarray, name: str, rng: np.random.Generator) -> Plan | None:
    """Make ``name`` the carried object (``None`` if it already is)."""
    held = S.carried(s)
    if held == name:
        return None
    if held is not None:
        return drop(s, rng)
    return go(s, [S.position(s, name)], rng, f"fetch {name}") or (f"fetch {name}", L.PICKUP)


def toggle_door(s: np.ndarray, rng: np.random.Generator) -> Plan:
    """Walk in front of the door and toggle it."""
    return go(s, [S.front(s)], rng, "open door") or ("open door", L.TOGGLE)


def open_door(s: np.ndarray, rng: np.random.Generator) -> Plan | None:
    """Open the door, fetching its key first if it is locked (``None`` if it is open)."""
    state = S.door_state(s)
    if state == L.DOOR_OPEN:
        return None
    if state == L.DOOR_LOCKED and S.carried(s) != "key":
        if S.color(s, "key") != S.color(s, "door"):
            return idle(s)  # no key fits: nothing can open this door
        return fetch(s, "key", rng)
    return toggle_door(s, rng)


# ---------------------------------------------------------------- arrangements
def arrange(s, kind: str, rng: np.random.Generator) -> Plan:
    """One step of the cheapest plan that puts ball, box and key in a ``kind`` arrangement.

    Plans and their exact costs come from :func:`success.arrangement_plans`; the expert takes
    the first action of the cheapest one (walk to its first object and pick it up, or carry
    the held object to its cell and drop it).  That action lowers the plan's cost by exactly
    one, so the cheapest cost falls by one every step and the task is done in that many steps.
    """
    costs, firsts = S.arrangement_plans(s, kind)
    best = int(np.argmin(costs))
    n, k = divmod(best, costs.shape[1])
    first = int(firsts[n, k])
    if first < 0:
        return idle(s)
    name = L.OBJECT_TYPES[first]
    if S.carried(s) == name:
        goal = tuple(int(x) for x in S.ARRANGEMENTS[kind][n, first])
        return go(s, [goal], rng, f"place {name}") or (f"place {name}", L.DROP)
    return fetch(s, name, rng)  # type: ignore[return-value]


# ---------------------------------------------------------------- families
def _go_to(params: Mapping[str, Any], s: np.ndarray, rng) -> Plan:
    name = params["object"]
    if name == "door":
        if S.agent(s) == S.position(s, "door"):
            return idle(s)
        goals = [S.front(s)]
    else:
        goals = [S.position(s, name)]
    return go(s, goals, rng, f"go to {name}") or idle(s)


def _put_next(params: Mapping[str, Any], s: np.ndarray, rng) -> Plan:
    x, y = params["object"], params["target"]
    held = S.carried(s)
    if held == y:
        return drop(s, rng)
    if held != x:
        if held is None and S.manhattan(S.position(s, x), S.position(s, y)) == 1:
            return idle(s)
        return fetch(s, x, rng) or idle(s)
    spots = S.next_to_cells(s, x, y)
    return go(s, spots, rng, f"place {x}") or (f"place {x}", L.DROP)


def _open_then_go_to(params, s, progress, rng) -> Plan:
    if not progress[S.P_DOOR_OPENED]:
        return open_door(s, rng) or idle(s)
    return _go_to(params, s, rng)


def _open_then_pick_up(params, s, progress, rng) -> Plan:
    name = params["object"]
    if not progress[S.P_DOOR_OPENED]:
        return open_door(s, rng) or idle(s)
    if S.carried(s) == name:  # picked up before the door was opened: put down, pick up again
        return drop(s, rng)
    return fetch(s, name, rng) or idle(s)


def _unlock(params, s, progress, rng) -> Plan:
    if not progress[S.P_KEY_CARRIED]:
        return fetch(s, "key", rng) or idle(s)
    if S.door_state(s) == L.DOOR_LOCKED:
        return open_door(s, rng) or idle(s)
    return toggle_door(s, rng)  # closed: open it; open too early: close it, then open


def plan(
    family: str,
    params: Mapping[str, Any],
    state: np.ndarray,
    progress: np.ndarray,
    rng: np.random.Generator,
) -> Plan:
    """``(phase, action)`` of the expert for ``family``/``params`` in ``state``."""
    s = np.asarray(state, dtype=np.float64).tolist()  # single entries read faster from a list
    if family == "go_to":
        return _go_to(params, s, rng)
    if family == "open":
        return open_door(s, rng) or idle(s)
    if family == "pick_up":
        return fetch(s, params["object"], rng) or idle(s)
    if family == "put_next":
        return _put_next(params, s, rng)
    if family == "open_then_go_to":
        return _open_then_go_to(params, s, progress, rng)
    if family == "open_then_pick_up":
        return _open_then_pick_up(params, s, progress, rng)
    if family == "go_to_wall_side":
        return go(s, L.WALL_SIDE_CELLS, rng, "go to wall side") or idle(s)
    if family == "go_to_centre":
        return go(s, L.CENTRE_CELLS, rng, "go to centre") or idle(s)
    if family == "unlock":
        return _unlock(params, s, progress, rng)
    if family == "line":
        return arrange(s, "line", rng)
    if family == "pile":
        return arrange(s, "pile", rng)
    raise ValueError(f"No BabyAI expert for task family {family!r}; valid families: {', '.join(S.RULES)}.")


def expert_action(family, params, state, progress, rng) -> int:
    """The expert's action (see :func:`plan`)."""
    return plan(family, params, state, progress, rng)[1]
