"""Diagnostic: how far each trained LIBERO policy's actions are from the real train data's, per
action dimension, and what its critic says about them.  Usage: actdiag.py RUN_FOLDER [...]."""
import sys
from pathlib import Path

import numpy as np

from imaginebench.algos.sampler import MixedReplaySource
from imaginebench.algos.weights import load_model
from imaginebench.data.hub import load_real
from imaginebench.language import get_encoder

real = load_real("LIBERO-v0", "train", "small")
src = MixedReplaySource({"real": real}, None, encoder=get_encoder(None), seed=123)
rng = np.random.default_rng(0)
idx = src.sample_indices(8192, rng)
b = src.batch_from_indices(idx)
obs, act = np.asarray(b.observations), np.asarray(b.actions)
print("data |a| mean per dim", np.round(np.abs(act).mean(0), 3))
for folder in sys.argv[1:]:
    algo = load_model(Path(folder) / "model.pt")
    pred = algo.predict(obs)
    mse = ((pred - act) ** 2).mean(0)
    line = f"{folder}\n  mse per dim {np.round(mse, 4)}  total {mse.mean():.4f}"
    line += f"\n  |pi| mean per dim {np.round(np.abs(pred).mean(0), 3)}"
    line += f"\n  gripper sign agreement {np.mean(np.sign(pred[:, -1]) == np.sign(act[:, -1])):.3f}"
    line += f"\n  saturated (|a|>0.99) share per dim {np.round((np.abs(pred) > 0.99).mean(0), 3)}"
    try:
        qd = algo.predict_value(obs, act)
        qp = algo.predict_value(obs, pred)
        line += f"\n  Q(data a) {qd.mean():.3f}  Q(pi) {qp.mean():.3f}  Q(pi)>Q(data) {np.mean(qp > qd):.3f}"
    except Exception as e:  # BC has no critic
        line += f"\n  (no critic: {type(e).__name__})"
    print(line, flush=True)
