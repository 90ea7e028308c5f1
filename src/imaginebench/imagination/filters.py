"""Which imagined rollouts are kept: the keep modes and the honest filter's test.

Apart from generation (:mod:`.generate`) and quality (:mod:`.quality`), which both use them, so
neither imports the other for it.
"""

from __future__ import annotations

import numpy as np

from imaginebench.data.dataset import Episode
from imaginebench.domains.base import Domain

KEEP_MODES: tuple[str, ...] = ("honest", "none", "oracle", "grounded")
"""Which imagined rollouts are kept:

* ``honest`` (default): the goal holds at the last imagined state, every imagined state is
  legal, no imagined step makes a change nothing causes (``Domain.untouched_steps``: Meta-World's
  contact rule, BabyAI's one-change-per-step rules) and the rollout's actions could have produced
  its motion (``Domain.unpowered``: HalfCheetah and Meta-World replay the first ones through a
  model fit on real train data; BabyAI asks each change of the action that makes it), all judged
  without a simulator call,
  so it is usable for any novel instruction;
* ``none``: every rollout (the unfiltered data);
* ``oracle``: ``honest`` and, in addition, every imagined transition agrees with the
  simulator re-run from the imagined state.  This reads the simulator on novel tasks, so it is
  a *diagnostic* upper bound, never the default, and marked as oracle wherever it is used;
* ``grounded``: ``honest`` and, in addition, the rollout's actions cause its outcome by dynamics
  models learned from the domain's real train data (:mod:`.grounding`, its default mode): no
  simulator call, usable for any novel instruction.
"""

KEEP_VARIANT = {"honest": "honest", "none": "unfiltered", "oracle": "oracle", "grounded": "grounded"}
"""Keep mode -> stored dataset variant (:data:`imaginebench.data.hub.IMAGINARY_VARIANTS`)."""


def states_hold(domain: Domain, episode: Episode) -> bool:
    """Every imagined state finite and legal, and the goal holds at the last one (recomputed with
    ``domain.score_rollout``, not read from the stored flags): the honest filter without the
    domain's hand-written motion rules.  Empty rollouts are rejected."""
    if len(episode) == 0:
        return False
    states = np.asarray(episode.states, np.float64)
    if not np.all(np.isfinite(states)):
        return False
    if not bool(np.all(domain.is_legal_batch(states[1:]))):
        return False
    try:
        _, success = domain.score_rollout(domain.task(episode.task), states, episode.actions)
    except (ValueError, FloatingPointError, IndexError, KeyError):
        return False
    return bool(success[-1])


def honest_ok(domain: Domain, episode: Episode) -> bool:
    """Keep test of the honest filter: the goal holds at the last imagined state, every imagined
    state is legal (:func:`states_hold`), no imagined step moves what nothing touches and the
    actions could have produced the motion — the domain's own functions on the imagined rollout,
    no simulator."""
    if not states_hold(domain, episode):
        return False
    states = np.asarray(episode.states, np.float64)
    if bool(np.any(domain.untouched_steps(states))):
        return False
    try:
        return not domain.unpowered(states, np.asarray(episode.actions))
    except ValueError:
        return False
