"""CLEVR-Robot's state and action layout: the numbers the pure success functions read.

Kept apart from :mod:`.physics` so that success, reward and legality import no simulator.

State layout (10 floats, the ball order is :data:`COLOURS`)::

    [red_x, red_y, blue_x, blue_y, green_x, green_y, purple_x, purple_y, cyan_x, cyan_y]

Axes: +x is "right", -x "left", +y "behind", -y "front".
"""

from __future__ import annotations

import math

import numpy as np

COLOURS: tuple[str, ...] = ("red", "blue", "green", "purple", "cyan")
"""Ball order in the state vector and in the action index."""
N_BALLS = len(COLOURS)

DIRECTION_NAMES: tuple[str, ...] = (
    "right", "right-behind", "behind", "left-behind", "left", "left-front", "front", "right-front",
)
"""Push directions by index: 0 is +x (right), then counter-clockwise in steps of 45 degrees."""
N_DIRECTIONS = len(DIRECTION_NAMES)
DIRECTION_ANGLES = np.arange(N_DIRECTIONS) * (math.pi / 4)
DIRECTIONS = np.stack([np.cos(DIRECTION_ANGLES), np.sin(DIRECTION_ANGLES)], axis=1)
"""Unit vector of each push direction, shape ``(8, 2)``; row ``k`` is at ``45 * k`` degrees."""
N_ACTIONS = N_BALLS * N_DIRECTIONS
"""Action ``a`` pushes ball ``a // 8`` in direction ``a % 8`` (see :func:`decode_action`)."""

TABLE_X = (-0.5, 0.5)
"""Range of ball centres in x (the walls' inner faces are one radius further out)."""
TABLE_Y = (-0.3, 0.57)
"""Range of ball centres in y."""
BALL_RADIUS = 0.05


def decode_action(action: int) -> tuple[int, int]:
    """``(ball index, direction index)`` of a discrete action."""
    action = int(action)
    if not 0 <= action < N_ACTIONS:
        raise ValueError(f"Action {action} out of range: valid actions are 0..{N_ACTIONS - 1}.")
    return divmod(action, N_DIRECTIONS)


def encode_action(ball: int, direction: int) -> int:
    """The discrete action that pushes ``ball`` in ``direction``."""
    return int(ball) * N_DIRECTIONS + int(direction)


def positions(state: np.ndarray) -> np.ndarray:
    """Ball centres of a state vector as a ``(5, 2)`` array (row = ball, column = x, y)."""
    return np.asarray(state, dtype=np.float64).reshape(N_BALLS, 2)
