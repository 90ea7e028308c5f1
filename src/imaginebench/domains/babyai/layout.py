"""The BabyAI room geometry and the 17-dim state layout, as plain constants.

Kept apart from :mod:`.grid` (the minigrid simulator) so that the pure success, reward and
legality functions read state vectors without importing the simulator.

Coordinates are ``(row, col)`` with row 0 at the top (north) and col 0 at the left (west);
minigrid's ``Grid.get(i, j)`` takes ``(col, row)``.  The room is 8×8 cells: the outer ring
is wall (one of its non-corner cells is the door) and the 6×6 interior spans rows and
columns 1..6.

State vector (17 integers, stored as floats)::

    index  name          values
    0-2    ball_color,  ball_row,  ball_col      colour 0..5, row/col 1..6 (see below)
    3-5    box_color,   box_row,   box_col
    6-8    key_color,   key_row,   key_col
    9-12   door_color,  door_row,  door_col, door_state   state 0 open, 1 closed, 2 locked
    13-14  agent_row,   agent_col
    15-16  carried_type, carried_color       type 0 nothing, 1 ball, 2 box, 3 key;
                                             colour -1 when nothing is carried

A carried object's row/col are the agent's cell (it moves with the agent).  Colours use
minigrid's ``COLOR_TO_IDX``: 0 red, 1 green, 2 blue, 3 purple, 4 yellow, 5 grey.
"""

from __future__ import annotations

# ---------------------------------------------------------------- room geometry
ROOM_SIZE = 8
"""Cells per side, walls included."""
INTERIOR_MIN = 1
INTERIOR_MAX = ROOM_SIZE - 2
"""Interior rows/cols are ``INTERIOR_MIN..INTERIOR_MAX`` (1..6)."""
INTERIOR_CELLS: tuple[tuple[int, int], ...] = tuple(
    (r, c) for r in range(INTERIOR_MIN, INTERIOR_MAX + 1) for c in range(INTERIOR_MIN, INTERIOR_MAX + 1)
)
DOOR_CELLS: tuple[tuple[int, int], ...] = tuple(
    [(0, c) for c in range(1, ROOM_SIZE - 1)]
    + [(ROOM_SIZE - 1, c) for c in range(1, ROOM_SIZE - 1)]
    + [(r, 0) for r in range(1, ROOM_SIZE - 1)]
    + [(r, ROOM_SIZE - 1) for r in range(1, ROOM_SIZE - 1)]
)
"""Where the door may be: every wall cell except the four corners (24 cells)."""
WALL_SIDE_CELLS: frozenset[tuple[int, int]] = frozenset(
    (r, c) for r, c in INTERIOR_CELLS if r in (INTERIOR_MIN, INTERIOR_MAX) or c in (INTERIOR_MIN, INTERIOR_MAX)
)
"""Wall-side cells: the 20 interior cells that touch the outer wall."""
CENTRE_CELLS: tuple[tuple[int, int], ...] = ((3, 3), (3, 4), (4, 3), (4, 4))
"""The room centre: the 2×2 block of interior cells around the room's midpoint."""

# ---------------------------------------------------------------- colours and types
COLOR_NAMES: tuple[str, ...] = ("red", "green", "blue", "purple", "yellow", "grey")
"""Colour index -> name; identical to minigrid's ``COLOR_TO_IDX`` (checked in :mod:`.grid`)."""
NUM_COLORS = len(COLOR_NAMES)
OBJECT_TYPES: tuple[str, ...] = ("ball", "box", "key")
"""The three portable objects, in state-slot order."""
CARRIED_CODE: dict[str, int] = {"ball": 1, "box": 2, "key": 3}
"""Value of ``carried_type`` for each object; 0 means nothing is carried."""
NOTHING = 0
NO_COLOR = -1
"""``carried_color`` when nothing is carried."""
DOOR_OPEN, DOOR_CLOSED, DOOR_LOCKED = 0, 1, 2
"""Door states (minigrid's ``STATE_TO_IDX``)."""

# ---------------------------------------------------------------- state indices
STATE_DIM = 17
BALL_COLOR, BALL_ROW, BALL_COL = 0, 1, 2
BOX_COLOR, BOX_ROW, BOX_COL = 3, 4, 5
KEY_COLOR, KEY_ROW, KEY_COL = 6, 7, 8
DOOR_COLOR, DOOR_ROW, DOOR_COL, DOOR_STATE = 9, 10, 11, 12
AGENT_ROW, AGENT_COL = 13, 14
CARRIED_TYPE, CARRIED_COLOR = 15, 16

OBJECT_SLOT: dict[str, int] = {"ball": BALL_COLOR, "box": BOX_COLOR, "key": KEY_COLOR}
"""Index of an object's colour; its row and column follow at +1 and +2."""

STATE_LAYOUT: tuple[str, ...] = (
    "ball_color", "ball_row", "ball_col",
    "box_color", "box_row", "box_col",
    "key_color", "key_row", "key_col",
    "door_color", "door_row", "door_col", "door_state",
    "agent_row", "agent_col",
    "carried_type", "carried_color",
)

# ---------------------------------------------------------------- actions
WEST, EAST, NORTH, SOUTH, PICKUP, DROP, TOGGLE = range(7)
ACTION_NAMES: tuple[str, ...] = ("west", "east", "north", "south", "pickup", "drop", "toggle")
NUM_ACTIONS = len(ACTION_NAMES)
MOVES: dict[int, tuple[int, int]] = {WEST: (0, -1), EAST: (0, 1), NORTH: (-1, 0), SOUTH: (1, 0)}
"""(d_row, d_col) of each move action."""


def is_interior(row: int, col: int) -> bool:
    return INTERIOR_MIN <= row <= INTERIOR_MAX and INTERIOR_MIN <= col <= INTERIOR_MAX


def door_front(door_row: int, door_col: int) -> tuple[int, int]:
    """The single interior cell 4-adjacent to a door at ``(door_row, door_col)``."""
    if door_row == 0:
        return 1, door_col
    if door_row == ROOM_SIZE - 1:
        return ROOM_SIZE - 2, door_col
    if door_col == 0:
        return door_row, 1
    return door_row, ROOM_SIZE - 2
