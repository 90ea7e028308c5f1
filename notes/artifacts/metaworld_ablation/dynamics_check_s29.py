"""Exploration: does the rollout model's own dynamics prediction tell which imagined rollouts' actions
really produce their imagined states (replay to the goal)? Honest: no simulator in the score."""
import json, sys, time
import numpy as np, torch
sys.path.insert(0, "/work/main/src")
from imaginebench.data.storage import load_dataset
from imaginebench.imagination.checkpoint import load_checkpoint
from imaginebench.imagination.formats import SequenceBuilder, collate, STATE
from imaginebench.imagination.replay import replay_success
from imaginebench.imagination.quality import check_rollouts

env_id, level, ckpt, path, out = sys.argv[1:6]
torch.set_num_threads(1)
model, meta = load_checkpoint(ckpt, device="cpu", which="last")
builder = SequenceBuilder(model.tokenizer, model.state_dim, model.discrete, model.action_dim)
ds = load_dataset(path)
eps = list(ds)
t0 = time.time()
per_ep = []
with torch.no_grad():
    for i, ep in enumerate(eps):
        seqs = [builder.dynamics(ep.states[k], ep.actions[k], ep.states[k + 1]) for k in range(len(ep.actions))]
        errs = []
        for j in range(0, len(seqs), 64):
            b = collate(seqs[j:j + 64])
            t = model.tensors(b)
            emb = model.embed(t["kinds"], t["tokens"], t["states"], t["actions"], t["mask"])
            hidden = model.decode(emb, attention_mask=t["mask"].long()).last_hidden_state
            rows, cols = torch.nonzero(t["targets"] & (t["kinds"] == STATE), as_tuple=True)
            anchor = t["states"][rows, t["anchors"][rows, cols].clamp(min=0)]
            pred = model.predict_states(hidden[rows, cols - 1], anchor)
            true = model.normalise(t["states"][rows, cols])
            # the same transition with the imagined state change but NO action effect would be s'≈s:
            errs.append((pred - true).abs().mean(-1).numpy())
        per_ep.append(np.concatenate(errs))
        if i % 20 == 0:
            print(i, len(eps), f"{time.time() - t0:.0f}s", flush=True)
replayed = replay_success(env_id, level, eps)
checks = check_rollouts(env_id, level, eps, replay=False, progress=False)
res = {"replayed": replayed.tolist(), "transitions_ok": checks.transitions_ok.tolist(),
       "mean_err": [float(e.mean()) for e in per_ep], "max_err": [float(e.max()) for e in per_ep],
       "p90_err": [float(np.quantile(e, 0.9)) for e in per_ep], "tasks": ds.episode_tasks(),
       "seconds": time.time() - t0}
json.dump(res, open(out, "w"))
def auc(score, label):
    score, label = np.asarray(score), np.asarray(label, bool)
    pos, neg = score[label], score[~label]
    if not len(pos) or not len(neg): return float("nan")
    return float(np.mean([(p < n) + 0.5 * (p == n) for p in pos for n in neg]))  # low error = good
for k in ("mean_err", "max_err", "p90_err"):
    print(k, "AUC vs replay", round(auc(res[k], res["replayed"]), 3), "vs transitions_ok", round(auc(res[k], res["transitions_ok"]), 3))
print("seconds", res["seconds"])
