"""Meta-World: is the imagined hand motion produced by the imagined actions? Linear per-axis fit dhand = w*a + b on real
train data; replay the first W actions from the start hand position; compare the replayed path with the own path."""
import sys, numpy as np
from imaginebench.data.storage import load_dataset
real = list(load_dataset(sys.argv[1], verify=False))
A = np.concatenate([np.asarray(e.actions)[:, :3] for e in real]); D = np.concatenate([np.diff(np.asarray(e.states)[:, :3], axis=0) for e in real])
w = np.zeros(3); b = np.zeros(3)
for k in range(3):
    X = np.stack([A[:, k], np.ones(len(A))], 1); (w[k], b[k]), *_ = np.linalg.lstsq(X, D[:, k], rcond=None)
print("w", w, "b", b)
def score(e, W):
    s = np.asarray(e.states)[:, :3]; a = np.asarray(e.actions)[:W, :3]; n = len(a)
    own = s[1:n + 1] - s[0]; rep = np.cumsum(a * w + b, axis=0)
    err = np.linalg.norm(own - rep, axis=1).max(); path = np.linalg.norm(own, axis=1).max()
    return err, path
for W in (10, 20, 40):
    for f, name in zip(sys.argv[1::2], sys.argv[2::2]) if False else [(sys.argv[1], 'real-train')] + list(zip(sys.argv[2::2], sys.argv[3::2])):
        v = np.array([score(e, W) for e in load_dataset(f, verify=False) if len(e) >= 2])
        print(f"W={W} {name:12s} n={len(v)} max|own-replayed| median {np.median(v[:,0]):.3f} p95 {np.percentile(v[:,0],95):.3f} p99.5 {np.percentile(v[:,0],99.5):.3f} max {v[:,0].max():.3f}   own path median {np.median(v[:,1]):.3f}")
print("--- pass share at W=10, threshold = real-train max + 0.02")
th = max(score(e, 10)[0] for e in real) + 0.02
for f, name in [(sys.argv[1], 'real-train')] + list(zip(sys.argv[2::2], sys.argv[3::2])):
    eps = [e for e in load_dataset(f, verify=False) if len(e) >= 2]
    ok = np.array([score(e, 10)[0] <= th for e in eps]); tasks = np.array([e.task for e in eps])
    print(f"{name:12s} th {th:.3f} pass {ok.mean():.3f}  " + " ".join(f"{t}:{ok[tasks==t].sum()}/{(tasks==t).sum()}" for t in np.unique(tasks)))
