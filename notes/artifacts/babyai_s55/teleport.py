"""How often do imagined BabyAI pickups take an object the agent is not standing on (impossible in the simulator)?"""
import sys, json
import numpy as np
from imaginebench.data.storage import load_dataset
from imaginebench.domains.babyai import layout as L
out = {}
for path in sys.argv[1:]:
    ds = load_dataset(path)
    n_pick = n_tele = 0; eps_tele = 0; eps = 0
    for ep in ds:
        eps += 1; bad = False
        for t, a in enumerate(ep.actions):
            if int(a) != L.PICKUP: continue
            s, ns = ep.states[t], ep.states[t + 1]
            kind = int(round(ns[L.CARRIED_TYPE]))
            if int(round(s[L.CARRIED_TYPE])) != 0 or kind == 0: continue
            n_pick += 1
            name = L.OBJECT_TYPES[kind - 1]; slot = L.OBJECT_SLOT[name]
            if (round(s[slot + 1]), round(s[slot + 2])) != (round(s[L.AGENT_ROW]), round(s[L.AGENT_COL])):
                n_tele += 1; bad = True
        eps_tele += bad
    out[path.split("/")[-1]] = {"episodes": eps, "imagined_pickups": n_pick, "from_another_cell": n_tele,
                                "episodes_with_one": eps_tele}
print(json.dumps(out, indent=1))
