"""The BabyAI world: one 8×8 minigrid room with a ball, a box, a key and a door.

The world is built from minigrid's own ``Grid``, ``Wall``, ``Ball``, ``Box``, ``Key`` and
``Door`` objects (the door's open/close/unlock rule is minigrid's ``Door.toggle``).  The agent
is not a grid object: it is a ``(row, col)`` position, as in minigrid.

Movement rules (absolute actions, see :mod:`.layout`):

* a move steps onto the neighbouring cell if it is empty, holds a portable object (ball, box,
  key: the agent walks over objects, so it can stand on one and pick it up) or is an open
  door; walls and closed or locked doors block, and the agent then stays put;
* pick-up takes the object on the agent's cell if the agent's hands are empty;
* drop puts the carried object on the agent's cell if that cell is interior and holds no
  object (so nothing is ever dropped in the doorway);
* toggle acts on the door when the agent stands on the interior cell in front of it:
  a closed door opens, an open one closes, a locked one opens only if the agent carries a
  key of the door's colour (the key stays in hand).  Everything else is a no-op.

:meth:`BabyAIWorld.to_state` / :meth:`BabyAIWorld.from_state` convert to and from the
17-dim state vector described in :mod:`.layout`.
"""

from __future__ import annotations

import numpy as np
from minigrid.core.constants import COLOR_TO_IDX, IDX_TO_COLOR
from minigrid.core.grid import Grid
from minigrid.core.world_object import Ball, Box, Door, Key, WorldObj
from minigrid.utils.rendering import downsample

from imaginebench.domains.babyai import layout as L
from imaginebench.domains.babyai.legality import legality_errors

if tuple(IDX_TO_COLOR[i] for i in range(len(COLOR_TO_IDX))) != L.COLOR_NAMES:
    raise ImportError(
        f"minigrid's colour indices {COLOR_TO_IDX} differ from the BabyAI state layout's "
        f"{L.COLOR_NAMES}; install the pinned version: pip install 'imaginebench[babyai]'"
    )

_OBJECT_CLASSES = {"ball": Ball, "box": Box, "key": Key}

AGENT_DIR = 3
"""minigrid direction of the agent's triangle in pictures (3: pointing north); the agent has no heading."""
_DISPLAY_LOW = np.array([0, 0, 0] * 3 + [0, 0, 0, L.DOOR_OPEN, 0, 0, L.NOTHING, L.NO_COLOR], dtype=np.float64)
_DISPLAY_HIGH = np.array(
    [L.NUM_COLORS - 1, L.ROOM_SIZE - 1, L.ROOM_SIZE - 1] * 3
    + [L.NUM_COLORS - 1, L.ROOM_SIZE - 1, L.ROOM_SIZE - 1, L.DOOR_LOCKED, L.ROOM_SIZE - 1, L.ROOM_SIZE - 1,
       len(L.OBJECT_TYPES), L.NUM_COLORS - 1],
    dtype=np.float64,
)
"""Per-slot bounds a state is clamped to before it is drawn (colours, cells of the 8×8 grid, codes)."""


class BabyAIWorld:
    """A mutable room.  ``objects`` maps ``"ball"``/``"box"``/``"key"`` to minigrid objects."""

    def __init__(
        self,
        colors: dict[str, int],
        positions: dict[str, tuple[int, int]],
        door_color: int,
        door_pos: tuple[int, int],
        door_state: int,
        agent: tuple[int, int],
        carried: str | None = None,
    ) -> None:
        self.grid = Grid(L.ROOM_SIZE, L.ROOM_SIZE)
        self.grid.wall_rect(0, 0, L.ROOM_SIZE, L.ROOM_SIZE)
        self.door = Door(
            L.COLOR_NAMES[door_color],
            is_open=door_state == L.DOOR_OPEN,
            is_locked=door_state == L.DOOR_LOCKED,
        )
        self.door_pos = (int(door_pos[0]), int(door_pos[1]))
        self._put(self.door, self.door_pos)
        self.agent = (int(agent[0]), int(agent[1]))
        self.objects: dict[str, WorldObj] = {}
        self.carrying: WorldObj | None = None
        for name in L.OBJECT_TYPES:
            obj = _OBJECT_CLASSES[name](L.COLOR_NAMES[colors[name]])
            self.objects[name] = obj
            if name == carried:
                self.carrying = obj
            else:
                self._put(obj, positions[name])

    # ------------------------------------------------------------------ conversion
    @classmethod
    def from_state(cls, state: np.ndarray) -> BabyAIWorld:
        """Rebuild the world from a state vector; ``ValueError`` if the state is illegal."""
        s = np.asarray(state, dtype=np.float64).reshape(-1)
        errors = legality_errors(s)
        if errors:
            raise ValueError(f"Illegal BabyAI state {s.astype(int).tolist()}: {'; '.join(errors)}.")
        v = [int(x) for x in s]
        carried_code = v[L.CARRIED_TYPE]
        carried = L.OBJECT_TYPES[carried_code - 1] if carried_code != L.NOTHING else None
        colors = {name: v[L.OBJECT_SLOT[name]] for name in L.OBJECT_TYPES}
        positions = {name: (v[L.OBJECT_SLOT[name] + 1], v[L.OBJECT_SLOT[name] + 2]) for name in L.OBJECT_TYPES}
        return cls(
            colors,
            positions,
            door_color=v[L.DOOR_COLOR],
            door_pos=(v[L.DOOR_ROW], v[L.DOOR_COL]),
            door_state=v[L.DOOR_STATE],
            agent=(v[L.AGENT_ROW], v[L.AGENT_COL]),
            carried=carried,
        )

    def to_state(self) -> np.ndarray:
        """The 17-dim state vector (floats holding integers)."""
        s = np.empty(L.STATE_DIM, dtype=np.float64)
        for name, obj in self.objects.items():
            i = L.OBJECT_SLOT[name]
            row, col = self.agent if obj is self.carrying else (obj.cur_pos[1], obj.cur_pos[0])
            s[i], s[i + 1], s[i + 2] = COLOR_TO_IDX[obj.color], row, col
        s[L.DOOR_COLOR] = COLOR_TO_IDX[self.door.color]
        s[L.DOOR_ROW], s[L.DOOR_COL] = self.door_pos
        s[L.DOOR_STATE] = self.door.encode()[2]
        s[L.AGENT_ROW], s[L.AGENT_COL] = self.agent
        if self.carrying is None:
            s[L.CARRIED_TYPE], s[L.CARRIED_COLOR] = L.NOTHING, L.NO_COLOR
        else:
            s[L.CARRIED_TYPE] = L.CARRIED_CODE[self.carrying.type]
            s[L.CARRIED_COLOR] = COLOR_TO_IDX[self.carrying.color]
        return s

    # ------------------------------------------------------------------ dynamics
    def step(self, action: int) -> None:
        """Apply one action (see the module docstring for the rules)."""
        row, col = self.agent
        if action in L.MOVES:
            d_row, d_col = L.MOVES[action]
            nr, nc = row + d_row, col + d_col
            if self.walkable(nr, nc):
                self.agent = (nr, nc)
        elif action == L.PICKUP:
            cell = self.grid.get(col, row)
            if self.carrying is None and cell is not None and cell.can_pickup():
                self.carrying = cell
                self.grid.set(col, row, None)
                cell.cur_pos = None
        elif action == L.DROP:
            if self.carrying is not None and L.is_interior(row, col) and self.grid.get(col, row) is None:
                self._put(self.carrying, self.agent)
                self.carrying = None
        elif action == L.TOGGLE:
            dr, dc = self.door_pos
            if abs(dr - row) + abs(dc - col) == 1:
                # minigrid's rule; it reads ``env.carrying``, which this world provides.
                self.door.toggle(self, (dc, dr))
        else:
            raise ValueError(f"Unknown BabyAI action {action!r}; valid actions are 0..{L.NUM_ACTIONS - 1}.")

    def walkable(self, row: int, col: int) -> bool:
        """Whether the agent may stand on ``(row, col)``."""
        if not (0 <= row < L.ROOM_SIZE and 0 <= col < L.ROOM_SIZE):
            return False
        cell = self.grid.get(col, row)
        return cell is None or cell.can_pickup() or cell.can_overlap()

    def _put(self, obj: WorldObj, pos: tuple[int, int]) -> None:
        row, col = int(pos[0]), int(pos[1])
        self.grid.set(col, row, obj)
        obj.cur_pos = (col, row)
        obj.init_pos = obj.init_pos or (col, row)

    # ------------------------------------------------------------------ display
    @classmethod
    def for_display(cls, state: np.ndarray) -> BabyAIWorld:
        """A world to draw for any 17 finite numbers: a legal state gives exactly
        :meth:`from_state`'s world; an illegal one (an imagined state) is rounded and clamped
        slot by slot into the grid and the valid codes, and objects sharing a cell overwrite each
        other (door, then ball, box, key: the last wins)."""
        s = np.asarray(state, dtype=np.float64).reshape(-1)
        if s.shape != (L.STATE_DIM,) or not np.all(np.isfinite(s)):
            raise ValueError(f"Expected {L.STATE_DIM} finite numbers, got shape {s.shape}.")
        v = [int(x) for x in np.rint(np.clip(s, _DISPLAY_LOW, _DISPLAY_HIGH))]
        carried_code = v[L.CARRIED_TYPE]
        return cls(
            colors={name: v[L.OBJECT_SLOT[name]] for name in L.OBJECT_TYPES},
            positions={name: (v[L.OBJECT_SLOT[name] + 1], v[L.OBJECT_SLOT[name] + 2]) for name in L.OBJECT_TYPES},
            door_color=v[L.DOOR_COLOR],
            door_pos=(v[L.DOOR_ROW], v[L.DOOR_COL]),
            door_state=v[L.DOOR_STATE],
            agent=(v[L.AGENT_ROW], v[L.AGENT_COL]),
            carried=L.OBJECT_TYPES[carried_code - 1] if carried_code != L.NOTHING else None,
        )

    def render(self, tile_size: int = 32) -> np.ndarray:
        """An RGB image (``8·tile_size`` square, uint8) drawn by minigrid's ``Grid.render``.

        The agent is minigrid's red triangle, pointing north (:data:`AGENT_DIR`); a carried
        object is drawn small in the bottom-right quarter of the agent's cell.
        """
        row, col = self.agent
        image = self.grid.render(tile_size, agent_pos=(col, row), agent_dir=AGENT_DIR)
        inset = tile_size // 2
        if self.carrying is not None and inset > 0:
            subdivs = 3  # supersampling, as minigrid's tiles
            big = np.zeros((inset * subdivs, inset * subdivs, 3), dtype=np.uint8)
            self.carrying.render(big)
            small = downsample(big, subdivs)
            y0, x0 = (row + 1) * tile_size - inset, (col + 1) * tile_size - inset
            cell = image[y0:y0 + inset, x0:x0 + inset]
            drawn = small.any(axis=-1)
            cell[drawn] = small[drawn]
        return image

    def render_text(self) -> str:
        """ASCII picture: ``#`` wall, ``D``/``d``/``L`` door closed/open/locked, ``b`` ball,
        ``x`` box, ``k`` key, ``A`` agent (``A`` wins when the agent stands on an object)."""
        symbols = {"ball": "b", "box": "x", "key": "k"}
        rows = []
        for r in range(L.ROOM_SIZE):
            line = []
            for c in range(L.ROOM_SIZE):
                cell = self.grid.get(c, r)
                if (r, c) == self.agent:
                    ch = "A"
                elif cell is None:
                    ch = "."
                elif cell.type == "wall":
                    ch = "#"
                elif cell.type == "door":
                    ch = "L" if self.door.is_locked else ("d" if self.door.is_open else "D")
                else:
                    ch = symbols[cell.type]
                line.append(ch)
            rows.append("".join(line))
        held = f" carrying {self.carrying.color} {self.carrying.type}" if self.carrying else ""
        return "\n".join(rows) + held


def sample_world(
    rng: np.random.Generator,
    colors: dict[str, int | None] | None = None,
    door_color: int | None = None,
    door_state: int = L.DOOR_CLOSED,
) -> BabyAIWorld:
    """A random room: random colours (unless given), a random door cell on the wall (not a
    corner), the three objects on distinct interior cells and the agent on any interior cell
    (possibly on an object), hands empty."""
    colors = dict(colors or {})
    chosen = {name: int(rng.integers(L.NUM_COLORS)) if colors.get(name) is None else int(colors[name])
              for name in L.OBJECT_TYPES}
    d_color = int(rng.integers(L.NUM_COLORS)) if door_color is None else int(door_color)
    door_pos = L.DOOR_CELLS[int(rng.integers(len(L.DOOR_CELLS)))]
    cells = rng.choice(len(L.INTERIOR_CELLS), size=3, replace=False)
    positions = {name: L.INTERIOR_CELLS[int(i)] for name, i in zip(L.OBJECT_TYPES, cells)}
    agent = L.INTERIOR_CELLS[int(rng.integers(len(L.INTERIOR_CELLS)))]
    return BabyAIWorld(chosen, positions, d_color, door_pos, door_state, agent)
