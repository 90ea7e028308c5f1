import sys, numpy as np
from imaginebench.data.storage import load_dataset
from imaginebench.imagination.replay import replay_success
for f, level in zip(sys.argv[1::2], sys.argv[2::2]):
    ds = load_dataset(f, verify=False); eps = list(ds)
    ok = replay_success("HalfCheetah-v0", level, eps)
    tasks = np.array([e.task for e in eps]); imag = np.array([bool(e.successes[-1]) if len(e) else False for e in eps])
    print(level, f)
    for t in np.unique(tasks):
        m = tasks == t
        print(f"  {t:28s} n={m.sum():4d} imagined-success {imag[m].mean():.2f}  replay-success {ok[m].mean():.2f}  both {(ok&imag)[m].mean():.2f}", flush=True)
