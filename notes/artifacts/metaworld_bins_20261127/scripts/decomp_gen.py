"""Generate PER_TASK unfiltered rollouts per task of a level from real starts; share passing each
honest-filter stage, and replay in the simulator.

    python decomp_gen.py CHECKPOINT LEVEL PER_TASK TEMPERATURE ENV [physics]
"""
import sys, json
import numpy as np, torch
from pathlib import Path
from imaginebench.envs.registry import load_domain
from imaginebench.imagination.checkpoint import load_checkpoint
from imaginebench.imagination.decoding import GenerateConfig, imagine, initial_starts
from imaginebench.imagination.replay import replay_success

from decompose import KEYS, stages, table

ckpt, level, per_task, temp, env = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
physics = len(sys.argv) > 6 and sys.argv[6] == "physics"
torch.set_num_threads(1)
domain = load_domain(env)
model, meta = load_checkpoint(Path(ckpt), device=torch.device("cpu"), which="best")
model.merge_lora()
tasks = list(domain.tasks(level))
starts = initial_starts(env, level, per_task * len(tasks), seed=1)
cfg = GenerateConfig(batch_size=64, seed=1, keep="none", temperature=temp, physics_prior=physics)
eps, _ = imagine(model, domain, starts, cfg, progress=False)
rep = replay_success(env, level, eps)
rows = {}
for ep, r in zip(eps, rep):
    st = stages(domain, ep)
    rows.setdefault(ep.task, []).append(st + (bool(r), st[-1] and bool(r)))
out = table(rows, KEYS + ["replay", "all_and_replay"])
print(json.dumps({"checkpoint": ckpt, "temperature": temp, "level": level, "per_task": per_task,
                  "physics_prior": physics, "tasks": out}, indent=1))
