"""Success and reward of every BabyAI task family: pure functions of state vectors.

Each family has two functions that read only numbers:

* ``success(params, state, next_state, progress, next_progress) -> bool`` for one transition;
* ``distance(params, state, progress) -> float``, a task distance in agent steps (moves plus
  pick-up/drop/toggle actions still needed, estimated with exact grid distances: the interior
  has no obstacles and objects do not block, so the breadth-first distance between walkable
  cells equals their Manhattan distance).

Progress record (a 3-vector the domain carries through an episode, derived from the states)::

    0  steps         transitions taken so far (for the time-discounted success bonus)
    1  door_opened   1 once the door has been open in some state of the episode
    2  key_carried   1 once the agent has carried the key in some state of the episode

Reward of a transition = ``SHAPING_SCALE * (distance(state) - distance(next_state))``
(the distance after a successful transition counts as 0) + (on success)
``SUCCESS_BONUS - SUCCESS_TIME_PENALTY * t / horizon`` where ``t`` is the number of steps
taken including this one.  Every distance is exact along the expert's path: each expert
action earns exactly ``+SHAPING_SCALE``.

Staged ("then") tasks: the door-opened latch must be set at or before the transition that
completes the second part.  "Open the door then pick up X" and "pick up the key then open the
locked door" complete on the *event* (X becomes carried; the door becomes open), so doing the
parts in the wrong order does not count; "open the door then go to X" completes when the agent
is at X in any state after the door was opened.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from itertools import permutations
from typing import Any

import numpy as np

from imaginebench.domains.babyai import layout as L

# ---------------------------------------------------------------- named constants
SHAPING_SCALE = 0.05
"""Reward per step of decrease of the task distance."""
SUCCESS_BONUS = 1.0
SUCCESS_TIME_PENALTY = 0.9
"""Success reward is ``SUCCESS_BONUS - SUCCESS_TIME_PENALTY * t / horizon``."""

P_STEPS, P_DOOR_OPENED, P_KEY_CARRIED = 0, 1, 2
PROGRESS_DIM = 3

COLOR_INDEX: dict[str, int] = {name: i for i, name in enumerate(L.COLOR_NAMES)}
_KEY_CODE = L.CARRIED_CODE["key"]

Params = Mapping[str, Any]
State = Sequence[float]
"""A state vector: a numpy array or (faster for these rules) a list of its values."""


# ---------------------------------------------------------------- state readers
def agent(s: State) -> tuple[int, int]:
    return int(s[L.AGENT_ROW]), int(s[L.AGENT_COL])


def position(s: State, name: str) -> tuple[int, int]:
    """Cell of ``name`` (``"ball"``, ``"box"``, ``"key"`` or ``"door"``)."""
    if name == "door":
        return int(s[L.DOOR_ROW]), int(s[L.DOOR_COL])
    i = L.OBJECT_SLOT[name]
    return int(s[i + 1]), int(s[i + 2])


def color(s: State, name: str) -> int:
    return int(s[L.DOOR_COLOR if name == "door" else L.OBJECT_SLOT[name]])


def carried(s: State) -> str | None:
    code = int(s[L.CARRIED_TYPE])
    return L.OBJECT_TYPES[code - 1] if 1 <= code <= len(L.OBJECT_TYPES) else None


def door_state(s: State) -> int:
    return int(s[L.DOOR_STATE])


def front(s: State) -> tuple[int, int]:
    """The interior cell in front of the door (where toggling works)."""
    return L.door_front(int(s[L.DOOR_ROW]), int(s[L.DOOR_COL]))


def manhattan(a: tuple[int, int], b: tuple[int, int]) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


def floor_cells(s: State, exclude: str | None = None) -> set[tuple[int, int]]:
    """Cells holding an object on the floor (not carried), optionally ignoring ``exclude``."""
    held = carried(s)
    return {position(s, n) for n in L.OBJECT_TYPES if n != held and n != exclude}


def is_named(s: State, name: str, color_name: str) -> bool:
    """Whether the state's ``name`` has the colour the instruction names."""
    return color(s, name) == COLOR_INDEX[color_name]


# ---------------------------------------------------------------- progress
def initial_progress(s0: State) -> np.ndarray:
    p = np.zeros(PROGRESS_DIM, dtype=np.float64)
    p[P_DOOR_OPENED] = float(door_state(s0) == L.DOOR_OPEN)
    p[P_KEY_CARRIED] = float(carried(s0) == "key")
    return p


def advance_progress(progress: Sequence[float], next_state: State) -> np.ndarray:
    return np.array(advance_progress_list(list(progress), next_state), dtype=np.float64)


def advance_progress_list(p: list[float], next_state: State) -> list[float]:
    """:func:`advance_progress` on plain floats (the per-step path): a new list."""
    opened = 1.0 if int(next_state[L.DOOR_STATE]) == L.DOOR_OPEN else 0.0
    key = 1.0 if int(next_state[L.CARRIED_TYPE]) == _KEY_CODE else 0.0
    return [float(p[P_STEPS]) + 1.0, max(float(p[P_DOOR_OPENED]), opened), max(float(p[P_KEY_CARRIED]), key)]


def success_bonus(steps: float, horizon: int) -> float:
    """Terminal reward after ``steps`` transitions (including the successful one)."""
    return SUCCESS_BONUS - SUCCESS_TIME_PENALTY * float(steps) / float(horizon)


# ---------------------------------------------------------------- distance helpers
def _reach(s: State, name: str) -> int:
    """Steps for the agent to stand on ``name``'s cell (0 if carried)."""
    return 0 if carried(s) == name else manhattan(agent(s), position(s, name))


def _free_hands(s: State, keep: str | None = None) -> int:
    """One drop action if the agent holds something other than ``keep``."""
    held = carried(s)
    return int(held is not None and held != keep)


def _fetch(s: State, name: str) -> int:
    """Steps until ``name`` is carried."""
    if carried(s) == name:
        return 0
    return _free_hands(s) + _reach(s, name) + 1


def open_door_distance(s: State) -> int:
    """Steps until the door is open (fetching the key first if it is locked)."""
    state = door_state(s)
    if state == L.DOOR_OPEN:
        return 0
    to_front = manhattan(agent(s), front(s))
    if state == L.DOOR_CLOSED or carried(s) == "key":
        return to_front + 1
    return _fetch(s, "key") + manhattan(position(s, "key"), front(s)) + 1


# ---------------------------------------------------------------- train families
def go_to_success(params: Params, s, ns, p, np_) -> bool:
    name = params["object"]
    if not is_named(ns, name, params["color"]):
        return False
    here = agent(ns)
    if name == "door":
        return here == front(ns) or here == position(ns, "door")
    return here == position(ns, name)


def go_to_distance(params: Params, s, p) -> float:
    name = params["object"]
    if name == "door":
        here = agent(s)
        return 0 if here == position(s, "door") else manhattan(here, front(s))
    return manhattan(agent(s), position(s, name))


def open_success(params: Params, s, ns, p, np_) -> bool:
    return door_state(ns) == L.DOOR_OPEN and is_named(ns, "door", params["color"])


def open_distance(params: Params, s, p) -> float:
    return open_door_distance(s)


def pick_up_success(params: Params, s, ns, p, np_) -> bool:
    name = params["object"]
    return carried(ns) == name and is_named(ns, name, params["color"])


def pick_up_distance(params: Params, s, p) -> float:
    return _fetch(s, params["object"])


def put_next_success(params: Params, s, ns, p, np_) -> bool:
    x, y = params["object"], params["target"]
    held = carried(ns)
    return (
        held != x
        and held != y
        and manhattan(position(ns, x), position(ns, y)) == 1
        and is_named(ns, x, params["color"])
        and is_named(ns, y, params["target_color"])
    )


def next_to_cells(s: State, x: str, y: str) -> list[tuple[int, int]]:
    """Interior cells 4-adjacent to ``y`` where ``x`` could be dropped (no other object there)."""
    yr, yc = position(s, y)
    taken = floor_cells(s, exclude=x)
    cells = [(yr + dr, yc + dc) for dr, dc in L.MOVES.values()]
    return [c for c in cells if L.is_interior(*c) and c not in taken]


def _slots(x: str, y: str) -> tuple[int, int, int, int, int, int]:
    z = next(n for n in L.OBJECT_TYPES if n not in (x, y))
    return (L.OBJECT_SLOT[x], L.OBJECT_SLOT[y], L.OBJECT_SLOT[z],
            L.CARRIED_CODE[x], L.CARRIED_CODE[y], L.CARRIED_CODE[z])


_PUT_SLOTS = {(x, y): _slots(x, y) for x in L.OBJECT_TYPES for y in L.OBJECT_TYPES if x != y}
"""(x, y) -> state slots of x, y and the third object z, and their carried codes."""
_NEIGHBOURS = tuple(L.MOVES.values())


def put_next_distance(params: Params, s, p) -> float:
    """Steps until ``x`` lies next to ``y`` (both on the floor).

    Plain arithmetic on the state's entries (this runs on every step); the free cells next to
    ``y`` are those of :func:`next_to_cells`: interior, and not under the third object."""
    xi, yi, zi, x_code, y_code, z_code = _PUT_SLOTS[params["object"], params["target"]]
    code = int(s[L.CARRIED_TYPE])
    held = code if 1 <= code <= len(L.OBJECT_TYPES) else L.NOTHING
    ar, ac = int(s[L.AGENT_ROW]), int(s[L.AGENT_COL])
    xr, xc = int(s[xi + 1]), int(s[xi + 2])
    hands = 1 if held != L.NOTHING else 0
    if held == y_code:  # put the target down first (about where it is)
        return 1 + abs(ar - xr) + abs(ac - xc) + 1 + 2
    fetch = 0 if held == x_code else hands + abs(ar - xr) + abs(ac - xc) + 1
    yr, yc = int(s[yi + 1]), int(s[yi + 2])
    zr, zc = (-1, -1) if held == z_code else (int(s[zi + 1]), int(s[zi + 2]))
    r, c = (ar, ac) if held == x_code else (xr, xc)
    best = -1
    for dr, dc in _NEIGHBOURS:
        cr, cc = yr + dr, yc + dc
        if L.INTERIOR_MIN <= cr <= L.INTERIOR_MAX and L.INTERIOR_MIN <= cc <= L.INTERIOR_MAX and (cr != zr or cc != zc):
            d = abs(r - cr) + abs(c - cc)
            if best < 0 or d < best:
                best = d
    if best < 0:  # no free cell next to y
        return 1 + fetch
    if held == x_code:
        return best + 1
    if abs(xr - yr) + abs(xc - yc) == 1:
        return 0
    return fetch + best + 1


# ---------------------------------------------------------------- easy families
def open_then_go_to_success(params: Params, s, ns, p, np_) -> bool:
    return bool(np_[P_DOOR_OPENED]) and go_to_success(params, s, ns, p, np_)


def open_then_go_to_distance(params: Params, s, p) -> float:
    if p[P_DOOR_OPENED]:
        return go_to_distance(params, s, p)
    return open_door_distance(s) + manhattan(front(s), position(s, params["object"]))


def open_then_pick_up_success(params: Params, s, ns, p, np_) -> bool:
    name = params["object"]
    picked_now = carried(s) != name and carried(ns) == name
    return bool(np_[P_DOOR_OPENED]) and picked_now and is_named(ns, name, params["color"])


def open_then_pick_up_distance(params: Params, s, p) -> float:
    name = params["object"]
    if p[P_DOOR_OPENED]:
        return 2 if carried(s) == name else _fetch(s, name)  # held too early: drop, pick again
    if carried(s) == name:
        return open_door_distance(s) + 2
    return open_door_distance(s) + manhattan(front(s), position(s, name)) + 1


def _wall_gap(cell: tuple[int, int]) -> int:
    r, c = cell
    if not L.is_interior(r, c):
        return 1  # in the doorway: one step back into the room reaches a wall-side cell
    return min(r - L.INTERIOR_MIN, L.INTERIOR_MAX - r, c - L.INTERIOR_MIN, L.INTERIOR_MAX - c)


def go_to_wall_side_success(params: Params, s, ns, p, np_) -> bool:
    here = agent(ns)
    return L.is_interior(*here) and _wall_gap(here) == 0


def go_to_wall_side_distance(params: Params, s, p) -> float:
    return _wall_gap(agent(s))


def _centre_gap(cell: tuple[int, int]) -> int:
    lo, hi = L.CENTRE_CELLS[0][0], L.CENTRE_CELLS[-1][0]
    r, c = cell
    return max(0, lo - r, r - hi) + max(0, lo - c, c - hi)


def go_to_centre_success(params: Params, s, ns, p, np_) -> bool:
    return agent(ns) in L.CENTRE_CELLS


def go_to_centre_distance(params: Params, s, p) -> float:
    return _centre_gap(agent(s))


# ---------------------------------------------------------------- hard families
def unlock_success(params: Params, s, ns, p, np_) -> bool:
    opened_now = door_state(s) != L.DOOR_OPEN and door_state(ns) == L.DOOR_OPEN
    return bool(np_[P_KEY_CARRIED]) and opened_now and is_named(ns, "door", params["color"])


def unlock_distance(params: Params, s, p) -> float:
    if door_state(s) == L.DOOR_OPEN:
        return 0 if p[P_KEY_CARRIED] else _fetch(s, "key") + manhattan(position(s, "key"), front(s)) + 2
    if p[P_KEY_CARRIED]:
        return open_door_distance(s)
    return _fetch(s, "key") + manhattan(position(s, "key"), front(s)) + 1


def _line_shapes() -> tuple[tuple[tuple[int, int], ...], ...]:
    lo, hi = L.INTERIOR_MIN, L.INTERIOR_MAX
    shapes = []
    for a in range(lo, hi + 1):
        for b in range(lo, hi - 1):
            shapes.append(((a, b), (a, b + 1), (a, b + 2)))  # horizontal, in row a
            shapes.append(((b, a), (b + 1, a), (b + 2, a)))  # vertical, in column a
    return tuple(shapes)


def _pile_shapes() -> tuple[tuple[tuple[int, int], ...], ...]:
    lo, hi = L.INTERIOR_MIN, L.INTERIOR_MAX
    shapes = []
    for r in range(lo, hi):
        for c in range(lo, hi):
            block = [(r, c), (r, c + 1), (r + 1, c), (r + 1, c + 1)]
            for gap in range(4):
                shapes.append(tuple(cell for i, cell in enumerate(block) if i != gap))
    return tuple(shapes)


LINE_SHAPES = _line_shapes()
"""Every placement of three cells in a straight contiguous row or column (48)."""
PILE_SHAPES = _pile_shapes()
"""Every L-shaped placement of three cells inside a 2×2 block (100): the three objects are
pairwise touching (8-neighbourhood) and not in a line."""


def _arrangements(shapes) -> np.ndarray:
    """(N, 3, 2) target cells of ball, box, key for every shape and object order."""
    return np.array(
        [[shape[i] for i in order] for shape in shapes for order in permutations(range(3))],
        dtype=np.int64,
    )


LINE_ARRANGEMENTS = _arrangements(LINE_SHAPES)
PILE_ARRANGEMENTS = _arrangements(PILE_SHAPES)


def object_cells(s: State) -> np.ndarray:
    """(3, 2) cells of ball, box, key (a carried object is at the agent's cell)."""
    return np.array([position(s, n) for n in L.OBJECT_TYPES], dtype=np.int64)


def is_line(cells: State) -> bool:
    rows, cols = cells[:, 0], cells[:, 1]
    if len(set(rows.tolist())) == 1:
        return sorted(cols.tolist()) == list(range(int(cols.min()), int(cols.min()) + 3))
    if len(set(cols.tolist())) == 1:
        return sorted(rows.tolist()) == list(range(int(rows.min()), int(rows.min()) + 3))
    return False


def is_pile(cells: State) -> bool:
    distinct = len({tuple(c) for c in cells.tolist()}) == 3
    return distinct and int(np.ptp(cells[:, 0])) <= 1 and int(np.ptp(cells[:, 1])) <= 1


def line_success(params: Params, s, ns, p, np_) -> bool:
    return carried(ns) is None and is_line(object_cells(ns))


def pile_success(params: Params, s, ns, p, np_) -> bool:
    return carried(ns) is None and is_pile(object_cells(ns))


ARRANGEMENTS: dict[str, np.ndarray] = {"line": LINE_ARRANGEMENTS, "pile": PILE_ARRANGEMENTS}

_ORDERS = np.array(list(permutations(range(3))), dtype=np.int64)
"""(6, 3): the orders in which the three objects can be moved."""
_NEVER = np.iinfo(np.int64).max // 4
_CELL_R, _CELL_C = np.divmod(np.arange(L.ROOM_SIZE**2), L.ROOM_SIZE)
_DIST = np.abs(_CELL_R[:, None] - _CELL_R[None]) + np.abs(_CELL_C[:, None] - _CELL_C[None])
"""Grid distance between cells numbered ``row * ROOM_SIZE + col``."""
_DIST_FLAT = _DIST.ravel()
_TARGETS = {kind: a[..., 0] * L.ROOM_SIZE + a[..., 1] for kind, a in ARRANGEMENTS.items()}


def arrangement_plans(s: State, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Exact cost of every "move each misplaced object once" plan for ``kind`` (line/pile).

    A plan is an arrangement (a row of ``ARRANGEMENTS[kind]``: cells of ball, box, key) and
    an order of the objects.  Following the order, the agent walks to each misplaced object,
    picks it up, carries it to its cell and drops it (a held object comes first and is only
    carried and dropped).  An object is in place when it lies on its cell, unheld.  A plan is
    infeasible (cost ``_NEVER``) if an object would be dropped on a cell another object still
    occupies, or if the held object is not the first to be placed.

    Returns ``(cost, first)``, both (N, 6) and read-only: the number of actions the plan needs
    (grid distances are exact: the interior is open and objects do not block), and the index
    of the object it handles first (-1 when everything is in place).
    """
    cells = tuple(int(r) * L.ROOM_SIZE + int(c) for r, c in object_cells(s).tolist())
    held = carried(s)
    held_i = L.OBJECT_TYPES.index(held) if held is not None else -1
    here = int(s[L.AGENT_ROW]) * L.ROOM_SIZE + int(s[L.AGENT_COL])
    return _plans(kind, cells, held_i, here)


@lru_cache(maxsize=128)  # a rollout asks about each state twice (reward, then expert)
def _plans(kind: str, cells: tuple[int, int, int], held_i: int, here: int) -> tuple[np.ndarray, np.ndarray]:
    targets = _TARGETS[kind]  # (N, 3) cell numbers
    n_cells = L.ROOM_SIZE**2
    c = np.array(cells, dtype=np.int64)
    on = targets == c[None]
    if held_i >= 0:
        on[:, held_i] = False
    t_ord = targets[:, _ORDERS]  # (N, 6, 3): target of the j-th object of each order
    m_ord = ~on[:, _ORDERS]  # misplaced
    c_ord = c[_ORDERS][None]  # (1, 6, 3): current cell
    h_ord = (_ORDERS == held_i)[None]  # held
    fetch_leg = _DIST_FLAT[c_ord * n_cells + t_ord] + 2  # pick up, carry, drop (walk excluded)
    pos = np.full(t_ord.shape[:2], here, dtype=np.int64)
    total = np.zeros_like(pos)
    first = np.full_like(pos, -1)
    feasible = np.ones(pos.shape, dtype=bool)
    started = np.zeros(pos.shape, dtype=bool)
    for j in range(3):
        t, m, cj, hj = t_ord[:, :, j], m_ord[:, :, j], c_ord[:, :, j], h_ord[:, :, j]
        step = np.where(hj, _DIST_FLAT[pos * n_cells + t] + 1, _DIST_FLAT[pos * n_cells + cj] + fetch_leg[:, :, j])
        feasible &= ~(hj & started)
        for k in range(j + 1, 3):
            feasible &= ~(m & ~h_ord[:, :, k] & (t == c_ord[:, :, k]))
        first = np.where(m & ~started, _ORDERS[None, :, j], first)
        total += np.where(m, step, 0)
        pos = np.where(m, t, pos)
        started |= m
    cost = np.where(feasible, total, _NEVER)
    cost.flags.writeable = False
    first.flags.writeable = False
    return cost, first


def arrangement_distance(s: State, kind: str) -> int:
    """Fewest actions that put the three objects in a ``kind`` (line/pile) arrangement."""
    return int(arrangement_plans(s, kind)[0].min())


def line_distance(params: Params, s, p) -> float:
    return arrangement_distance(s, "line")


def pile_distance(params: Params, s, p) -> float:
    return arrangement_distance(s, "pile")


# ---------------------------------------------------------------- registry
SuccessFn = Callable[[Params, State, State, np.ndarray, np.ndarray], bool]
DistanceFn = Callable[[Params, State, np.ndarray], float]

RULES: dict[str, tuple[SuccessFn, DistanceFn]] = {
    "go_to": (go_to_success, go_to_distance),
    "open": (open_success, open_distance),
    "pick_up": (pick_up_success, pick_up_distance),
    "put_next": (put_next_success, put_next_distance),
    "open_then_go_to": (open_then_go_to_success, open_then_go_to_distance),
    "open_then_pick_up": (open_then_pick_up_success, open_then_pick_up_distance),
    "go_to_wall_side": (go_to_wall_side_success, go_to_wall_side_distance),
    "go_to_centre": (go_to_centre_success, go_to_centre_distance),
    "unlock": (unlock_success, unlock_distance),
    "line": (line_success, line_distance),
    "pile": (pile_success, pile_distance),
}
"""Family name -> (success, distance)."""
