"""BabyAI success, task distance, reward, progress and legality over a batch of rows.

The rules of :mod:`.success` and :mod:`.legality`, rewritten as integer array code: rows are
grouped by task family and each family is scored with numpy operations over all of its rows
at once.  Every family is vectorised, including ``line`` and ``pile``, whose distance
(:func:`arrangement_distances`) evaluates every plan of :func:`.success.arrangement_plans`
for many states at once.

Rows the array code cannot read as the per-row code does are reported back (``handled``
false) so the caller scores them with the per-row function: rows with a non-finite value
or one beyond ``int32`` (the per-row code converts entries with ``int``), and ``line`` /
``pile`` rows whose cells fall outside the 8×8 grid (the per-row code looks such cells up
in a flat table with wrap-around indexing).  Legal states never need this.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from imaginebench.domains.babyai import layout as L
from imaginebench.domains.babyai import success as S
from imaginebench.domains.base import Task, index_tasks, per_task_cache

OBJECTS: tuple[str, ...] = (*L.OBJECT_TYPES, "door")
"""Object index used by the array code: ball 0, box 1, key 2, door 3."""
KEY, DOOR = OBJECTS.index("key"), OBJECTS.index("door")
NOTHING_HELD = -1
FAMILIES: tuple[str, ...] = tuple(S.RULES)
INT_LIMIT = 2**31
"""States with an entry at least this large (or non-finite) are left to the per-row code."""
_FAR = 1 << 20
"""Stands for "no such cell" in minima over candidate cells."""
_CHUNK_PLANS = 1 << 15
"""Rows × arrangements evaluated at once by :func:`arrangement_distances` (bounds memory)."""


# ---------------------------------------------------------------------------- task tables
class TaskCodes(NamedTuple):
    """A task's parameters as numbers (object indices into :data:`OBJECTS`, colour indices)."""

    family: int
    obj: int = 0
    colour: int = -1
    target: int = 0
    target_colour: int = -1
    horizon: int = -1
    """The task's own horizon; -1: the domain's."""


def task_codes(task: Task) -> TaskCodes:
    """The numeric parameters of ``task`` (``ValueError`` for an unknown family)."""
    if task.family not in FAMILIES:
        raise ValueError(f"Unknown BabyAI task family {task.family!r}.")
    p = task.params
    colour = S.COLOR_INDEX[p["color"]] if "color" in p else -1
    return TaskCodes(
        family=FAMILIES.index(task.family),
        obj=OBJECTS.index(p["object"]) if "object" in p else 0,
        colour=colour,
        target=OBJECTS.index(p["target"]) if "target" in p else 0,
        target_colour=S.COLOR_INDEX[p["target_color"]] if "target_color" in p else -1,
        horizon=-1 if task.horizon is None else task.horizon,
    )


_cached_codes = per_task_cache(task_codes)
""":func:`task_codes` memoised per task object."""


@dataclass(frozen=True)
class RowParams:
    """Per-row task parameters of a batch, one entry per batch row."""

    family: np.ndarray
    obj: np.ndarray
    colour: np.ndarray
    target: np.ndarray
    target_colour: np.ndarray
    horizon: np.ndarray  # float64

    @classmethod
    def of(cls, tasks: Sequence[Task], default_horizon: int) -> RowParams:
        unique, row_task = index_tasks(tasks)
        table = np.array([_cached_codes(task) for task in unique], dtype=np.int64)
        rows = table.reshape(-1, len(TaskCodes._fields))[row_task]
        columns = dict(zip(TaskCodes._fields, rows.T))
        horizon = columns.pop("horizon")
        return cls(**columns, horizon=np.where(horizon < 0, default_horizon, horizon).astype(np.float64))

    def take(self, rows: np.ndarray) -> RowParams:
        return RowParams(**{f.name: getattr(self, f.name)[rows] for f in fields(self)})


# ---------------------------------------------------------------------------- boards
@dataclass(frozen=True)
class Board:
    """Integer fields of a batch of states (each entry ``int(value)``, as the per-row rules read)."""

    colour: np.ndarray  # (n, 4) ball, box, key, door
    row: np.ndarray  # (n, 4)
    col: np.ndarray  # (n, 4)
    door_state: np.ndarray  # (n,)
    agent_row: np.ndarray
    agent_col: np.ndarray
    held: np.ndarray  # object index, or NOTHING_HELD
    front_row: np.ndarray  # the interior cell in front of the door
    front_col: np.ndarray

    @classmethod
    def of(cls, states: np.ndarray) -> Board:
        """Fields of finite ``(n, 17)`` states whose entries are below :data:`INT_LIMIT`."""
        v = np.trunc(states).astype(np.int64)
        slots = [L.OBJECT_SLOT[name] for name in L.OBJECT_TYPES]
        code = v[:, L.CARRIED_TYPE]
        door_row, door_col = v[:, L.DOOR_ROW], v[:, L.DOOR_COL]
        last = L.ROOM_SIZE - 1
        front_row = np.select([door_row == 0, door_row == last], [1, last - 1], door_row)
        front_col = np.select([door_row == 0, door_row == last, door_col == 0], [door_col, door_col, 1],
                              last - 1)
        return cls(
            colour=v[:, [*slots, L.DOOR_COLOR]],
            row=v[:, [*(i + 1 for i in slots), L.DOOR_ROW]],
            col=v[:, [*(i + 2 for i in slots), L.DOOR_COL]],
            door_state=v[:, L.DOOR_STATE],
            agent_row=v[:, L.AGENT_ROW],
            agent_col=v[:, L.AGENT_COL],
            held=np.where((code >= 1) & (code <= len(L.OBJECT_TYPES)), code - 1, NOTHING_HELD),
            front_row=front_row,
            front_col=front_col,
        )

    def take(self, rows: np.ndarray) -> Board:
        return Board(**{f.name: getattr(self, f.name)[rows] for f in fields(self)})

    def pick(self, table: np.ndarray, obj: np.ndarray | int) -> np.ndarray:
        """``table[i, obj[i]]`` for every row (``obj`` may be one index for all rows)."""
        return table[np.arange(len(table)), obj]

    def cell(self, obj: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
        return self.pick(self.row, obj), self.pick(self.col, obj)

    def named(self, obj: np.ndarray | int, colour: np.ndarray) -> np.ndarray:
        return self.pick(self.colour, obj) == colour

    @property
    def agent(self) -> tuple[np.ndarray, np.ndarray]:
        return self.agent_row, self.agent_col

    @property
    def front(self) -> tuple[np.ndarray, np.ndarray]:
        return self.front_row, self.front_col


Cell = tuple[np.ndarray, np.ndarray]


def _manhattan(a: Cell, b: Cell) -> np.ndarray:
    return np.abs(a[0] - b[0]) + np.abs(a[1] - b[1])


def _same(a: Cell, b: Cell) -> np.ndarray:
    return (a[0] == b[0]) & (a[1] == b[1])


def _interior(cell: Cell) -> np.ndarray:
    r, c = cell
    return (r >= L.INTERIOR_MIN) & (r <= L.INTERIOR_MAX) & (c >= L.INTERIOR_MIN) & (c <= L.INTERIOR_MAX)


# ---------------------------------------------------------------------------- distance helpers
def _fetch(b: Board, obj: np.ndarray | int) -> np.ndarray:
    """Steps until ``obj`` is carried (:func:`S._fetch`)."""
    return np.where(b.held == obj, 0, (b.held != NOTHING_HELD) + _manhattan(b.agent, b.cell(obj)) + 1)


def _key_to_door(b: Board) -> np.ndarray:
    """Fetch the key and carry it to the door's front cell."""
    return _fetch(b, KEY) + _manhattan(b.cell(KEY), b.front)


def _open_door(b: Board) -> np.ndarray:
    """:func:`S.open_door_distance`."""
    direct = (b.door_state == L.DOOR_CLOSED) | (b.held == KEY)
    closed = np.where(direct, _manhattan(b.agent, b.front) + 1, _key_to_door(b) + 1)
    return np.where(b.door_state == L.DOOR_OPEN, 0, closed)


def _wall_gap(cell: Cell) -> np.ndarray:
    r, c = cell
    gap = np.minimum(np.minimum(r - L.INTERIOR_MIN, L.INTERIOR_MAX - r),
                     np.minimum(c - L.INTERIOR_MIN, L.INTERIOR_MAX - c))
    return np.where(_interior(cell), gap, 1)


# ---------------------------------------------------------------------------- families
# success(params, s, ns, p, next_p) -> (n,) bool;  distance(params, s, p) -> (n,) int
def _go_to_success(t: RowParams, s: Board, ns: Board, p: np.ndarray, np_: np.ndarray) -> np.ndarray:
    here = ns.agent
    at_goal = _same(here, ns.cell(t.obj)) | ((t.obj == DOOR) & _same(here, ns.front))
    return ns.named(t.obj, t.colour) & at_goal


def _go_to_distance(t: RowParams, s: Board, p: np.ndarray) -> np.ndarray:
    to_obj = _manhattan(s.agent, s.cell(t.obj))
    to_door = np.where(_same(s.agent, s.cell(DOOR)), 0, _manhattan(s.agent, s.front))
    return np.where(t.obj == DOOR, to_door, to_obj)


def _open_success(t: RowParams, s: Board, ns: Board, p: np.ndarray, np_: np.ndarray) -> np.ndarray:
    return (ns.door_state == L.DOOR_OPEN) & ns.named(DOOR, t.colour)


def _open_distance(t: RowParams, s: Board, p: np.ndarray) -> np.ndarray:
    return _open_door(s)


def _pick_up_success(t: RowParams, s: Board, ns: Board, p: np.ndarray, np_: np.ndarray) -> np.ndarray:
    return (ns.held == t.obj) & ns.named(t.obj, t.colour)


def _pick_up_distance(t: RowParams, s: Board, p: np.ndarray) -> np.ndarray:
    return _fetch(s, t.obj)


def _put_next_success(t: RowParams, s: Board, ns: Board, p: np.ndarray, np_: np.ndarray) -> np.ndarray:
    return (
        (ns.held != t.obj)
        & (ns.held != t.target)
        & (_manhattan(ns.cell(t.obj), ns.cell(t.target)) == 1)
        & ns.named(t.obj, t.colour)
        & ns.named(t.target, t.target_colour)
    )


def _put_next_distance(t: RowParams, s: Board, p: np.ndarray) -> np.ndarray:
    """:func:`S.put_next_distance`: its branches, in order, as one ``np.select``."""
    x, y = t.obj, t.target
    x_cell, y_cell = s.cell(x), s.cell(y)
    spots_r = y_cell[0][:, None] + np.array([d[0] for d in L.MOVES.values()])  # (n, 4)
    spots_c = y_cell[1][:, None] + np.array([d[1] for d in L.MOVES.values()])
    free = _interior((spots_r, spots_c))
    for k in range(len(L.OBJECT_TYPES)):  # floor cells of objects other than the held one and x
        blocks = (s.held != k) & (x != k)
        free &= ~(blocks[:, None] & (s.row[:, k : k + 1] == spots_r) & (s.col[:, k : k + 1] == spots_c))

    def nearest_spot(cell: Cell) -> np.ndarray:
        d = np.abs(cell[0][:, None] - spots_r) + np.abs(cell[1][:, None] - spots_c)
        return np.where(free, d, _FAR).min(axis=1)

    reach_x = np.where(s.held == x, 0, _manhattan(s.agent, x_cell))
    fetch_x = _fetch(s, x)
    return np.select(
        [s.held == y, ~free.any(axis=1), s.held == x, _manhattan(x_cell, y_cell) == 1],
        [1 + reach_x + 1 + 2, 1 + fetch_x, nearest_spot(s.agent) + 1, 0],
        fetch_x + nearest_spot(x_cell) + 1,
    )


def _open_then_go_to_success(t: RowParams, s: Board, ns: Board, p: np.ndarray, np_: np.ndarray) -> np.ndarray:
    return (np_[:, S.P_DOOR_OPENED] != 0) & _go_to_success(t, s, ns, p, np_)


def _open_then_go_to_distance(t: RowParams, s: Board, p: np.ndarray) -> np.ndarray:
    first_open = _open_door(s) + _manhattan(s.front, s.cell(t.obj))
    return np.where(p[:, S.P_DOOR_OPENED] != 0, _go_to_distance(t, s, p), first_open)


def _open_then_pick_up_success(t: RowParams, s: Board, ns: Board, p: np.ndarray, np_: np.ndarray) -> np.ndarray:
    picked_now = (s.held != t.obj) & (ns.held == t.obj)
    return (np_[:, S.P_DOOR_OPENED] != 0) & picked_now & ns.named(t.obj, t.colour)


def _open_then_pick_up_distance(t: RowParams, s: Board, p: np.ndarray) -> np.ndarray:
    holding = s.held == t.obj
    opened = np.where(holding, 2, _fetch(s, t.obj))
    door = _open_door(s)
    not_opened = np.where(holding, door + 2, door + _manhattan(s.front, s.cell(t.obj)) + 1)
    return np.where(p[:, S.P_DOOR_OPENED] != 0, opened, not_opened)


def _wall_side_success(t: RowParams, s: Board, ns: Board, p: np.ndarray, np_: np.ndarray) -> np.ndarray:
    return _interior(ns.agent) & (_wall_gap(ns.agent) == 0)


def _wall_side_distance(t: RowParams, s: Board, p: np.ndarray) -> np.ndarray:
    return _wall_gap(s.agent)


def _centre_success(t: RowParams, s: Board, ns: Board, p: np.ndarray, np_: np.ndarray) -> np.ndarray:
    inside = np.zeros(len(ns.agent_row), dtype=bool)
    for r, c in L.CENTRE_CELLS:
        inside |= (ns.agent_row == r) & (ns.agent_col == c)
    return inside


def _centre_distance(t: RowParams, s: Board, p: np.ndarray) -> np.ndarray:
    lo, hi = L.CENTRE_CELLS[0][0], L.CENTRE_CELLS[-1][0]
    r, c = s.agent
    return np.maximum(np.maximum(0, lo - r), r - hi) + np.maximum(np.maximum(0, lo - c), c - hi)


def _unlock_success(t: RowParams, s: Board, ns: Board, p: np.ndarray, np_: np.ndarray) -> np.ndarray:
    opened_now = (s.door_state != L.DOOR_OPEN) & (ns.door_state == L.DOOR_OPEN)
    return (np_[:, S.P_KEY_CARRIED] != 0) & opened_now & ns.named(DOOR, t.colour)


def _unlock_distance(t: RowParams, s: Board, p: np.ndarray) -> np.ndarray:
    had_key = p[:, S.P_KEY_CARRIED] != 0
    key_leg = _key_to_door(s)
    is_open = np.where(had_key, 0, key_leg + 2)
    return np.where(s.door_state == L.DOOR_OPEN, is_open, np.where(had_key, _open_door(s), key_leg + 1))


def _object_rows_cols(b: Board) -> tuple[np.ndarray, np.ndarray]:
    n = len(L.OBJECT_TYPES)
    return b.row[:, :n], b.col[:, :n]


def _is_line(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """:func:`S.is_line` of ``(n, 3)`` object rows and columns."""

    def one_row(a: np.ndarray) -> np.ndarray:
        return (a[:, 0] == a[:, 1]) & (a[:, 1] == a[:, 2])

    def run_of_three(a: np.ndarray) -> np.ndarray:
        a = np.sort(a, axis=1)
        return (a[:, 1] == a[:, 0] + 1) & (a[:, 2] == a[:, 0] + 2)

    return np.where(one_row(rows), run_of_three(cols), one_row(cols) & run_of_three(rows))


def _is_pile(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """:func:`S.is_pile`: three distinct cells within a 2×2 block."""
    distinct = np.ones(len(rows), dtype=bool)
    for i, j in ((0, 1), (0, 2), (1, 2)):
        distinct &= (rows[:, i] != rows[:, j]) | (cols[:, i] != cols[:, j])
    return distinct & (np.ptp(rows, axis=1) <= 1) & (np.ptp(cols, axis=1) <= 1)


def _line_success(t: RowParams, s: Board, ns: Board, p: np.ndarray, np_: np.ndarray) -> np.ndarray:
    return (ns.held == NOTHING_HELD) & _is_line(*_object_rows_cols(ns))


def _pile_success(t: RowParams, s: Board, ns: Board, p: np.ndarray, np_: np.ndarray) -> np.ndarray:
    return (ns.held == NOTHING_HELD) & _is_pile(*_object_rows_cols(ns))


def _cell_numbers(b: Board) -> tuple[np.ndarray, np.ndarray]:
    """``(n, 3)`` object cells and ``(n,)`` agent cell as ``row * ROOM_SIZE + col``."""
    rows, cols = _object_rows_cols(b)
    return rows * L.ROOM_SIZE + cols, b.agent_row * L.ROOM_SIZE + b.agent_col


def on_grid(b: Board) -> np.ndarray:
    """Rows whose object and agent cell numbers index the 8×8 grid (what ``line``/``pile`` need)."""
    cells, here = _cell_numbers(b)
    size = L.ROOM_SIZE**2
    return np.all((cells >= 0) & (cells < size), axis=1) & (here >= 0) & (here < size)


def arrangement_distances(b: Board, kind: str) -> np.ndarray:
    """:func:`S.arrangement_distance` of every row (all cells on the grid, see :func:`on_grid`).

    Every plan of :func:`S.arrangement_plans` (arrangement × order of the objects) is
    costed for a chunk of rows at once, leg for leg as the per-row code does.  Rows are
    grouped by the object held: a held object must be the first one placed (or the plan is
    infeasible), so only the orders that start with it are costed (orders where it follows
    only objects already in place cost the same).
    """
    cells, here = _cell_numbers(b)
    out = np.empty(len(cells), dtype=np.int64)
    arrangements = len(S._TARGETS[kind])
    chunk = max(1, _CHUNK_PLANS // arrangements)
    for held in (NOTHING_HELD, *range(len(L.OBJECT_TYPES))):
        rows = np.flatnonzero(b.held == held)
        for start in range(0, len(rows), chunk):
            part = rows[start : start + chunk]
            out[part] = _cheapest_plans(kind, held, cells[part], here[part])
    return out


@lru_cache(maxsize=None)
def _target_cells(kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(cells, rows, cols)``, each ``(3, A)``: the target of each object in every arrangement."""
    cells = np.ascontiguousarray(S._TARGETS[kind].T).astype(np.int16)
    return cells, cells // L.ROOM_SIZE, cells % L.ROOM_SIZE


_INFEASIBLE = np.iinfo(np.int16).max


def _cheapest_plans(kind: str, held: int, cells: np.ndarray, here: np.ndarray) -> np.ndarray:
    """Cheapest feasible plan of rows that all carry ``held`` (array form of :func:`S._plans`).

    Arrays are ``(n, A)``: one entry per row and arrangement.  An order's cost is built
    from legs shared by all orders: handling object ``k`` (pick up, carry, drop), walking
    from where the agent is (its cell, or the target of the last object placed) to ``k``.
    """
    size, objects = L.ROOM_SIZE, range(len(L.OBJECT_TYPES))
    t, t_row, t_col = _target_cells(kind)
    c = cells.astype(np.int16)
    c_row, c_col = c // size, c % size
    h_row, h_col = (here // size).astype(np.int16), (here % size).astype(np.int16)

    def column(a: np.ndarray, k: int) -> np.ndarray:
        return a[:, k : k + 1]

    misplaced = [~(t[k] == column(c, k)) | (k == held) for k in objects]
    handle = [np.abs(column(c_row, k) - t_row[k]) + np.abs(column(c_col, k) - t_col[k]) + 2 for k in objects]
    from_agent = [column(np.abs(h_row[:, None] - c_row) + np.abs(h_col[:, None] - c_col), k) for k in objects]
    from_target = {(a, k): np.abs(t_row[a] - column(c_row, k)) + np.abs(t_col[a] - column(c_col, k))
                   for a in objects for k in objects if a != k}
    blocks = {(a, k): t[a] == column(c, k) for a in objects for k in objects if a != k}

    orders = S._ORDERS if held == NOTHING_HELD else S._ORDERS[S._ORDERS[:, 0] == held]
    best = np.full((len(c), t.shape[1]), _INFEASIBLE, dtype=np.int16)
    for order in orders.tolist():
        cost = np.zeros_like(best)
        infeasible = np.zeros(best.shape, dtype=bool)
        for j, k in enumerate(order):
            m = misplaced[k]
            if j == 0 and k == held:  # carry the held object to its cell and drop it
                step = np.abs(h_row[:, None] - t_row[k]) + np.abs(h_col[:, None] - t_col[k]) + 1
            else:  # walk from the last object placed (or the agent's cell), then handle k
                walk = from_agent[k]
                for previous in order[:j]:
                    walk = np.where(misplaced[previous], from_target[previous, k], walk)
                step = walk + handle[k]
            cost += np.where(m, step, np.int16(0))
            for later in order[j + 1 :]:  # never drop onto a cell a later object still occupies
                infeasible |= m & blocks[k, later]
        best = np.minimum(best, np.where(infeasible, _INFEASIBLE, cost))
    least = best.min(axis=1).astype(np.int64)
    return np.where(least == _INFEASIBLE, S._NEVER, least)


def _line_distance(t: RowParams, s: Board, p: np.ndarray) -> np.ndarray:
    return arrangement_distances(s, "line")


def _pile_distance(t: RowParams, s: Board, p: np.ndarray) -> np.ndarray:
    return arrangement_distances(s, "pile")


SuccessArrays = Callable[[RowParams, Board, Board, np.ndarray, np.ndarray], np.ndarray]
DistanceArrays = Callable[[RowParams, Board, np.ndarray], np.ndarray]

RULES: dict[str, tuple[SuccessArrays, DistanceArrays]] = {
    "go_to": (_go_to_success, _go_to_distance),
    "open": (_open_success, _open_distance),
    "pick_up": (_pick_up_success, _pick_up_distance),
    "put_next": (_put_next_success, _put_next_distance),
    "open_then_go_to": (_open_then_go_to_success, _open_then_go_to_distance),
    "open_then_pick_up": (_open_then_pick_up_success, _open_then_pick_up_distance),
    "go_to_wall_side": (_wall_side_success, _wall_side_distance),
    "go_to_centre": (_centre_success, _centre_distance),
    "unlock": (_unlock_success, _unlock_distance),
    "line": (_line_success, _line_distance),
    "pile": (_pile_success, _pile_distance),
}
"""Family name -> array versions of :data:`S.RULES`."""
NEEDS_GRID: frozenset[str] = frozenset({"line", "pile"})
"""Families whose distance needs every cell on the grid (:func:`on_grid`)."""


# ---------------------------------------------------------------------------- batch outcome
def advance_progress(progress: np.ndarray, ns: Board) -> np.ndarray:
    """:func:`S.advance_progress` of every row."""
    p = np.array(progress, dtype=np.float64, copy=True)
    p[:, S.P_STEPS] += 1.0
    for column, now in ((S.P_DOOR_OPENED, ns.door_state == L.DOOR_OPEN), (S.P_KEY_CARRIED, ns.held == KEY)):
        latch = now.astype(np.float64)
        p[:, column] = np.where(latch > p[:, column], latch, p[:, column])  # Python's max(old, new)
    return p


def readable_rows(states: np.ndarray) -> np.ndarray:
    """Rows the array code reads exactly as the per-row code does (finite, below :data:`INT_LIMIT`)."""
    with np.errstate(invalid="ignore"):
        return np.all(np.isfinite(states) & (np.abs(states) < INT_LIMIT), axis=1)


def outcome_arrays(
    tasks: Sequence[Task],
    states: np.ndarray,
    next_states: np.ndarray,
    progress: np.ndarray,
    default_horizon: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Success, reward and next progress of every row, and which rows were ``handled``.

    ``states``/``next_states`` are float64 ``(N, 17)``, ``progress`` float64 ``(N, 3)``.
    Rows with ``handled`` false hold placeholders; score them with the per-row function.
    """
    n = len(tasks)
    success = np.zeros(n, dtype=bool)
    reward = np.zeros(n, dtype=np.float64)
    handled = readable_rows(states) & readable_rows(next_states)
    s_all = Board.of(np.where(handled[:, None], states, 0.0))  # zeros stand in for unread rows
    ns_all = Board.of(np.where(handled[:, None], next_states, 0.0))
    next_progress = advance_progress(progress, ns_all)
    if n == 0:
        return success, reward, next_progress, handled
    params = RowParams.of(tasks, default_horizon)
    for code, family in enumerate(FAMILIES):
        rows = np.flatnonzero((params.family == code) & handled)
        if not len(rows):
            continue
        s, ns = s_all.take(rows), ns_all.take(rows)
        if family in NEEDS_GRID:
            fits = on_grid(s) & on_grid(ns)
            handled[rows[~fits]] = False
            rows, s, ns = rows[fits], s.take(np.flatnonzero(fits)), ns.take(np.flatnonzero(fits))
        t, p, np_ = params.take(rows), progress[rows], next_progress[rows]
        success_fn, distance_fn = RULES[family]
        ok = success_fn(t, s, ns, p, np_)
        before = distance_fn(t, s, p)
        after = np.where(ok, 0, distance_fn(t, ns, np_))
        shaping = S.SHAPING_SCALE * (before - after).astype(np.float64)
        bonus = S.SUCCESS_BONUS - S.SUCCESS_TIME_PENALTY * np_[:, S.P_STEPS] / t.horizon
        success[rows] = ok
        reward[rows] = shaping + np.where(ok, bonus, 0.0)
    return success, reward, next_progress, handled


# ---------------------------------------------------------------------------- legality
def legal_rows(states: np.ndarray) -> np.ndarray:
    """:func:`.legality.is_legal` of every row of a float64 ``(N, 17)`` array."""
    with np.errstate(invalid="ignore"):
        legal = np.all(np.isfinite(states) & (states == np.round(states)), axis=1)
    # Every entry of a legal state is small, so clipping keeps illegal rows illegal.
    values = np.clip(np.where(legal[:, None], states, 0.0), -INT_LIMIT // 2, INT_LIMIT // 2)
    b = Board.of(values)
    legal &= np.all((b.colour >= 0) & (b.colour < L.NUM_COLORS), axis=1)
    door = b.cell(DOOR)
    legal &= _is_door_cell(door)
    legal &= np.isin(b.door_state, (L.DOOR_OPEN, L.DOOR_CLOSED, L.DOOR_LOCKED))
    in_doorway = _same(b.agent, door) & (b.door_state == L.DOOR_OPEN)
    legal &= _interior(b.agent) | in_doorway
    code, carried_colour = values[:, L.CARRIED_TYPE], values[:, L.CARRIED_COLOR]
    carrying = b.held != NOTHING_HELD
    legal &= (code == L.NOTHING) | carrying
    legal &= (code != L.NOTHING) | (carried_colour == L.NO_COLOR)
    held = np.where(carrying, b.held, 0)
    legal &= ~carrying | ((carried_colour == b.pick(b.colour, held)) & _same(b.cell(held), b.agent))
    rows, cols = _object_rows_cols(b)
    on_floor = np.arange(len(L.OBJECT_TYPES))[None, :] != b.held[:, None]
    legal &= np.all(~on_floor | _interior((rows, cols)), axis=1)
    for i, j in ((0, 1), (0, 2), (1, 2)):
        shared = (rows[:, i] == rows[:, j]) & (cols[:, i] == cols[:, j])
        legal &= ~(on_floor[:, i] & on_floor[:, j] & shared)
    return legal


def _is_door_cell(door: Cell) -> np.ndarray:
    """The door's (row, col) is one of :data:`L.DOOR_CELLS` (a wall cell, not a corner)."""
    r, c = door
    inside = (r >= 0) & (r < L.ROOM_SIZE) & (c >= 0) & (c < L.ROOM_SIZE)
    return inside & _DOOR_GRID[np.where(inside, r, 0), np.where(inside, c, 0)]


_DOOR_GRID = np.zeros((L.ROOM_SIZE, L.ROOM_SIZE), dtype=bool)
_DOOR_GRID[tuple(np.array(L.DOOR_CELLS).T)] = True
