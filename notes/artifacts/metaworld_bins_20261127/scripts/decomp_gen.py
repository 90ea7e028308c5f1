"""Generate per_task unfiltered rollouts per task of a level from real starts; share passing each honest-filter stage."""
import sys, json
import numpy as np, torch
from pathlib import Path
from imaginebench.envs.registry import load_domain
from imaginebench.imagination.checkpoint import load_checkpoint
from imaginebench.imagination.decoding import GenerateConfig, imagine, initial_starts

ckpt, level, per_task, temp, env = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
physics = len(sys.argv) > 6 and sys.argv[6] == "physics"
from imaginebench.imagination.replay import replay_success
torch.set_num_threads(1)
domain = load_domain(env)
model, meta = load_checkpoint(Path(ckpt), device=torch.device("cpu"), which="best")
model.merge_lora()
tasks = list(domain.tasks(level))
starts = initial_starts(env, level, per_task * len(tasks), seed=1)
eps, _ = imagine(model, domain, starts, GenerateConfig(batch_size=64, seed=1, keep="none", temperature=temp, physics_prior=physics), progress=False)
keys = ["goal", "legal", "contact", "propulsion", "goal_legal_contact", "all", "replay", "all_and_replay"]
rep = replay_success(env, level, eps)
rows = {}
for ep, r in zip(eps, rep):
    s = np.asarray(ep.states, np.float64)
    legal = bool(np.all(domain.is_legal_batch(s[1:])))
    contact = not bool(np.any(domain.untouched_steps(s)))
    try:
        prop = not domain.unpowered(s, np.asarray(ep.actions))
    except ValueError:
        prop = False
    _, succ = domain.score_rollout(domain.task(ep.task), s, ep.actions)
    goal = bool(succ[-1])
    rows.setdefault(ep.task, []).append((goal, legal, contact, prop, goal and legal and contact, goal and legal and contact and prop, bool(r), goal and legal and contact and prop and bool(r)))
out = {t: dict(zip(keys, np.mean(v, axis=0).round(3).tolist())) for t, v in rows.items()}
out["ALL"] = dict(zip(keys, np.mean([x for v in rows.values() for x in v], axis=0).round(3).tolist()))
print(json.dumps({"checkpoint": ckpt, "temperature": temp, "level": level, "per_task": per_task, "physics_prior": physics, "tasks": out}, indent=1))
