"""Diagnostic (session 53): the rollout LM as a *memoryless* policy in the true BabyAI dynamics.

Every step is a fresh rollout prompt from the current true state ("Generate a rollout for the
following goal: [GOAL]. Rollout:" + s_t), so the model's action sees no history -- against
closed_loop.py, where it sees its own past states and actions. A gap between the two says how much
conditioning on its own history costs the model's actions.
usage: closed_loop_markov.py CHECKPOINT LEVEL N TEMPERATURE
"""
import json
import sys

import numpy as np
import torch

from imaginebench.domains.babyai.grid import BabyAIWorld
from imaginebench.envs.registry import domain_class
from imaginebench.imagination import decoding as D
from imaginebench.imagination.checkpoint import load_checkpoint

ckpt, level, n, temp = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
torch.set_num_threads(1)
model, meta = load_checkpoint(ckpt, device="cpu")
domain = domain_class("BabyAI-v0")()
starts = D.initial_starts("BabyAI-v0", level, n, seed=1)
cfg = D.GenerateConfig(temperature=temp, batch_size=64, seed=1, stop_on_end=False)
gen = torch.Generator().manual_seed(1)
rows = [{"start": s, "state": np.asarray(s.state, np.float64), "progress": domain.initial_progress(s.task, s.state),
         "t": 0, "done": False, "success": False, "horizon": domain.task_horizon(s.task)} for s in starts]
while True:
    live = [r for r in rows if not r["done"]]
    if not live:
        break
    eps, _ = D.imagine(model, domain, [D.Start(r["start"].task, r["start"].instruction, r["state"].astype(np.float32))
                                       for r in live], cfg, progress=False, gen=gen, horizons=[1] * len(live))
    for r, ep in zip(live, eps):
        a = int(ep.actions[0])
        w = BabyAIWorld.from_state(r["state"])
        w.step(a)
        ns = np.asarray(w.to_state(), np.float64)
        o = domain.outcome(r["start"].task, r["state"], a, ns, r["progress"])
        r["state"], r["progress"], r["t"] = ns, o.progress, r["t"] + 1
        if o.success or r["t"] >= r["horizon"]:
            r["done"], r["success"] = True, bool(o.success)
succ = np.array([r["success"] for r in rows])
fam = {}
for r in rows:
    fam.setdefault(r["start"].task.family, []).append(r["success"])
out = {"checkpoint": ckpt, "level": level, "episodes": n, "temperature": temp, "memoryless": True,
       "success": float(succ.mean()), "by_family": {k: [len(v), round(float(np.mean(v)), 3)] for k, v in sorted(fam.items())}}
print(json.dumps(out))
