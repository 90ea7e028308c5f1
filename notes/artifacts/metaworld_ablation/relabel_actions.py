"""Ablation (issue 40): imagined Meta-World rollouts with their arm actions relabelled from their own
imagined hand motion by a linear inverse-dynamics fit on the real train data.

Why: in real data the commanded xyz action and the hand's next displacement correlate 0.81-0.84
per axis; in the honest imagined data only 0.41 / 0.20 / 0.62 (rephrase), so BC learns actions
that do not produce the imagined outcome. Relabelling tests whether the imagined *states* carry
useful behaviour once the actions are made consistent with them.

    python relabel_actions.py REAL.npz IMAGINARY.npz OUT.npz

Fit (least squares on every real transition): a_k = w_k * dhand_k + b_k for k in x, y, z; the
gripper action (index 3) is left as imagined. Relabelled actions are clipped to [-1, 1].
"""
import sys

import numpy as np

from imaginebench.data.dataset import Episode, EpisodeDataset
from imaginebench.data.storage import load_dataset, save_dataset


def fit(real: EpisodeDataset) -> tuple[np.ndarray, np.ndarray]:
    eps = list(real)
    a = np.concatenate([np.asarray(e.actions, np.float64)[:, :3] for e in eps])
    d = np.concatenate([np.diff(np.asarray(e.states, np.float64)[:, :3], axis=0) for e in eps])
    w, b = np.zeros(3), np.zeros(3)
    for k in range(3):
        x = np.stack([d[:, k], np.ones(len(d))], axis=1)
        (w[k], b[k]), *_ = np.linalg.lstsq(x, a[:, k], rcond=None)
        r = np.corrcoef(a[:, k], x @ np.array([w[k], b[k]]))[0, 1]
        print(f"axis {k}: a = {w[k]:.1f} * dhand + {b[k]:+.3f}  (real-data R^2 {r * r:.3f}, {len(d)} transitions)")
    return w, b


def relabel(ds: EpisodeDataset, w: np.ndarray, b: np.ndarray) -> EpisodeDataset:
    out = []
    for e in ds:
        acts = np.array(e.actions, np.float32, copy=True)
        d = np.diff(np.asarray(e.states, np.float64)[:, :3], axis=0)
        acts[:, :3] = np.clip(d * w + b, -1.0, 1.0)
        out.append(Episode(e.task, e.instruction, e.states, acts, e.rewards, e.terminals, e.truncations, e.successes))
    md = dict(ds.metadata)
    md["actions_relabelled"] = {"by": "linear inverse dynamics fit on the real train data (xyz; gripper as imagined)",
                                "w": w.tolist(), "b": b.tolist()}
    return EpisodeDataset.from_episodes(out, metadata=md, state_dim=ds.states.shape[1], action_shape=(4,))


if __name__ == "__main__":
    real, imag, dst = sys.argv[1:4]
    w, b = fit(load_dataset(real, verify=False))
    ds = load_dataset(imag, verify=False)
    print("wrote", save_dataset(relabel(ds, w, b), dst, overwrite=True), len(ds.lengths), "episodes")
