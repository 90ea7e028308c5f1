"""PRDC on d3rlpy, with an exact neighbour index over every transition of the run.

Ran et al., "Policy Regularization with Dataset Constraint for Offline Reinforcement Learning",
ICML 2023.  d3rlpy 2.8's ``PRDC`` is the implementation of record: TD3 (networks, critic update,
target smoothing, delayed actor) whose actor minimises ``λ·(−Q(s, π(s))) + mse(π(s), â)``, with
``â`` the action of the dataset point ``(β·ŝ) ⊕ â`` nearest to ``(β·s) ⊕ π(s)``.  What changes
here is only how ``â`` is found:

* **which data.**  d3rlpy fills its index inside ``PRDC.fit()`` from a d3rlpy buffer's
  episodes.  Runs here never call ``fit`` (the runner updates from a
  :class:`~imaginebench.algos.sampler.MixedReplaySource`), so :func:`attach_index` builds the
  index from every transition of the source, real and imaginary, with observations passed
  through the algorithm's observation scaler exactly as batches are.
* **one index per algorithm.**  d3rlpy keeps its ``NearestNeighbors`` as a class attribute of
  ``PRDC``, shared by every instance in a process; :class:`IndexedPRDC` gives each instance
  its own (and each run its own :class:`NeighbourIndex`).
* **speed, same neighbour.**  An observation is ``state ⊕ instruction embedding`` (400–1250
  columns) but its embedding is one of K phrasings; :class:`NeighbourIndex` splits the
  squared distance into a state⊕action part and a K-valued phrasing part and searches only
  the phrasings that can hold the nearest point (see there).  The result is the neighbour of a
  brute-force search over the full vectors, in float64 arithmetic as scikit-learn's search.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from imaginebench.algos._d3rlpy import load as _load_d3rlpy

_load_d3rlpy()

import torch  # noqa: E402
from d3rlpy.algos.qlearning.prdc import PRDC, PRDCConfig  # noqa: E402
from d3rlpy.algos.qlearning.torch.prdc_impl import PRDCActorLoss, PRDCImpl  # noqa: E402
from sklearn.base import clone  # noqa: E402

PIECE_ROWS = 256
"""Rows of one piece: each phrasing's transitions are stored in whole pieces (the last one padded)."""

CHUNK_ELEMENTS = 1 << 24
"""Float64 values of the index gathered at once by the vectorised search (pieces × rows ×
columns: 128 MB)."""

BUILD_ELEMENTS = 1 << 20
"""Values scaled or copied at once while building (small blocks: no fresh pages every time)."""

_TOLERANCE = 1e-9
"""Relative slack when ruling a phrasing out: one whose embedding distance alone is within this
of the best distance found is searched anyway, so float rounding never drops the true neighbour."""


class NeighbourIndex:
    """Exact nearest neighbour of ``(β·obs) ⊕ action`` among a run's transitions.

    With ``z = β·state' ⊕ action`` and ``p_k = β·embedding'_k`` (primes: after the observation
    scaler), the squared distance of a query ``q`` to transition ``i`` of phrasing ``k(i)`` is::

        d²(q, i) = ||z_q − z_i||² + T[q, k(i)],      T[q, k] = ||p_q − p_k||²   (B × K)

    Transitions are stored grouped by phrasing.  A query's own phrasing is searched first; its
    best distance ``u_q`` bounds the answer, so another phrasing ``k`` is searched only if
    ``T[q, k] < u_q`` (rare: phrasings lie far apart once standardised, actions in [−1, 1]).
    ``T`` comes from a K × K table: the query's embedding is matched bit for bit to its phrasing
    (computed directly when it matches none).  Distances are float64, as in scikit-learn's
    brute-force search over float32 data.

    Build it with :meth:`build`; everything lives on one torch device.
    """

    def __init__(self, keys: torch.Tensor, norms: torch.Tensor, positions: torch.Tensor, first_piece: torch.Tensor,
                 counts: torch.Tensor, phrasings: torch.Tensor, table: torch.Tensor, beta: float, state_dim: int,
                 piece_rows: int) -> None:
        self.keys = keys
        """(pieces × piece_rows, D + A) float64: ``β·state' ⊕ action``, grouped by phrasing, padded."""
        self.norms = norms
        """Squared norm of each key row; ``inf`` on padding rows."""
        self.positions = positions
        """Source transition index of each key row; −1 on padding rows."""
        self.first_piece = first_piece
        """(K + 1,) first piece of each phrasing (phrasing k: pieces first[k] .. first[k+1] − 1)."""
        self.counts = counts
        """(K,) transitions of each phrasing (its rows: ``first[k]·piece_rows`` on, then padding)."""
        self.piece_rows = int(piece_rows)
        self.vectorised = keys.device.type != "cpu"
        """Search all pairs at once on gathered pieces (accelerators), or phrasing by phrasing on
        views of the index (CPU: no copies)."""
        self.phrasings = phrasings
        """(K, E) float32 ``β·embedding'`` of each phrasing."""
        self.table = table
        """(K, K) float64 ``||p_j − p_k||²``; ``inf`` in the columns of phrasings without transitions."""
        self.beta = float(beta)
        self.state_dim = int(state_dim)
        self.action_size = int(keys.shape[1]) - self.state_dim
        phr = phrasings.double()
        self._phrasing_norms = (phr * phr).sum(1)
        self._empty = counts == 0
        self._starts = (first_piece[:-1] * self.piece_rows).tolist()
        self._counts = counts.tolist()
        self._views: list[tuple[torch.Tensor, torch.Tensor]] | None = None
        self._no_rows = (torch.tensor(float("inf"), dtype=torch.float64, device=keys.device),
                         torch.tensor(0, device=keys.device))
        gen = torch.Generator().manual_seed(0)  # a fixed projection, never the global random stream
        self._projection = torch.randn(phrasings.shape[1], generator=gen, dtype=torch.float64).to(keys.device)
        self._sorted_projections, self._projection_order = torch.sort(phr @ self._projection)

    @property
    def size(self) -> int:
        """Transitions indexed."""
        return int((self.positions >= 0).sum())

    @property
    def device(self) -> torch.device:
        return self.keys.device

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, source: Any, beta: float, observation_scaler: Any = None, action_scaler: Any = None,
              device: str | torch.device = "cpu") -> "NeighbourIndex":
        """The index of every transition of ``source`` (a ``MixedReplaySource``).

        Observations go through ``observation_scaler.transform`` and actions through
        ``action_scaler.transform`` on ``device`` — the calls that turn a batch into the tensors
        the update sees — then states and embeddings are multiplied by ``beta`` in float32, as
        d3rlpy does to its index and its queries.
        """
        if source.discrete:
            raise ValueError("PRDC's neighbour index needs continuous actions.")
        dim, width = source.state_dim, source.observation_dim
        n_phr = len(source.embeddings)

        def scaled(block: np.ndarray, columns: slice) -> torch.Tensor:
            """``block`` placed in ``columns`` of zero observations, scaled, and cut back out."""
            full = torch.zeros((len(block), width), dtype=torch.float32, device=device)
            full[:, columns] = torch.from_numpy(np.ascontiguousarray(block, dtype=np.float32)).to(device)
            if observation_scaler is not None:
                full = observation_scaler.transform(full)
            return full[:, columns] * beta

        # states (once per stored state row), then the transitions' rows of them
        states = np.asarray(source._states)
        step = max(1, BUILD_ELEMENTS // width)
        state_keys = torch.cat([scaled(states[lo:lo + step], slice(0, dim)) for lo in range(0, len(states), step)])
        phrasings = scaled(source.embeddings, slice(dim, width)).contiguous()

        instr = torch.from_numpy(np.asarray(source._instr, dtype=np.int64))
        counts = torch.bincount(instr, minlength=n_phr)
        pieces = (counts + PIECE_ROWS - 1) // PIECE_ROWS
        first_piece = torch.zeros(n_phr + 1, dtype=torch.int64)
        first_piece[1:] = torch.cumsum(pieces, 0)
        order = torch.argsort(instr, stable=True)  # transitions grouped by phrasing, in source order
        group_start = torch.cumsum(counts, 0) - counts
        slot = first_piece[:-1][instr[order]] * PIECE_ROWS + (torch.arange(len(order)) - group_start[instr[order]])
        rows = int(first_piece[-1]) * PIECE_ROWS
        positions = torch.full((rows,), -1, dtype=torch.int64)
        positions[slot] = order

        actions = torch.from_numpy(np.asarray(source._actions, dtype=np.float32)).to(device)
        if action_scaler is not None:
            actions = action_scaler.transform(actions)
        obs_rows = torch.from_numpy(np.asarray(source._obs_rows, dtype=np.int64)).to(device)
        keys = torch.zeros((rows, dim + actions.shape[1]), dtype=torch.float64, device=device)
        norms = torch.full((rows,), float("inf"), dtype=torch.float64, device=device)
        slot, order = slot.to(device), order.to(device)
        step = max(1, BUILD_ELEMENTS // keys.shape[1])
        for lo in range(0, len(order), step):
            sl, idx = slot[lo:lo + step], order[lo:lo + step]
            block = torch.cat([state_keys[obs_rows[idx]], actions[idx]], 1).double()
            keys[sl] = block
            norms[sl] = (block * block).sum(1)

        phr = phrasings.double()
        sq = (phr * phr).sum(1)
        table = (sq[:, None] + sq[None, :] - 2.0 * phr @ phr.T).clamp_min_(0.0)
        table.fill_diagonal_(0.0)
        table[:, (counts == 0).to(device)] = float("inf")
        return cls(keys, norms, positions.to(device), first_piece.to(device), counts.to(device), phrasings, table,
                   beta, dim, PIECE_ROWS)

    # ------------------------------------------------------------------ queries
    def nearest(self, observations: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Source transition index and squared distance of the nearest neighbour of each
        ``(β·observation) ⊕ action`` (observations already scaled, as in a training batch)."""
        rows, dist = self._nearest_rows(observations, actions)
        return self.positions[rows], dist

    def neighbour_actions(self, observations: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """The (scaled) dataset action of each query's nearest neighbour, float32: d3rlpy's
        ``nearest_neighbor`` target."""
        rows, _ = self._nearest_rows(observations, actions)
        return self.keys[rows, self.state_dim:].float()

    def _nearest_rows(self, observations: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Key row and squared distance of each query's nearest neighbour."""
        with torch.no_grad():
            keyed = observations * self.beta  # float32, as d3rlpy forms its query
            dim = self.state_dim
            z = torch.cat([keyed[:, :dim], actions.to(keyed.dtype)], 1).double()
            dist_phr = self._phrasing_distances(keyed[:, dim:])
            queries = torch.arange(len(z), device=z.device)
            own = dist_phr.argmin(1)
            best, best_row = self._search(z, queries, own)
            best = best + dist_phr[queries, own]
            # other phrasings whose embedding distance alone does not rule them out
            maybe = dist_phr < (best + _TOLERANCE * (1.0 + best))[:, None]
            maybe[queries, own] = False
            q2, g2 = maybe.nonzero(as_tuple=True)
            if len(q2):
                d2, r2 = self._search(z, q2, g2)
                best, best_row = _reduce_min(torch.cat([queries, q2]), torch.cat([best, d2 + dist_phr[q2, g2]]),
                                             torch.cat([best_row, r2]), len(z), len(self.keys))
            return best_row, best

    def _phrasing_distances(self, embeddings: torch.Tensor) -> torch.Tensor:
        """(B, K) ``||p_q − p_k||²``: a row of the table when the query's embedding is a phrasing's."""
        proj = embeddings.double() @ self._projection
        n_phr = len(self._sorted_projections)
        at = torch.searchsorted(self._sorted_projections, proj)
        found = torch.full((len(embeddings),), -1, dtype=torch.int64, device=embeddings.device)
        for cand in (at.clamp(max=n_phr - 1), (at - 1).clamp(min=0)):  # rounding may put it either side
            k = self._projection_order[cand]
            equal = (self.phrasings[k] == embeddings).all(1) & (found < 0)
            found = torch.where(equal, k, found)
        out = torch.empty((len(embeddings), n_phr), dtype=torch.float64, device=embeddings.device)
        hit = found >= 0
        out[hit] = self.table[found[hit]]
        if not bool(hit.all()):
            e = embeddings[~hit].double()
            direct = ((e * e).sum(1)[:, None] + self._phrasing_norms[None, :] - 2.0 * e @ self.phrasings.double().T)
            out[~hit] = direct.clamp_min_(0.0).masked_fill_(self._empty[None, :], float("inf"))
        return out

    def _search(self, z: torch.Tensor, queries: torch.Tensor,
                groups: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """For each pair (query, phrasing): min over the phrasing's transitions of ``||z_q − z_i||²``
        and the key row that attains it (``inf`` and a padding row for a phrasing without any)."""
        return (self._search_pieces if self.vectorised else self._search_slices)(z, queries, groups)

    def _search_slices(self, z: torch.Tensor, queries: torch.Tensor,
                       groups: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`_search` one pair at a time, on views of each phrasing's rows."""
        if self._views is None:  # one view of keys and norms per phrasing, made once
            self._views = [(self.keys[s:s + c], self.norms[s:s + c]) for s, c in zip(self._starts, self._counts)]
        rows = z.unbind(0)
        dists, args = [], []
        for q, g in zip(queries.tolist(), groups.tolist()):
            keys, norms = self._views[g]
            if len(keys):
                d, i = torch.addmv(norms, keys, rows[q], alpha=-2.0).min(0)
            else:
                d, i = self._no_rows
            dists.append(d)
            args.append(i)
        if not dists:
            return (torch.zeros(0, dtype=torch.float64, device=z.device),
                    torch.zeros(0, dtype=torch.int64, device=z.device))
        row = torch.stack(args) + torch.tensor(self._starts, device=z.device)[groups]
        return torch.stack(dists) + (z[queries] * z[queries]).sum(1), row

    def _search_pieces(self, z: torch.Tensor, queries: torch.Tensor,
                       groups: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`_search` for all pairs at once, on chunks of gathered pieces."""
        n_pairs, width = len(queries), z.shape[1]
        first, count = self.first_piece[groups], self.first_piece[groups + 1] - self.first_piece[groups]
        pair = torch.repeat_interleave(torch.arange(n_pairs, device=z.device), count)
        piece = first[pair] + torch.arange(len(pair), device=z.device) - (torch.cumsum(count, 0) - count)[pair]
        zq = z[queries]
        zsq = (zq * zq).sum(1)
        keys = self.keys.view(-1, self.piece_rows, width)
        norms = self.norms.view(-1, self.piece_rows)
        step = max(1, CHUNK_ELEMENTS // (self.piece_rows * width))
        dists, rows = [], []
        for lo in range(0, len(piece), step):
            pc, pr = piece[lo:lo + step], pair[lo:lo + step]
            d = torch.baddbmm(norms[pc].unsqueeze(2), keys[pc], zq[pr].unsqueeze(2), alpha=-2.0).squeeze(2)
            dmin, arg = d.min(1)
            dists.append(dmin + zsq[pr])
            rows.append(pc * self.piece_rows + arg)
        if not dists:
            return (torch.full((n_pairs,), float("inf"), dtype=torch.float64, device=z.device),
                    torch.zeros(n_pairs, dtype=torch.int64, device=z.device))
        return _reduce_min(pair, torch.cat(dists), torch.cat(rows), n_pairs, len(self.keys))


def _reduce_min(owner: torch.Tensor, dist: torch.Tensor, row: torch.Tensor, n: int,
                no_row: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per owner in ``0..n-1``: the least ``dist`` and, among rows attaining it, the first row."""
    best = torch.full((n,), float("inf"), dtype=dist.dtype, device=dist.device).scatter_reduce(
        0, owner, dist, "amin")
    winner = torch.where(dist == best[owner], row, torch.full_like(row, no_row))
    best_row = torch.full((n,), no_row, dtype=row.dtype, device=row.device).scatter_reduce(0, owner, winner, "amin")
    return best, best_row.clamp_(max=no_row - 1)


class IndexedPRDCImpl(PRDCImpl):
    """d3rlpy's ``PRDCImpl`` with the nearest dataset action taken from a :class:`NeighbourIndex`.

    ``compute_actor_loss`` is d3rlpy's loss term for term (``λ = α / mean|Q|``, loss
    ``λ·(−mean Q) + mse(π(s), â)``); only the line that finds ``â`` differs: d3rlpy copies the
    query to the CPU and asks scikit-learn, here the index answers on the algorithm's device.
    Without an index (``fit`` on a d3rlpy buffer) d3rlpy's own search runs.
    """

    index: NeighbourIndex | None = None

    def compute_actor_loss(self, batch, action) -> PRDCActorLoss:
        if self.index is None:
            return super().compute_actor_loss(batch, action)
        q_t = self._q_func_forwarder.compute_expected_q(batch.observations, action.squashed_mu, "none")[0]
        lam = self._alpha / (q_t.abs().mean()).detach()
        nearest = self.index.neighbour_actions(batch.observations, action.squashed_mu.detach())
        dc_loss = torch.nn.functional.mse_loss(action.squashed_mu, nearest.to(action.squashed_mu.dtype))
        return PRDCActorLoss(actor_loss=lam * -q_t.mean() + dc_loss, dc_loss=dc_loss)


class IndexedPRDC(PRDC):
    """d3rlpy's ``PRDC`` with an index of its own.

    d3rlpy's ``inner_create_impl`` builds the networks, optimisers and a ``PRDCImpl``; that impl
    is then re-classed to :class:`IndexedPRDCImpl`, which adds no state of its own, so network
    construction, initialisation order and the TD3 update stay d3rlpy's.  The scikit-learn
    index d3rlpy's ``fit`` fills becomes an instance attribute (d3rlpy: one per process).
    """

    def __init__(self, config: PRDCConfig, device: Any, enable_ddp: bool = False, impl: Any = None) -> None:
        super().__init__(config, device, enable_ddp, impl)
        self._nbsr = clone(PRDC._nbsr)

    def inner_create_impl(self, observation_shape, action_size: int) -> None:
        super().inner_create_impl(observation_shape, action_size)
        self._impl.__class__ = IndexedPRDCImpl

    def attach_index(self, index: NeighbourIndex) -> None:
        """Use ``index`` for the dataset constraint (after ``create_impl``)."""
        if self._impl is None:
            raise RuntimeError("Build the algorithm (create_impl) before attaching its neighbour index.")
        if index.beta != self._config.beta:
            raise ValueError(f"The index was built with beta={index.beta}, the algorithm uses {self._config.beta}.")
        self._impl.index = index


@dataclasses.dataclass()
class IndexedPRDCConfig(PRDCConfig):
    """d3rlpy's ``PRDCConfig`` whose ``create`` gives an :class:`IndexedPRDC`.  Its type name stays
    ``"prdc"``, so a saved model loads with plain d3rlpy (``d3rlpy.load_learnable``)."""

    def create(self, device: Any = False, enable_ddp: bool = False) -> IndexedPRDC:
        return IndexedPRDC(self, device, enable_ddp)


def attach_index(algo: IndexedPRDC, source: Any) -> NeighbourIndex:
    """Build the neighbour index of every transition of ``source`` for the built ``algo`` (with
    its observation and action scalers, on its device) and attach it; returns the index."""
    config = algo.config
    index = NeighbourIndex.build(source, config.beta, config.observation_scaler, config.action_scaler,
                                 algo.impl.device)
    algo.attach_index(index)
    return index
