"""HalfCheetah: inverse dynamics (MLP, real train data) -> relabel imagined actions; diagnostics:
one-step simulator error of imagined vs relabelled actions, replay success of both."""
import sys, time
import numpy as np, torch
from imaginebench.data.storage import load_dataset, save_dataset
from imaginebench.data.dataset import Episode, EpisodeDataset
from imaginebench.domains.halfcheetah.physics import Simulator
from imaginebench.imagination.replay import replay_success
torch.set_num_threads(1); torch.manual_seed(0)

def pairs(ds):
    X, A = [], []
    for e in ds:
        s = np.asarray(e.states, np.float32); a = np.asarray(e.actions, np.float32)
        X.append(np.concatenate([s[:-1], s[1:]], 1)); A.append(a)
    return np.concatenate(X), np.concatenate(A)

def fit(real, epochs=8):
    X, A = pairs(real)
    n = len(X); idx = np.random.default_rng(0).permutation(n); va, tr = idx[:20000], idx[20000:]
    mu, sd = X[tr].mean(0), X[tr].std(0) + 1e-6
    Xn = torch.tensor((X - mu) / sd); At = torch.tensor(A)
    net = torch.nn.Sequential(torch.nn.Linear(36, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 6), torch.nn.Tanh())
    opt = torch.optim.Adam(net.parameters(), 1e-3)
    for ep in range(epochs):
        perm = torch.randperm(len(tr))
        for i in range(0, len(tr), 512):
            b = torch.as_tensor(tr)[perm[i:i + 512]]
            loss = ((net(Xn[b]) - At[b]) ** 2).mean(); opt.zero_grad(); loss.backward(); opt.step()
        with torch.no_grad():
            p = net(Xn[va]); r2 = 1 - ((p - At[va]) ** 2).sum(0) / ((At[va] - At[va].mean(0)) ** 2).sum(0)
        print(f"epoch {ep+1}: val R^2 per dim {np.round(r2.numpy(), 3)}", flush=True)
    return lambda S: net(torch.tensor((S - mu) / sd, dtype=torch.float32)).detach().numpy()

def relabel(ds, idm):
    out = []
    for e in ds:
        s = np.asarray(e.states, np.float32)
        a = np.clip(idm(np.concatenate([s[:-1], s[1:]], 1)), -1, 1).astype(np.float32)
        out.append(Episode(e.task, e.instruction, e.states, a, e.rewards, e.terminals, e.truncations, e.successes))
    md = dict(ds.metadata); md["actions_relabelled"] = "MLP inverse dynamics (2x256) fit on the real train data"
    return EpisodeDataset.from_episodes(out, metadata=md, state_dim=ds.states.shape[1], action_shape=(6,))

def one_step_err(ds, n=60):
    sim = Simulator(); sim.reset(0); errs = []
    for e in list(ds)[:n]:
        s = np.asarray(e.states, np.float64)
        for t in range(len(e.actions)):
            sim.write(s[t]); nxt = sim.step(np.asarray(e.actions[t], np.float64))
            errs.append(np.abs(nxt - s[t + 1]))
    errs = np.array(errs); return errs.mean(0)

if __name__ == "__main__":
    real, imag, level, out = sys.argv[1:5]
    idm = fit(load_dataset(real, verify=False))
    ds = load_dataset(imag, verify=False); rl = relabel(ds, idm)
    for name, d in (("imagined", ds), ("relabelled", rl)):
        e = one_step_err(d); print(f"{name}: one-step |sim - imagined| mean {e.mean():.3f}; dx {e[0]:.4f} qpos {e[1:9].mean():.3f} qvel {e[9:].mean():.3f}")
        ok = replay_success("HalfCheetah-v0", level, d); tasks = np.array([x.task for x in d])
        print(f"{name}: replay {ok.mean():.3f} " + " ".join(f"{t}:{ok[tasks==t].mean():.2f}({(tasks==t).sum()})" for t in np.unique(tasks)), flush=True)
    print("wrote", save_dataset(rl, out, overwrite=True))
