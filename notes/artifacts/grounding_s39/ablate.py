"""Ablations of the grounded keep test (issue 66): ensemble size, spread threshold, path tolerance,
goal/path checks, inverse model's window.  For each variant: precision against the simulator on every
novel level (of the rollouts kept, the share whose stored actions replay to the goal in the simulator;
a diagnostic that reads the simulator) and recall on real data (held-out real successful train
episodes the test keeps).  No weights are refitted except the inverse model for the window rows.

Usage: IMAGINEBENCH_HOME=... python ablate.py ENV [LEVEL ...] > out.json  (log on stderr)
"""
import copy, json, sys, time
from dataclasses import replace

import numpy as np
import torch

from imaginebench.data.hub import load_real
from imaginebench.envs.registry import load_domain
from imaginebench.imagination import grounding as G
from imaginebench.imagination.replay import replay_success

torch.set_num_threads(1)
env_id = sys.argv[1]
levels = sys.argv[2:] or ["rephrase", "easy", "hard"]
domain = load_domain(env_id)
base = G.load_grounding(env_id, "small")
cfg0 = base.cfg
real = load_real(env_id, "train", "small")
episodes = G._episode_arrays(real)
_, hold_idx = G._split_episodes(len(episodes), cfg0)
_, hold_eps = G.fit_episodes(episodes, cfg0)
ep_objs = [ep for ep in real if len(ep) > 0]
hold_success = [ep_objs[i] for i in hold_idx if bool(np.any(ep_objs[i].successes))]

pools = {}
for level in levels:
    pool, _, _ = G.candidate_pool(env_id, level, "small")
    sok = np.array([G.states_hold(domain, ep) for ep in pool])
    t0 = time.time()
    sim = replay_success(env_id, level, pool)
    print(f"{level}: pool {len(pool)}, states pass {sok.sum()}, simulator replay {sim.sum()} ({time.time()-t0:.0f} s)",
          file=sys.stderr)
    pools[level] = (pool, sok, sim)


def with_cfg(model, **changes):
    """A copy of ``model`` with settings changed and the keep test recalibrated (weights unchanged)."""
    m = copy.deepcopy(model)
    m.cfg = replace(model.cfg, **changes)
    G.calibrate(m, hold_eps)
    return m


def subset(model, k):
    """The first ``k`` members of the fitted ensemble (members train independently), recalibrated."""
    cfg = replace(model.cfg, members=k)
    m = G.Grounding(model.state_dim, model.action_dim, model.discrete, cfg)
    m.register_action_range(model.a_low.numpy(), model.a_high.numpy())
    state = {}
    for name, v in model.state_dict().items():
        state[name] = v[:k] if name.startswith("forward_net.") else v
    m.load_state_dict(state)
    m.report = model.report
    m.eval()
    G.calibrate(m, hold_eps)
    return m


def refit_inverse(model, past, future):
    """``model`` with its inverse model refitted on the same train episodes with another window."""
    cfg = replace(model.cfg, past=past, future=future)
    m = G.Grounding(model.state_dim, model.action_dim, model.discrete, cfg)
    m.register_action_range(model.a_low.numpy(), model.a_high.numpy())
    state = {k: v for k, v in model.state_dict().items() if not k.startswith("inverse_net.")}
    m.load_state_dict(state, strict=False)
    tr, _ = G.fit_episodes(episodes, cfg)
    t = torch.as_tensor
    w = np.concatenate([G.inverse_inputs(e[0], past, future) for e in tr])
    a = np.concatenate([e[1] for e in tr])
    wv = np.concatenate([G.inverse_inputs(e[0], past, future) for e in hold_eps])
    av = np.concatenate([e[1] for e in hold_eps])
    gen = torch.Generator().manual_seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    xi, xiv = m._inverse_in(t(w)), m._inverse_in(t(wv))
    mse = lambda p, q: ((p - q) ** 2).mean(dim=(1, 2))
    G._train(m.inverse_net, xi, m._actions_in(t(a)), xiv, m._actions_in(t(av)), mse, cfg, gen, "inverse")
    m.eval()
    m.report = copy.deepcopy(model.report)
    with torch.no_grad():
        rel = np.concatenate([m.relabel(e[0]) for e in hold_eps])
    m.report.inverse_val_accuracy = float(np.mean(np.all(np.abs(rel - av) <= 0.1, axis=-1)))
    G.calibrate(m, hold_eps)
    return m


def measure(name, model, relabel=False, goal=True, path=True, spread=True):
    m = copy.deepcopy(model)
    if not spread:
        m.threshold.fill_(float("inf"))
    if not path:
        m.tolerance.fill_(float("inf"))
    row = {"threshold": float(m.threshold), "tolerance": [round(float(v), 4) for v in m.tolerance[m.controlled]],
           "inverse_within_0.1": m.report.inverse_val_accuracy, "levels": {}}
    rec = [G.ground_check(m, domain, ep, relabel=relabel) is not None for ep in hold_success] if goal else []
    row["real_recall"] = float(np.mean(rec)) if rec else None
    for level, (pool, sok, sim) in pools.items():
        keep = np.zeros(len(pool), bool)
        good = np.zeros(len(pool), bool)
        kept_eps, idx = [], []
        for i, (ep, s) in enumerate(zip(pool, sok)):
            if not s:
                continue
            if goal:
                k = G.ground_check(m, domain, ep, relabel=relabel, level=level)
            else:  # path check only: the replay follows the imagined hand, wherever it ends
                states = np.asarray(ep.states, np.float32)
                rp, sp = m.model_replay(states[0], np.asarray(ep.actions))
                k = None if (sp.max() > float(m.threshold) or G.strays(m, rp, states)) else ep
            if k is not None:
                keep[i] = True
                kept_eps.append(k)
                idx.append(i)
        if relabel and kept_eps:
            good[idx] = replay_success(env_id, level, kept_eps)
        else:
            good = sim.copy()
        n, ok = int(keep.sum()), int((keep & good).sum())
        row["levels"][level] = {"kept": n, "replay_ok": ok, "precision": ok / n if n else None,
                                "tasks": len({pool[i].task for i in np.flatnonzero(keep)})}
    cells = "  ".join(f"{lv} {r['replay_ok']}/{r['kept']}" for lv, r in row["levels"].items())
    print(f"{name:<44} recall {row['real_recall'] if row['real_recall'] is None else round(row['real_recall'], 3)}  {cells}",
          file=sys.stderr, flush=True)
    return row


out = {"env": env_id, "config": G.summary(base), "rows": {}}
R = out["rows"]
for lv, (pool, sok, sim) in pools.items():
    R[f"states only ({lv} reference)"] = {"levels": {lv: {"kept": int(sok.sum()), "replay_ok": int((sok & sim).sum())}}}
R["default (5 members, q0.95 spread, q0.99 path)"] = measure("default", base)
R["no spread check"] = measure("no spread check", base, spread=False)
R["no path check"] = measure("no path check", base, path=False)
R["path check only (no model goal check)"] = measure("path only", base, goal=False)
for q in (0.8, 0.9, 0.99, 1.0):
    R[f"spread threshold q{q}"] = measure(f"spread q{q}", with_cfg(base, threshold_quantile=q))
for q in (0.9, 0.95, 1.0):
    R[f"path tolerance q{q}"] = measure(f"path q{q}", with_cfg(base, track_quantile=q))
for k in (2, 3, 4):
    R[f"members {k}"] = measure(f"members {k}", subset(base, k))
R["relabel (window past 1 / future 2)"] = measure("relabel p1 f2", base, relabel=True)
if not base.discrete:
    for p, f in ((0, 1), (0, 2), (2, 3)):
        t0 = time.time()
        m = refit_inverse(base, p, f)
        print(f"inverse refit past {p} future {f}: {time.time() - t0:.0f} s, within 0.1 {m.report.inverse_val_accuracy:.3f}",
              file=sys.stderr)
        R[f"relabel (window past {p} / future {f})"] = measure(f"relabel p{p} f{f}", m, relabel=True)
print(json.dumps(out, indent=1))
