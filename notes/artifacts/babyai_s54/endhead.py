"""Diagnostic: imagined consistency with and without the end-of-rollout head (stop_on_end), per family.
usage: endhead.py CHECKPOINT LEVEL N"""
import json, sys
import numpy as np, torch
from imaginebench.envs.registry import domain_class
from imaginebench.imagination import decoding as D
from imaginebench.imagination.checkpoint import load_checkpoint
ckpt, level, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
torch.set_num_threads(1)
model, meta = load_checkpoint(ckpt, device="cpu")
domain = domain_class("BabyAI-v0")()
starts = D.initial_starts("BabyAI-v0", level, n, seed=1)
for stop in (True, False):
    cfg = D.GenerateConfig(temperature=1.0, batch_size=64, seed=1, stop_on_end=stop)
    eps, _ = D.imagine(model, domain, starts, cfg, progress=False)
    fam = {}
    for st, ep in zip(starts, eps):
        fam.setdefault(st.task.family, []).append((bool(ep.successes[-1]), len(ep.actions), len(ep.actions) >= domain.task_horizon(st.task)))
    out = {"stop_on_end": stop, "level": level, "n": n,
           "consistency": float(np.mean([bool(e.successes[-1]) for e in eps])),
           "by_family": {k: {"n": len(v), "succ": round(float(np.mean([a for a, _, _ in v])), 3),
                             "len": round(float(np.mean([b for _, b, _ in v])), 1),
                             "at_horizon": round(float(np.mean([c for _, _, c in v])), 3)} for k, v in sorted(fam.items())}}
    print(json.dumps(out), flush=True)
