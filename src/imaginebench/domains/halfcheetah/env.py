"""The HalfCheetah-v0 Gymnasium environment."""

from __future__ import annotations

from typing import Any

import numpy as np

from imaginebench.domains.base import Task
from imaginebench.domains.env_base import InstructionEnv
from imaginebench.domains.halfcheetah import physics as P
from imaginebench.domains.halfcheetah.domain import HalfCheetahDomain, legality_errors
from imaginebench.domains.halfcheetah.expert import HalfCheetahExpert


class HalfCheetahEnv(InstructionEnv):
    """## Description

    gymnasium's MuJoCo ``HalfCheetah-v5`` (a planar two-legged runner) following language
    instructions: run forward or backward, faster, one way then the other, or jump forward,
    backward or in place.

    ## Observation Space

    ``Box(-inf, inf, (18,), float32)``: the forward displacement since the last step, then
    gymnasium's 17-dim observation (``qpos`` without x: root height, pitch, six joint angles;
    ``qvel``: root vx, vz, pitch rate, six joint rates).  See :mod:`.physics`.

    ## Action Space

    ``Box(-1, 1, (6,), float32)``: torques of the six leg joints, as gymnasium's env.

    ## Rewards

    Per task (:mod:`.success`): the velocity in the asked direction for the running tasks (in
    the current half's direction for the sequential ones); for the jump tasks 10× the torso's
    rise above its standing height while airborne and upright plus the velocity in the asked direction capped at 1 m/s (in place: minus
    the speed); minus gymnasium's control cost 0.1·|a|² in all.

    ## Success/Termination

    Pure functions of the state history (:mod:`.success`): runs average at least 1.4 m/s
    (faster: 3 m/s) over at least 100 steps; sequential tasks make 3 m in the first direction in
    the first 100 steps and 3 m in the other in the last 100, checked at step 200; jumps need two
    upright flights that lift the torso 0.3 m, plus 1 m of net travel in the asked direction (in
    place: never 0.5 m from the start).  The episode terminates on success and truncates after
    200 steps.

    ## Starting State

    gymnasium's reset: joint positions uniform ±0.1 around the rest pose, velocities N(0, 0.1²).

    ## Registered ids

    ``ImagineBench/HalfCheetah-v0`` with ``level`` in ``train``, ``rephrase``, ``easy``, ``hard``.

    ## Version history

    * v0: initial version.
    """

    domain_cls = HalfCheetahDomain
    domain: HalfCheetahDomain

    def __init__(self, level: str = "train", render_mode: str | None = None) -> None:
        super().__init__(level=level, render_mode=render_mode)
        self.sim = P.Simulator()
        self.expert = HalfCheetahExpert()

    def _reset_simulation(self, task: Task) -> np.ndarray:
        return self.sim.reset(int(self.np_random.integers(2**31)))

    def _simulate(self, action: Any) -> np.ndarray:
        return self.sim.step(np.asarray(action, dtype=np.float64))

    def set_state(self, state: np.ndarray) -> None:
        """Put the simulator into an 18-dim state (``ValueError`` when it is not finite or illegal).

        Exact: the state holds the whole ``qpos`` but x, and ``qvel``; x does not enter the
        dynamics.  ``dx`` is kept as the state's history.  The progress record is left as it is.
        """
        s = np.asarray(state, dtype=np.float64).reshape(-1)
        errors = legality_errors(s)
        if errors:
            raise ValueError(f"Cannot set an illegal HalfCheetah-v0 state: {'; '.join(errors)}.")
        self.sim.write(s)
        self.state = self.sim.read()

    def _expert(self) -> np.ndarray:
        assert self.task is not None
        return self.expert.act(self.task, self.state, self.progress)

    def close(self) -> None:
        self.sim.close()
        super().close()
