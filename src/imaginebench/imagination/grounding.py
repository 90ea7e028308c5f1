"""Imagination grounded in dynamics learned from real data: do an imagined rollout's *actions*
cause its imagined outcome?

The honest filter (:mod:`.filters`) judges imagined *states*; offline RL imitates imagined
*actions*.  Two small models, fitted on the domain's real ``train``-level data only (never
novel-level data, never the simulator), check and repair the actions without a simulator call:

* a **forward ensemble** (``state ⊕ action -> Δstate``, :data:`GroundingConfig.members` MLPs,
  inputs and targets standardised, early-stopped on held-out real *episodes*).  *Model replay*
  runs a rollout's actions through it from the imagined first state (each member's prediction
  averaged, the mean fed back) and asks the domain's success rule about the replayed states; the
  members' spread along the way (:func:`disagreement`) says where the model is guessing, and a
  rollout whose spread exceeds a threshold calibrated on held-out real episodes is not trusted;
* an **inverse model** (``s_{t-p} .. s_t, s_{t+1} .. s_{t+f} -> a_t``; a regressor on continuous
  actions, a classifier on discrete ones) that *relabels* an imagined rollout: its states stay the
  plan, its actions become the ones that real data says produce that motion.

Fits are cached in the data home per (domain, profile, data checksum, settings)
(``$IMAGINEBENCH_HOME/cache/grounding``), written atomically; a cache file that cannot be read is
refitted, never trusted.  Fits are deterministic given :attr:`GroundingConfig.seed`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from imaginebench.config import data_home, get_profile
from imaginebench.data.dataset import Episode, EpisodeDataset
from imaginebench.data.hub import dataset_path, find_imaginary, imaginary_path, imagine_command, load_real
from imaginebench.data.storage import save_dataset
from imaginebench.domains.base import Domain
from imaginebench.envs.registry import load_domain
from imaginebench.errors import choice_error
from imaginebench.fileio import atomic_path, first_line, torch_load_plain
from imaginebench.imagination.filters import honest_ok, states_hold

logger = logging.getLogger(__name__)

CACHE_VERSION = "grounding-v5"
MIN_STD = 1e-6
"""Floor of a normaliser column's std (a constant column is left unscaled in inputs, ~0 in targets)."""
STATE_SCALE_FLOOR = 1e-2
"""Floor of the per-dimension state scale that disagreement is measured in (a dimension that
never moves in real data does not make tiny spreads look large)."""
DELTA_INPUT_FLOOR = 1e-3
"""Floor of the unit a state difference is given in as an input (a dimension that never moves in real
data, then jitters in an imagined rollout, is not blown up)."""
CLAMP = 20.0
"""Largest input feature, in those units."""
IMPROVEMENT = 0.01
"""Relative drop of validation loss that counts as progress for early stopping."""


@dataclass(frozen=True)
class GroundingConfig:
    """Settings of the grounding models' fit and of the keep test built on them."""

    members: int = 5
    """Forward-ensemble members (disagreement needs at least 2)."""
    hidden_units: tuple[int, ...] = (256, 256)
    """Hidden layers of every forward member and of the inverse model."""
    forward_past: int = 3
    """States before ``s_t`` the forward ensemble reads (``s_{t-k} .. s_t ⊕ a_t``; repeated at the start).
    Meta-World's hand lags its position commands: its motion depends on the last step's, which one
    state does not hold."""
    past: int = 1
    """States before ``s_t`` the inverse model reads (``s_{t-past} .. s_t``; repeated at the start)."""
    future: int = 2
    """States from ``s_{t+1}`` on the inverse model reads (``s_{t+1} .. s_{t+future}``; repeated at the end)."""
    batch_size: int = 256
    learning_rate: float = 1e-3
    weight_decay: float = 1e-5
    max_epochs: int = 40
    patience: int = 4
    """Epochs without a 1% drop of the held-out loss before the fit stops (best weights kept)."""
    rollout_horizon: int = 8
    """Steps of the multi-step phase: after the one-step fit each member is trained further on its own
    ``rollout_horizon``-step predictions (errors fed back, backpropagated through the steps), which is
    how model replay uses it; 1 skips the phase."""
    rollout_epochs: int = 15
    """Most epochs of the multi-step phase (early-stopped like the first)."""
    holdout_episodes: float = 0.1
    """Share of real episodes held out for early stopping and threshold calibration."""
    max_transitions: int = 200_000
    """Real transitions the fit reads at most (episodes drawn whole, in a seeded order)."""
    threshold_quantile: float = 0.95
    """Quantile of held-out real episodes' peak disagreement that becomes the keep threshold."""
    track_quantile: float = 0.99
    """Quantile of held-out real episodes' largest model-replay stray (per controlled dimension) that
    becomes the tolerance of the path check (:func:`calibrate`)."""
    control_r2: float = 0.5
    """R² of its one-step change on the action alone from which a state dimension counts as driven by
    the action (:func:`action_driven`)."""
    seed: int = 0

    def __post_init__(self) -> None:
        if self.members < 2:
            raise ValueError(f"members must be at least 2 (disagreement needs a spread), got {self.members}.")
        if self.past < 0 or self.future < 1 or self.forward_past < 0:
            raise ValueError(f"past must be >= 0 and future >= 1, got past={self.past}, future={self.future}.")
        if not 0.0 < self.holdout_episodes < 1.0:
            raise ValueError(f"holdout_episodes must lie in (0, 1), got {self.holdout_episodes}.")
        if not 0.0 < self.track_quantile <= 1.0:
            raise ValueError(f"track_quantile must lie in (0, 1], got {self.track_quantile}.")
        if not 0.0 < self.threshold_quantile <= 1.0:
            raise ValueError(f"threshold_quantile must lie in (0, 1], got {self.threshold_quantile}.")
        for name in ("batch_size", "max_epochs", "patience", "max_transitions", "rollout_horizon", "rollout_epochs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}.")


# ---------------------------------------------------------------------------- networks
class _Members(nn.Module):
    """``k`` MLPs evaluated together (weights ``(k, in, out)``, one ``baddbmm`` per layer, SiLU)."""

    def __init__(self, k: int, in_dim: int, out_dim: int, hidden: Sequence[int]) -> None:
        super().__init__()
        dims = [in_dim, *hidden, out_dim]
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for fan_in, fan_out in zip(dims[:-1], dims[1:]):
            w = torch.empty(k, fan_in, fan_out)
            std = 1.0 / math.sqrt(fan_in)
            nn.init.trunc_normal_(w, std=std, a=-2 * std, b=2 * std)
            self.weights.append(nn.Parameter(w))
            self.biases.append(nn.Parameter(torch.zeros(k, 1, fan_out)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` ``(k, n, in)`` -> ``(k, n, out)``."""
        h = x
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            h = torch.baddbmm(b, h, w)
            if i < last:
                h = F.silu(h)
        return h


def _stats(x: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    mean = x.mean(0)
    std = x.std(0)
    std[std < MIN_STD] = floor
    return mean.astype(np.float32), std.astype(np.float32)


# ---------------------------------------------------------------------------- data
def _episode_arrays(ds: EpisodeDataset) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(np.asarray(ep.states, np.float32), np.asarray(ep.actions)) for ep in ds if len(ep) > 0]


def inverse_inputs(states: np.ndarray, past: int, future: int) -> np.ndarray:
    """A window of states for every step of one rollout: ``(T, (past + 1 + future) · D)`` from ``T + 1``
    states — ``s_{t-past} .. s_t`` and ``s_{t+1} .. s_{t+future}``, clamped at both ends (the inverse
    model's input; with ``future=0`` the forward ensemble's history)."""
    s = np.asarray(states, np.float32)
    t = len(s) - 1
    steps = np.arange(t)[:, None] + np.arange(-past, future + 1)[None, :]
    return s[np.clip(steps, 0, t)].reshape(t, -1)


@dataclass
class FitReport:
    """What one fit did: epochs, held-out losses, the calibrated threshold and real-data checks."""

    forward_epochs: int = 0
    forward_val_mse: list[float] = field(default_factory=list)
    """Each member's held-out MSE of Δstate, in normalised target units."""
    rollout_epochs: int = 0
    rollout_val_mse: list[float] = field(default_factory=list)
    """Each member's held-out multi-step error (units of the real one-step change) after that phase."""
    inverse_epochs: int = 0
    inverse_val_loss: float = math.nan
    """Held-out MSE of normalised actions (continuous) or cross-entropy (discrete)."""
    inverse_val_accuracy: float = math.nan
    """Discrete: held-out accuracy; continuous: share of held-out actions within 0.1 per dimension."""
    threshold: float = math.nan
    """Peak disagreement allowed in a kept rollout (a quantile of held-out real episodes')."""
    controlled_dims: list[int] = field(default_factory=list)
    """State dimensions the action drives (found from held-out real data)."""
    integer_dims: list[int] = field(default_factory=list)
    """State dimensions integer in every real state (and not constant): rounded in model replay
    (:meth:`Grounding._snap`)."""
    tolerance: list[float] = field(default_factory=list)
    """How far, per controlled dimension, model replay may stray from the imagined path."""
    holdout_model_replay_success: float = math.nan
    """Share of held-out real (successful) episodes whose actions, model-replayed, reach the goal."""
    holdout_relabel_replay_success: float = math.nan
    """The same with the inverse model's actions in place of the real ones."""
    train_episodes: int = 0
    holdout_episodes: int = 0
    train_transitions: int = 0
    data_sha256: str = ""
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class Grounding(nn.Module):
    """The fitted forward ensemble and inverse model of one domain, with their normalisers."""

    def __init__(self, state_dim: int, action_dim: int, discrete: bool, cfg: GroundingConfig) -> None:
        super().__init__()
        self.state_dim, self.action_dim, self.discrete, self.cfg = state_dim, action_dim, discrete, cfg
        a_in = action_dim
        self.forward_net = _Members(cfg.members, (cfg.forward_past + 1) * state_dim + a_in, state_dim, cfg.hidden_units)
        window = (cfg.past + 1 + cfg.future) * state_dim
        self.inverse_net = _Members(1, window, action_dim, cfg.hidden_units)
        for name, dim in (("s_mean", state_dim), ("s_std", state_dim), ("a_mean", a_in), ("a_std", a_in),
                          ("d_mean", state_dim), ("d_std", state_dim), ("d_in", state_dim), ("scale", state_dim)):
            self.register_buffer(name, torch.zeros(dim) if "mean" in name else torch.ones(dim))
        self.register_buffer("threshold", torch.tensor(math.inf))
        self.register_buffer("controlled", torch.zeros(state_dim, dtype=torch.bool))
        self.register_buffer("tolerance", torch.full((state_dim,), math.inf))
        self.register_buffer("integer", torch.zeros(state_dim, dtype=torch.bool))
        self.report = FitReport()

    # ------------------------------------------------------------------ encodings
    def _actions_in(self, actions: torch.Tensor) -> torch.Tensor:
        if self.discrete:
            return F.one_hot(actions.long(), self.action_dim).float()
        return (actions.float() - self.a_mean) / self.a_std

    def _forward_in(self, history: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """``history`` ``(n, (forward_past + 1) · D)`` (oldest first, ``s_t`` last) ⊕ the action."""
        return torch.cat([self._window_in(history, self.cfg.forward_past), self._actions_in(actions)], dim=-1)

    def _inverse_in(self, windows: torch.Tensor) -> torch.Tensor:
        return self._window_in(windows, self.cfg.past)

    def _window_in(self, windows: torch.Tensor, current: int) -> torch.Tensor:
        """A window of states ``(n, k · D)`` as features: state ``current`` of the window standardised,
        then each consecutive difference in units of the real one-step change (clamped at ±:data:`CLAMP`).
        Motion is millimetres on positions of decimetres: given as differences, a small MLP resolves it
        (Meta-World's hand: R² 0.99 from the last three differences, 0.69 from the action alone)."""
        d = self.state_dim
        w = windows.reshape(*windows.shape[:-1], -1, d)
        now = (w[..., current, :] - self.s_mean) / self.s_std
        steps = (w[..., 1:, :] - w[..., :-1, :]) / self.d_in
        steps = steps.clamp(-CLAMP, CLAMP).flatten(-2)
        return torch.cat([now, steps], dim=-1)

    # ------------------------------------------------------------------ uses
    @torch.no_grad()
    def predict(self, history: np.ndarray | torch.Tensor, actions: np.ndarray | torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """Each member's next state ``(members, n, D)`` and the spread ``(n,)`` (:func:`disagreement`)
        from ``history`` ``(n, (forward_past + 1) · D)`` (``s_{t-k} .. s_t``) and the actions."""
        h = torch.as_tensor(np.asarray(history, np.float32))
        a = torch.as_tensor(np.asarray(actions))
        x = self._forward_in(h, a).expand(self.cfg.members, -1, -1)
        delta = self.forward_net(x) * self.d_std + self.d_mean
        nxt = h[None, :, -self.state_dim:] + delta
        return nxt, disagreement(nxt, self.scale)

    @torch.no_grad()
    def model_replay(self, start: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Run ``actions`` through the ensemble from ``start``: states ``(T+1, D)`` (the members' mean
        fed back) and the spread at every step ``(T,)``."""
        return self.model_replay_batch(np.asarray(start)[None], [np.asarray(actions)])[0]

    @torch.no_grad()
    def model_replay_batch(self, starts: np.ndarray, actions: Sequence[np.ndarray]
                           ) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`model_replay` of many rollouts at once (each row stops at its own length)."""
        n = len(actions)
        lengths = np.asarray([len(a) for a in actions])
        horizon = int(lengths.max()) if n else 0
        s = torch.as_tensor(np.asarray(starts, np.float32)).reshape(n, self.state_dim)
        states = np.zeros((n, horizon + 1, self.state_dim), np.float32)
        spread = np.zeros((n, horizon), np.float32)
        states[:, 0] = s.numpy()
        if self.discrete:
            padded = np.zeros((n, horizon), np.int64)
        else:
            padded = np.zeros((n, horizon, self.action_dim), np.float32)
        for i, a in enumerate(actions):
            padded[i, :len(a)] = a
        history = s.repeat(1, self.cfg.forward_past + 1)
        for t in range(horizon):
            nxt, d = self.predict(history, padded[:, t])
            s = self._snap(nxt.mean(0))
            history = torch.cat([history[:, self.state_dim:], s], dim=1)
            states[:, t + 1] = s.numpy()
            spread[:, t] = d.numpy()
        return [(states[i, :lengths[i] + 1], spread[i, :lengths[i]]) for i in range(n)]

    def _snap(self, states: torch.Tensor) -> torch.Tensor:
        """Round the dimensions that are integers in every real state and vary (a grid position, a door's state):
        a fed-back prediction of 2.9 is the 3 the world can hold, and rounding stops small errors compounding
        over long replays (BabyAI's 128 steps)."""
        return torch.where(self.integer, states.round(), states) if bool(self.integer.any()) else states

    @torch.no_grad()
    def relabel(self, states: np.ndarray) -> np.ndarray:
        """The inverse model's action for every step of a rollout of ``T + 1`` states: ``(T,)``
        ints (discrete) or ``(T, A)`` floats clipped to the real actions' range."""
        a = self._inverse_out(torch.as_tensor(inverse_inputs(states, self.cfg.past, self.cfg.future)))
        return a.numpy().astype(np.int64 if self.discrete else np.float32)

    def _inverse_out(self, windows: torch.Tensor) -> torch.Tensor:
        out = self.inverse_net(self._inverse_in(windows)[None])[0]
        if self.discrete:
            return out.argmax(-1)
        a = out * self.a_std + self.a_mean
        return torch.maximum(torch.minimum(a, self.a_high), self.a_low)

    @torch.no_grad()
    def track(self, plan: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Follow the imagined states ``plan`` ``(T+1, D)`` in closed loop through the forward ensemble:
        at every step the inverse model reads the *model's* recent states and the plan's next ones, and
        its action is stepped through the ensemble (members' mean fed back).  A one-off error of the
        inverse model is corrected at the next step instead of compounding as in :meth:`relabel`.
        Returns the model's states ``(T+1, D)``, the actions and the spread at every step ``(T,)``."""
        target = np.asarray(plan, np.float32)
        t_max = len(target) - 1
        d, past, future = self.state_dim, self.cfg.past, self.cfg.future
        k = max(past, self.cfg.forward_past)
        states = [torch.as_tensor(target[0])] * (k + 1)
        actions, spread = [], []
        for t in range(t_max):
            ahead = [torch.as_tensor(target[min(t + j, t_max)]) for j in range(1, future + 1)]
            window = torch.cat(states[len(states) - past - 1:] + ahead)[None]
            a = self._inverse_out(window)
            history = torch.cat(states[len(states) - self.cfg.forward_past - 1:])[None]
            nxt, sp = self.predict(history, a)
            states.append(self._snap(nxt.mean(0))[0])
            actions.append(a[0])
            spread.append(float(sp[0]))
        out_states = torch.stack(states[k:]).numpy()
        acts = torch.stack(actions).numpy() if actions else np.zeros((0,) if self.discrete else (0, self.action_dim))
        return out_states, (acts.astype(np.int64) if self.discrete else acts.astype(np.float32)), np.asarray(spread)

    def register_action_range(self, low: np.ndarray, high: np.ndarray) -> None:
        self.register_buffer("a_low", torch.as_tensor(low, dtype=torch.float32))
        self.register_buffer("a_high", torch.as_tensor(high, dtype=torch.float32))


def disagreement(members_next: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Spread of the members' next states: the largest per-dimension standard deviation across
    members, each dimension in units of its real-data scale (``(members, n, D)`` -> ``(n,)``)."""
    return (members_next.std(0, unbiased=False) / scale).amax(-1)


# ---------------------------------------------------------------------------- fit
def data_checksum(ds: EpisodeDataset) -> str:
    """SHA-256 (hex) of the arrays a fit reads: states, actions, lengths, task ids."""
    h = hashlib.sha256()
    for a in (ds.states, ds.actions, ds.lengths, ds.task_ids):
        arr = np.ascontiguousarray(a)
        h.update(f"{arr.shape}{arr.dtype}".encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def cache_key(env_id: str, profile: str, checksum: str, cfg: GroundingConfig) -> str:
    """Name of a fit in the cache: everything the fit depends on, hashed (24 hex digits)."""
    payload = json.dumps({"version": CACHE_VERSION, "env": env_id, "profile": profile, "data": checksum,
                          "config": dataclasses.asdict(cfg)}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def _split_episodes(n: int, cfg: GroundingConfig) -> tuple[np.ndarray, np.ndarray]:
    order = np.random.default_rng(cfg.seed).permutation(n)
    n_hold = min(max(1, int(round(n * cfg.holdout_episodes))), n - 1)
    return np.sort(order[n_hold:]), np.sort(order[:n_hold])


def fit_episodes(episodes: list[tuple[np.ndarray, np.ndarray]], cfg: GroundingConfig
                 ) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[tuple[np.ndarray, np.ndarray]]]:
    """The episodes a fit trains on (whole episodes in a seeded order, up to ``max_transitions``) and
    the held-out ones (early stopping, calibration)."""
    train_idx, hold_idx = _split_episodes(len(episodes), cfg)
    budget, chosen = cfg.max_transitions, []
    for i in np.random.default_rng(cfg.seed + 1).permutation(train_idx):
        if budget <= 0:
            break
        chosen.append(int(i))
        budget -= len(episodes[i][1])
    return [episodes[i] for i in sorted(chosen)], [episodes[i] for i in hold_idx]


def _train(net: _Members, x: torch.Tensor, y: torch.Tensor, xv: torch.Tensor, yv: torch.Tensor,
           loss_fn: Any, cfg: GroundingConfig, gen: torch.Generator, name: str = "") -> tuple[int, torch.Tensor]:
    """Adam on every member (each on its own shuffle); stop after ``patience`` epochs without a 1%
    drop of the mean held-out loss; keep each member's best weights.  Returns (epochs, per-member loss)."""
    k = net.weights[0].shape[0]
    opt = torch.optim.Adam(net.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    n = len(x)
    best = torch.full((k,), math.inf)
    kept = [p.detach().clone() for p in net.parameters()]
    since = epochs = 0
    while epochs < cfg.max_epochs and since < cfg.patience:
        order = torch.rand(k, n, generator=gen).argsort(dim=1)
        for start in range(0, n, cfg.batch_size):
            idx = order[:, start:start + cfg.batch_size]
            loss = loss_fn(net(x[idx]), y[idx]).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        epochs += 1
        with torch.no_grad():
            val = loss_fn(net(xv[None].expand(k, -1, -1)), yv[None].expand(k, *yv.shape))
            improved = val < best * (1.0 - IMPROVEMENT)
            for saved, p in zip(kept, net.parameters()):
                saved[improved] = p[improved]
            since = 0 if bool(improved.any()) else since + 1
            best = torch.where(improved, val, best)
        logger.info("grounding %s: epoch %d, held-out loss %s", name, epochs,
                    " ".join(f"{v:.4f}" for v in val.tolist()))
    with torch.no_grad():
        for saved, p in zip(kept, net.parameters()):
            p.copy_(saved)
    return epochs, best


def _segments(eps: list[tuple[np.ndarray, np.ndarray]], past: int, horizon: int
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every ``horizon``-step segment of ``eps``: histories ``(n, past + 1, D)`` before its first
    action, actions ``(n, horizon, ...)`` and the real next states ``(n, horizon, D)``."""
    hist, acts, nxt = [], [], []
    for states, actions in eps:
        t = len(actions)
        if t < horizon:
            continue
        padded = np.concatenate([np.repeat(states[:1], past, axis=0), states])
        starts = np.arange(t - horizon + 1)
        hist.append(padded[starts[:, None] + np.arange(past + 1)])
        nxt.append(padded[starts[:, None] + past + 1 + np.arange(horizon)])
        acts.append(np.asarray(actions)[starts[:, None] + np.arange(horizon)])
    if not hist:
        raise ValueError(f"No real episode has {horizon} steps for the multi-step phase; lower rollout_horizon.")
    return (torch.as_tensor(np.concatenate(hist)), torch.as_tensor(np.concatenate(acts)),
            torch.as_tensor(np.concatenate(nxt)))


def _rollout_loss(model: "Grounding", hist: torch.Tensor, acts: torch.Tensor, nxt: torch.Tensor) -> torch.Tensor:
    """Each member's mean squared error of its own multi-step predictions, in units of the real
    one-step change: ``hist`` ``(k, n, p+1, D)``, ``acts`` ``(k, n, H, ...)``, ``nxt`` ``(k, n, H, D)`` -> ``(k,)``."""
    k, n = hist.shape[:2]
    window = hist
    total = torch.zeros(k)
    for h in range(acts.shape[2]):
        x = model._forward_in(window.reshape(k, n, -1), acts[:, :, h])
        pred = window[:, :, -1] + model.forward_net(x) * model.d_std + model.d_mean
        total = total + (((pred - nxt[:, :, h]) / model.d_in) ** 2).mean(dim=(1, 2))
        window = torch.cat([window[:, :, 1:], pred[:, :, None]], dim=2)
    return total / acts.shape[2]


def _train_rollouts(model: "Grounding", train: tuple[torch.Tensor, ...], hold: tuple[torch.Tensor, ...],
                    cfg: GroundingConfig, gen: torch.Generator) -> tuple[int, torch.Tensor]:
    """The multi-step phase: Adam on every member's :func:`_rollout_loss` over random segments (as
    many per epoch as the one-step phase has transitions / horizon), early-stopped on held-out segments."""
    net = model.forward_net
    k = cfg.members
    opt = torch.optim.Adam(net.parameters(), lr=cfg.learning_rate / 3, weight_decay=cfg.weight_decay)
    hist, acts, nxt = train
    n = len(hist)
    per_epoch = min(n, max(cfg.batch_size, n // cfg.rollout_horizon))
    batch = max(8, cfg.batch_size // 2)
    with torch.no_grad():
        best = _rollout_loss(model, *(v[None].expand(k, *v.shape) for v in hold))
    logger.info("grounding rollouts: before, held-out loss %s", " ".join(f"{v:.4f}" for v in best.tolist()))
    kept = [p.detach().clone() for p in net.parameters()]
    since = epochs = 0
    while epochs < cfg.rollout_epochs and since < cfg.patience:
        order = torch.randint(0, n, (k, per_epoch), generator=gen)
        for start in range(0, per_epoch, batch):
            idx = order[:, start:start + batch]
            loss = _rollout_loss(model, hist[idx], acts[idx], nxt[idx]).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        epochs += 1
        with torch.no_grad():
            val = _rollout_loss(model, *(v[None].expand(k, *v.shape) for v in hold))
            improved = val < best * (1.0 - IMPROVEMENT)
            for saved, p in zip(kept, net.parameters()):
                saved[improved] = p[improved]
            since = 0 if bool(improved.any()) else since + 1
            best = torch.where(improved, val, best)
        logger.info("grounding rollouts: epoch %d, held-out loss %s", epochs, " ".join(f"{v:.4f}" for v in val.tolist()))
    with torch.no_grad():
        for saved, p in zip(kept, net.parameters()):
            p.copy_(saved)
    return epochs, best


def fit_grounding(domain: Domain, real: EpisodeDataset, cfg: GroundingConfig = GroundingConfig(),
                  progress: bool = False) -> Grounding:
    """Fit both models on ``real`` (a domain's real ``train``-level data) and calibrate the keep
    threshold on its held-out episodes.  Deterministic given ``cfg.seed``."""
    start_time = time.perf_counter()
    level, source = real.metadata.get("level", "train"), real.metadata.get("source", "real")
    if level != "train" or source != "real":
        raise ValueError(f"Grounding models are fitted on real train-level data only; got {source} {level}-level "
                         "data. Pass load_real(env_id, 'train', profile).")
    episodes = _episode_arrays(real)
    if len(episodes) < 2:
        raise ValueError(f"Grounding needs at least 2 real episodes with steps, got {len(episodes)}.")
    discrete = bool(real.discrete_actions)
    action_dim = int(domain.action_dim)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        gen = torch.Generator().manual_seed(cfg.seed)
        model = Grounding(domain.state_dim, action_dim, discrete, cfg)
        train_eps, hold_eps = fit_episodes(episodes, cfg)

        def table(eps: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, ...]:
            s = np.concatenate([e[0][:-1] for e in eps])
            s2 = np.concatenate([e[0][1:] for e in eps])
            a = np.concatenate([e[1] for e in eps])
            w = np.concatenate([inverse_inputs(e[0], cfg.past, cfg.future) for e in eps])
            h = np.concatenate([inverse_inputs(e[0], cfg.forward_past, 0) for e in eps])
            return s, a, s2, w, h

        s, a, s2, w, h = table(train_eps)
        sv, av, s2v, wv, hv = table(hold_eps)
        all_states = np.concatenate([e[0] for e in train_eps])
        s_mean, s_std = _stats(all_states, 1.0)
        d_mean, d_std = _stats(s2 - s, MIN_STD)
        d_in = np.maximum((s2 - s).std(0), DELTA_INPUT_FLOOR).astype(np.float32)
        scale = np.maximum(all_states.std(0), STATE_SCALE_FLOOR).astype(np.float32)
        for name, value in (("s_mean", s_mean), ("s_std", s_std), ("d_mean", d_mean), ("d_std", d_std),
                            ("d_in", d_in), ("scale", scale)):
            getattr(model, name).copy_(torch.from_numpy(value))
        # integer-valued and varying in the real data (a constant slot may hold a novel task's coordinate)
        varies = all_states.max(0) > all_states.min(0)
        model.integer.copy_(torch.from_numpy(np.all(all_states == np.round(all_states), axis=0) & varies))
        if discrete:
            model.register_action_range(np.zeros(1), np.full(1, action_dim - 1))
        else:
            a_mean, a_std = _stats(a.astype(np.float32), 1.0)
            model.a_mean.copy_(torch.from_numpy(a_mean))
            model.a_std.copy_(torch.from_numpy(a_std))
            model.register_action_range(a.min(0), a.max(0))

        def mse(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            return ((pred - target) ** 2).mean(dim=(1, 2))

        # forward ensemble: Δstate from state ⊕ action
        t = torch.as_tensor
        x = model._forward_in(t(h), t(a))
        y = (t(s2 - s) - model.d_mean) / model.d_std
        xv = model._forward_in(t(hv), t(av))
        yv = (t(s2v - sv) - model.d_mean) / model.d_std
        fwd_epochs, fwd_val = _train(model.forward_net, x, y, xv, yv, mse, cfg, gen, "forward")
        roll_epochs, roll_val = 0, torch.full((cfg.members,), math.nan)
        if cfg.rollout_horizon > 1:
            hold_segments = _segments(hold_eps, cfg.forward_past, cfg.rollout_horizon)
            if len(hold_segments[0]) > 2000:  # a fixed, spread subset keeps validation cheap
                pick = torch.linspace(0, len(hold_segments[0]) - 1, 2000).long()
                hold_segments = tuple(v[pick] for v in hold_segments)
            roll_epochs, roll_val = _train_rollouts(
                model, _segments(train_eps, cfg.forward_past, cfg.rollout_horizon), hold_segments, cfg, gen)

        # inverse model: action from a window of states
        xi, xiv = model._inverse_in(t(w)), model._inverse_in(t(wv))
        if discrete:
            def ce(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
                return F.cross_entropy(pred.reshape(-1, action_dim), target.reshape(-1).long(),
                                       reduction="none").view(pred.shape[0], -1).mean(1)
            yi, yiv = t(a.astype(np.int64)), t(av.astype(np.int64))
            inv_epochs, inv_val = _train(model.inverse_net, xi, yi, xiv, yiv, ce, cfg, gen, "inverse")
        else:
            yi = model._actions_in(t(a))
            yiv = model._actions_in(t(av))
            inv_epochs, inv_val = _train(model.inverse_net, xi, yi, xiv, yiv, mse, cfg, gen, "inverse")
        model.eval()
        with torch.no_grad():
            relabelled = [model.relabel(e[0]) for e in hold_eps]
        if discrete:
            accuracy = float(np.mean(np.concatenate(relabelled) == av))
        else:
            accuracy = float(np.mean(np.all(np.abs(np.concatenate(relabelled) - av) <= 0.1, axis=-1)))

        calibrate(model, hold_eps)
    model.report = FitReport(
        forward_epochs=fwd_epochs, forward_val_mse=[float(v) for v in fwd_val],
        rollout_epochs=roll_epochs, rollout_val_mse=[float(v) for v in roll_val],
        inverse_epochs=inv_epochs, inverse_val_loss=float(inv_val[0]), inverse_val_accuracy=accuracy,
        threshold=float(model.threshold), controlled_dims=[int(i) for i in np.flatnonzero(model.controlled.numpy())],
        integer_dims=[int(i) for i in np.flatnonzero(model.integer.numpy())],
        tolerance=[float(v) for v in model.tolerance[model.controlled].tolist()], train_episodes=len(train_eps), holdout_episodes=len(hold_eps),
        train_transitions=int(len(s)), seconds=time.perf_counter() - start_time)
    if progress:
        logger.info("grounding fit: %s", model.report.to_dict())
    return model


@torch.no_grad()
def calibrate(model: Grounding, hold_eps: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """Set the keep test's numbers from held-out real episodes (no network weight changes):

    * ``threshold``: the ``threshold_quantile`` of their peak member spread under model replay;
    * ``controlled``: the state dimensions the action drives — whose one-step change the action alone
      explains linearly with R² of at least ``control_r2`` (:func:`action_driven`; Meta-World: the
      hand, R² ~0.7; an object the hand pushes moves only in contact, R² near 0) — found from
      data, not named by the domain;
    * ``tolerance``: per controlled dimension, the ``track_quantile`` of how far model replay of
      the real actions strays from the real states over an episode.  A kept imagined rollout must
      stay as close to its own imagined path on those dimensions.
    """
    cfg = model.cfg
    replays = model.model_replay_batch(np.stack([e[0][0] for e in hold_eps]), [e[1] for e in hold_eps])
    peaks = np.asarray([float(sp.max()) if len(sp) else 0.0 for _, sp in replays])
    model.threshold.fill_(float(np.quantile(peaks, cfg.threshold_quantile)))
    model.controlled.copy_(torch.as_tensor(action_driven(hold_eps, model.discrete, model.action_dim)
                                           >= cfg.control_r2))
    strays = np.stack([np.abs(rp - e[0]).max(0) for (rp, _), e in zip(replays, hold_eps)])
    model.tolerance.copy_(torch.as_tensor(np.quantile(strays, cfg.track_quantile, axis=0), dtype=torch.float32))


def action_driven(eps: list[tuple[np.ndarray, np.ndarray]], discrete: bool, action_dim: int) -> np.ndarray:
    """Per state dimension, the R² of a least-squares fit of its one-step change on the action alone
    (one-hot when discrete) with an intercept; 0 for a dimension that never changes."""
    delta = np.concatenate([np.diff(e[0].astype(np.float64), axis=0) for e in eps])
    acts = np.concatenate([e[1] for e in eps])
    x = np.eye(action_dim)[acts.astype(np.int64)] if discrete else acts.astype(np.float64)
    x = np.concatenate([x, np.ones((len(x), 1))], axis=1)
    coef, *_ = np.linalg.lstsq(x, delta, rcond=None)
    var = delta.var(0)
    resid = (delta - x @ coef).var(0)
    return np.where(var > 1e-12, 1.0 - resid / np.maximum(var, 1e-12), 0.0)


def strays(model: Grounding, replayed: np.ndarray, imagined: np.ndarray) -> bool:
    """Whether the model replay leaves the imagined path on a controlled dimension by more than its
    calibrated tolerance (:func:`calibrate`)."""
    mask = model.controlled.numpy()
    if not mask.any():
        return False
    gap = np.abs(np.asarray(replayed, np.float32) - np.asarray(imagined, np.float32))[:, mask].max(0)
    return bool(np.any(gap > model.tolerance.numpy()[mask]))


def _holdout_replay_rates(model: Grounding, domain: Domain, real: EpisodeDataset) -> tuple[float, float]:
    """Share of held-out real successful episodes that model replay (real actions / relabelled
    actions) sends to the goal within the threshold: the filter's recall on real data."""
    episodes = [ep for ep in real if len(ep) > 0]
    _, hold_idx = _split_episodes(len(episodes), model.cfg)
    hold = [episodes[i] for i in hold_idx if bool(np.any(episodes[i].successes))]
    if not hold:
        return math.nan, math.nan
    rates = []
    for relabel in (False, True):
        ok = [ground_check(model, domain, ep, relabel=relabel) is not None for ep in hold]
        rates.append(float(np.mean(ok)))
    return rates[0], rates[1]


# ---------------------------------------------------------------------------- cache
def cache_dir() -> Path:
    return data_home() / "cache" / "grounding"


def load_grounding(env_id: str, profile: str | None = None, cfg: GroundingConfig = GroundingConfig(),
                   real: EpisodeDataset | None = None, progress: bool = False) -> Grounding:
    """The grounding models of ``env_id`` fitted on its real train data of ``profile``: from the cache
    when a fit of the same data and settings is there and readable, else fitted (and cached)."""
    prof = get_profile(profile).name
    if real is None:
        real = load_real(env_id, "train", prof)
    domain = load_domain(env_id)
    checksum = data_checksum(real)
    path = cache_dir() / env_id / prof / f"{cache_key(env_id, prof, checksum, cfg)}.pt"
    if path.exists():
        try:
            return _read_cached(path, domain, real, cfg, checksum)
        except Exception as e:  # a damaged cache file is refitted, never trusted
            logger.warning("Refitting the grounding models: the cached fit %s could not be read (%s).",
                           path, first_line(e))
    model = fit_grounding(domain, real, cfg, progress=progress)
    model.report.data_sha256 = checksum
    rates = _holdout_replay_rates(model, domain, real)
    model.report.holdout_model_replay_success, model.report.holdout_relabel_replay_success = rates
    with atomic_path(path, suffix=".pt") as tmp:
        torch.save({"state": model.state_dict(), "report": json.dumps(model.report.to_dict()),
                    "key": path.stem, "data_sha256": checksum}, tmp)
    return model


def cached_grounding(env_id: str, profile: str | None = None,
                     cfg: GroundingConfig = GroundingConfig()) -> Grounding | None:
    """The cached fit of ``env_id``'s current real train data with ``cfg``, or ``None`` (never fits:
    for reports that should not start a fit of minutes)."""
    prof = get_profile(profile).name
    if not dataset_path(env_id, "real", "train", prof).exists():
        return None
    real = load_real(env_id, "train", prof)
    checksum = data_checksum(real)
    path = cache_dir() / env_id / prof / f"{cache_key(env_id, prof, checksum, cfg)}.pt"
    if not path.exists():
        return None
    try:
        return _read_cached(path, load_domain(env_id), real, cfg, checksum)
    except Exception as e:
        logger.warning("The cached grounding fit %s could not be read (%s); `imagine ground` refits it.",
                       path, first_line(e))
        return None


def grounding_quality(model: Grounding, domain: Domain, episodes: Sequence[Episode],
                      level: str | None = None) -> dict[str, float]:
    """Two simulator-free quality numbers of imagined rollouts: ``model_replay_success`` (share whose
    actions the forward ensemble replays to the goal within the threshold, :func:`ground_check`) and
    ``inverse_agreement`` (share of imagined actions the inverse model reads off the states: the same
    discrete action, or within 0.1 on every dimension — the measure of the fit's held-out accuracy)."""
    eps = [ep for ep in episodes if len(ep) > 0]
    if not eps:
        return {"model_replay_success": math.nan, "inverse_agreement": math.nan}
    replayed = [ground_check(model, domain, ep, level=level) is not None for ep in eps]
    agree = []
    for ep in eps:
        states = np.asarray(ep.states, np.float32)
        if not np.all(np.isfinite(states)):
            agree.append(np.zeros(len(ep), bool))
            continue
        a = model.relabel(states)
        imagined = np.asarray(ep.actions)
        agree.append(a == imagined if model.discrete else np.all(np.abs(a - imagined) <= 0.1, axis=-1))
    return {"model_replay_success": float(np.mean(replayed)), "inverse_agreement": float(np.mean(np.concatenate(agree)))}


def _read_cached(path: Path, domain: Domain, real: EpisodeDataset, cfg: GroundingConfig, checksum: str) -> Grounding:
    saved = torch_load_plain(path)
    if saved.get("data_sha256") != checksum or saved.get("key") != path.stem:
        raise ValueError("its key or data checksum does not match")
    model = Grounding(domain.state_dim, int(domain.action_dim), bool(real.discrete_actions), cfg)
    model.register_action_range(saved["state"]["a_low"].numpy(), saved["state"]["a_high"].numpy())
    model.load_state_dict(saved["state"], strict=True)
    for name, value in saved["state"].items():
        if not torch.all(torch.isfinite(value.float())) and name not in ("threshold", "tolerance"):
            raise ValueError(f"{name} holds non-finite numbers")
    model.report = FitReport(**json.loads(saved["report"]))
    model.eval()
    return model


# ---------------------------------------------------------------------------- keep test
def ground_check(model: Grounding, domain: Domain, episode: Episode, *, relabel: bool | str = False,
                 model_states: bool = False, level: str | None = None) -> Episode | None:
    """The rollout to store, or ``None`` when its actions do not cause its outcome.

    With ``relabel`` the actions are the inverse model's reading of the imagined states (``"track"``: read
    in closed loop against the model's own states, :meth:`Grounding.track`), else the imagined ones.  Kept when the model replay of those actions from the imagined first state reaches
    the goal by the domain's success rule with the members' spread below the calibrated threshold up
    to that step, and (where the imagined states are stored) the replay follows the imagined path on
    the dimensions the action drives within their calibrated tolerance (:func:`strays`): the actions
    must cause *this* rollout, not merely reach the goal some other way.  The stored states are the imagined ones (``model_states=False``: the imagined plan
    with grounded actions) or the model-replayed ones cut at the first success (``model_states``: every
    stored transition is the model's).  Rewards and success flags are recomputed for what is stored.
    """
    if len(episode) == 0:
        return None
    states = np.asarray(episode.states, np.float32)
    if not np.all(np.isfinite(states)):
        return None
    if relabel == "track":
        replayed, actions, spread = model.track(states)
    else:
        actions = model.relabel(states) if relabel else np.asarray(episode.actions)
        replayed, spread = model.model_replay(states[0], actions)
    if not np.all(np.isfinite(replayed)):
        return None
    task = domain.task(episode.task, level=level)
    try:
        _, success = domain.score_rollout(task, replayed.astype(np.float64), actions)
    except (ValueError, FloatingPointError, IndexError, KeyError):
        return None
    hits = np.flatnonzero(success)
    if len(hits) == 0:
        return None
    end = int(hits[0]) + 1
    if float(spread[:end].max()) > float(model.threshold):
        return None
    if not model_states and strays(model, replayed, states):
        return None
    if model_states:
        kept_states, kept_actions = replayed[:end + 1].astype(np.float64), actions[:end]
    else:
        kept_states, kept_actions = np.asarray(episode.states, np.float64), actions
    try:
        rewards, succ = domain.score_rollout(task, kept_states, kept_actions)
    except (ValueError, FloatingPointError, IndexError, KeyError):
        return None
    n = len(kept_actions)
    terminals = np.zeros(n, bool)
    terminals[-1] = bool(succ[-1])
    return Episode(task=episode.task, instruction=episode.instruction,
                   states=kept_states.astype(np.asarray(episode.states).dtype),
                   actions=np.asarray(kept_actions).astype(np.asarray(episode.actions).dtype),
                   rewards=rewards.astype(np.asarray(episode.rewards).dtype), terminals=terminals,
                   truncations=~terminals & (np.arange(n) == n - 1), successes=succ)


def summary(model: Grounding) -> Mapping[str, Any]:
    """The fit's facts for a dataset's metadata and the quality table."""
    return {"config": dataclasses.asdict(model.cfg), **model.report.to_dict()}


# ---------------------------------------------------------------------------- datasets
GROUND_MODES: Mapping[str, Mapping[str, Any]] = {
    "replay": {"relabel": False, "model_states": False},
    "relabel": {"relabel": True, "model_states": False},
    "plan": {"relabel": True, "model_states": True},
    "track": {"relabel": "track", "model_states": True},
    "track-imagined": {"relabel": "track", "model_states": False},
}
"""How a candidate is grounded (:func:`ground_check`): ``replay`` keeps the imagined actions when the
model replays them to the goal; ``relabel`` replaces them by the inverse model's first; ``plan`` also
stores the model-replayed states instead of the imagined ones; ``track`` follows the imagined states in
closed loop through the models (:meth:`Grounding.track`) and stores the model's states and actions
(``track-imagined``: those actions beside the imagined states)."""

DEFAULT_MODE = "replay"
"""The grounding mode of ``imagine generate --keep grounded`` and ``imagine ground`` (the best by the
measured precision against the simulator, ``notes/grounding.md``)."""

STATE_TESTS: tuple[str, ...] = ("states", "honest", "none")
"""What a candidate's imagined states must pass before grounding: ``states`` (every imagined state
legal, the goal holds at the last one), ``honest`` (the honest filter's whole test, with the domain's
contact and propulsion rules), ``none``."""


def candidate_pool(env_id: str, level: str, profile: str | None = None
                   ) -> tuple[list[Episode], list[str], dict[str, Any]]:
    """Every distinct imagined rollout stored for ``level`` — the unfiltered candidates, then the honest
    set (each as :func:`~imaginebench.data.hub.find_imaginary` picks it: local before shipped) — the
    files read, and the metadata of what generated them (the honest file's, else the unfiltered one's,
    less where it was read from).  Raises ``FileNotFoundError`` naming the command when there is none."""
    pool: list[Episode] = []
    seen: set[str] = set()
    sources: list[str] = []
    metadata: dict[str, Any] = {}
    for variant in ("unfiltered", "honest"):
        found = find_imaginary(env_id, level, profile, variant)
        if found is None:
            continue
        ds, path = found
        sources.append(str(path))
        metadata = {k: v for k, v in ds.metadata.items() if k not in ("reference", "path", "grounding")}
        for ep in ds:
            h = hashlib.sha1(np.ascontiguousarray(ep.states).tobytes())
            h.update(np.ascontiguousarray(ep.actions).tobytes())
            if h.hexdigest() not in seen:
                seen.add(h.hexdigest())
                pool.append(ep)
    if not pool:
        raise FileNotFoundError(f"No imaginary {level} rollouts of {env_id} to ground. "
                                f"Build them with: {imagine_command(env_id, level, profile)}")
    return pool, sources, metadata


class NothingKept(ValueError):
    """No candidate of a level passes grounding, so no file is written (a result, not a fault)."""

    def __init__(self, message: str, candidates: int) -> None:
        super().__init__(message)
        self.candidates = candidates


def ground_dataset(env_id: str, level: str, profile: str | None = None, mode: str = DEFAULT_MODE,
                   state_test: str = "states", cfg: GroundingConfig = GroundingConfig(),
                   overwrite: bool = False, progress: bool = True) -> dict[str, Any]:
    """Write ``imaginary-<level>.grounded.npz``: the level's stored candidates whose imagined states pass
    ``state_test`` and whose (imagined or relabelled, by ``mode``) actions the forward ensemble replays to
    the goal.  Reads no simulator and no novel-level real data.  Returns a summary (also the file's
    metadata ``grounding``)."""
    if mode not in GROUND_MODES:
        raise choice_error("grounding mode", mode, tuple(GROUND_MODES))
    if state_test not in STATE_TESTS:
        raise choice_error("state test", state_test, STATE_TESTS)
    prof = get_profile(profile).name
    target = imaginary_path(env_id, level, prof, "grounded")
    if target.exists() and not overwrite:
        raise FileExistsError(f"{target} already exists; pass --overwrite to replace it.")
    pool, sources, generated_by = candidate_pool(env_id, level, prof)
    domain = load_domain(env_id)
    model = load_grounding(env_id, prof, cfg, progress=progress)
    if state_test == "honest":
        passes = [honest_ok(domain, ep) for ep in pool]
    elif state_test == "states":
        passes = [states_hold(domain, ep) for ep in pool]
    else:
        passes = [True] * len(pool)
    kept: list[Episode] = []
    per_task: dict[str, list[int]] = {}
    for ep, ok in zip(pool, passes):
        counts = per_task.setdefault(ep.task, [0, 0])
        counts[0] += 1
        grounded = ground_check(model, domain, ep, level=level, **GROUND_MODES[mode]) if ok else None
        if grounded is not None:
            kept.append(grounded)
            counts[1] += 1
    info = {"mode": mode, "state_test": state_test, "candidates": len(pool), "kept": len(kept),
            "per_task": {t: {"candidates": c, "kept": k} for t, (c, k) in sorted(per_task.items())},
            "sources": [Path(s).name for s in sources], **summary(model)}
    if not kept:
        raise NothingKept(f"No {level} candidate of {env_id} passes grounding ({mode}, state test {state_test}) "
                         f"among {len(pool)}; nothing written.", len(pool))
    metadata = {**generated_by, "filter": f"grounded-{mode}", "oracle": False, "filtered": True,
                "episodes": len(kept), "dropped": len(pool) - len(kept), "grounding": info}
    action_shape = () if model.discrete else (model.action_dim,)
    save_dataset(EpisodeDataset.from_episodes(kept, metadata=metadata, state_dim=domain.state_dim,
                                        action_shape=action_shape), target, overwrite=True)
    return {"env_id": env_id, "level": level, "dataset": str(target), **info}
