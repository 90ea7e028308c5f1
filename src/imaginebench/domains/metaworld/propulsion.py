"""Meta-World's propulsion check: does the imagined hand go where the imagined actions send it?

The Sawyer arm is position-controlled: each action's first three numbers move the hand by about
``HAND_GAIN · a`` metres (+ ``HAND_BIAS``), measured on the real train data (a per-axis least-squares
fit, :func:`fit_hand_gain`).  Imagined rollouts move the hand 5–30 cm away from where their own
actions take it within ten steps (notes/metaworld_imagination.md, session 23), so a policy that
imitates those actions does not reproduce the motion.  :func:`unpowered` replays a rollout's first
:data:`WINDOW` actions through that linear model from its initial hand position and compares the
path with the imagined one; :data:`MAX_GAP` is the largest gap of the real train episodes + 2 cm,
and every real expert episode of every level passes.  A pure function of states and actions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from imaginebench.domains.metaworld import layout as L

WINDOW = 10
"""Actions replayed from the rollout's initial state."""
HAND_GAIN = np.array([0.007358220591123358, 0.0063547578237059255, 0.006835082272471481])
"""Metres of hand motion per unit of action, per axis (fit on the ``small`` real train data,
sha256 ``f196330f…``, 2,000 episodes)."""
HAND_BIAS = np.array([-0.00018119520170615058, 0.0010202025451059573, -0.00012750941841582568])
MAX_GAP = 0.0759
"""Metres: the largest gap between imagined and replayed hand path in the window allowed (real
train episodes: at most 0.056; + 2 cm)."""


def hand_gap(states: np.ndarray, actions: np.ndarray) -> float:
    """Largest distance, over the first :data:`WINDOW` steps, between the rollout's hand and
    where its actions move the hand from its initial position under the linear model."""
    s = np.asarray(states, np.float64)[:, L.HAND]
    a = np.asarray(actions, np.float64)[:WINDOW, :3]
    if len(a) == 0:
        return 0.0
    replayed = np.cumsum(a * HAND_GAIN + HAND_BIAS, axis=0)
    return float(np.linalg.norm((s[1:len(a) + 1] - s[0]) - replayed, axis=1).max())


def unpowered(states: np.ndarray, actions: np.ndarray) -> bool:
    """Whether the imagined hand strays more than :data:`MAX_GAP` from its actions' path."""
    gap = hand_gap(states, actions)
    return not np.isfinite(gap) or gap > MAX_GAP


def fit_hand_gain(episodes: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per-axis least squares of the hand's next displacement on the action: (gain, bias)."""
    acts = np.concatenate([np.asarray(e.actions, np.float64)[:, :3] for e in episodes])
    moves = np.concatenate([np.diff(np.asarray(e.states, np.float64)[:, L.HAND], axis=0) for e in episodes])
    gain, bias = np.zeros(3), np.zeros(3)
    for k in range(3):
        x = np.stack([acts[:, k], np.ones(len(acts))], axis=1)
        (gain[k], bias[k]), *_ = np.linalg.lstsq(x, moves[:, k], rcond=None)
    return gain, bias
