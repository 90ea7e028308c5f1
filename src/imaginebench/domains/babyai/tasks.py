"""The BabyAI tasks of every level, as data.

Tasks are parameterised by object type *and colour* (minigrid's six colours): the instruction
names the colour, and the episode's reset gives the named object that colour, so every
instruction string is true of the state it is paired with.  Colours of objects an instruction
does not name are random.

=========  =================================  ====================================  =====
level      family                             parameters                            tasks
=========  =================================  ====================================  =====
train      ``go_to``: go to X                 X ∈ ball, box, key, door × 6 colours     24
train      ``open``: open the door            door colour                              6
train      ``pick_up``: pick up X             X ∈ ball, box, key × 6 colours          18
train      ``put_next``: put X next to Y      ordered pairs X≠Y × 6 × 6 colours      216
easy       ``open_then_go_to``                X ∈ ball, box, key × 6 colours          18
easy       ``open_then_pick_up``              X ∈ ball, box, key × 6 colours          18
easy       ``go_to_wall_side``                –                                        1
easy       ``go_to_centre``                   –                                        1
hard       ``unlock``: key, then locked door  key and door colour                      6
hard       ``line``: three objects in a line  –                                        1
hard       ``pile``: three objects in a pile  –                                        1
=========  =================================  ====================================  =====

The door starts closed, except in ``unlock`` tasks where it starts locked and the key has the
door's colour.  Success rules: :mod:`.success`; phrasings: :mod:`.instructions`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import permutations
from typing import Any

from imaginebench.domains.babyai import instructions as I
from imaginebench.domains.babyai import layout as L
from imaginebench.domains.base import Task


@dataclass(frozen=True)
class Scene:
    """What an episode's reset must respect for a task (``None``: random)."""

    colors: Mapping[str, int | None]
    door_color: int | None
    door_state: int


def _task(name: str, family: str, level: str, params: dict[str, Any]) -> Task:
    if level == "train":
        bank, rephrase = I.TRAIN[family], I.REPHRASE[family]
    else:
        bank, rephrase = (I.EASY if level == "easy" else I.HARD)[family], ()
    return Task(
        name=name,
        family=family,
        level=level,
        params=params,
        instructions=tuple(I.render(t, params) for t in bank),
        rephrasings=tuple(I.render(t, params) for t in rephrase),
    )


def build_tasks() -> dict[str, list[Task]]:
    """Tasks keyed by level (``train``, ``easy``, ``hard``)."""
    colors = L.COLOR_NAMES
    train: list[Task] = []
    for obj in (*L.OBJECT_TYPES, "door"):
        for c in colors:
            train.append(_task(f"go_to_{c}_{obj}", "go_to", "train", {"object": obj, "color": c}))
    for c in colors:
        train.append(_task(f"open_{c}_door", "open", "train", {"color": c}))
    for obj in L.OBJECT_TYPES:
        for c in colors:
            train.append(_task(f"pick_up_{c}_{obj}", "pick_up", "train", {"object": obj, "color": c}))
    for x, y in permutations(L.OBJECT_TYPES, 2):
        for cx in colors:
            for cy in colors:
                params = {"object": x, "color": cx, "target": y, "target_color": cy}
                train.append(_task(f"put_{cx}_{x}_next_to_{cy}_{y}", "put_next", "train", params))

    easy: list[Task] = []
    for family, verb in (("open_then_go_to", "go_to"), ("open_then_pick_up", "pick_up")):
        for obj in L.OBJECT_TYPES:
            for c in colors:
                easy.append(_task(f"open_door_then_{verb}_{c}_{obj}", family, "easy", {"object": obj, "color": c}))
    easy.append(_task("go_to_wall_side", "go_to_wall_side", "easy", {}))
    easy.append(_task("go_to_centre", "go_to_centre", "easy", {}))

    hard: list[Task] = [_task(f"unlock_{c}_door", "unlock", "hard", {"color": c}) for c in colors]
    hard.append(_task("put_objects_in_line", "line", "hard", {}))
    hard.append(_task("put_objects_in_pile", "pile", "hard", {}))
    return {"train": train, "easy": easy, "hard": hard}


def scene(task: Task) -> Scene:
    """The colours and door state an episode of ``task`` starts with."""
    p = task.params
    index = {name: i for i, name in enumerate(L.COLOR_NAMES)}
    colors: dict[str, int | None] = {name: None for name in L.OBJECT_TYPES}
    door_color: int | None = None
    door_state = L.DOOR_CLOSED
    if task.family == "unlock":
        door_color = index[p["color"]]
        colors["key"] = door_color
        door_state = L.DOOR_LOCKED
    elif task.family == "open":
        door_color = index[p["color"]]
    elif "object" in p:
        if p["object"] == "door":
            door_color = index[p["color"]]
        else:
            colors[p["object"]] = index[p["color"]]
        if "target" in p:
            colors[p["target"]] = index[p["target_color"]]
    return Scene(colors=colors, door_color=door_color, door_state=door_state)
