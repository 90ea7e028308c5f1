"""Per task of an unfiltered file: share of candidates passing each honest-filter stage (goal, legal, contact, propulsion, all)."""
import sys, json
import numpy as np
from imaginebench.envs.registry import load_domain
from imaginebench.data.storage import load_dataset

env, path = sys.argv[1], sys.argv[2]
domain = load_domain(env)
ds = load_dataset(path)
rows = {}
for ep in ds:
    s = np.asarray(ep.states, np.float64)
    legal = bool(np.all(domain.is_legal_batch(s[1:])))
    contact = not bool(np.any(domain.untouched_steps(s)))
    try:
        prop = not domain.unpowered(s, np.asarray(ep.actions))
    except ValueError:
        prop = False
    _, succ = domain.score_rollout(domain.task(ep.task), s, ep.actions)
    goal = bool(succ[-1])
    r = rows.setdefault(ep.task, [])
    r.append((goal, legal, contact, prop, goal and legal and contact and prop, goal and legal and contact))
out = {t: dict(zip(["goal", "legal", "contact", "propulsion", "all", "all_but_propulsion"], np.mean(v, axis=0).round(3).tolist()), n=len(v)) for t, v in rows.items()}
tot = np.mean([x for v in rows.values() for x in v], axis=0).round(3).tolist()
out["ALL"] = dict(zip(["goal", "legal", "contact", "propulsion", "all", "all_but_propulsion"], tot))
print(json.dumps(out, indent=1))
