"""Per task of a level: imagined success, replay success, propulsion pass, |a|, |da| of unfiltered candidates."""
import sys, json, time
import numpy as np, torch
from pathlib import Path
from imaginebench.envs.registry import load_domain
from imaginebench.imagination.checkpoint import load_checkpoint
from imaginebench.imagination.decoding import GenerateConfig, imagine, initial_starts
from imaginebench.imagination.replay import replay_success

ckpt, level, per_task, temp = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
env = sys.argv[5] if len(sys.argv) > 5 else "HalfCheetah-v0"  # session 26 ran it on MetaWorld-v0 too
torch.set_num_threads(1)
domain = load_domain(env)
model, meta = load_checkpoint(Path(ckpt), device=torch.device("cpu"), which="best")
model.merge_lora()
tasks = list(domain.tasks(level))
starts = initial_starts(env, level, per_task * len(tasks), seed=1)
t0 = time.perf_counter()
eps, speed = imagine(model, domain, starts, GenerateConfig(batch_size=64, seed=1, keep="none", temperature=temp), progress=False)
secs = time.perf_counter() - t0
rep = replay_success(env, level, eps)
out = {"checkpoint": ckpt, "step": meta["loaded"]["step"], "level": level, "temperature": temp, "seconds": round(secs), "tasks": {}}
for task in tasks:
    idx = [i for i, e in enumerate(eps) if e.task == task.name]
    mine = [eps[i] for i in idx]
    succ = np.mean([bool(e.successes[-1]) for e in mine])
    repl = np.mean(rep[idx])
    prop = np.mean([not domain.unpowered(np.asarray(e.states, np.float64), np.asarray(e.actions)) for e in mine])
    a = np.concatenate([e.actions for e in mine]); da = np.concatenate([np.abs(np.diff(e.actions, axis=0)) for e in mine if len(e) > 1])
    both = np.mean([bool(e.successes[-1]) and r and not domain.unpowered(np.asarray(e.states, np.float64), np.asarray(e.actions)) for e, r in zip(mine, rep[idx])])
    out["tasks"][task.name] = dict(n=len(mine), imagined=round(float(succ), 3), replay=round(float(repl), 3), propulsion=round(float(prop), 3),
                                   imagined_and_replay=round(float(both), 3), mean_abs_a=round(float(np.abs(a).mean()), 3), mean_abs_da=round(float(da.mean()), 3),
                                   mean_len=round(float(np.mean([len(e) for e in mine])), 1))
print(json.dumps(out, indent=1))
