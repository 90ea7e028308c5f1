"""Physical validity of a BabyAI state vector (pure; used by ``is_legal`` and ``set_state``).

A state is legal when:

* it has 17 finite values, every one an integer;
* every colour is a minigrid colour index (0..5) and the door state is 0, 1 or 2;
* the door is on the outer wall, not in a corner;
* the agent is on an interior cell, or in the doorway when the door is open;
* ``carried_type`` is 0..3; with 0 the carried colour is -1, otherwise it equals the carried
  object's colour and that object's row/col are the agent's cell;
* every object that is not carried lies on an interior cell, and no two of them share a cell
  (a carried object may be above a floor object, and the agent may stand on one).
"""

from __future__ import annotations

import numpy as np

from imaginebench.domains.babyai import layout as L


def legality_errors(state: np.ndarray) -> list[str]:
    """Every reason ``state`` is not a valid BabyAI state (empty list: legal)."""
    s = np.asarray(state, dtype=np.float64).reshape(-1)
    if s.shape != (L.STATE_DIM,):
        return [f"expected {L.STATE_DIM} values, got {s.size}"]
    if not np.all(np.isfinite(s)):
        return ["non-finite values"]
    if not np.all(s == np.round(s)):
        bad = [L.STATE_LAYOUT[i] for i in np.flatnonzero(s != np.round(s))]
        return [f"non-integer values in {', '.join(bad)}"]
    v = [int(x) for x in s]
    errors: list[str] = []

    for name in ("ball", "box", "key", "door"):
        i = L.DOOR_COLOR if name == "door" else L.OBJECT_SLOT[name]
        if not 0 <= v[i] < L.NUM_COLORS:
            errors.append(f"{name} colour {v[i]} not in 0..{L.NUM_COLORS - 1}")

    door = (v[L.DOOR_ROW], v[L.DOOR_COL])
    door_state = v[L.DOOR_STATE]
    if door not in L.DOOR_CELLS:
        errors.append(f"door at {door} is not a non-corner wall cell")
    if door_state not in (L.DOOR_OPEN, L.DOOR_CLOSED, L.DOOR_LOCKED):
        errors.append(f"door state {door_state} not in 0 (open), 1 (closed), 2 (locked)")

    agent = (v[L.AGENT_ROW], v[L.AGENT_COL])
    in_doorway = agent == door and door_state == L.DOOR_OPEN
    if not (L.is_interior(*agent) or in_doorway):
        errors.append(f"agent at {agent} is neither inside the room nor in an open doorway")

    carried_code, carried_color = v[L.CARRIED_TYPE], v[L.CARRIED_COLOR]
    carried: str | None = None
    if carried_code == L.NOTHING:
        if carried_color != L.NO_COLOR:
            errors.append(f"nothing carried but carried colour is {carried_color} (expected {L.NO_COLOR})")
    elif 1 <= carried_code <= len(L.OBJECT_TYPES):
        carried = L.OBJECT_TYPES[carried_code - 1]
        i = L.OBJECT_SLOT[carried]
        if carried_color != v[i]:
            errors.append(f"carried colour {carried_color} differs from the {carried}'s colour {v[i]}")
        if (v[i + 1], v[i + 2]) != agent:
            errors.append(f"carried {carried} at {(v[i + 1], v[i + 2])}, not at the agent's cell {agent}")
    else:
        errors.append(f"carried type {carried_code} not in 0 (nothing), 1 (ball), 2 (box), 3 (key)")

    seen: dict[tuple[int, int], str] = {}
    for name in L.OBJECT_TYPES:
        if name == carried:
            continue
        i = L.OBJECT_SLOT[name]
        pos = (v[i + 1], v[i + 2])
        if not L.is_interior(*pos):
            errors.append(f"{name} at {pos} is not on an interior cell")
        if pos in seen:
            errors.append(f"{seen[pos]} and {name} share cell {pos}")
        seen[pos] = name
    return errors


def is_legal(state: np.ndarray) -> bool:
    """Whether ``state`` is a valid BabyAI state."""
    return not legality_errors(state)
