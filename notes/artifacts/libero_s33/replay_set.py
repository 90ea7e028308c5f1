"""Diagnostic (session 33): the honest rephrase rollouts of $IMAGINEBENCH_HOME whose imagined actions,
replayed in the simulator from the imagined first state, reach the goal (no transition check),
written as the oracle variant of another data home.  It reads the simulator on novel tasks: a
diagnostic, never a method.  Usage: replay_set.py OUT_HOME (OUT_HOME also needs real-train.npz)."""
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from imaginebench.data.hub import imaginary_path
from imaginebench.data.storage import load_dataset, save_dataset
from imaginebench.imagination.replay import replay_success

src = imaginary_path("LIBERO-v0", "rephrase", "small", "honest")
out = Path(sys.argv[1]) / "datasets/LIBERO-v0/small/imaginary-rephrase.oracle.npz"
ds = load_dataset(src)
eps = list(ds)
replayed = np.asarray(replay_success("LIBERO-v0", "rephrase", eps), bool)
kept = [e for e, k in zip(eps, replayed) if k]
print("replayed", len(kept), "of", len(eps), Counter(e.task for e in kept))
md = {**ds.metadata, "filter": "oracle", "oracle": True, "filtered": True, "episodes": len(kept),
      "oracle_source": str(src), "oracle_dropped": len(eps) - len(kept), "oracle_rule": "replay (diagnostic script)"}
save_dataset(type(ds).from_episodes(kept, metadata=md, state_dim=ds.states.shape[1],
                                    action_shape=tuple(ds.actions.shape[1:])), out)
