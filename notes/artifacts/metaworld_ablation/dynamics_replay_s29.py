"""Exploration: replay each imagined rollout's actions through the rollout model's own dynamics task,
autoregressively from the imagined first state (no simulator), and test the goal on the predicted
states with the domain's pure success rule. Does that predict simulator replay success?"""
import json, sys, time
import numpy as np, torch
sys.path.insert(0, "/work/main/src")
from imaginebench.data.storage import load_dataset
from imaginebench.envs.registry import load_domain
from imaginebench.imagination.checkpoint import load_checkpoint
from imaginebench.imagination.formats import SequenceBuilder, collate, STATE

env_id, level, ckpt, path, labels, out = sys.argv[1:7]
torch.set_num_threads(1)
model, meta = load_checkpoint(ckpt, device="cpu", which="last")
builder = SequenceBuilder(model.tokenizer, model.state_dim, model.discrete, model.action_dim)
ds = load_dataset(path)
eps = list(ds)
domain = load_domain(env_id)
t0 = time.time()
cur = [np.asarray(ep.states[0], np.float32) for ep in eps]
traj = [[c] for c in cur]
T = max(len(ep.actions) for ep in eps)
with torch.no_grad():
    for step in range(T):
        active = [i for i, ep in enumerate(eps) if step < len(ep.actions)]
        seqs = [builder.dynamics(cur[i], eps[i].actions[step], cur[i]) for i in active]  # target slot: any value
        b = collate(seqs)
        t = model.tensors(b)
        emb = model.embed(t["kinds"], t["tokens"], t["states"], t["actions"], t["mask"])
        hidden = model.decode(emb, attention_mask=t["mask"].long()).last_hidden_state
        rows, cols = torch.nonzero(t["targets"] & (t["kinds"] == STATE), as_tuple=True)
        anchor = t["states"][rows, t["anchors"][rows, cols].clamp(min=0)]
        nxt = model.denormalise(model.predict_states(hidden[rows, cols - 1], anchor)).numpy()
        for j, i in enumerate(active):
            cur[i] = nxt[j]
            traj[i].append(nxt[j])
        if step % 20 == 0:
            print(step, T, len(active), f"{time.time() - t0:.0f}s", flush=True)
reached, final_err = [], []
for ep, tr in zip(eps, traj):
    states = np.asarray(tr, np.float64)
    try:
        _, success = domain.score_rollout(domain.task(ep.task), states, ep.actions)
        reached.append(bool(np.any(success)))
    except Exception as exc:  # noqa: BLE001
        reached.append(False)
    final_err.append(float(np.abs(states[-1] - np.asarray(ep.states[-1])).mean()))
lab = json.load(open(labels))
rep = np.array(lab["replayed"], bool); reached = np.array(reached)
print("model-replay reaches goal:", int(reached.sum()), "of", len(eps))
print("confusion (model reached, sim replayed):", {f"{a}{b}": int(((reached == a) & (rep == b)).sum()) for a in (0, 1) for b in (0, 1)})
def auc(score, label):
    pos, neg = score[label], score[~label]
    return float(np.mean([(p < n) + 0.5 * (p == n) for p in pos for n in neg]))
print("final-state divergence AUC vs replay", round(auc(np.array(final_err), rep), 3))
json.dump({"model_reached": reached.tolist(), "final_err": final_err, "seconds": time.time() - t0}, open(out, "w"))
print("seconds", time.time() - t0)
