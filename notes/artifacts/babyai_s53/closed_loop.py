"""Diagnostic (session 53): the rollout LM as a *policy* in the true BabyAI dynamics.

Same prompts, starts and decoding as `imagine generate` (decoding.imagine), but every imagined
next state is replaced by the simulator's (BabyAIWorld.from_state(s).step(a)). Success then
measures only the model's actions, closed loop -- the number to set beside DiscreteBC's
success on the same level (train 91.2, rephrase 20.5 real only).
usage: closed_loop.py CHECKPOINT LEVEL N TEMPERATURE
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
last = {}
orig_choose = D._choose_actions


def choose(model_, hidden, temperature, gen):
    a = orig_choose(model_, hidden, temperature, gen)
    last["a"] = a.cpu().numpy()
    return a


def true_next(hidden, current):
    cur = current.float().cpu().numpy()
    nxt = []
    for s, a in zip(cur, last["a"]):
        w = BabyAIWorld.from_state(s)
        w.step(int(a))
        nxt.append(w.to_state())
    return model.normalise(torch.as_tensor(np.stack(nxt), dtype=torch.float32))


D._choose_actions = choose
model.predict_states = true_next
starts = D.initial_starts("BabyAI-v0", level, n, seed=1)
cfg = D.GenerateConfig(temperature=temp, batch_size=64, seed=1, stop_on_end=False)
eps, _ = D.imagine(model, domain, starts, cfg, progress=False)
succ = np.array([bool(ep.successes[-1]) for ep in eps])
fam = {}
for st, s in zip(starts, succ):
    fam.setdefault(st.task.family, []).append(s)
out = {"checkpoint": ckpt, "level": level, "episodes": n, "temperature": temp, "success": float(succ.mean()),
       "by_family": {k: [len(v), round(float(np.mean(v)), 3)] for k, v in sorted(fam.items())}}
print(json.dumps(out))
