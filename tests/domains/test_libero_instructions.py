"""LIBERO-v0 instruction banks (pure: no simulator needed): sizes, disjointness, object names."""

from __future__ import annotations

import re

from imaginebench.domains.base import LEVELS
from imaginebench.domains.libero import instructions as I
from imaginebench.domains.libero.domain import LiberoDomain
from imaginebench.domains.libero.layout import OBJECTS

DOMAIN = LiberoDomain()
ALL_TASKS = [t for level in ("train", "easy", "hard") for t in DOMAIN.tasks(level)]


def test_every_task_has_banks_and_train_tasks_have_rephrasings():
    for task in ALL_TASKS:
        assert len(task.instructions) >= 24, task.name
        assert len(set(task.instructions)) == len(task.instructions), task.name
        if task.level == "train":
            assert len(task.rephrasings) >= 16 and len(set(task.rephrasings)) == len(task.rephrasings)
        else:
            assert task.rephrasings == ()
        for level in LEVELS:
            if task.level == "train" and level in ("train", "rephrase") or task.level == level:
                assert task.bank(level)


def test_rephrase_and_novel_banks_never_occur_in_real_data():
    real = {s for t in DOMAIN.tasks("train") for s in t.instructions}
    rephrase = {s for t in DOMAIN.tasks("train") for s in t.rephrasings}
    novel = {s for level in ("easy", "hard") for t in DOMAIN.tasks(level) for s in t.instructions}
    assert not real & rephrase
    assert not real & novel
    # and no two tasks share a phrasing
    seen: dict[str, str] = {}
    for task in ALL_TASKS:
        for s in (*task.instructions, *task.rephrasings):
            assert seen.setdefault(s, task.name) == task.name, f"{s!r} in {seen[s]} and {task.name}"


def test_phrasings_name_their_objects():
    nick = {o: [n.split()[-1] for n in I.NICKNAMES[o]] for o in OBJECTS}
    for task in ALL_TASKS:
        objects = list(task.params["objects"]) + ([task.params["reference"]] if task.params["reference"] else [])
        for s in task.instructions:
            if task.name == "basket_all":
                continue
            for obj in objects:
                assert any(name in s for name in I.NAMES[obj]), (task.name, s)
            for other in set(OBJECTS) - set(objects):
                assert not any(re.search(rf"\b{name}\b", s) for name in I.NAMES[other]), (task.name, s)
        for s in task.rephrasings:
            obj = task.params["objects"][0]
            assert any(word in s for word in nick[obj]), (task.name, s)
            assert not any(name in s for o in OBJECTS for name in I.NAMES[o]), (task.name, s)


def test_order_words_in_sequential_banks():
    task = DOMAIN.task("basket_soup_then_cheese")
    for s in task.instructions:
        assert s.index("alphabet soup") < s.index("cream cheese"), s
