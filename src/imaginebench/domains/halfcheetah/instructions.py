"""Instruction banks of HalfCheetah-v0.

Every task owns a small lexicon: ``acts`` — plain imperative phrases ("run forward", "hop on
the spot") — and, for train tasks, rephrase material: ``rephrase_acts`` (imperatives worded
differently and addressed to the robot, never used in the train bank), ``result`` (an
infinitive clause, "the cheetah robot to go galloping off ahead") and ``state`` (a finite
clause, "the half-cheetah were jogging onward down the track").

* train bank (the real data): every act in each of :data:`TRAIN_FRAMES` (80 phrasings);
* rephrase bank (held out): :data:`REPHRASE_FRAMES` — conversational, indirect and playful
  wordings built from the rephrase material only, so no rephrase string can be a train string
  (25 phrasings);
* easy / hard banks: the novel tasks' own acts in :data:`TRAIN_FRAMES` (their acts name what is
  new — the speed, the turn-around, staying in place — so no string coincides with a train
  task's).

The frames name no direction, gait, speed or place, so the meaning of a phrasing is carried by
its act alone.  The acts keep the direction words unambiguous (the original benchmark swapped
the jump-forward and jump-backward instructions): forward tasks say forward/forwards/ahead/
onward and never back/backward/reverse, backward tasks the mirror, ``jump_in_place`` names no
direction but a place ("in place", "on the spot"), and the then-tasks name the first direction
before the second.  Run tasks name no jump, jump tasks no run, and only the faster tasks name a
speed.  The tests check all of this, and the disjointness of the banks.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from imaginebench.errors import choice_error

TRAIN_TASKS: tuple[str, ...] = ("run_forward", "run_backward", "jump_forward", "jump_backward")
"""Tasks with real data (also the tasks of the rephrase level)."""
EASY_TASKS: tuple[str, ...] = ("run_forward_faster", "run_backward_faster")
"""Novel tasks of the easy level."""
HARD_TASKS: tuple[str, ...] = ("run_forward_then_backward", "run_backward_then_forward", "jump_in_place")
"""Novel tasks of the hard level."""
TASKS: tuple[str, ...] = TRAIN_TASKS + EASY_TASKS + HARD_TASKS
"""Every task, train first."""

TRAIN_FRAMES: tuple[str, ...] = (
    "{act}",
    "please {act}",
    "half-cheetah, {act}",
    "your task is to {act}",
    "the goal is to {act}",
    "make the cheetah robot {act}",
    "get the half-cheetah to {act}",
    "use your legs to {act}",
    "you are the half-cheetah: {act}",
    "in this episode, {act}",
)
"""Plain frames of the train, easy and hard banks."""

REPHRASE_FRAMES: tuple[str, ...] = (
    "hey there, could you {act}?",
    "come on, {act}!",
    "do me a favour and {act}, would you?",
    "I'd be grateful if you would {act}",
    "alright runner, whenever you're ready, {act}",
    "what I really want is for {result}",
    "is there any way for {result}?",
    "it's time for {result}, don't you think?",
    "wouldn't it be fun if {state}?",
    "I'd be over the moon if {state}",
)
"""Held-out frames of the rephrase level (``{act}`` comes from ``rephrase_acts``)."""

_LEXICON: dict[str, dict[str, tuple[str, ...] | str]] = {
    # ------------------------------------------------------------------ train
    "run_forward": {
        "acts": ("run forward", "run forwards", "run ahead", "move forward at a steady run", "gallop forward",
                 "run in the forward direction", "keep running forward", "jog ahead along the track"),
        "rephrase_acts": ("go for a nice run straight ahead", "get those legs galloping onward",
                          "trot along forwards, nose leading the way", "head off ahead at a relaxed jog"),
        "result": "the cheetah robot to go galloping off ahead",
        "state": "the half-cheetah were jogging onward down the track",
    },
    "run_backward": {
        "acts": ("run backward", "run backwards", "run in reverse", "move backward at a steady run",
                 "gallop backward", "run in the backward direction", "keep running backward",
                 "jog backwards along the track"),
        "rephrase_acts": ("go for a run tail first, in reverse", "get those legs galloping backwards",
                          "trot along backwards, tail leading the way", "back up at an easy jog"),
        "result": "the cheetah robot to go galloping off backwards",
        "state": "the half-cheetah were jogging backwards down the track",
    },
    "jump_forward": {
        "acts": ("jump forward", "hop forward", "leap forward repeatedly", "bound forward",
                 "move forward by jumping", "jump ahead again and again", "hop forwards", "keep leaping ahead"),
        "rephrase_acts": ("bounce your way ahead in big springy leaps",
                          "string together hops that carry you onward", "go bounding ahead like a kangaroo",
                          "spring ahead again and again"),
        "result": "the cheetah robot to go leaping off ahead",
        "state": "the half-cheetah were hopping onward in big bounds",
    },
    "jump_backward": {
        "acts": ("jump backward", "hop backward", "leap backward repeatedly", "bound backwards",
                 "move backward by jumping", "jump backwards again and again", "hop in reverse",
                 "keep leaping backward"),
        "rephrase_acts": ("bounce your way backwards in big springy leaps",
                          "string together hops that carry you backwards", "go bounding backwards like a kangaroo",
                          "spring backwards again and again"),
        "result": "the cheetah robot to go leaping off backwards",
        "state": "the half-cheetah were hopping backwards in big bounds",
    },
    # ------------------------------------------------------------------ easy
    "run_forward_faster": {
        "acts": ("run forward faster", "sprint forward", "run ahead at top speed", "run forward at full speed",
                 "run forward as fast as possible", "race ahead at a sprint", "run forwards faster than usual",
                 "go forward at a sprint"),
    },
    "run_backward_faster": {
        "acts": ("run backward faster", "sprint backward", "run backwards at top speed", "run backward at full speed",
                 "run backward as fast as possible", "race backwards at a sprint", "run in reverse faster than usual",
                 "go backward at a sprint"),
    },
    # ------------------------------------------------------------------ hard
    "run_forward_then_backward": {
        "acts": ("run forward, then run backward", "run forward for the first half, then run backward",
                 "first run ahead, then turn around and run backwards",
                 "run forwards for half the episode and then backwards",
                 "go forward at a run, then switch to running in reverse",
                 "run forward, then reverse direction and keep running",
                 "start by running forward, then run backward", "run forward and then run backwards"),
    },
    "run_backward_then_forward": {
        "acts": ("run backward, then run forward", "run backward for the first half, then run forward",
                 "first run backwards, then turn around and run ahead",
                 "run backwards for half the episode and then forwards",
                 "go in reverse at a run, then switch to running forward",
                 "run backward, then change direction and run ahead",
                 "start by running backward, then run forward", "run backward and then run forwards"),
    },
    "jump_in_place": {
        "acts": ("jump in place", "hop on the spot", "jump up and down in place", "keep hopping on the spot",
                 "leap in place again and again", "bounce up and down without travelling",
                 "hop repeatedly without going anywhere", "stay in one spot and keep jumping"),
    },
}

LEXICON: Mapping[str, Mapping[str, tuple[str, ...] | str]] = MappingProxyType(
    {name: MappingProxyType(entry) for name, entry in _LEXICON.items()})
"""Per-task lexicon (see the module docstring); read-only, inner mappings included."""


def _check_task(task: str) -> str:
    """Return ``task`` if it is a HalfCheetah-v0 task, else raise ``ValueError`` naming the valid ones."""
    if task not in LEXICON:
        raise choice_error("HalfCheetah-v0 task", task, TASKS)
    return task


def train_bank(task: str) -> tuple[str, ...]:
    """The plain bank of ``task`` (the real-data bank for train tasks; the level's bank otherwise)."""
    return tuple(frame.format(act=act) for act in LEXICON[_check_task(task)]["acts"] for frame in TRAIN_FRAMES)


def bank(task: str) -> tuple[str, ...]:
    """The instruction bank of ``task`` at its own level (same as :func:`train_bank`)."""
    return train_bank(task)


def rephrase_bank(task: str) -> tuple[str, ...]:
    """The held-out rephrase bank of a train task (``ValueError`` for any other task)."""
    if _check_task(task) not in TRAIN_TASKS:
        raise choice_error("HalfCheetah-v0 train task (only train tasks have rephrase phrasings)", task, TRAIN_TASKS)
    entry = LEXICON[task]
    fill = {"result": str(entry["result"]), "state": str(entry["state"])}
    out: list[str] = []
    for frame in REPHRASE_FRAMES:
        if "{act}" in frame:
            out.extend(frame.format(act=act, **fill) for act in entry["rephrase_acts"])
        else:
            out.append(frame.format(**fill))
    return tuple(out)
