# Session 57: per imaginary/real file, how many rollouts break the BabyAI step rules (causality.py). usage: rule_counts.py FILE.npz ...
import sys, numpy as np, glob
from imaginebench.data import load_dataset
from imaginebench.domains.babyai.causality import uncaused_steps, unpowered
from imaginebench.envs.registry import load_domain
from imaginebench.imagination.filters import states_hold
dom = load_domain("BabyAI-v0")
for path in sys.argv[1:]:
    ds = load_dataset(path)
    n = unc = unp = either = steps = legal_ok = 0
    for ep in ds:
        st = np.asarray(ep.states); a = np.asarray(ep.actions)
        u = uncaused_steps(st); p = unpowered(st, a)
        n += 1; steps += len(u); unc += bool(u.any()); unp += p; either += bool(u.any()) or p
    print(f"{path.split('/')[-1]}: {n} eps, {steps} steps, uncaused {unc}, unpowered {unp}, either {either} ({100*either/max(n,1):.1f}%), kept {n-either}")
