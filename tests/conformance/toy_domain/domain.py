"""Lamps-v0's tasks and pure state functions (the domain contract, nothing more)."""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from imaginebench.domains.base import Domain, StepOutcome, Task

NAMES = ("left", "middle", "right")


def _task(level: str, lamps: tuple[int, ...], words: str) -> Task:
    rephrasings = (f"could you {words}?", f"I would like you to {words}") if level == "train" else ()
    return Task(name="light_" + "_".join(NAMES[i] for i in lamps), family="light", level=level,
                params={"lamps": lamps}, instructions=(words, f"please {words}"), rephrasings=rephrasings)


class LampsDomain(Domain):
    env_id = "Lamps-v0"
    state_dim = 3
    horizon = 6
    discrete_actions = True
    action_dim = 3
    state_layout = tuple(f"{n}_on" for n in NAMES)
    paper_episodes = MappingProxyType({"real": 300, "rephrase": 100, "easy": 100, "hard": 100})

    def _build_tasks(self):
        return {"train": [_task("train", (i,), f"turn on the {n} lamp") for i, n in enumerate(NAMES)],
                "easy": [_task("easy", (0, 2), "turn on both outer lamps")],
                "hard": [_task("hard", (0, 1, 2), "light every lamp")]}

    def holds(self, task, state) -> bool:
        return all(state[i] > 0.5 for i in task.params["lamps"])

    def distance(self, task, state, progress) -> float:
        return float(sum(state[i] < 0.5 for i in task.params["lamps"]))

    def outcome(self, task, state, action, next_state, progress) -> StepOutcome:
        shaping = 0.1 * (self.distance(task, state, progress) - self.distance(task, next_state, progress))
        success = self.holds(task, next_state)
        return StepOutcome(success, shaping + success, progress, {"shaping": shaping, "success_bonus": float(success)})

    def legality_errors(self, state) -> list[str]:
        s = np.asarray(state, dtype=np.float64)
        if s.shape != (3,) or not np.all((s == 0) | (s == 1)):
            return [f"expected three 0/1 lamp states, got {s}"]
        return []

    def state_bounds(self):
        return np.zeros(3), np.ones(3)
