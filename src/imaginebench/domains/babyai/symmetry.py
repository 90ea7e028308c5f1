"""The room's eight symmetries (rotations and reflections of the square), as maps on state
vectors and actions.

Why: the rollout language model overfits BabyAI's ``small`` real data (1,920 episodes; its
validation action cross-entropy rose while the training one fell).  The room is a square with
walls all round and the door in any non-corner wall cell, the moves are absolute (west, east,
north, south) and the train-level instructions name objects and colours, never directions.
So every rotation or reflection of a real episode — cells mapped, moves relabelled — is an
exact episode of the same task with the same instruction: eight times the data for free, and
no imagined physics.  The test checks each image against the simulator step by step.

A map acts on the row/col pairs of the ball, box, key, door and agent (a carried object's
row/col are the agent's cell, so they map the same way) and leaves colours, the door's state
and the carried record alone.  With ``last = ROOM_SIZE - 1`` (cells 0..7):

    identity, rot90, rot180, rot270, flip_cols (west<->east), flip_rows (north<->south),
    transpose (row<->col), anti_transpose
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from imaginebench.domains.babyai import layout as L

CellMap = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]

_LAST = L.ROOM_SIZE - 1
_CELL_PAIRS: tuple[tuple[int, int], ...] = (
    (L.BALL_ROW, L.BALL_COL), (L.BOX_ROW, L.BOX_COL), (L.KEY_ROW, L.KEY_COL),
    (L.DOOR_ROW, L.DOOR_COL), (L.AGENT_ROW, L.AGENT_COL),
)
"""(row index, col index) of every cell in the state vector."""

SYMMETRIES: dict[str, CellMap] = {
    "identity": lambda r, c: (r, c),
    "rot90": lambda r, c: (c, _LAST - r),
    "rot180": lambda r, c: (_LAST - r, _LAST - c),
    "rot270": lambda r, c: (_LAST - c, r),
    "flip_cols": lambda r, c: (r, _LAST - c),
    "flip_rows": lambda r, c: (_LAST - r, c),
    "transpose": lambda r, c: (c, r),
    "anti_transpose": lambda r, c: (_LAST - c, _LAST - r),
}
"""Name -> map of (row, col) arrays.  ``rot90`` turns the room a quarter clockwise."""
SYMMETRY_NAMES: tuple[str, ...] = tuple(SYMMETRIES)


def _move_table(name: str) -> np.ndarray:
    """Action -> its image under symmetry ``name`` (moves follow their direction vector)."""
    fn = SYMMETRIES[name]
    table = np.arange(L.NUM_ACTIONS)
    by_delta = {delta: a for a, delta in L.MOVES.items()}
    for action, (dr, dc) in L.MOVES.items():
        # the image of a step is the difference of the images of its two ends
        r0, c0 = fn(np.array(3), np.array(3))
        r1, c1 = fn(np.array(3 + dr), np.array(3 + dc))
        table[action] = by_delta[(int(r1 - r0), int(c1 - c0))]
    return table


_ACTION_TABLES: dict[str, np.ndarray] = {name: _move_table(name) for name in SYMMETRIES}


def transform_states(states: np.ndarray, name: str) -> np.ndarray:
    """Image of ``(..., 17)`` state vectors under symmetry ``name`` (a new array)."""
    fn = SYMMETRIES[name]
    out = np.array(states, copy=True)
    for ri, ci in _CELL_PAIRS:
        r, c = fn(np.array(out[..., ri]), np.array(out[..., ci]))  # copies: the maps may return an input
        out[..., ri], out[..., ci] = r, c
    return out


def transform_actions(actions: np.ndarray, name: str) -> np.ndarray:
    """Image of integer actions under symmetry ``name`` (pick up, drop, toggle stay)."""
    acts = np.asarray(actions)
    return _ACTION_TABLES[name][acts.astype(np.int64)].astype(acts.dtype)


def transform_episode(states: np.ndarray, actions: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A real episode's image: its states and actions mapped by symmetry ``name``."""
    return transform_states(states, name), transform_actions(actions, name)
