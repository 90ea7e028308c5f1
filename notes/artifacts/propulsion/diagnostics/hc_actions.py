import numpy as np
from imaginebench.data.storage import load_dataset
def stats(eps, name):
    by = {}
    for e in eps:
        if len(e) == 0: continue
        by.setdefault(e.task, []).append(np.asarray(e.actions))
    for t, a in sorted(by.items()):
        A = np.concatenate(a); d = np.concatenate([np.abs(np.diff(x, axis=0)) for x in a if len(x) > 1])
        print(f"{name:10s} {t:22s} n={len(a):4d} mean|a| {np.abs(A).mean():.3f}  sat(|a|>0.95) {(np.abs(A)>0.95).mean():.2f}  mean|da| {d.mean():.3f}  std {A.std(0).mean():.3f}")
real = load_dataset("/work/home_pub/datasets/HalfCheetah-v0/small/real-train.npz", verify=False)
stats(list(real), "real")
stats([e for e in load_dataset("/work/home_hc21/datasets/HalfCheetah-v0/small/imaginary-rephrase.unfiltered.npz", verify=False)], "imag-SW")
stats([e for e in load_dataset("/work/home_hc17/datasets/HalfCheetah-v0/small/imaginary-rephrase.unfiltered.npz", verify=False)], "imag-ship")
