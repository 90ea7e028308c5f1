"""HalfCheetah's physics prior for imagined steps: joints stop at their limits and the body does
not sink into the floor.

Asked for a hard task (run forward then backward, jump in place), the binned rollout model pushes
the leg joints past their limits in 17 of 20 rollouts, so the honest filter keeps 2 of 750
candidates (notes/halfcheetah_imagination.md, session 25).  :func:`constrain_step` imposes what
the simulator would: each leg joint's angle is clipped to its limit plus the largest overshoot
measured on real expert states (MuJoCo's limits are soft), and where a body part lies deeper in
the floor than any real state's, the whole body is raised until it does not.  Velocities, the
root's pitch and the forward motion stay the model's own (the propulsion check still judges them).
A pure function of the imagined state; opt-in (``imagine generate --physics-prior``), recorded in
the data's metadata.
"""

from __future__ import annotations

import numpy as np

from imaginebench.domains.halfcheetah import physics as P

JOINT_OVERSHOOT = 0.23
"""rad past a joint limit that the prior allows: the experts' real states overshoot by up to 0.222
(151,405 states of the small train data; notes/halfcheetah.md)."""
FLOOR_SINK = 0.09
"""m a body part may lie inside the floor: the fast runners' real feet sink up to 0.085."""


def constrain_step(previous: np.ndarray, actions: np.ndarray, states: np.ndarray) -> np.ndarray:
    """``(N, 18)`` imagined next states with the joints clipped to their limits (± the measured
    overshoot) and the body raised out of the floor; ``previous`` and ``actions`` are not needed
    (the domain contract's signature)."""
    out = np.array(states, dtype=np.float64, copy=True)
    limits = P.joint_range()
    out[:, P.JOINT_SLICE] = np.clip(out[:, P.JOINT_SLICE], limits[:, 0] - JOINT_OVERSHOOT,
                                    limits[:, 1] + JOINT_OVERSHOOT)
    finite = np.isfinite(out).all(axis=1)
    low = np.where(finite, P.lowest_points(np.where(finite[:, None], out, 0.0)), 0.0)
    out[:, P.ROOTZ] += np.maximum(0.0, -FLOOR_SINK - low)  # the height enters every body part's
    return out.astype(np.asarray(states).dtype, copy=False)
