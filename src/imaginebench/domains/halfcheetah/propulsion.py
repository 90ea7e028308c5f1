"""Propulsion check: do a rollout's own actions get the cheetah moving the way its states say?

Imagined HalfCheetah rollouts can *glide*: the states run forward at 2.5–3.4 m/s with the legs
at half the real joint speed, and the actions beside them do not push the body anywhere
(sessions 16–23, ``notes/halfcheetah_imagination.md``).  Every state is legal and the goal holds,
so the state rules cannot see it.  This check can, without the simulator: a forward-dynamics
model fit on the **real train data** only (:func:`fit`, weights shipped in ``dynamics.npz``)
replays the rollout's first :data:`WINDOW` actions from its real initial state, and the
rollout's own net displacement over those steps must be matched, in its direction, by at least
:data:`MIN_RATIO` of it.  A rollout moving less than :data:`MIN_DISPLACEMENT` in the window
(jumping in place, standing) is not judged.

Why only the start: a rollout begins at a real state from an env reset (the cheetah at rest), so
its first speed must come from its actions; later, imagined velocities carry any window along.
The thresholds are calibrated on the real expert episodes of all three levels
(``notes/halfcheetah_imagination.md``, session 23).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from imaginebench.domains.halfcheetah import physics as P

WINDOW = 20
"""Steps replayed from the initial state (1 s of simulated time)."""
MIN_DISPLACEMENT = 0.5
"""m: a rollout that moves less than this over the window is not judged."""
MIN_RATIO = 0.2
"""The replayed displacement must reach this share of the rollout's own, in its direction."""
HIDDEN = (256, 256, 256)
DYNAMICS_FILE = Path(__file__).with_name("dynamics.npz")


class Dynamics:
    """A residual MLP ``s' = s + f(s, a)`` (SiLU) on standardised inputs and outputs, in numpy."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.weights = [np.asarray(arrays[f"w{i}"], np.float64) for i in range(len(HIDDEN) + 1)]
        self.biases = [np.asarray(arrays[f"b{i}"], np.float64) for i in range(len(HIDDEN) + 1)]
        self.x_mean, self.x_std = np.asarray(arrays["x_mean"], np.float64), np.asarray(arrays["x_std"], np.float64)
        self.y_mean, self.y_std = np.asarray(arrays["y_mean"], np.float64), np.asarray(arrays["y_std"], np.float64)

    def step(self, states: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Next states of ``(N, 18)`` states under ``(N, 6)`` actions."""
        h = (np.concatenate([states, actions], axis=1) - self.x_mean) / self.x_std
        for w, b in zip(self.weights[:-1], self.biases[:-1]):
            h = h @ w.T + b
            h = h / (1.0 + np.exp(-h))  # SiLU
        return states + (h @ self.weights[-1].T + self.biases[-1]) * self.y_std + self.y_mean

    def replay(self, start: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """``(T+1, 18)`` states of ``actions`` (``(T, 6)``) run open-loop from ``start``."""
        s = np.asarray(start, np.float64)[None]
        out = [s[0]]
        for a in np.asarray(actions, np.float64):
            s = self.step(s, a[None])
            out.append(s[0])
        return np.stack(out)


@functools.lru_cache(maxsize=1)
def dynamics() -> Dynamics:
    """The shipped model (``dynamics.npz``), loaded once."""
    with np.load(DYNAMICS_FILE) as z:
        return Dynamics({k: z[k] for k in z.files})


def displacements(states: np.ndarray, actions: np.ndarray, model: Dynamics | None = None) -> tuple[float, float]:
    """(own, replayed) net displacement (m) over the first :data:`WINDOW` steps of a rollout."""
    states = np.asarray(states, np.float64)
    acts = np.asarray(actions, np.float64)[:WINDOW]
    replayed = (model or dynamics()).replay(states[0], acts)
    return float(states[1:len(acts) + 1, P.DX].sum()), float(replayed[1:, P.DX].sum())


def unpowered(states: np.ndarray, actions: np.ndarray, model: Dynamics | None = None) -> bool:
    """Whether the rollout moves over its first :data:`WINDOW` steps without its actions
    pushing it that way (the replayed displacement below :data:`MIN_RATIO` of its own)."""
    if len(actions) == 0:
        return False
    own, replayed = displacements(states, actions, model)
    if not np.isfinite(own) or not np.isfinite(replayed):
        return True
    if abs(own) < MIN_DISPLACEMENT:
        return False
    return replayed / own < MIN_RATIO


def fit(episodes: Any, epochs: int = 8, seed: int = 0, batch_size: int = 512) -> dict[str, np.ndarray]:
    """Fit the dynamics model on real episodes (states ``(T+1, 18)``, actions ``(T, 6)``):
    mean squared error of the standardised state change, Adam (lr 1e-3), one torch thread."""
    import torch

    s0, act, s1 = [], [], []
    for e in episodes:
        s = np.asarray(e.states, np.float32)
        s0.append(s[:-1]); s1.append(s[1:]); act.append(np.asarray(e.actions, np.float32))
    x = np.concatenate([np.concatenate(s0), np.concatenate(act)], axis=1)
    y = np.concatenate(s1) - np.concatenate(s0)
    x_mean, x_std = x.mean(0), x.std(0) + 1e-6
    y_mean, y_std = y.mean(0), y.std(0) + 1e-6
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        gen = torch.Generator().manual_seed(seed)
        torch.manual_seed(seed)
        sizes = (x.shape[1],) + HIDDEN
        layers: list[torch.nn.Module] = []
        for i, o in zip(sizes[:-1], sizes[1:]):
            layers += [torch.nn.Linear(i, o), torch.nn.SiLU()]
        net = torch.nn.Sequential(*layers, torch.nn.Linear(sizes[-1], y.shape[1]))
        xn = torch.from_numpy((x - x_mean) / x_std)
        yn = torch.from_numpy((y - y_mean) / y_std)
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        for _ in range(epochs):
            perm = torch.randperm(len(xn), generator=gen)
            for i in range(0, len(xn), batch_size):
                b = perm[i:i + batch_size]
                loss = ((net(xn[b]) - yn[b]) ** 2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    finally:
        torch.set_num_threads(threads)
    linears = [m for m in net if isinstance(m, torch.nn.Linear)]
    out = {f"w{i}": m.weight.detach().numpy().astype(np.float32) for i, m in enumerate(linears)}
    out.update({f"b{i}": m.bias.detach().numpy().astype(np.float32) for i, m in enumerate(linears)})
    out.update(x_mean=x_mean, x_std=x_std, y_mean=y_mean, y_std=y_std)
    return out

