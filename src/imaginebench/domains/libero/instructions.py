"""Instruction banks of LIBERO-v0.

Every task family has plain imperative *acts* ("pick up the {x}"), filled with each of the
object's plain *names*; train families also have rephrase material: ``rephrase_acts``
(imperatives worded differently, never used in a train bank), a ``result`` (an infinitive
clause) and a ``state`` (a finite clause), filled with the object's held-out *nicknames*.

* train bank (the real data): every act × every name of the object, in each of
  :data:`TRAIN_FRAMES`;
* rephrase bank (held out): :data:`REPHRASE_FRAMES` — conversational, indirect and emotional
  wordings built from the rephrase material and nicknames only, so no rephrase string can be a
  train string;
* easy / hard banks: the novel tasks' own acts in :data:`TRAIN_FRAMES` (their acts name what is
  new — the second object, the order, "aside", "out of the basket" — so no string coincides with
  a train task's).

The tests check all three disjointness properties.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from imaginebench.domains.libero.layout import OBJECTS

TRAIN_FRAMES: tuple[str, ...] = (
    "{act}",
    "{act} with the gripper",
    "use the robot arm to {act}",
    "please {act}",
    "your task is to {act}",
    "{act} using the panda arm",
    "the goal is to {act}",
    "robot, {act}",
)
"""Plain frames of the train, easy and hard banks."""

REPHRASE_FRAMES: tuple[str, ...] = (
    "hey, could you {act}?",
    "I'd really appreciate it if you could {act}",
    "ugh, please just {act} already!",
    "so, um, any chance you could {act} for me?",
    "what I need right now is for {result}",
    "it would honestly make my day if {state}",
    "would it be possible for {result}? that would be lovely",
    "I'm getting really stressed, I just want {result}",
)
"""Held-out frames of the rephrase level."""

NAMES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "alphabet_soup": ("alphabet soup", "alphabet soup can", "can of alphabet soup"),
    "cream_cheese": ("cream cheese", "cream cheese box", "box of cream cheese"),
    "salad_dressing": ("salad dressing", "salad dressing bottle", "bottle of salad dressing"),
})
"""Plain names of each object (train, easy and hard banks)."""
NICKNAMES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "alphabet_soup": ("tin of letter noodle soup", "soup tin with the letters on it"),
    "cream_cheese": ("little pack of cheese spread", "flat carton of cheese spread"),
    "salad_dressing": ("tall bottle of vinaigrette", "dressing flask for the greens"),
})
"""Held-out nicknames of each object (rephrase bank only)."""

TRAIN_LEXICON: Mapping[str, Mapping[str, tuple[str, ...] | str]] = MappingProxyType({
    "pick": {
        "acts": ("pick up the {x}", "lift the {x}", "grab the {x} and lift it", "grasp the {x} and raise it",
                 "pick the {x} up off the floor"),
        "rephrase_acts": ("hoist the {x} up into the air", "snatch that {x} off the ground",
                          "get the {x} up and hold it there"),
        "result": "the {x} to be up in the air in your grip",
        "state": "the {x} were dangling up there in your grip",
    },
    "place": {
        "acts": ("place the {x} in the basket", "put the {x} into the basket", "drop the {x} in the basket",
                 "set the {x} down inside the basket", "put the {x} you are holding in the basket"),
        "rephrase_acts": ("stash the {x} away in that wicker bin", "let go of the {x} over the wicker bin",
                          "tuck the {x} into the wicker bin"),
        "result": "the {x} to end up sitting in the wicker bin",
        "state": "the {x} were resting in the wicker bin",
    },
})
"""Train families' acts and rephrase material (``{x}`` is the object)."""

NOVEL_ACTS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "pick_place": ("pick up the {x} and put it in the basket", "grab the {x} from the floor and drop it into the basket",
                   "lift the {x} and place it in the basket", "move the {x} from the floor into the basket"),
    "next_to": ("place the {x} next to the {y}", "put the {x} beside the {y}", "move the {x} next to the {y}",
                "set the {x} down by the {y}"),
    "reach": ("reach the {x}", "move the gripper to the {x}", "touch the {x} with the gripper",
              "bring the hand to the {x}"),
    "sequential": ("put the {x} in the basket, then the {y}", "place the {x} and then the {y} in the basket",
                   "first put the {x} in the basket, then put the {y} in too",
                   "pick up the {x} and the {y} and place both in the basket"),
    "sequential_all": ("put all three objects in the basket",
                       "place the alphabet soup, the cream cheese and the salad dressing in the basket",
                       "put everything on the floor into the basket", "pack all the groceries in the basket",
                       "put the soup, the cheese and the dressing into the basket one after another"),
    "aside": ("pick up the {x} and put it aside", "move the {x} away from where it is",
              "set the {x} down somewhere else", "move the {x} out of its place"),
    "out_of_basket": ("take the {x} out of the basket", "pick the {x} out of the basket",
                      "remove the {x} from the basket", "lift the {x} out of the basket and put it on the floor"),
})
"""Easy and hard families' acts (``{x}`` the object, ``{y}`` the second object)."""


def _fill(acts: tuple[str, ...], objects: tuple[str, ...]) -> list[str]:
    x = NAMES[objects[0]] if objects else ("",)
    y = NAMES[objects[1]][:1] if len(objects) > 1 else ("",)
    return [act.format(x=nx, y=ny) for act in acts for nx in x for ny in y]


def train_bank(family: str, objects: tuple[str, ...]) -> tuple[str, ...]:
    """The plain bank of a task (the real-data bank for train tasks; the level's bank otherwise)."""
    if family in TRAIN_LEXICON:
        acts = TRAIN_LEXICON[family]["acts"]
    elif family == "sequential" and len(objects) == len(OBJECTS):
        return tuple(frame.format(act=act) for act in NOVEL_ACTS["sequential_all"] for frame in TRAIN_FRAMES)
    else:
        acts = NOVEL_ACTS[family]
    assert isinstance(acts, tuple)
    return tuple(dict.fromkeys(frame.format(act=act) for act in _fill(acts, objects) for frame in TRAIN_FRAMES))


def rephrase_bank(family: str, objects: tuple[str, ...]) -> tuple[str, ...]:
    """The held-out rephrase bank of a train task."""
    entry = TRAIN_LEXICON[family]
    out: list[str] = []
    for nick in NICKNAMES[objects[0]]:
        fill = {"result": str(entry["result"]).format(x=nick), "state": str(entry["state"]).format(x=nick)}
        for frame in REPHRASE_FRAMES:
            if "{act}" in frame:
                out.extend(frame.format(act=str(act).format(x=nick), **fill) for act in entry["rephrase_acts"])
            else:
                out.append(frame.format(**fill))
    return tuple(dict.fromkeys(out))
