"""Relational facts of BabyAI states: which integer cells coincide or touch.

The rollout model embeds a state with one linear map.  "The agent stands on the box" is the
*equality* of two pairs of integer entries, which no linear map of the state can express, yet
the simulator's pick-up acts only on the agent's own cell (:mod:`.grid`).  In the 19,200 real
episodes all 17,010 pick-ups happen there; session 54's rollout model picked up from a
neighbouring cell in 69% of its kept rephrase rollouts (``notes/babyai.md``, session 55).
These facts are pure functions of the state; the rollout model may add them to its state
embedding (``imagine train --relations``).  They are inputs only: nothing is predicted from them.
"""

from __future__ import annotations

import numpy as np

from imaginebench.domains.babyai import layout as L

_PAIRS = (("ball", "box"), ("ball", "key"), ("box", "key"))

RELATION_NAMES: tuple[str, ...] = (
    *(f"agent_on_{o}" for o in L.OBJECT_TYPES),
    *(f"agent_beside_{o}" for o in L.OBJECT_TYPES),
    "agent_at_door_front",
    "agent_in_doorway",
    *(f"{a}_beside_{b}" for a, b in _PAIRS),
    *(f"carrying_{o}" for o in L.OBJECT_TYPES),
)
"""Names of the columns :func:`relation_features` returns, in order ("beside": 4-adjacent)."""


def relation_features(states: np.ndarray) -> np.ndarray:
    """``(..., 17)`` states -> ``(..., len(RELATION_NAMES))`` float32 0/1 facts (entries rounded)."""
    s = np.rint(np.asarray(states, dtype=np.float64))
    if s.shape[-1] != L.STATE_DIM:
        raise ValueError(f"BabyAI states have {L.STATE_DIM} entries, got shape {s.shape}.")
    agent = (s[..., L.AGENT_ROW], s[..., L.AGENT_COL])
    cell = {o: (s[..., L.OBJECT_SLOT[o] + 1], s[..., L.OBJECT_SLOT[o] + 2]) for o in L.OBJECT_TYPES}
    door = (s[..., L.DOOR_ROW], s[..., L.DOOR_COL])
    # the interior cell in front of a wall cell (never a corner): clamp both coordinates into the interior
    front = (np.clip(door[0], L.INTERIOR_MIN, L.INTERIOR_MAX), np.clip(door[1], L.INTERIOR_MIN, L.INTERIOR_MAX))

    def same(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        return (a[0] == b[0]) & (a[1] == b[1])

    def beside(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        return np.abs(a[0] - b[0]) + np.abs(a[1] - b[1]) == 1

    columns = [
        *(same(agent, cell[o]) for o in L.OBJECT_TYPES),
        *(beside(agent, cell[o]) for o in L.OBJECT_TYPES),
        same(agent, front),
        same(agent, door),
        *(beside(cell[a], cell[b]) for a, b in _PAIRS),
        *(s[..., L.CARRIED_TYPE] == L.CARRIED_CODE[o] for o in L.OBJECT_TYPES),
    ]
    return np.stack(columns, axis=-1).astype(np.float32)
