"""COMBO's learned dynamics: the transition table, the Gaussian ensemble and the model buffer.

The ensemble (MBPO's: probabilistic members, elites, early stopping) reads ``state ⊕ instruction
embedding`` and the action and predicts the change of the state, the reward and a terminal logit;
the model buffer keeps model rollouts FIFO.  :mod:`imaginebench.algos.combo.algorithm` builds COMBO
on d3rlpy's CQL with them (the whole design is described there).
"""

from __future__ import annotations

import contextlib
import logging
import math
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from imaginebench.algos.encoders import distinct_instructions

logger = logging.getLogger(__name__)

MIN_STD = 1e-6
"""Floor of a normaliser column's std.  A constant input column is divided by 1 (its float noise
is not amplified); a constant target column by ``MIN_STD``, so that the model's noise, drawn in
normalised units, stays negligible in data units (a Δ of a constant state column stays ~0)."""
SPLIT_MIN_ROWS = 1024
"""Rows per member from which the ensemble's first layer is split per phrasing.  Below it the
fit's batches (256 rows per member) hold ~180 of HalfCheetah's 366 phrasings, and the split is
slower than the plain product (85–90 vs 62 ms per forward-backward of 7 × 256 rows, one thread,
AMD EPYC); model rollouts (thousands of rows per member) are where it pays."""
IMPROVEMENT = 0.01
"""Relative drop of a member's validation MSE that counts as progress for early stopping (MBPO)."""


# ---------------------------------------------------------------------------- data
@dataclass(frozen=True)
class TransitionTable:
    """Transitions as index tables on one device, in :class:`MixedReplaySource`'s layout::

        states (R, S)  obs_rows (N,)  instr (N,) -> embeddings (K, E)
        actions (N, A)  rewards, terminals (N, 1)        s' of transition i = states[obs_rows[i] + 1]
    """

    states: torch.Tensor
    obs_rows: torch.Tensor
    instr: torch.Tensor
    embeddings: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    terminals: torch.Tensor

    @classmethod
    def from_source(cls, source: Any, device: str) -> "TransitionTable":
        """The arrays of a :class:`~imaginebench.algos.sampler.MixedReplaySource` (shared, not copied, on CPU)."""
        def t(a: np.ndarray, dtype: torch.dtype = torch.float32) -> torch.Tensor:
            return torch.as_tensor(a).to(device=device, dtype=dtype)

        return cls(states=t(source._states), obs_rows=t(source._obs_rows, torch.long),
                   instr=t(source._instr, torch.long), embeddings=t(source.embeddings), actions=t(source._actions),
                   rewards=t(source._rewards), terminals=t(source._terminals))

    def __len__(self) -> int:
        return int(self.obs_rows.shape[0])

    @property
    def state_dim(self) -> int:
        return int(self.states.shape[1])

    def observations(self, states: torch.Tensor, instr: torch.Tensor) -> torch.Tensor:
        """``state ⊕ embedding`` rows."""
        return torch.cat([states, self.embeddings[instr]], dim=1)

    def gather(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Model inputs ``obs ⊕ action``, targets ``Δstate ⊕ reward`` and terminals of transitions ``idx``."""
        rows = self.obs_rows[idx]
        s = self.states[rows]
        x = torch.cat([s, self.embeddings[self.instr[idx]], self.actions[idx]], dim=1)
        y = torch.cat([self.states[rows + 1] - s, self.rewards[idx]], dim=1)
        return x, y, self.terminals[idx]


# ---------------------------------------------------------------------------- dynamics
@dataclass(frozen=True)
class DynamicsFit:
    """What one ensemble fit did.

    Attributes:
        epochs: passes over the training split.
        val_mse: each member's validation MSE (normalised targets) with its best weights.
        holdout: transition indices of the validation split.
        elites: the members kept, best first.
        history: each member's validation MSE after every epoch, ``(epochs, members)``.
    """

    epochs: int
    val_mse: np.ndarray
    holdout: np.ndarray
    elites: np.ndarray
    history: np.ndarray


class GaussianEnsemble(nn.Module):
    """Probabilistic dynamics ensemble (PETS/MBPO): each member an MLP with SiLU (swish) hidden
    layers giving a Gaussian over normalised targets and a terminal logit.

    Members are batched: layer ``l`` is one ``(members, in, out)`` weight tensor and a forward
    pass is a chain of ``baddbmm``.  The log-variance is squashed between learned soft bounds
    ``min_logvar < logvar < max_logvar`` (MBPO).  Inputs and targets are standardised with
    buffers set from the training data by :meth:`fit`; :attr:`elites` and :attr:`trained` are
    buffers too, so a checkpoint carries them.
    """

    def __init__(self, n_members: int, n_elites: int, in_dim: int, out_dim: int,
                 hidden_units: Sequence[int], embedding_columns: Optional[tuple[int, int]] = None) -> None:
        super().__init__()
        if not 0 < n_elites <= n_members:
            raise ValueError(f"Need 0 < elites <= members, got {n_elites} elites of {n_members}.")
        if embedding_columns is not None and not 0 < embedding_columns[0] < embedding_columns[1] <= in_dim:
            raise ValueError(f"embedding_columns must be (start, stop) inside the {in_dim} inputs, got {embedding_columns}.")
        self.n_members, self.n_elites, self.in_dim, self.out_dim = n_members, n_elites, in_dim, out_dim
        self.embedding_columns = embedding_columns
        """Input columns ``[start, stop)`` holding the instruction embedding: the first layer's part
        for them is computed once per distinct embedding of a batch (the same maths)."""
        dims = [in_dim, *hidden_units, 2 * out_dim + 1]
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for fan_in, fan_out in zip(dims[:-1], dims[1:]):
            self.weights.append(nn.Parameter(torch.empty(n_members, fan_in, fan_out)))
            self.biases.append(nn.Parameter(torch.zeros(n_members, 1, fan_out)))
        self.max_logvar = nn.Parameter(torch.full((n_members, 1, out_dim), 0.5))
        self.min_logvar = nn.Parameter(torch.full((n_members, 1, out_dim), -10.0))
        self.reset_parameters()
        self.register_buffer("in_mean", torch.zeros(in_dim))
        self.register_buffer("in_std", torch.ones(in_dim))
        self.register_buffer("out_mean", torch.zeros(out_dim))
        self.register_buffer("out_std", torch.ones(out_dim))
        self.register_buffer("elites", torch.arange(n_elites))
        self.register_buffer("trained", torch.zeros((), dtype=torch.bool))

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """MBPO's initialisation (truncated normal weights, zero biases, log-variance bounds 0.5 and
        −10), drawn from torch's global generator."""
        for w, b in zip(self.weights, self.biases):
            std = 1.0 / (2.0 * math.sqrt(w.shape[1]))
            nn.init.trunc_normal_(w, std=std, a=-2 * std, b=2 * std)
            b.zero_()
        self.max_logvar.fill_(0.5)
        self.min_logvar.fill_(-10.0)

    def forward(self, x: torch.Tensor, members: Optional[torch.Tensor] = None
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Raw inputs ``(k, n, in)`` for ``members`` (all when ``None``) -> normalised means and
        log-variances ``(k, n, out)`` and terminal logits ``(k, n, 1)``."""
        last = len(self.weights) - 1
        h = x
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            if members is not None:
                w, b = w[members], b[members]
            h = self._first_layer(x, w, b) if i == 0 else torch.baddbmm(b, h, w)
            if i < last:
                h = F.silu(h)
        d = self.out_dim
        hi, lo = (self.max_logvar, self.min_logvar) if members is None else (
            self.max_logvar[members], self.min_logvar[members])
        logvar = hi - F.softplus(hi - h[..., d:2 * d])
        logvar = lo + F.softplus(logvar - lo)
        return h[..., :d], logvar, h[..., 2 * d:]

    def _first_layer(self, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """The first layer on standardised ``x (k, n, in)``; with :attr:`embedding_columns` and a
        batch of few distinct embeddings, their part of the product is computed once per distinct
        embedding and gathered (~93% of the first layer's columns on the continuous domains)."""
        split = None
        k, n = x.shape[:2]
        if self.embedding_columns is not None and n >= SPLIT_MIN_ROWS:
            lo, hi = self.embedding_columns
            split = distinct_instructions(x.reshape(-1, x.shape[-1])[:, :hi], lo)
            if split is not None and 2 * split[0].shape[0] > n:  # more work per member, not less
                split = None
        if split is None:
            return torch.baddbmm(b, (x - self.in_mean) / self.in_std, w)
        distinct, index = split
        mean, std = self.in_mean, self.in_std
        rest = torch.cat([x[..., :lo], x[..., hi:]], dim=-1)
        rest_mean, rest_std = torch.cat([mean[:lo], mean[hi:]]), torch.cat([std[:lo], std[hi:]])
        w_rest = torch.cat([w[:, :lo], w[:, hi:]], dim=1)
        h = torch.baddbmm(b, (rest - rest_mean) / rest_std, w_rest)
        per_phrasing = torch.matmul((distinct - mean[lo:hi]) / std[lo:hi], w[:, lo:hi])  # (k, K, out)
        index = index.view(k, n, 1).expand(k, n, per_phrasing.shape[-1])
        return h + per_phrasing.gather(1, index)

    def normalised_targets(self, y: torch.Tensor) -> torch.Tensor:
        return (y - self.out_mean) / self.out_std

    @torch.no_grad()
    def validation_mse(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Each member's MSE of its mean on ``(x, y)`` in normalised target units, shape ``(members,)``."""
        mean, _, _ = self(x.expand(self.n_members, -1, -1))
        return ((mean - self.normalised_targets(y)) ** 2).mean(dim=(1, 2))

    @torch.no_grad()
    def _set_normalisers(self, data: TransitionTable, idx: torch.Tensor) -> None:
        sums = [torch.zeros(self.in_dim, dtype=torch.float64, device=idx.device) for _ in range(2)]
        sums += [torch.zeros(self.out_dim, dtype=torch.float64, device=idx.device) for _ in range(2)]
        for chunk in idx.split(65536):
            x, y, _ = data.gather(chunk)
            x, y = x.double(), y.double()
            for acc, v in zip(sums, (x.sum(0), (x * x).sum(0), y.sum(0), (y * y).sum(0))):
                acc += v
        n = len(idx)
        for (s, ss), mean_buf, std_buf, floor in ((sums[:2], self.in_mean, self.in_std, 1.0),
                                                  (sums[2:], self.out_mean, self.out_std, MIN_STD)):
            mean = s / n
            std = (ss / n - mean * mean).clamp_min(0.0).sqrt()
            std[std < MIN_STD] = floor
            mean_buf.copy_(mean.float())
            std_buf.copy_(std.float())

    def fit(self, data: TransitionTable, *, learning_rate: float = 1e-3, batch_size: int = 256,
            weight_decay: Sequence[float] = (2.5e-5, 5e-5, 7.5e-5, 7.5e-5, 1e-4), holdout_ratio: float = 0.2,
            max_holdout: int = 1000, patience: int = 5, max_epochs: Optional[int] = None) -> DynamicsFit:
        """Fit every member by Gaussian NLL (+ terminal cross-entropy) on a random training split,
        each member on its own shuffle; stop when no member's validation MSE improved by 1% for
        ``patience`` epochs (or after ``max_epochs``); keep each member's best weights and the
        ``n_elites`` members with the lowest validation MSE."""
        if len(weight_decay) != len(self.weights):
            raise ValueError(f"weight_decay needs one value per layer ({len(self.weights)}), got {len(weight_decay)}.")
        n = len(data)
        if n < 2:
            raise ValueError(f"The dynamics model needs at least 2 transitions, got {n}.")
        device = self.in_mean.device
        perm = torch.randperm(n).to(device)
        n_hold = min(max_holdout, max(1, int(n * holdout_ratio)), n - 1)
        hold, train = perm[:n_hold], perm[n_hold:]
        self._set_normalisers(data, train)
        xh, yh, _ = data.gather(hold)
        optim = torch.optim.Adam(self.parameters(), lr=learning_rate)
        best_mse = torch.full((self.n_members,), math.inf, device=device)
        best = [p.detach().clone() for p in self.parameters()]
        epochs = since = 0
        m = self.n_members
        history = []
        while True:
            order = torch.rand(m, len(train)).argsort(dim=1).to(device)
            for start in range(0, len(train), batch_size):
                idx = train[order[:, start:start + batch_size]]  # (members, b)
                x, y, t = data.gather(idx.reshape(-1))
                b = idx.shape[1]
                mean, logvar, logit = self(x.view(m, b, -1))
                err = (mean - self.normalised_targets(y.view(m, b, -1))) ** 2
                nll = (err * torch.exp(-logvar) + logvar).mean(dim=(1, 2)).sum()
                bce = m * F.binary_cross_entropy_with_logits(logit, t.view(m, b, 1))  # sum of member means
                decay = sum(0.5 * wd * (w * w).sum() for wd, w in zip(weight_decay, self.weights))
                bounds = 0.01 * (self.max_logvar.sum() - self.min_logvar.sum())
                optim.zero_grad()
                (nll + bce + decay + bounds).backward()
                optim.step()
            epochs += 1
            mse = self.validation_mse(xh, yh)
            history.append(mse)
            improved = mse < best_mse * (1.0 - IMPROVEMENT)
            with torch.no_grad():
                for kept, p in zip(best, self.parameters()):
                    kept[improved] = p[improved]
            best_mse = torch.where(improved, mse, best_mse)
            since = 0 if bool(improved.any()) else since + 1
            if since >= patience or (max_epochs is not None and epochs >= max_epochs):
                break
        with torch.no_grad():
            for kept, p in zip(best, self.parameters()):
                p.copy_(kept)
        mse = self.validation_mse(xh, yh)
        self.elites.copy_(torch.argsort(mse, stable=True)[: self.n_elites])
        self.trained.fill_(True)
        return DynamicsFit(epochs=epochs, val_mse=mse.cpu().numpy(), holdout=hold.cpu().numpy(),
                           elites=self.elites.cpu().numpy(), history=torch.stack(history).cpu().numpy())

    @torch.no_grad()
    def sample(self, x: torch.Tensor, member: torch.Tensor, noise: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One draw per row of raw inputs ``x`` from member ``member[row]`` with standard normal
        ``noise`` ``(n, out)``: targets in data units ``(n, out)`` and terminal flags ``(n, 1)``."""
        out = torch.empty(len(x), self.out_dim, device=x.device)
        terminal = torch.empty(len(x), 1, dtype=torch.bool, device=x.device)
        for m in member.unique().tolist():  # sorted: the same order every time
            sel = (member == m).nonzero(as_tuple=True)[0]
            mean, logvar, logit = self(x[sel][None], torch.tensor([m], device=x.device))
            y = mean[0] + torch.exp(0.5 * logvar[0]) * noise[sel]
            out[sel] = y * self.out_std + self.out_mean
            terminal[sel] = logit[0] > 0
        return out, terminal


# ---------------------------------------------------------------------------- model buffer
class ModelBuffer(nn.Module):
    """FIFO buffer of model transitions (states and instruction ids, not embeddings).

    Its tensors grow to ``capacity`` and then overwrite the oldest rows; they are module
    buffers of their current length, so a checkpoint holds exactly what was generated and
    loading resizes them.
    """

    FIELDS = ("states", "actions", "rewards", "next_states", "terminals", "instr")

    def __init__(self, capacity: int, state_dim: int, action_size: int) -> None:
        super().__init__()
        if capacity <= 0:
            raise ValueError(f"Model buffer capacity must be positive, got {capacity}.")
        self.capacity = capacity
        shapes = {"states": (state_dim,), "actions": (action_size,), "rewards": (1,), "next_states": (state_dim,),
                  "terminals": (1,), "instr": ()}
        for name, shape in shapes.items():
            self.register_buffer(name, torch.zeros((0, *shape), dtype=torch.long if name == "instr" else torch.float32))
        self.register_buffer("cursor", torch.zeros((), dtype=torch.long))

    def __len__(self) -> int:
        return int(self.states.shape[0])

    @torch.no_grad()
    def add(self, **rows: torch.Tensor) -> None:
        """Append rows (one tensor per field), overwriting the oldest once full."""
        k = len(rows["states"])
        if k >= self.capacity:
            for name in self.FIELDS:
                setattr(self, name, rows[name][-self.capacity:].clone())
            self.cursor.zero_()
            return
        free = self.capacity - len(self)
        if free:
            for name in self.FIELDS:
                setattr(self, name, torch.cat([getattr(self, name), rows[name][:free]]))
        rest = k - min(free, k)
        if rest:
            pos = (int(self.cursor) + torch.arange(rest, device=self.states.device)) % self.capacity
            for name in self.FIELDS:
                getattr(self, name)[pos] = rows[name][k - rest:]
            self.cursor.fill_((int(self.cursor) + rest) % self.capacity)

    def sample(self, n: int) -> dict[str, torch.Tensor]:
        """``n`` rows drawn uniformly with replacement (torch's global CPU generator)."""
        idx = torch.randint(len(self), (n,)).to(self.states.device)
        return {name: getattr(self, name)[idx] for name in self.FIELDS}

    @contextlib.contextmanager
    def emptied(self) -> Iterator[None]:
        """The buffer temporarily empty (to save a model without its training state)."""
        kept = {name: getattr(self, name) for name in (*self.FIELDS, "cursor")}
        try:
            for name in self.FIELDS:
                setattr(self, name, kept[name][:0])
            self.cursor = torch.zeros_like(kept["cursor"])
            yield
        finally:
            for name, value in kept.items():
                setattr(self, name, value)

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any) -> None:
        for name in self.FIELDS:
            saved = state_dict.get(prefix + name)
            if saved is not None and saved.shape != getattr(self, name).shape:
                setattr(self, name, torch.empty_like(saved, device=getattr(self, name).device))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
