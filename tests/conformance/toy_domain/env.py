"""Lamps-v0's simulator: toggling lamps, an expert, a picture."""

from __future__ import annotations

import numpy as np

from imaginebench.domains.env_base import InstructionEnv
from tests.conformance.toy_domain.domain import LampsDomain


class LampsEnv(InstructionEnv):
    domain_cls = LampsDomain

    def _sample_start(self, task):
        return self.np_random.integers(0, 2, size=3).astype(np.float64)

    def _simulate(self, action):
        state = self.state.copy()
        state[int(action)] = 1.0 - state[int(action)]
        return state

    def set_state(self, state):
        errors = self.domain.legality_errors(state)
        if errors:
            raise ValueError(f"Cannot set an illegal Lamps-v0 state: {errors[0]}.")
        self.state = np.asarray(state, dtype=np.float64).copy()

    def _expert(self):
        return next(i for i in self.task.params["lamps"] if self.state[i] < 0.5)

    def render_state(self, state, size: int = 32) -> np.ndarray:
        image = np.zeros((size, 3 * size, 3), dtype=np.uint8)
        for i, on in enumerate(np.asarray(state) > 0.5):
            image[4:-4, i * size + 4:(i + 1) * size - 4] = (255, 220, 0) if on else (60, 60, 60)
        return image
