"""The network that reads ``state ⊕ instruction embedding`` for every algorithm.

Every policy, Q-function and value function of the benchmark starts with an
:class:`InstructionEncoderFactory` encoder::

    x = [ state (D) | embedding (E) ]                 (already standardised, see sampler.py)
          |              |
          |        Linear(E -> P) if instruction_projection = P > 0, else passed as is
          |              |
          +---- concat --+ (+ action for Q-functions) -> MLP(hidden_units) -> features

With the default ``instruction_projection=0`` this is the plain 2×256 ReLU MLP of the
original benchmark over the concatenated vector.  A projection > 0 gives the embedding its
own learned linear map first (a cheap "learned projection" of docs/benchmark.md §4).

Repeated observations are computed once.  CQL, BCQ and SAC-style targets evaluate a network on
each observation repeated ``n`` times in a row (``n`` sampled actions per state); d3rlpy hands
the encoder the materialised ``(batch·n, D)`` copy.  With a ~1,200-dim instruction embedding
in ``D`` the first layer on those copies is most of the update's arithmetic, so the encoders
find runs of identical consecutive rows (an exact comparison, cheap next to a matmul), push
only the distinct rows through the observation part and gather the result back.  The maths
is unchanged — a row's features, and every gradient, are the same as without the shortcut —
only the float rounding of a differently shaped matmul differs (tested in
``tests/algos/test_encoders.py``).

The instruction part of the first layer is computed once per distinct phrasing.  The first
layer is ``W·[s, e] + b = W_s·s + W_e·e + b``, and a batch of ``B`` rows holds far fewer distinct
embeddings ``e`` than rows (a few dozen phrasings per level; ~93% of a continuous domain's
input columns are the embedding).  :func:`distinct_instructions` finds them exactly (one
projection onto a fixed probe vector, ``torch.unique`` on the ``B`` keys, then an exact row
comparison that falls back to the plain computation on any collision), so ``W_e·e`` runs once
per phrasing and is gathered back: the same maths with ~``E/(D+E)`` fewer first-layer FLOPs.

The factory is registered with d3rlpy, so a saved ``model.d3`` (d3rlpy's ``save``) restores
it by name.
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from imaginebench.algos._d3rlpy import load as _load_d3rlpy

_load_d3rlpy()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from d3rlpy.models.encoders import EncoderFactory, register_encoder_factory  # noqa: E402
from d3rlpy.models.torch.encoders import Encoder, EncoderWithAction  # noqa: E402
from torch import nn  # noqa: E402

ENCODER_TYPE = "imaginebench_instruction_mlp"


def _mlp(in_units: int, hidden_units: Sequence[int], activation: str) -> nn.Sequential:
    act = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU}[activation]
    layers: list[nn.Module] = []
    for out_units in hidden_units:
        layers += [nn.Linear(in_units, out_units), act()]
        in_units = out_units
    return nn.Sequential(*layers)


_ENABLED = {"repeats": True, "phrasings": True}


@contextmanager
def shortcuts(repeats: bool = True, phrasings: bool = True) -> Iterator[None]:
    """Within the block, merge repeated rows (``repeats``) and split the first layer per phrasing
    (``phrasings``) only where asked — ``shortcuts(False, False)`` is the plain computation (the
    benchmarks' plain-d3rlpy column).  The maths is the same either way."""
    before = dict(_ENABLED)
    _ENABLED.update(repeats=repeats, phrasings=phrasings)
    try:
        yield
    finally:
        _ENABLED.update(before)


_last_runs: dict[str, object] = {}
"""The latest answer of :func:`consecutive_runs`, keyed on the tensor: an ensemble's critics
all receive the same repeated tensor, which need be scanned once."""


def consecutive_runs(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``(distinct rows, index)`` with ``distinct[index] == x`` when some consecutive rows of
    ``x`` are identical, else ``None``.

    Only runs of equal *neighbouring* rows are merged (what ``repeat``-then-flatten makes), so
    the check is one elementwise comparison, not a sort.  An ``x`` that needs its own gradient
    is never merged (the gradient of each row would land on the first of its run).
    """
    if not _ENABLED["repeats"] or x.dim() != 2 or x.shape[0] < 2 or x.requires_grad:
        return None
    key = (x.data_ptr(), x._version, tuple(x.shape), x.stride(), x.dtype, x.device)
    ref = _last_runs.get("tensor")
    if ref is not None and ref() is x and _last_runs.get("key") == key:
        return _last_runs["runs"]  # type: ignore[return-value]
    runs = _scan_runs(x)
    _last_runs.update(tensor=weakref.ref(x), key=key, runs=runs)
    return runs


def _scan_runs(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    starts = torch.ones(x.shape[0], dtype=torch.bool, device=x.device)
    starts[1:] = (x[1:] != x[:-1]).any(dim=1)
    n_distinct = int(starts.sum())
    if n_distinct > x.shape[0] // 2:  # too few repeats to pay for the gather
        return None
    return x[starts], torch.cumsum(starts, 0) - 1


_last_split: dict[str, object] = {}
"""The latest answer of :func:`distinct_instructions` (an ensemble's critics share inputs)."""
_PROBES: dict[tuple[int, torch.dtype, torch.device], torch.Tensor] = {}


def _probe(width: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A fixed vector that maps each embedding to one number (distinct embeddings to distinct
    numbers, but for a collision that the exact check in :func:`distinct_instructions` catches)."""
    key = (width, dtype, device)
    if key not in _PROBES:
        g = torch.Generator().manual_seed(0x1B)
        _PROBES[key] = torch.rand(width, generator=g, dtype=torch.float64).add_(0.5).to(dtype=dtype, device=device)
    return _PROBES[key]


def distinct_instructions(x: torch.Tensor, state_dim: int) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``(distinct embeddings, index)`` with ``distinct[index] == x[:, state_dim:]`` exactly, when
    the rows of ``x`` hold at most half as many distinct embeddings as rows; else ``None``.

    An ``x`` that needs its own gradient is never split (its rows' gradients must stay apart).
    """
    if (not _ENABLED["phrasings"] or x.dim() != 2 or x.shape[0] < 2 or x.requires_grad
            or not 0 < state_dim < x.shape[1]):
        return None
    key = (x.data_ptr(), x._version, tuple(x.shape), x.stride(), x.dtype, x.device, state_dim)
    ref = _last_split.get("tensor")
    if ref is not None and ref() is x and _last_split.get("key") == key:
        return _last_split["split"]  # type: ignore[return-value]
    split = _split_instructions(x[:, state_dim:])
    _last_split.update(tensor=weakref.ref(x), key=key, split=split)
    return split


def _split_instructions(e: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    keys = e @ _probe(e.shape[1], e.dtype, e.device)
    unique, index = torch.unique(keys, return_inverse=True)
    if unique.numel() > e.shape[0] // 2:  # too few repeats to pay for the gather
        return None
    rows = torch.arange(e.shape[0], device=e.device)
    first = torch.full((unique.numel(),), e.shape[0], dtype=torch.long, device=e.device)
    first.scatter_reduce_(0, index, rows, reduce="amin")
    distinct = e[first]
    if not torch.equal(distinct[index], e):  # two embeddings shared a key: stay exact
        return None
    return distinct, index


def _first_layer(trunk: "_InstructionTrunk", first: nn.Linear, x: torch.Tensor, bias: bool = True) -> torch.Tensor:
    """``first`` applied to the observation part ``trunk(x)`` (the first ``trunk.out_dim`` input
    columns of ``first``; its action columns are the caller's), the instruction part computed once
    per distinct embedding."""
    width = trunk.out_dim
    b = first.bias if bias else None
    split = distinct_instructions(x, trunk.state_dim)
    if split is None:
        return F.linear(trunk(x), first.weight[:, :width], b)
    distinct, index = split
    d = trunk.state_dim
    embedded = trunk.project(distinct) if trunk.project is not None else distinct
    return F.linear(x[:, :d], first.weight[:, :d], b) + F.linear(embedded, first.weight[:, d:width])[index]


class _InstructionTrunk(nn.Module):
    """Splits off the embedding, optionally projects it, concatenates it back."""

    def __init__(self, observation_dim: int, state_dim: int, projection: int) -> None:
        super().__init__()
        if projection > 0 and not 0 < state_dim < observation_dim:
            raise ValueError(
                f"instruction_projection needs 0 < state_dim < observation size; got state_dim={state_dim}, "
                f"observation size {observation_dim}."
            )
        self.state_dim = state_dim
        self.project = nn.Linear(observation_dim - state_dim, projection) if projection > 0 else None
        self.out_dim = state_dim + projection if projection > 0 else observation_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.project is None:
            return x
        return torch.cat([x[:, : self.state_dim], self.project(x[:, self.state_dim:])], dim=1)


class InstructionEncoder(Encoder):
    """``state ⊕ embedding -> features`` (policies, discrete Q-functions, value functions)."""

    def __init__(self, observation_dim: int, state_dim: int, projection: int, hidden_units: Sequence[int],
                 activation: str) -> None:
        super().__init__()
        self.trunk = _InstructionTrunk(observation_dim, state_dim, projection)
        self.mlp = _mlp(self.trunk.out_dim, hidden_units, activation)

    def _features(self, x: torch.Tensor) -> torch.Tensor:
        if not len(self.mlp):
            return self.trunk(x)
        return self.mlp[1:](_first_layer(self.trunk, self.mlp[0], x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        runs = consecutive_runs(x)
        if runs is None:
            return self._features(x)
        distinct, index = runs
        return self._features(distinct)[index]


class InstructionEncoderWithAction(EncoderWithAction):
    """``state ⊕ embedding ⊕ action -> features`` (continuous Q-functions)."""

    def __init__(self, observation_dim: int, state_dim: int, projection: int, hidden_units: Sequence[int],
                 activation: str, action_size: int, discrete_action: bool) -> None:
        super().__init__()
        self.trunk = _InstructionTrunk(observation_dim, state_dim, projection)
        self.mlp = _mlp(self.trunk.out_dim + action_size, hidden_units, activation)
        self.action_size = action_size
        self.discrete_action = discrete_action

    def forward(self, x: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        if self.discrete_action:
            action = F.one_hot(action.view(-1).long(), num_classes=self.action_size).float()
        if not len(self.mlp):
            return torch.cat([self.trunk(x), action], dim=1)
        # first layer split as W·[x, a] + b = W_x·x + (W_a·a + b), W_x·x once per distinct row
        first: nn.Linear = self.mlp[0]
        runs = consecutive_runs(x)
        if runs is None:
            hidden = _first_layer(self.trunk, first, x, bias=False)
        else:
            distinct, index = runs
            hidden = _first_layer(self.trunk, first, distinct, bias=False)[index]
        hidden = hidden + F.linear(action, first.weight[:, self.trunk.out_dim:], first.bias)
        return self.mlp[1:](hidden)


@dataclass()
class InstructionEncoderFactory(EncoderFactory):
    """d3rlpy encoder factory for ``state ⊕ instruction embedding`` inputs.

    Attributes:
        hidden_units: sizes of the MLP's hidden layers (the benchmark's 256×2 by default).
        activation: ``relu``, ``tanh`` or ``gelu``.
        state_dim: length of the state part of the observation (needed only for a projection).
        instruction_projection: size of a learned linear map of the embedding; 0 = none.
    """

    hidden_units: list[int] = field(default_factory=lambda: [256, 256])
    activation: str = "relu"
    state_dim: int = 0
    instruction_projection: int = 0

    def create(self, observation_shape: Sequence[int]) -> InstructionEncoder:
        return InstructionEncoder(int(observation_shape[0]), self.state_dim, self.instruction_projection,
                                  self.hidden_units, self.activation)

    def create_with_action(self, observation_shape: Sequence[int], action_size: int,
                           discrete_action: bool = False) -> InstructionEncoderWithAction:
        return InstructionEncoderWithAction(int(observation_shape[0]), self.state_dim, self.instruction_projection,
                                            self.hidden_units, self.activation, action_size, discrete_action)

    @staticmethod
    def get_type() -> str:
        return ENCODER_TYPE


register_encoder_factory(InstructionEncoderFactory)
