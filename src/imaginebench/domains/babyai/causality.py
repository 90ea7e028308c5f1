"""Which BabyAI steps have no cause: pure functions of a rollout's states (and of its actions).

Legality (:mod:`.legality`) judges one state at a time.  Between two legal states the room still
allows only the changes its rules (:meth:`.grid.BabyAIWorld.step`) make in one step:

* **one thing per step**: the agent moves, or what it carries changes, or the door's state changes;
* a move is **one cell** (legality then says whether the agent may stand there);
* a **pick-up** takes the object lying on the agent's own cell; a **drop** leaves the carried object
  on the agent's cell; what is carried never turns into another object;
* the **door** changes state only with the agent beside it (one cell away), between open and closed,
  or from locked to open with the key of the door's colour in hand; nothing locks it;
* objects on the floor stay put; colours and the door's place never change.

:func:`uncaused_steps` checks these on the states alone (the honest filter's
``Domain.untouched_steps``); :func:`unpowered` asks, in addition, whether each step's action is the
one that makes its change (the move in that direction, pick-up, drop, toggle).  A step that changes
nothing passes both (a move into a wall, a pick-up with nothing there): the checks ask that every
imagined change has a cause, not that every action has its effect.

Every step of the 19,200 real ``small`` train episodes (160,826 steps) and of 3,000 random-policy
episodes in the simulator (180,000 steps) passes both (session 57; the random-policy check is a test).  Imagined
rollouts break them in two ways the per-state rules cannot see (notes/babyai.md, sessions 55–56): a
pick-up of an object one cell away, and a toggle of the door that also puts the object under the
agent in its hand.
"""

from __future__ import annotations

import numpy as np

from imaginebench.domains.babyai import layout as L

_FIXED = np.array([L.BALL_COLOR, L.BOX_COLOR, L.KEY_COLOR, L.DOOR_COLOR, L.DOOR_ROW, L.DOOR_COL])
"""Slots no step changes: the four colours and the door's cell."""
_MOVE_OF_DELTA: dict[tuple[int, int], int] = {delta: action for action, delta in L.MOVES.items()}


def _steps(states: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(before, after, finite)``: integer views of consecutive states, and which steps are finite."""
    s = np.asarray(states, dtype=np.float64)
    if s.ndim != 2 or s.shape[1] != L.STATE_DIM:
        raise ValueError(f"expected BabyAI states of shape (T+1, {L.STATE_DIM}), got {s.shape}.")
    finite = np.isfinite(s).all(axis=1)
    ints = np.rint(np.where(np.isfinite(s), s, 0.0)).astype(np.int64)
    return ints[:-1], ints[1:], finite[:-1] & finite[1:]


def uncaused_steps(states: np.ndarray) -> np.ndarray:
    """``(T,)`` bool over a rollout's ``(T+1, 17)`` states: which steps make a change no single
    BabyAI action can make (see the module docstring).  Non-finite steps count as uncaused."""
    s, n, finite = _steps(states)
    agent_before, agent_after = s[:, L.AGENT_ROW:L.AGENT_COL + 1], n[:, L.AGENT_ROW:L.AGENT_COL + 1]
    cells = np.abs(agent_after - agent_before).sum(axis=1)
    moved = cells > 0
    held, now_held = s[:, L.CARRIED_TYPE], n[:, L.CARRIED_TYPE]
    carry_changed = held != now_held
    door_changed = s[:, L.DOOR_STATE] != n[:, L.DOOR_STATE]

    bad = ~finite
    bad |= moved.astype(int) + carry_changed.astype(int) + door_changed.astype(int) > 1
    bad |= moved & (cells != 1)
    bad |= (s[:, _FIXED] != n[:, _FIXED]).any(axis=1)
    bad |= carry_changed & (held != L.NOTHING) & (now_held != L.NOTHING)  # one object turned into another

    for name in L.OBJECT_TYPES:
        code, i = L.CARRIED_CODE[name], L.OBJECT_SLOT[name]
        before, after = s[:, i + 1:i + 3], n[:, i + 1:i + 3]
        on_floor = (held != code) & (now_held != code)
        bad |= on_floor & (before != after).any(axis=1)  # a floor object moved
        picked = (held != code) & (now_held == code)
        bad |= picked & (before != agent_before).any(axis=1)  # picked up from another cell
        dropped = (held == code) & (now_held != code)
        bad |= dropped & (after != agent_after).any(axis=1)  # dropped elsewhere than under the agent

    beside_door = (np.abs(s[:, L.AGENT_ROW] - s[:, L.DOOR_ROW]) + np.abs(s[:, L.AGENT_COL] - s[:, L.DOOR_COL])) == 1
    was, now = s[:, L.DOOR_STATE], n[:, L.DOOR_STATE]
    has_key = (held == L.CARRIED_CODE["key"]) & (s[:, L.KEY_COLOR] == s[:, L.DOOR_COLOR])
    allowed = (((was == L.DOOR_OPEN) & (now == L.DOOR_CLOSED)) | ((was == L.DOOR_CLOSED) & (now == L.DOOR_OPEN))
               | ((was == L.DOOR_LOCKED) & (now == L.DOOR_OPEN) & has_key))
    bad |= door_changed & ~(beside_door & allowed)
    return bad


def unpowered(states: np.ndarray, actions: np.ndarray) -> bool:
    """Whether some step's change is not the one its action makes: the agent moves other than the
    action's direction, or picks up, drops or toggles the door under another action.  ``ValueError``
    when the shapes do not fit (``T+1`` states, ``T`` actions)."""
    s, n, _ = _steps(states)
    acts = np.asarray(actions).reshape(-1)
    if len(acts) != len(s):
        raise ValueError(f"expected {len(s)} actions for {len(s) + 1} states, got {len(acts)}.")
    if not np.all(np.isfinite(acts.astype(np.float64))):
        return True
    acts = np.rint(acts.astype(np.float64)).astype(np.int64)
    d_row = n[:, L.AGENT_ROW] - s[:, L.AGENT_ROW]
    d_col = n[:, L.AGENT_COL] - s[:, L.AGENT_COL]
    moved = (d_row != 0) | (d_col != 0)
    move_action = np.array([_MOVE_OF_DELTA.get((int(r), int(c)), -1) for r, c in zip(d_row, d_col)], np.int64)
    held, now_held = s[:, L.CARRIED_TYPE], n[:, L.CARRIED_TYPE]
    picked = (held == L.NOTHING) & (now_held != L.NOTHING)
    dropped = (held != L.NOTHING) & (now_held == L.NOTHING)
    toggled = s[:, L.DOOR_STATE] != n[:, L.DOOR_STATE]
    wrong = (moved & (acts != move_action)) | (picked & (acts != L.PICKUP)) | (dropped & (acts != L.DROP))
    wrong |= toggled & (acts != L.TOGGLE)
    return bool(wrong.any())
