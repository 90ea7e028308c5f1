"""Irreducible entropy of BabyAI's expert actions (random tie-breaks between shortest paths),
per train-data transition: 32 draws of the expert's rng per state."""
import collections, os, sys

import numpy as np
from imaginebench.data.storage import load_dataset
from imaginebench.domains.babyai.tasks import build_tasks
from imaginebench.domains.babyai.expert import expert_action
# argv[1]: a real-train dataset (default: the data home's BabyAI small set)
home = os.environ.get("IMAGINEBENCH_HOME", os.path.expanduser("~/.imaginebench"))
ds = load_dataset(sys.argv[1] if len(sys.argv) > 1 else f"{home}/datasets/BabyAI-v0/small/real-train.npz")
tasks = {t.name: t for t in build_tasks()['train']}
rng0 = np.random.default_rng(0)
ep_idx = rng0.choice(len(ds.lengths), 600, replace=False)
ss, as_ = ds.state_starts, ds.action_starts
H = []; fam_H = collections.defaultdict(list); agree = []
for e in ep_idx:
    t = tasks[ds.tasks[ds.task_ids[e]]]
    for j in range(int(ds.lengths[e])):
        s = ds.states[ss[e] + j]; i = as_[e] + j
        acts = [expert_action(t.family, t.params, s, np.zeros(8, bool), np.random.default_rng(k)) for k in range(32)]
        c = np.bincount(acts, minlength=7) / 32.0
        h = -(c[c > 0] * np.log(c[c > 0])).sum()
        H.append(h); fam_H[t.family].append(h); agree.append(c[int(ds.actions[i])] > 0)
print("transitions", len(H), "mean tie entropy (nats)", round(float(np.mean(H)), 3), "data action among expert's", round(float(np.mean(agree)), 3))
for f, v in fam_H.items(): print(f, len(v), round(float(np.mean(v)), 3))
