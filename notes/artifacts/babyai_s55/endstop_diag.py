"""Diagnostic (session 55): why does the end-of-rollout head stop rollouts that have not succeeded?
For each rollout the end head ended (no imagined success, before the horizon), replay its actions in the
simulator from the same start and classify: (A) the simulator reached the goal (imagined state wrong),
(B) imagined states equal the simulator's all along, goal not reached (the model believes it is done),
(C) imagination diverged from the simulator earlier.  usage: endstop_diag.py CHECKPOINT LEVEL N"""
import json, sys, collections
import numpy as np, torch
from imaginebench.domains.babyai.grid import BabyAIWorld
from imaginebench.envs.registry import domain_class
from imaginebench.imagination import decoding as D
from imaginebench.imagination.checkpoint import load_checkpoint
ckpt, level, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
torch.set_num_threads(1)
model, meta = load_checkpoint(ckpt, device="cpu")
domain = domain_class("BabyAI-v0")()
starts = D.initial_starts("BabyAI-v0", level, n, seed=1)
cfg = D.GenerateConfig(temperature=1.0, batch_size=64, seed=1, stop_on_end=True)
eps, _ = D.imagine(model, domain, starts, cfg, progress=False)
cnt = collections.Counter(); fam = collections.defaultdict(collections.Counter); diffs = collections.Counter(); first = collections.Counter(); firstact = collections.Counter()
from imaginebench.domains.babyai.layout import ACTION_NAMES as ACT
allact = collections.Counter()
for st, ep in zip(starts, eps):
    f = st.task.family
    if bool(ep.successes[-1]):
        cnt["imag_success"] += 1; fam[f]["imag_success"] += 1; continue
    if len(ep.actions) >= domain.task_horizon(st.task):
        cnt["horizon"] += 1; fam[f]["horizon"] += 1; continue
    for a in ep.actions: allact[ACT[int(a)]] += 1
    w = BabyAIWorld.from_state(np.asarray(ep.states[0], dtype=np.float64))
    p = domain.initial_progress(st.task, ep.states[0]); s = w.to_state(); sim_succ = False; diverged_at = None
    for t, a in enumerate(ep.actions):
        w.step(int(a)); ns = w.to_state()
        o = domain.outcome(st.task, s, int(a), ns, p); p = o.progress; s = ns
        sim_succ = sim_succ or o.success
        if diverged_at is None and not np.array_equal(np.round(ep.states[t + 1]), ns):
            diverged_at = t
            ent = tuple(int(i) for i in np.nonzero(np.round(ep.states[t + 1]) != ns)[0])
            first[(ACT[int(a)], ent)] += 1
            firstact[ACT[int(a)]] += 1
    if sim_succ:
        k = "A_sim_reached_goal"
    elif diverged_at is None:
        k = "B_states_exact_goal_not_reached"
    elif diverged_at == len(ep.actions) - 1:
        k = "C_last_state_wrong"
        d = np.nonzero(np.round(ep.states[-1]) != s)[0]
        diffs[tuple(int(i) for i in d)] += 1
    else:
        k = "C_diverged_earlier"
    cnt[k] += 1; fam[f][k] += 1
print(json.dumps({"checkpoint": ckpt, "level": level, "n": n, "counts": dict(cnt),
                  "by_family": {k: dict(v) for k, v in sorted(fam.items())},
                  "first_divergence_action": dict(firstact), "actions_in_failed": dict(allact),
                  "first_divergence": {str(k): v for k, v in first.most_common(15)}, "last_state_wrong_entries": {str(k): v for k, v in diffs.most_common(10)}}))
