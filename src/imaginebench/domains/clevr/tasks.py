"""The CLEVR-Robot tasks of every level, built by loops over colours and directions.

* ``train`` (shared with ``rephrase``): 80 relation tasks, "move ball A to direction D of
  ball B" for the 20 ordered colour pairs and the 4 directions; named ``red_left_of_blue``.
* ``easy``: 20 one-step moves, each ball along each axis direction; named ``move_red_left``;
  horizon 1.
* ``hard``: 15 tasks — 12 sequential-moves (:data:`SEQUENTIAL_GOALS`: 8 with two relation
  sub-goals, 4 with three), ``make_line``, ``put_pile`` and ``make_circle``.
"""

from __future__ import annotations

from imaginebench.domains.base import Task
from imaginebench.domains.clevr import instructions as text
from imaginebench.domains.clevr.layout import COLOURS
from imaginebench.domains.clevr.success import RELATIONS

Goal = tuple[str, str, str]
"""A relation sub-goal: (ball, direction, anchor) — ``ball`` lies ``direction`` of ``anchor``."""

MOVE_HORIZON = 1
"""Episode length of the one-step move tasks."""

SEQUENTIAL_GOALS: tuple[tuple[Goal, ...], ...] = (
    # two sub-goals
    (("red", "left", "blue"), ("green", "right", "blue")),
    (("purple", "behind", "cyan"), ("red", "front", "cyan")),
    (("blue", "right", "green"), ("purple", "left", "green")),
    (("cyan", "behind", "red"), ("green", "behind", "cyan")),
    (("red", "left", "purple"), ("blue", "behind", "purple")),
    (("green", "front", "blue"), ("cyan", "right", "green")),
    (("purple", "left", "red"), ("cyan", "front", "red")),
    (("blue", "behind", "green"), ("red", "behind", "blue")),
    # three sub-goals
    (("red", "left", "green"), ("blue", "right", "green"), ("purple", "behind", "green")),
    (("cyan", "front", "blue"), ("purple", "left", "cyan"), ("red", "right", "cyan")),
    (("green", "left", "blue"), ("blue", "left", "purple"), ("purple", "left", "cyan")),
    (("red", "behind", "green"), ("blue", "left", "green"), ("cyan", "front", "green")),
)
"""The fixed sequential-move goal sets: sub-goals that can all hold at once on the table
(no contradicting pair, chains of at most three 0.39 links)."""

LINE_ORDER: tuple[str, ...] = COLOURS
"""make-line: colours from left to right."""
CIRCLE_CENTRE = "green"
"""make-circle: the ball the others surround."""


def goal_name(goal: Goal) -> str:
    ball, direction, anchor = goal
    relation = {"left": "left_of", "right": "right_of", "front": "in_front_of", "behind": "behind"}
    return f"{ball}_{relation[direction]}_{anchor}"


def train_tasks() -> tuple[Task, ...]:
    tasks = []
    for ball in COLOURS:
        for anchor in COLOURS:
            if ball == anchor:
                continue
            for direction in RELATIONS:
                goal = (ball, direction, anchor)
                tasks.append(Task(
                    name=goal_name(goal),
                    family="relation",
                    level="train",
                    params={"goals": (goal,)},
                    instructions=text.relation_bank(*goal),
                    rephrasings=text.relation_bank(*goal, rephrase=True),
                ))
    return tuple(tasks)


def easy_tasks() -> tuple[Task, ...]:
    return tuple(
        Task(
            name=f"move_{ball}_{direction}",
            family="one_step_move",
            level="easy",
            params={"ball": ball, "direction": direction},
            instructions=text.move_bank(ball, direction),
            horizon=MOVE_HORIZON,
        )
        for ball in COLOURS
        for direction in RELATIONS
    )


def hard_tasks() -> tuple[Task, ...]:
    tasks = [
        Task(
            name="seq_" + "_and_".join(goal_name(g) for g in goals),
            family="sequential_move",
            level="hard",
            params={"goals": goals},
            instructions=text.sequential_bank(goals),
        )
        for goals in SEQUENTIAL_GOALS
    ]
    others = tuple(c for c in COLOURS if c != CIRCLE_CENTRE)
    tasks += [
        Task("make_line", "make_line", "hard", {"order": LINE_ORDER}, text.line_bank(LINE_ORDER)),
        Task("put_pile", "put_pile", "hard", {}, text.pile_bank()),
        Task("make_circle", "make_circle", "hard", {"centre": CIRCLE_CENTRE},
             text.circle_bank(CIRCLE_CENTRE, others)),
    ]
    return tuple(tasks)


def build_tasks() -> dict[str, tuple[Task, ...]]:
    """Tasks keyed by ``train``, ``easy`` and ``hard``."""
    return {"train": train_tasks(), "easy": easy_tasks(), "hard": hard_tasks()}
