"""Model replay: a forward-dynamics MLP fit on real train data, driven open-loop by a rollout's actions from its
initial state; compare net displacement and task success with the rollout's own states."""
import sys, numpy as np, torch
from imaginebench.data.storage import load_dataset
from imaginebench.envs.registry import load_domain
torch.set_num_threads(1); torch.manual_seed(0)

def fit_fwd(eps, epochs=8, seed=0):
    torch.manual_seed(seed)
    S0, A, S1 = [], [], []
    for e in eps:
        s = np.asarray(e.states, np.float32); S0.append(s[:-1]); S1.append(s[1:]); A.append(np.asarray(e.actions, np.float32))
    S0, A, S1 = map(np.concatenate, (S0, A, S1)); X = np.concatenate([S0, A], 1); Y = S1 - S0
    mu, sd = X.mean(0), X.std(0) + 1e-6; ym, ys = Y.mean(0), Y.std(0) + 1e-6
    Xn = torch.tensor((X - mu) / sd); Yn = torch.tensor((Y - ym) / ys)
    net = torch.nn.Sequential(torch.nn.Linear(24, 256), torch.nn.SiLU(), torch.nn.Linear(256, 256), torch.nn.SiLU(), torch.nn.Linear(256, 256), torch.nn.SiLU(), torch.nn.Linear(256, 18))
    opt = torch.optim.Adam(net.parameters(), 1e-3); n = len(X)
    for ep in range(epochs):
        perm = torch.randperm(n)
        for i in range(0, n, 512):
            b = perm[i:i + 512]; loss = ((net(Xn[b]) - Yn[b]) ** 2).mean(); opt.zero_grad(); loss.backward(); opt.step()
    print(f"fit: last batch nMSE {loss.item():.4f}", flush=True)
    mu_t, sd_t, ym_t, ys_t = map(torch.tensor, (mu, sd, ym, ys))
    def replay(s0, acts):  # batch: s0 (B,18), acts (B,T,6) -> states (B,T+1,18)
        with torch.no_grad():
            s = torch.tensor(s0, dtype=torch.float32); out = [s]
            a = torch.tensor(acts, dtype=torch.float32)
            for t in range(a.shape[1]):
                x = (torch.cat([s, a[:, t]], 1) - mu_t) / sd_t
                s = s + net(x) * ys_t + ym_t; out.append(s)
            return torch.stack(out, 1).numpy().astype(np.float64)
    return replay

dom = load_domain("HalfCheetah-v0")
def judge(replay, eps, level, name):
    by = {}
    for e in eps:
        if len(e) < 2: continue
        st = replay(np.asarray(e.states[:1]), np.asarray(e.actions)[None])[0]
        _, succ = dom.score_rollout(dom.task(e.task, level=level), st, np.asarray(e.actions))
        _, own = dom.score_rollout(dom.task(e.task, level=level), np.asarray(e.states, np.float64), np.asarray(e.actions))
        by.setdefault(e.task, []).append((np.asarray(e.states)[1:, 0].sum(), st[1:, 0].sum(), succ.any(), own.any()))
    for t, v in sorted(by.items()):
        v = np.array(v, float)
        print(f"{name:10s} {t:24s} n={len(v):4d} own disp {v[:,0].mean():+6.2f}  model-replay disp {v[:,1].mean():+6.2f}  ratio median {np.median(v[:,1]/v[:,0]):.2f} p5 {np.percentile(v[:,1]/v[:,0],5):.2f}  own success {v[:,3].mean():.2f}  model-replay success {v[:,2].mean():.2f}", flush=True)

real = list(load_dataset(sys.argv[1], verify=False)); rng = np.random.default_rng(0); idx = rng.permutation(len(real))
held, fit_on = [real[i] for i in idx[:200]], [real[i] for i in idx[200:]]
replay = fit_fwd(fit_on)
judge(replay, held, "train", "real-held")
for f, level, name in zip(sys.argv[2::3], sys.argv[3::3], sys.argv[4::3]):
    judge(replay, list(load_dataset(f, verify=False)), level, name)

print("--- first-W-steps displacement ratio (model replay from the initial state / own)")
sets = [("real-train", real, "train")] + [(n, list(load_dataset(f, verify=False)), l) for f, l, n in zip(sys.argv[2::3], sys.argv[3::3], sys.argv[4::3])]
for W in (20, 30, 40, 60):
    for name, eps, level in sets:
        by = {}
        for e in eps[:600]:
            a = np.asarray(e.actions)[:W]
            if len(a) < 10: continue
            st = replay(np.asarray(e.states[:1]), a[None])[0]
            own = np.asarray(e.states)[1:len(a) + 1, 0].sum(); mod = st[1:, 0].sum()
            by.setdefault(e.task, []).append((own, mod))
        for t, v in sorted(by.items()):
            v = np.array(v); big = np.abs(v[:, 0]) >= 0.5; r = v[big, 1] / v[big, 0]
            print(f"W={W} {name:10s} {t:26s} own {v[:,0].mean():+.2f} model {v[:,1].mean():+.2f}  |own|>=0.5: {big.mean():.2f}; ratio p0.5 {np.percentile(r,0.5) if len(r) else np.nan:.2f} p5 {np.percentile(r,5) if len(r) else np.nan:.2f} median {np.median(r) if len(r) else np.nan:.2f}", flush=True)
