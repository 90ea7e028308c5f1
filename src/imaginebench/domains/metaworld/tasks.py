"""The MetaWorld-v0 tasks of every level, as data.

Each :class:`TaskSpec` names the success family and its threshold (:mod:`.success`), the
metaworld environment that provides the scene and the physics, the scene kind (which entity
slots it fills, :data:`~.layout.SCENE_ENTITIES`), the metaworld scripted policies the expert runs
stage by stage, and the episode horizon.

``Task.params`` holds what the instruction states: the ``object`` acted on and the ``motion``
asked of it (``push`` + ``puck``, ``open`` + ``window``, …) — the parameters the docs/benchmark.md §4
instruction probe checks an embedding conveys.  The success rule's thresholds, the scene and
the policies are implementation data of the task (:class:`TaskSpec`), looked up by name with
:func:`spec_of` / :func:`rule_of`; Meta-World's thresholds are not something an instruction says.

* ``train`` (shared with ``rephrase``): reach, push, pick-place, button-press, door-unlock,
  door-open, window-open, faucet-open, coffee-push, coffee-button.
* ``easy``: reach-wall, push-wall, pick-place-wall, button-press-wall, door-lock, door-close,
  window-close, faucet-close.
* ``hard``: make-coffee (coffee-push's scene: push the mug under the machine, then press the
  machine's button), locked-door-open (door-unlock's scene with the door leaf put on a hinge:
  unlock, then open), hammer, soccer.

Task names use underscores (``pick_place``); ``env_name`` keeps metaworld's name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from imaginebench.domains.base import Task

from imaginebench.domains.metaworld import instructions as text, success as S
from imaginebench.errors import choice_error

HORIZON = 100
"""Default episode length (docs/benchmark.md §3.3)."""
LONG_HORIZON = 150
"""Tasks whose scripted expert needs more than 100 steps in some episodes (door-open, pick-place-
wall, door-lock, soccer: longest of 50 expert episodes 107–129 steps; make-coffee 117; see
``notes/metaworld.md``)."""
LOCKED_DOOR_HORIZON = 300
"""locked-door-open chains unlock (~40 steps), a ~80-step transition and door-open (~85 steps):
longest of 50 expert episodes 245 steps."""

LOCKED_DOOR_ENV = "locked-door-open"
"""Name of the composite scene built on metaworld's door-unlock environment (see :mod:`.physics`)."""


@dataclass(frozen=True)
class TaskSpec:
    """One MetaWorld-v0 task, before its instruction banks are attached."""

    name: str
    level: str
    family: str
    env_name: str
    scene: str
    policies: tuple[str, ...]
    rule: Mapping[str, Any] = field(default_factory=dict)
    horizon: int = HORIZON
    motion: str = ""
    """What the instruction asks (``reach``, ``push``, ``open``, ...)."""
    object: str = ""
    """What it is done to, as the instruction names it (``puck``, ``door``, ...)."""

    def task(self) -> Task:
        return Task(
            name=self.name,
            family=self.family,
            level=self.level,
            params={"motion": self.motion, "object": self.object},
            instructions=text.train_bank(self.name),
            rephrasings=text.rephrase_bank(self.name) if self.level == "train" else (),
            horizon=self.horizon,
        )


INSTRUCTED: Mapping[str, tuple[str, str]] = MappingProxyType({
    "reach": ("reach", "goal"), "push": ("push", "puck"), "pick_place": ("pick and place", "puck"),
    "button_press": ("press", "button"), "door_unlock": ("unlock", "door"), "door_open": ("open", "door"),
    "window_open": ("open", "window"), "faucet_open": ("open", "faucet"), "coffee_push": ("push", "mug"),
    "coffee_button": ("press", "coffee machine"),
    "reach_wall": ("reach", "goal"), "push_wall": ("push", "puck"), "pick_place_wall": ("pick and place", "puck"),
    "button_press_wall": ("press", "button"), "door_lock": ("lock", "door"), "door_close": ("close", "door"),
    "window_close": ("close", "window"), "faucet_close": ("close", "faucet"),
    "make_coffee": ("push then press", "mug and coffee machine"), "locked_door_open": ("unlock then open", "door"),
    "hammer": ("hammer", "nail"), "soccer": ("kick", "ball"),
})
"""``(motion, object)`` of each task, as its instructions say them (``Task.params``)."""


def _spec(name: str, level: str, family: str, env_name: str, scene: str, rule: Mapping[str, Any],
          horizon: int = HORIZON, policies: tuple[str, ...] | None = None) -> TaskSpec:
    motion, obj = INSTRUCTED[name]
    return TaskSpec(name, level, family, env_name, scene, policies or (env_name,),
                    MappingProxyType(dict(rule)), horizon, motion, obj)


def _place(radius: float, slot: str = "task_object") -> dict[str, Any]:
    return {"slot": slot, "radius": radius}


TASK_SPECS: tuple[TaskSpec, ...] = (
    # train
    _spec("reach", "train", "reach", "reach-v3", "puck", {"radius": S.REACH_RADIUS}),
    _spec("push", "train", "place", "push-v3", "puck", _place(S.PUSH_RADIUS)),
    _spec("pick_place", "train", "place", "pick-place-v3", "puck", _place(S.PLACE_RADIUS)),
    _spec("button_press", "train", "button", "button-press-v3", "button", {"radius": S.BUTTON_RADIUS}),
    _spec("door_unlock", "train", "door_unlock", "door-unlock-v3", "door_lock", {"radius": S.LOCK_RADIUS}),
    _spec("door_open", "train", "door_open", "door-open-v3", "door", {"radius": S.DOOR_OPEN_RADIUS},
          LONG_HORIZON),
    _spec("window_open", "train", "window_open", "window-open-v3", "window", {"radius": S.WINDOW_RADIUS}),
    _spec("faucet_open", "train", "faucet_open", "faucet-open-v3", "faucet", {"radius": S.FAUCET_RADIUS}),
    _spec("coffee_push", "train", "place", "coffee-push-v3", "coffee", _place(S.PLACE_RADIUS)),
    _spec("coffee_button", "train", "coffee_button", "coffee-button-v3", "coffee",
          {"radius": S.COFFEE_BUTTON_RADIUS}),
    # easy
    _spec("reach_wall", "easy", "reach", "reach-wall-v3", "puck_wall", {"radius": S.REACH_RADIUS}),
    _spec("push_wall", "easy", "place", "push-wall-v3", "puck_wall", _place(S.PLACE_RADIUS)),
    _spec("pick_place_wall", "easy", "place", "pick-place-wall-v3", "puck_wall", _place(S.PLACE_RADIUS),
          LONG_HORIZON),
    _spec("button_press_wall", "easy", "button", "button-press-wall-v3", "button_wall",
          {"radius": S.BUTTON_WALL_RADIUS}),
    _spec("door_lock", "easy", "door_lock", "door-lock-v3", "door_lock", {"radius": S.LOCK_RADIUS},
          LONG_HORIZON),
    _spec("door_close", "easy", "door_close", "door-close-v3", "door", {"radius": S.DOOR_CLOSE_RADIUS}),
    _spec("window_close", "easy", "window_close", "window-close-v3", "window", {"radius": S.WINDOW_RADIUS}),
    _spec("faucet_close", "easy", "faucet_close", "faucet-close-v3", "faucet", {"radius": S.FAUCET_RADIUS}),
    # hard
    _spec("make_coffee", "hard", "make_coffee", "coffee-push-v3", "coffee",
          {"mug_radius": S.PLACE_RADIUS, "button_radius": S.COFFEE_BUTTON_RADIUS}, LONG_HORIZON,
          policies=("coffee-push-v3", "coffee-button-v3")),
    _spec("locked_door_open", "hard", "locked_door_open", LOCKED_DOOR_ENV, "locked_door",
          {"lock_radius": S.LOCK_RADIUS, "door_radius": S.DOOR_OPEN_RADIUS}, LOCKED_DOOR_HORIZON,
          policies=("door-unlock-v3", "door-open-v3")),
    _spec("hammer", "hard", "hammer", "hammer-v3", "hammer", {"depth": S.NAIL_DEPTH}),
    _spec("soccer", "hard", "place", "soccer-v3", "soccer", _place(S.PLACE_RADIUS, "soccer_ball"),
          LONG_HORIZON),
)
"""Every task of every level."""

SPECS: Mapping[str, TaskSpec] = MappingProxyType({spec.name: spec for spec in TASK_SPECS})


def spec_of(task: Task | str) -> TaskSpec:
    """The :class:`TaskSpec` of a MetaWorld-v0 task (by name)."""
    name = task if isinstance(task, str) else task.name
    if name not in SPECS:
        raise choice_error("MetaWorld-v0 task", name, sorted(SPECS))
    return SPECS[name]


def rule_of(task: Task | str) -> Mapping[str, Any]:
    """The success rule's parameters (thresholds, slot) of a task."""
    return spec_of(task).rule


def build_tasks() -> dict[str, tuple[Task, ...]]:
    """Tasks keyed by ``train``, ``easy`` and ``hard``."""
    out: dict[str, list[Task]] = {"train": [], "easy": [], "hard": []}
    for spec in TASK_SPECS:
        out[spec.level].append(spec.task())
    return {level: tuple(tasks) for level, tasks in out.items()}
