"""The LIBERO-v0 tasks of every level, as data.

* ``train`` (shared with ``rephrase``): pick X; place X in the basket (the episode starts with
  X already grasped and lifted) — X ∈ {alphabet soup, cream cheese, salad dressing}.
* ``easy``: pick-and-place X into the basket (X starts on the floor); place X next to Y (6
  ordered pairs); reach X.
* ``hard``: sequential pick-and-place of two objects (the three pairs, in the named order) and of
  all three; pick-and-place X aside; take the salad dressing out of the basket (the episode
  starts with it resting in the basket; only the bottle can be grasped there:
  :data:`OUT_OF_BASKET_OBJECTS`).

``Task.params`` holds what the instruction states: ``motion``, ``objects`` (the named objects in
the order the instruction names them) and ``reference`` (the second object of *next to*).
How an episode starts (:data:`START_KINDS`) is implementation data of the task, looked up with
:func:`start_of`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from imaginebench.domains.base import Task

from imaginebench.domains.libero import instructions as text
from imaginebench.domains.libero.layout import OBJECTS
from imaginebench.errors import choice_error

HORIZON = 300
"""Default episode length."""
HORIZONS: Mapping[str, int] = MappingProxyType({
    "reach": 100, "pick": 120, "place": 120, "pick_place": 250, "next_to": 250, "aside": 250,
    "out_of_basket": 250, "sequential": 400, "sequential_all": 500,
})
"""Episode length per family: about twice the scripted expert's longest successful episode over
20 per task (reach 36 steps, pick 54, place 65, pick-and-place 130, next-to 117, aside 100, out of
the basket 114, two objects 259), capped at 500 (docs/benchmark.md §3.4) for all three objects (expert episodes
up to ~370 steps); ``notes/libero.md`` has the calibration table."""

START_KINDS = ("floor", "held", "basket")
"""``floor``: every object in its start region; ``held``: the task's object grasped and lifted by
the scripted expert from such a layout; ``basket``: the task's object resting in the basket."""

OUT_OF_BASKET_OBJECTS: tuple[str, ...] = ("salad_dressing",)
"""Objects that can be taken out of the basket.  The Panda's palm (0.2 long along the finger axis,
0.063 across) cannot enter the basket (inside 0.124 × 0.134), so with the palm on the rim the finger
tips reach down to 0.10 above the floor: the bottle's neck (top at 0.16 when it stands in the
basket) is within reach, the soup can's top (0.09) and the cheese box (0.03) are not.  A top-down
grasp cannot take those two out; see ``notes/libero.md``."""

SHORT: Mapping[str, str] = MappingProxyType({
    "alphabet_soup": "soup", "cream_cheese": "cheese", "salad_dressing": "dressing",
})


@dataclass(frozen=True)
class TaskSpec:
    """One LIBERO-v0 task, before its instruction banks are attached."""

    name: str
    level: str
    family: str
    objects: tuple[str, ...]
    reference: str = ""
    start: str = "floor"
    horizon: int = HORIZON

    def task(self) -> Task:
        return Task(
            name=self.name,
            family=self.family,
            level=self.level,
            params={"motion": self.family, "objects": self.objects, "reference": self.reference},
            instructions=text.train_bank(self.family, self.objects + ((self.reference,) if self.reference else ())),
            rephrasings=text.rephrase_bank(self.family, self.objects) if self.level == "train" else (),
            horizon=self.horizon,
        )


def _specs() -> tuple[TaskSpec, ...]:
    out: list[TaskSpec] = []
    for o in OBJECTS:
        out.append(TaskSpec(f"pick_{SHORT[o]}", "train", "pick", (o,), horizon=HORIZONS["pick"]))
    for o in OBJECTS:
        out.append(TaskSpec(f"place_{SHORT[o]}", "train", "place", (o,), start="held", horizon=HORIZONS["place"]))
    for o in OBJECTS:
        out.append(TaskSpec(f"pick_place_{SHORT[o]}", "easy", "pick_place", (o,), horizon=HORIZONS["pick_place"]))
    for o in OBJECTS:
        for r in OBJECTS:
            if r != o:
                out.append(TaskSpec(f"place_{SHORT[o]}_next_to_{SHORT[r]}", "easy", "next_to", (o,), reference=r,
                                    horizon=HORIZONS["next_to"]))
    for o in OBJECTS:
        out.append(TaskSpec(f"reach_{SHORT[o]}", "easy", "reach", (o,), horizon=HORIZONS["reach"]))
    for i, a in enumerate(OBJECTS):
        for b in OBJECTS[i + 1:]:
            out.append(TaskSpec(f"basket_{SHORT[a]}_then_{SHORT[b]}", "hard", "sequential", (a, b),
                                horizon=HORIZONS["sequential"]))
    out.append(TaskSpec("basket_all", "hard", "sequential", OBJECTS, horizon=HORIZONS["sequential_all"]))
    for o in OBJECTS:
        out.append(TaskSpec(f"aside_{SHORT[o]}", "hard", "aside", (o,), horizon=HORIZONS["aside"]))
    for o in OUT_OF_BASKET_OBJECTS:
        out.append(TaskSpec(f"out_of_basket_{SHORT[o]}", "hard", "out_of_basket", (o,), start="basket",
                            horizon=HORIZONS["out_of_basket"]))
    return tuple(out)


TASK_SPECS: tuple[TaskSpec, ...] = _specs()
"""Every task of every level."""
SPECS: Mapping[str, TaskSpec] = MappingProxyType({spec.name: spec for spec in TASK_SPECS})


def spec_of(task: Task | str) -> TaskSpec:
    """The :class:`TaskSpec` of a LIBERO-v0 task (by name)."""
    name = task if isinstance(task, str) else task.name
    if name not in SPECS:
        raise choice_error("LIBERO-v0 task", name, sorted(SPECS))
    return SPECS[name]


def start_of(task: Task | str) -> str:
    """How an episode of ``task`` starts (one of :data:`START_KINDS`)."""
    return spec_of(task).start


def build_tasks() -> dict[str, tuple[Task, ...]]:
    """Tasks keyed by ``train``, ``easy`` and ``hard``."""
    out: dict[str, list[Task]] = {"train": [], "easy": [], "hard": []}
    for spec in TASK_SPECS:
        out[spec.level].append(spec.task())
    return {level: tuple(tasks) for level, tasks in out.items()}
