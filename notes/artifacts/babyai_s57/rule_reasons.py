# Session 57: (1) a random policy in the simulator never breaks the step rules; (2) which rule each imagined step breaks. usage: rule_reasons.py FILE.npz ...
import sys, numpy as np, collections
from imaginebench.data import load_dataset
from imaginebench.domains.babyai import layout as L
from imaginebench.domains.babyai.causality import uncaused_steps
from imaginebench.domains.babyai.grid import BabyAIWorld
# 1) random policy in the simulator from real start states
ds = load_dataset("/work/hl/datasets/BabyAI-v0/small/real-train.npz")
rng = np.random.default_rng(0)
bad = total = 0
from imaginebench.domains.babyai.causality import unpowered
for k, ep in enumerate(ds):
    if k >= 3000: break
    w = BabyAIWorld.from_state(np.asarray(ep.states[0]))
    sts = [w.to_state()]; acts = []
    for t in range(60):
        a = int(rng.integers(7)); w.step(a); acts.append(a); sts.append(w.to_state())
    sts = np.array(sts)
    u = uncaused_steps(sts); total += len(u); bad += int(u.sum()) + int(unpowered(sts, np.array(acts)))
print("random policy in the simulator:", total, "steps,", bad, "flagged")
# 2) which rule fires on imagined kept rollouts
def why(s, n):
    r = []
    moved = (s[13], s[14]) != (n[13], n[14]); cc = s[15] != n[15]; dc = s[12] != n[12]
    if moved + cc + dc > 1: r.append("two changes: " + "+".join(x for x, f in (("move", moved), ("carry", cc), ("door", dc)) if f))
    if moved and abs(n[13]-s[13]) + abs(n[14]-s[14]) != 1: r.append("jump")
    for name in L.OBJECT_TYPES:
        c, i = L.CARRIED_CODE[name], L.OBJECT_SLOT[name]
        if s[15] != c and n[15] != c and (s[i+1], s[i+2]) != (n[i+1], n[i+2]): r.append("floor object moved")
        if s[15] != c and n[15] == c and (s[i+1], s[i+2]) != (s[13], s[14]): r.append("pick-up from another cell")
        if s[15] == c and n[15] != c and (n[i+1], n[i+2]) != (n[13], n[14]): r.append("drop elsewhere")
    if dc:
        if abs(s[13]-s[10]) + abs(s[14]-s[11]) != 1: r.append("door changed, agent not beside")
        else: r.append(f"door {int(s[12])}->{int(n[12])} carried {int(s[15])}")
    if s[15] and n[15] and s[15] != n[15]: r.append("carry swap")
    return r or ["fixed slot changed"]
for path in sys.argv[1:]:
    c = collections.Counter()
    for ep in load_dataset(path):
        st = np.rint(np.asarray(ep.states)).astype(int)
        u = uncaused_steps(st)
        for t in np.flatnonzero(u):
            for r in why(st[t], st[t+1]): c[r] += 1
    print(path.split("/")[-1], c.most_common(8))
