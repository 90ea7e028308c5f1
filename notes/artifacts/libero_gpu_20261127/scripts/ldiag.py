"""LIBERO: PER_TASK unfiltered rollouts per task of a level from real starts; per task the share whose last
state reaches the goal, whose every state is legal, both (= kept by the honest filter), the first illegal
step and the commonest legality errors; optional simulator replay.

    python ldiag.py CHECKPOINT LEVEL PER_TASK TEMPERATURE [replay] > out.json
"""
import sys, json, time, collections, re
import numpy as np, torch
from pathlib import Path
from imaginebench.envs.registry import load_domain
from imaginebench.imagination.checkpoint import load_checkpoint
from imaginebench.imagination.decoding import GenerateConfig, imagine, initial_starts

ckpt, level, per_task, temp = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
replay = "replay" in sys.argv[5:]
physics = "physics" in sys.argv[5:]
env = "LIBERO-v0"
torch.set_num_threads(1)
domain = load_domain(env)
model, meta = load_checkpoint(Path(ckpt), device=torch.device("cpu"), which="best")
model.merge_lora()
tasks = list(domain.tasks(level))
starts = initial_starts(env, level, per_task * len(tasks), seed=1)
cfg = GenerateConfig(batch_size=64, seed=1, keep="none", temperature=temp, physics_prior=physics)
t0 = time.time()
eps, th = imagine(model, domain, starts, cfg, progress=False)
gen_s = time.time() - t0
rep = None
if replay:
    from imaginebench.imagination.replay import replay_success
    rep = replay_success(env, level, eps)
rows = collections.defaultdict(list)
errs = collections.defaultdict(collections.Counter)
for i, ep in enumerate(eps):
    s = np.asarray(ep.states, np.float64)
    legal_rows = domain.is_legal_batch(s[1:])
    legal = bool(np.all(legal_rows))
    first_illegal = int(np.argmin(legal_rows)) + 1 if not legal else -1
    if not legal:
        for e in domain.legality_errors(s[first_illegal])[:3]:
            errs[ep.task][re.sub(r"-?\d+\.\d+", "#", e)[:70]] += 1
    _, succ = domain.score_rollout(domain.task(ep.task), s, ep.actions)
    goal = bool(succ[-1]); ever = bool(np.any(succ))
    rows[ep.task].append(dict(goal=goal, goal_ever=ever, legal=legal, kept=goal and legal, length=len(ep.actions),
                              first_illegal=first_illegal, replay=None if rep is None else bool(rep[i])))
out = {}
for t, v in rows.items():
    fi = [r["first_illegal"] for r in v if r["first_illegal"] >= 0]
    out[t] = {k: round(float(np.mean([r[k] for r in v])), 3) for k in ("goal", "goal_ever", "legal", "kept", "length")}
    out[t]["first_illegal_median"] = float(np.median(fi)) if fi else None
    if rep is not None:
        out[t]["replay"] = round(float(np.mean([r["replay"] for r in v])), 3)
    out[t]["errors"] = errs[t].most_common(3)
allr = [r for v in rows.values() for r in v]
out["ALL"] = {k: round(float(np.mean([r[k] for r in allr])), 3) for k in ("goal", "goal_ever", "legal", "kept", "length")}
print(json.dumps({"checkpoint": ckpt, "level": level, "per_task": per_task, "temperature": temp, "physics_prior": physics,
                  "generate_s": round(gen_s, 1), "throughput": th if isinstance(th, dict) else str(th), "tasks": out},
                 indent=1, default=str))
