"""Instruction banks of CLEVR-Robot.

Axis words follow the table convention: +x "right", -x "left", +y "behind" (the back of the
table), -y "front".

Banks per family:

* relation (train level): :data:`RELATION_TEMPLATES`, plain imperative phrasings — the real
  data uses these;
* relation (rephrase level): :data:`RELATION_REPHRASE_TEMPLATES`, conversational, indirect
  and emotional paraphrases that share no template (and, by construction, no string) with
  the train bank;
* one-step move (easy): :data:`MOVE_TEMPLATES`;
* sequential-move, make-line, put-pile, make-circle (hard): their own template lists.

Templates are ``str.format`` strings; ``{a}``/``{b}`` are colour names and the relation or
direction slot names one of the phrase forms below.
"""

from __future__ import annotations

from typing import Sequence

# ---------------------------------------------------------------------------- phrase forms
RELATION_PHRASES: dict[str, dict[str, str]] = {
    # "the red ball {prep} the blue ball"
    "prep": {"left": "to the left of", "right": "to the right of", "front": "in front of",
             "behind": "behind"},
    # "red {short} blue"
    "short": {"left": "left of", "right": "right of", "front": "in front of", "behind": "behind"},
    # "the red ball {side} the blue ball"
    "side": {"left": "on the left side of", "right": "on the right side of",
             "front": "on the front side of", "behind": "on the back side of"},
    # rephrase-only wording
    "alt": {"left": "off to the left of", "right": "off to the right of", "front": "ahead of",
            "behind": "at the back of"},
}
"""How each relation is said, by form."""

MOVE_PHRASES: dict[str, dict[str, str]] = {
    "adverb": {"left": "to the left", "right": "to the right", "front": "forward",
               "behind": "backward"},
    "word": {"left": "left", "right": "right", "front": "forwards", "behind": "backwards"},
    "toward": {"left": "toward the left side", "right": "toward the right side",
               "front": "toward the front", "behind": "toward the back"},
}
"""How each one-step move direction is said, by form."""

# ---------------------------------------------------------------------------- train / rephrase
RELATION_TEMPLATES: tuple[str, ...] = (
    "push the {a} ball {prep} the {b} ball",
    "move the {a} ball {prep} the {b} ball",
    "move {a} {short} {b}",
    "push {a} {short} {b}",
    "put the {a} ball {side} the {b} ball",
    "place the {a} sphere {prep} the {b} sphere",
    "get the {a} ball {prep} the {b} ball",
    "slide the {a} ball {prep} the {b} ball",
    "position the {a} ball {side} the {b} ball",
    "move the {a} one {prep} the {b} one",
    "shift the {a} ball so it is {prep} the {b} ball",
    "relocate the {a} ball {prep} the {b} ball",
    "{a} ball {prep} {b} ball",
    "bring the {a} ball {prep} the {b} ball",
)
"""Train bank of "move ball A to direction D of ball B" (the phrasings of the real data)."""

RELATION_REPHRASE_TEMPLATES: tuple[str, ...] = (
    "hey, could you get that {a} ball {alt} the {b} one?",
    "I'd really love to see the {a} ball sitting {prep} the {b} ball",
    "it would be great if the {a} ball ended up {side} the {b} ball",
    "ugh, the {a} ball is in the wrong spot, it belongs {alt} the {b} ball!",
    "would you mind nudging the {a} ball until it rests {prep} the {b} ball?",
    "the {b} ball looks lonely, please bring the {a} ball {alt} it",
    "please, I'm begging you, the {a} ball has to go {prep} the {b} ball",
    "what I need is the {a} ball {side} the {b} ball, thanks",
    "let's have the {a} ball end up {alt} the {b} ball, okay?",
    "I'm so frustrated, why isn't the {a} ball {prep} the {b} ball yet? sort it out",
    "ideally the {b} ball would have the {a} ball {alt} it",
    "oh wow, it would make my day if the {a} ball were {prep} the {b} ball",
    "so, the {a} ball... any chance it could be {side} the {b} ball?",
    "you know what would look nice? the {a} ball {alt} the {b} ball",
)
"""Held-out paraphrases of the relation tasks (the rephrase level); never in real data."""

# ---------------------------------------------------------------------------- easy
MOVE_TEMPLATES: tuple[str, ...] = (
    "move the {a} ball {adverb}",
    "push the {a} ball {adverb}",
    "nudge the {a} ball a little {adverb}",
    "give the {a} ball one push {toward}",
    "shift {a} {word}",
    "slide the {a} ball {adverb} once",
    "roll the {a} ball {toward}",
    "send the {a} ball {adverb} with a single push",
    "just move the {a} ball a bit {adverb}",
    "one push: {a} ball {word}",
    "tap the {a} ball so it moves {toward}",
    "move {a} {word} by one step",
)
"""Bank of the one-step move tasks (easy level)."""

# ---------------------------------------------------------------------------- hard
SEQUENTIAL_TEMPLATES: tuple[str, ...] = (
    "{acts}",
    "first {acts_then}",
    "arrange the balls so that {states}",
    "make sure that {states}",
    "get {nps}",
    "rearrange the table: {nps}",
    "{n_moves} goals at once: {nps}",
    "end the episode with {nps}",
    "I want a layout where {states}",
    "set up the balls so that {states}, all at the same time",
    "complete every goal together: {acts}",
    "{every} relations must hold together: {states}",
)
"""Bank of the sequential-move tasks (hard level); the slots are joined sub-goal clauses."""

LINE_TEMPLATES: tuple[str, ...] = (
    "line up the balls from left to right: {order}",
    "put the five balls in a row, ordered {order} from left to right",
    "make a line of the balls with {first} on the left and {last} on the right, in the order {order}",
    "arrange all balls in a horizontal line in the order {order}",
    "form a left-to-right row: {order}",
    "build a line of balls, {order}, going from left to right",
    "sort the balls by colour into a line from left to right: {order}",
    "place the balls side by side from left to right as {order}",
    "make the balls line up left to right, {first} first and {last} last",
    "order the balls in a line: {order}, left to right",
    "lay the balls out in one row reading {order} from the left",
)
"""Bank of the make-line task (hard level)."""

PILE_TEMPLATES: tuple[str, ...] = (
    "gather all five balls into a pile",
    "push every ball together into one tight group",
    "put all the balls in a pile",
    "collect the balls into one heap",
    "bring all the balls close together",
    "cluster the five balls in one spot",
    "make a pile out of all the balls",
    "group every ball together in a bunch",
    "move the balls so they are all huddled together",
    "herd all the balls into one place",
    "pack the balls tightly together",
)
"""Bank of the put-pile task (hard level)."""

CIRCLE_TEMPLATES: tuple[str, ...] = (
    "arrange the other balls in a circle around the {c} ball",
    "surround the {c} ball with the {others} balls, one on each side",
    "make a ring of balls around the {c} ball",
    "put the {others} balls around the {c} ball in a circle",
    "place the other four balls around the {c} ball, covering every side",
    "form a circle around the {c} ball with the remaining balls",
    "encircle the {c} ball with the other balls",
    "build a ring with the {c} ball in the middle",
    "put the {c} ball at the centre and the rest around it",
    "make the other balls circle the {c} ball",
    "spread the other four balls around the {c} ball, one in each quadrant",
)
"""Bank of the make-circle task (hard level)."""


# ---------------------------------------------------------------------------- rendering
def join(items: Sequence[str]) -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _relation_slots(direction: str) -> dict[str, str]:
    return {form: words[direction] for form, words in RELATION_PHRASES.items()}


def relation_bank(ball: str, direction: str, anchor: str, rephrase: bool = False) -> tuple[str, ...]:
    """Instructions for "move ``ball`` to ``direction`` of ``anchor``" (train or rephrase bank)."""
    templates = RELATION_REPHRASE_TEMPLATES if rephrase else RELATION_TEMPLATES
    return tuple(t.format(a=ball, b=anchor, **_relation_slots(direction)) for t in templates)


def move_bank(ball: str, direction: str) -> tuple[str, ...]:
    """Instructions for the one-step move of ``ball`` in ``direction``."""
    slots = {form: words[direction] for form, words in MOVE_PHRASES.items()}
    return tuple(t.format(a=ball, **slots) for t in MOVE_TEMPLATES)


_COUNT = {2: "two", 3: "three"}


def sequential_bank(goals: Sequence[tuple[str, str, str]]) -> tuple[str, ...]:
    """Instructions for a sequential-move task with relation ``goals`` (ball, direction, anchor)."""
    acts = [f"move the {a} ball {RELATION_PHRASES['prep'][d]} the {b} ball" for a, d, b in goals]
    states = [f"the {a} ball is {RELATION_PHRASES['prep'][d]} the {b} ball" for a, d, b in goals]
    nps = [f"the {a} ball {RELATION_PHRASES['side'][d]} the {b} ball" for a, d, b in goals]
    if len(acts) == 2:
        then = f"{acts[0]}, then {acts[1]}"
    else:
        then = f"{acts[0]}, then " + ", then ".join(acts[1:-1]) + f" and finally {acts[-1]}"
    slots = {
        "acts": join(acts),
        "acts_then": then,
        "states": join(states),
        "nps": join(nps),
        "n_moves": _COUNT[len(goals)],
    }
    slots["every"] = "both" if len(goals) == 2 else f"all {_COUNT[len(goals)]}"
    return tuple(t.format(**slots) for t in SEQUENTIAL_TEMPLATES)


def line_bank(order: Sequence[str]) -> tuple[str, ...]:
    """Instructions for the make-line task with colours ``order`` from left to right."""
    return tuple(t.format(order=join(order), first=order[0], last=order[-1]) for t in LINE_TEMPLATES)


def pile_bank() -> tuple[str, ...]:
    """Instructions for the put-pile task."""
    return PILE_TEMPLATES


def circle_bank(centre: str, others: Sequence[str]) -> tuple[str, ...]:
    """Instructions for the make-circle task around ``centre``."""
    return tuple(t.format(c=centre, others=join(others)) for t in CIRCLE_TEMPLATES)
