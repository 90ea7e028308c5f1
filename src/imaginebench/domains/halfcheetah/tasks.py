"""The HalfCheetah-v0 tasks of every level, as data.

* ``train`` (shared with ``rephrase``): run forward, run backward, jump forward, jump backward.
* ``easy``: run forward faster, run backward faster.
* ``hard``: run forward then backward, run backward then forward, jump in place.

``Task.params`` holds what the instruction says — ``motion`` (``run``, ``run faster``, ``run
then run back``, ``jump``) and ``direction`` (``forward``, ``backward``, ``forward then
backward``, ``backward then forward``, ``in place``) — plus the signs the success rules read
(``sign``: +1 forward, −1 backward, 0 in place; ``first``: the sign of a sequence's first half).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping

from imaginebench.domains.base import Task
from imaginebench.domains.halfcheetah import instructions as text
from imaginebench.domains.halfcheetah.success import HORIZON

_TASKS: tuple[tuple[str, str, str, dict[str, Any]], ...] = (
    ("run_forward", "train", "run", {"motion": "run", "direction": "forward", "sign": 1}),
    ("run_backward", "train", "run", {"motion": "run", "direction": "backward", "sign": -1}),
    ("jump_forward", "train", "jump", {"motion": "jump", "direction": "forward", "sign": 1}),
    ("jump_backward", "train", "jump", {"motion": "jump", "direction": "backward", "sign": -1}),
    ("run_forward_faster", "easy", "run_fast", {"motion": "run faster", "direction": "forward", "sign": 1}),
    ("run_backward_faster", "easy", "run_fast", {"motion": "run faster", "direction": "backward", "sign": -1}),
    ("run_forward_then_backward", "hard", "sequence",
     {"motion": "run then run back", "direction": "forward then backward", "first": 1}),
    ("run_backward_then_forward", "hard", "sequence",
     {"motion": "run then run back", "direction": "backward then forward", "first": -1}),
    ("jump_in_place", "hard", "jump_in_place", {"motion": "jump", "direction": "in place", "sign": 0}),
)

FAMILY: Mapping[str, str] = MappingProxyType({name: family for name, _, family, _ in _TASKS})
"""Success family of each task (:mod:`.success`)."""


def build_tasks() -> dict[str, tuple[Task, ...]]:
    """Tasks keyed by ``train``, ``easy`` and ``hard``."""
    out: dict[str, list[Task]] = {"train": [], "easy": [], "hard": []}
    for name, level, family, params in _TASKS:
        out[level].append(Task(
            name=name, family=family, level=level, params=params,
            instructions=text.train_bank(name),
            rephrasings=text.rephrase_bank(name) if level == "train" else (),
            horizon=HORIZON,
        ))
    return {level: tuple(tasks) for level, tasks in out.items()}

