"""Instruction templates of every BabyAI task family.

Templates hold ``{obj}`` / ``{target}`` ("red ball", "green box", "blue door"), ``{door}``
("yellow door") or ``{color}`` (a bare colour name); :func:`render` fills them from a task's
parameters, so every task owns concrete strings that name the colours its episode has.

* ``TRAIN``: the real-data bank of each train family (at least 40 phrasings), built from
  verb × frame combinations.
* ``REPHRASE``: held-out paraphrases of the train families (conversational, indirect,
  emotional); none of their strings occurs in any train bank (checked by the tests).
* ``EASY`` / ``HARD``: the banks of the novel tasks; none occurs in the real data either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _combine(frames: tuple[str, ...], verbs: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(frame.format(v=verb, obj="{obj}", target="{target}", door="{door}")
                 for verb in verbs for frame in frames)


# ---------------------------------------------------------------- train (real data)
_GO_TO = _combine(
    ("{v} the {obj}", "please {v} the {obj}", "{v} the {obj} in the room", "your goal is to {v} the {obj}"),
    ("go to", "walk to", "move to", "head to", "get to", "navigate to", "make your way to",
     "proceed to", "travel to", "reach", "approach", "go over to", "walk over to", "step over to"),
)
_OPEN = _combine(
    ("{v} the {door}", "please {v} the {door}", "go and {v} the {door}",
     "your task is to {v} the {door}", "{v} the {door} in the wall"),
    ("open", "open up", "swing open", "pull open", "push open", "throw open", "fling open", "prop open"),
)
_PICK_UP = _combine(
    ("{v} the {obj}", "please {v} the {obj}", "go and {v} the {obj}", "your task is to {v} the {obj}"),
    ("pick up", "grab", "take", "get", "collect", "lift", "fetch", "grasp", "take hold of",
     "snatch", "retrieve", "lift up"),
)
_PUT_NEXT = _combine(
    ("{v} the {obj} next to the {target}", "{v} the {obj} beside the {target}",
     "{v} the {obj} adjacent to the {target}", "{v} the {obj} right next to the {target}",
     "{v} the {obj} alongside the {target}"),
    ("put", "place", "set", "move", "bring", "carry", "drop", "position"),
) + (
    "pick up the {obj} and drop it next to the {target}",
    "take the {obj} over to the {target} and put it down beside it",
)

TRAIN: dict[str, tuple[str, ...]] = {
    "go_to": _GO_TO,
    "open": _OPEN,
    "pick_up": _PICK_UP,
    "put_next": _PUT_NEXT,
}

# ---------------------------------------------------------------- rephrase (held out)
REPHRASE: dict[str, tuple[str, ...]] = {
    "go_to": (
        "Could you wander over to where the {obj} is?",
        "I'd really love it if you went and stood at the {obj}.",
        "The {obj} looks lonely, go keep it company.",
        "Hey, mind heading over toward the {obj} for me?",
        "It would make my day if you ended up at the {obj}!",
        "Your destination is the {obj}, off you go.",
        "Find your way over to the {obj}, would you?",
        "I'm begging you, get yourself over to the {obj}!",
        "Where's the {obj}? That's where you should be.",
        "Time to pay the {obj} a visit.",
        "Be a dear and pop over to the {obj}.",
        "I'm so stressed, please just go stand where the {obj} is.",
        "The spot I care about is wherever the {obj} sits, so go there.",
        "Can you do me a favour and end up right at the {obj}?",
        "Ugh, you're miles from the {obj}, fix that!",
    ),
    "open": (
        "Could you let some air in by opening the {door}?",
        "I'd be so grateful if the {door} were open.",
        "The {door} is shut and it's driving me crazy.",
        "Hey, would you mind getting that {door} open for me?",
        "It feels so stuffy in here, can you do something about the {door}?",
        "I really need the {door} open, please hurry!",
        "Be a star and crack the {door} open.",
        "Wouldn't it be nice if the {door} weren't closed anymore?",
        "Do me a favour: the {door} shouldn't stay closed.",
        "I can't stand seeing the {door} closed, sort it out.",
        "Let's get that {door} swinging, shall we?",
        "Oh please, please make the {door} open up!",
    ),
    "pick_up": (
        "Could you be so kind as to hold on to the {obj}?",
        "I'd love it if the {obj} were in your hands.",
        "The {obj} needs someone to carry it, would you?",
        "Hey, mind scooping up the {obj} for me?",
        "It would mean the world to me if you got hold of the {obj}.",
        "Don't leave the {obj} lying around, take it with you!",
        "Please, I'm desperate, I need you holding the {obj}.",
        "Would you mind keeping the {obj} with you?",
        "Make sure the {obj} ends up in your grip.",
        "Ooh, the {obj}! Go nab it, quick!",
        "I think you ought to be carrying the {obj}.",
        "Do me a favour and have the {obj} in hand.",
    ),
    "put_next": (
        "Could you arrange things so the {obj} sits by the {target}?",
        "I'd be thrilled if the {obj} ended up touching the {target}.",
        "The {obj} and the {target} should be neighbours, can you help?",
        "Hey, would you mind reuniting the {obj} with the {target}?",
        "It bugs me that the {obj} is so far from the {target}, fix it please.",
        "The {target} is lonely; keep it company with the {obj}.",
        "Please, I'm begging you, the {obj} has to be by the {target}!",
        "Would it be too much trouble to park the {obj} near the {target}, touching it?",
        "Make the {obj} and the {target} side by side, would you?",
        "Oh, it would be lovely to see the {obj} cosied up against the {target}.",
        "Do me a favour and leave the {obj} so it's bordering the {target}.",
        "I want the {obj} to end up hugging the {target}, can you manage that?",
    ),
}

# ---------------------------------------------------------------- easy (novel tasks)
EASY: dict[str, tuple[str, ...]] = {
    "open_then_go_to": (
        "open the door and then go to the {obj}",
        "first open the door, then walk to the {obj}",
        "open the door, after that head to the {obj}",
        "after opening the door, go to the {obj}",
        "open the door first and then move to the {obj}",
        "get the door open, then make your way to the {obj}",
        "please open the door and afterwards go to the {obj}",
        "once you have opened the door, walk over to the {obj}",
        "open up the door, then reach the {obj}",
        "start by opening the door, then approach the {obj}",
        "swing the door open and then go to the {obj}",
        "open the door before going to the {obj}",
        "your task is to open the door and then navigate to the {obj}",
        "go open the door, then go to the {obj}",
        "open the door, then head over to the {obj}",
        "first the door: open it; then go to the {obj}",
        "open the door and next walk to the {obj}",
        "push the door open, then travel to the {obj}",
        "after you open the door, make your way to the {obj}",
        "open the door and then proceed to the {obj}",
    ),
    "open_then_pick_up": (
        "open the door and then pick up the {obj}",
        "first open the door, then grab the {obj}",
        "open the door, after that take the {obj}",
        "after opening the door, pick up the {obj}",
        "open the door first and then collect the {obj}",
        "get the door open, then fetch the {obj}",
        "please open the door and afterwards pick up the {obj}",
        "once you have opened the door, grab the {obj}",
        "open up the door, then lift the {obj}",
        "start by opening the door, then retrieve the {obj}",
        "swing the door open and then pick up the {obj}",
        "open the door before picking up the {obj}",
        "your task is to open the door and then take the {obj}",
        "go open the door, then go pick up the {obj}",
        "open the door, then grasp the {obj}",
        "first the door: open it; then pick up the {obj}",
        "open the door and next take hold of the {obj}",
        "push the door open, then snatch the {obj}",
        "after you open the door, collect the {obj}",
        "open the door and then get the {obj}",
    ),
    "go_to_wall_side": (
        "go to a cell next to a wall",
        "walk to any wall",
        "move next to a wall",
        "go stand beside one of the walls",
        "head to the edge of the room",
        "go to a spot along the wall",
        "make your way to a wall",
        "get next to any of the walls",
        "walk to the side of the room",
        "move to a square touching a wall",
        "go to the wall",
        "please go to a place by the wall",
        "approach one of the walls",
        "reach a cell along the edge of the room",
        "go over to a wall of the room",
        "travel to the border of the room",
        "navigate to a wall-side cell",
        "step over to a wall",
        "go to any cell beside the outer wall",
        "your goal is to stand against a wall",
    ),
    "go_to_centre": (
        "go to the centre of the room",
        "walk to the middle of the room",
        "move to the center of the room",
        "head to the middle of the grid",
        "go stand in the centre",
        "make your way to the middle",
        "get to the centre of the room",
        "navigate to the room's centre",
        "go to the middle",
        "please go to the center",
        "approach the centre of the room",
        "reach the middle of the room",
        "travel to the centre",
        "step into the middle of the room",
        "go over to the centre of the grid",
        "walk to the central part of the room",
        "move to the middle of the floor",
        "your goal is to be in the centre of the room",
        "go to the room's central cells",
        "head for the center of the room",
    ),
}

# ---------------------------------------------------------------- hard (novel tasks)
HARD: dict[str, tuple[str, ...]] = {
    "unlock": (
        "pick up the {color} key and then open the locked {color} door",
        "first grab the {color} key, then unlock the {color} door",
        "take the {color} key and use it to open the {color} door",
        "get the {color} key, then open the locked door with it",
        "fetch the {color} key and unlock the {color} door",
        "the {color} door is locked: pick up the {color} key and open it",
        "collect the {color} key, then go open the {color} door",
        "please pick up the key and then open the locked {color} door",
        "grab the {color} key first, then open the door",
        "unlock the {color} door using the {color} key",
        "pick up the key, walk to the locked door and open it",
        "retrieve the {color} key and then unlock the door",
        "take the key and open the locked {color} door",
        "use the {color} key to unlock and open the door",
        "first the key, then the door: open the locked {color} door",
        "get hold of the {color} key and open the {color} door with it",
        "open the locked {color} door after picking up the key",
        "lift the {color} key and then unlock the {color} door",
        "your task is to pick up the {color} key and open the locked door",
        "find the {color} key, take it, and open the locked door",
    ),
    "line": (
        "put the three objects in a line",
        "arrange the ball, the box and the key in a straight line",
        "line up the three objects",
        "place the ball, box and key in a row or a column, side by side",
        "make a line out of the three objects",
        "put all three objects next to each other in a straight line",
        "line up the ball, the box and the key",
        "arrange the objects in one line",
        "set the three objects in a straight row or column",
        "put the objects in a line, one after another",
        "form a line with the ball, the box and the key",
        "please line up all three objects",
        "place the three objects in a straight line",
        "organise the ball, box and key into a line",
        "move the objects so they form a straight line",
        "put the ball, the box and the key in a line",
        "make the three objects stand in a line",
        "line all the objects up in a straight line",
        "your task is to arrange the three objects in a line",
        "get the ball, box and key lined up",
    ),
    "pile": (
        "gather the three objects into a pile",
        "put the ball, the box and the key together in a pile",
        "pile up the three objects",
        "bunch the ball, box and key together",
        "make a pile of the three objects",
        "collect all three objects into one heap",
        "put the objects close together in a pile",
        "gather the ball, the box and the key into a heap",
        "cluster the three objects together",
        "put all the objects in a tight group",
        "pile the ball, box and key together",
        "please gather all three objects in one spot",
        "move the three objects into a pile",
        "group the ball, the box and the key in a clump",
        "heap the three objects together",
        "bring the objects together into a pile",
        "make a heap of the ball, the box and the key",
        "huddle the three objects together",
        "your task is to gather the three objects into a pile",
        "get the ball, box and key bunched up together",
    ),
}


def describe(color: str, name: str) -> str:
    """``"red ball"``."""
    return f"{color} {name}"


def render(template: str, params: Mapping[str, Any]) -> str:
    """Fill ``template`` from a task's parameters."""
    fields = {
        "obj": describe(params["color"], params["object"]) if "object" in params else "",
        "target": describe(params["target_color"], params["target"]) if "target" in params else "",
        "door": describe(params["color"], "door") if "color" in params else "",
        "color": params.get("color", ""),
    }
    return template.format(**fields)
