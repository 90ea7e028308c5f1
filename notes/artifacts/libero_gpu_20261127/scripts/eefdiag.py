import sys, numpy as np, torch
from pathlib import Path
from imaginebench.envs.registry import load_domain
from imaginebench.imagination.checkpoint import load_checkpoint
from imaginebench.imagination.decoding import GenerateConfig, imagine, initial_starts
from imaginebench.domains.libero import layout as L
from imaginebench.domains.libero.domain import EEF_BOUNDS
torch.set_num_threads(1)
env = "LIBERO-v0"; level = sys.argv[2]; per = int(sys.argv[3])
domain = load_domain(env)
model, meta = load_checkpoint(Path(sys.argv[1]), device=torch.device("cpu"), which="best"); model.merge_lora()
starts = initial_starts(env, level, per * len(domain.tasks(level)), seed=1)
eps, _ = imagine(model, domain, starts, GenerateConfig(batch_size=64, seed=1, keep="none", physics_prior=True), progress=False)
for ep in eps:
    s = np.asarray(ep.states, np.float64)
    ok = domain.is_legal_batch(s[1:])
    e = s[:, L.EEF_POS]
    i = int(np.argmin(ok)) + 1 if not ok.all() else None
    print(ep.task, len(ep.actions), "first illegal", i, "eef start", np.round(e[0], 3), "at illegal", None if i is None else np.round(e[i], 3),
          "eef z min %.3f" % e[:, 2].min(), "mean |a|", np.round(np.abs(np.asarray(ep.actions)).mean(0), 2))
