"""Precision of keep filters against the simulator (issue 66): of the rollouts each filter keeps,
the share whose stored actions, replayed in the simulator from the stored first state, reach the goal
(the `--oracle-replay` diagnostic; it reads the simulator, so it only measures, never filters).

Candidate pool per level: `grounding.candidate_pool` (the unfiltered candidates, then the honest set,
de-duplicated).  Usage: python precision.py ENV LEVEL [LEVEL ...] > out.json   (data home: $IMAGINEBENCH_HOME)
Grounding settings from $GROUNDING (JSON of GroundingConfig fields), e.g. GROUNDING='{"members": 7}'.
"""
import json, os, sys, time
from collections import Counter, defaultdict
from dataclasses import replace

import numpy as np
import torch

from imaginebench.envs.registry import load_domain
from imaginebench.imagination.filters import honest_ok
from imaginebench.imagination import grounding as G
from imaginebench.imagination.replay import replay_success

torch.set_num_threads(1)
env_id, levels = sys.argv[1], sys.argv[2:]
domain = load_domain(env_id)
settings = json.loads(os.environ.get("GROUNDING", "{}"))
if "hidden_units" in settings:
    settings["hidden_units"] = tuple(settings["hidden_units"])
cfg = replace(G.GroundingConfig(), **settings)
model = G.load_grounding(env_id, "small", cfg)
out = {"env": env_id, "config": G.summary(model), "levels": {}}
print(json.dumps(model.report.to_dict()), file=sys.stderr)

for level in levels:
    t0 = time.time()
    try:
        pool, sources, _ = G.candidate_pool(env_id, level, "small")
    except FileNotFoundError as e:
        print(f"{level}: {e}", file=sys.stderr)
        continue
    n = len(pool)
    tasks = [ep.task for ep in pool]
    honest = np.array([honest_ok(domain, ep) for ep in pool])
    sok = np.array([G.states_hold(domain, ep) for ep in pool])
    sim_imagined = replay_success(env_id, level, pool)
    filters = {"unfiltered": (np.ones(n, bool), sim_imagined), "honest": (honest, sim_imagined),
               "states (legal + goal)": (sok, sim_imagined)}
    for mode, kw in G.GROUND_MODES.items():
        kept = [G.ground_check(model, domain, ep, level=level, **kw) if s else None for ep, s in zip(pool, sok)]
        keep = np.array([k is not None for k in kept])
        good = np.zeros(n, bool)
        if keep.any():
            good[keep] = replay_success(env_id, level, [k for k in kept if k is not None])
        filters[f"states + {mode}"] = (keep, good)
    for mode in ("replay", "track"):  # no state test: the model replay alone decides
        kw = G.GROUND_MODES[mode]
        kept = [G.ground_check(model, domain, ep, level=level, **kw) for ep in pool]
        keep = np.array([k is not None for k in kept])
        good = np.zeros(n, bool)
        if keep.any():
            good[keep] = replay_success(env_id, level, [k for k in kept if k is not None])
        filters[f"{mode} alone"] = (keep, good)
    # diagnostics: the grounded actions of every states-passing candidate, no model check
    for name, fn in (("relabel", lambda ep: model.relabel(np.asarray(ep.states, np.float32))),
                     ("track", lambda ep: model.track(np.asarray(ep.states, np.float32))[1])):
        eps = [replace(ep, actions=fn(ep).astype(np.asarray(ep.actions).dtype)) for ep, s in zip(pool, sok) if s]
        good = np.zeros(n, bool)
        if eps:
            good[sok] = replay_success(env_id, level, eps)
        filters[f"states, {name} actions, no model check"] = (sok, good)
    rows = {}
    for name, (keep, good) in filters.items():
        per_task = defaultdict(lambda: [0, 0])
        for t, k, g in zip(tasks, keep, good):
            if k:
                per_task[t][0] += 1
                per_task[t][1] += int(g)
        kept = int(keep.sum())
        rows[name] = {"kept": kept, "replay_ok": int((keep & good).sum()),
                      "precision": float((keep & good).sum() / kept) if kept else None,
                      "per_task": {t: v for t, v in sorted(per_task.items())}}
    out["levels"][level] = {"pool": n, "sources": [os.path.basename(s) for s in sources],
                            "pool_per_task": dict(Counter(tasks)), "filters": rows, "seconds": time.time() - t0}
    print(f"{level}: pool {n} ({time.time() - t0:.0f} s)", file=sys.stderr)
    for name, r in rows.items():
        p = "n/a" if r["precision"] is None else f"{100 * r['precision']:.0f}%"
        print(f"  {name:<42} kept {r['kept']:>5}  replay {r['replay_ok']:>5}  precision {p}", file=sys.stderr)
print(json.dumps(out, indent=1))
