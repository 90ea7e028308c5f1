"""What every algorithm config shares, the context it is built in, and the record that registers it.

An algorithm config is a frozen dataclass of hyperparameters with defaults at the scale of
the original benchmark (docs/benchmark.md §7: 256×2 MLPs, batch 100–256).  It does not know the data; the
runner passes a :class:`BuildContext` (batch size from the profile, observation layout, the
fitted observation scaler) and :meth:`AlgoConfig.create` returns a d3rlpy algorithm.

An algorithm lives in one folder, ``imaginebench/algos/<family>/``: ``config.py`` (its config,
which builds the d3rlpy algorithm), ``stacked.py`` (its trainer stacked over seeds, where it has
one) and ``__init__.py``, whose ``SPECS`` (:class:`AlgoSpec`) the registry collects.

Importing this module does not import d3rlpy or torch; :meth:`AlgoConfig.create` does.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from imaginebench.algos._d3rlpy import load as load_d3rlpy
from imaginebench.errors import UsageError

ACTIVATIONS = ("relu", "tanh", "gelu")
LR_DECAYS = ("none", "cosine")
ACTION_SCALINGS = ("none", "minmax")


@dataclass(frozen=True)
class BuildContext:
    """Everything an algorithm needs from the data and the profile.

    Attributes:
        batch_size: transitions per gradient step (the profile's, unless the config overrides it).
        state_dim: length of the state part of each observation.
        embedding_dim: length of the instruction-embedding part.
        action_size: number of discrete actions, or the action vector's length.
        discrete: whether actions are discrete.
        observation_scaler: a fitted d3rlpy observation scaler, or ``None``.
        device: torch device string.
        total_steps: gradient steps the run will take (what a learning-rate schedule spans);
            ``None`` where it is not known, which a config with a schedule refuses.
        action_scaler: a fitted d3rlpy ``MinMaxActionScaler`` over the data's actions
            (continuous data), used by configs with ``action_scaling="minmax"``.
    """

    batch_size: int
    state_dim: int
    embedding_dim: int
    action_size: int
    discrete: bool
    observation_scaler: Any = None
    device: str = "cpu:0"
    total_steps: int | None = None
    action_scaler: Any = None

    @property
    def observation_dim(self) -> int:
        return self.state_dim + self.embedding_dim


@dataclass(frozen=True)
class AlgoConfig:
    """Fields shared by every algorithm.

    Attributes:
        hidden_units: hidden layer sizes of every network's MLP encoder.
        activation: hidden activation (``relu``, ``tanh`` or ``gelu``).
        instruction_projection: size of a learned linear map of the instruction embedding
            before the MLP (0 = feed the embedding as is).
        gamma: discount factor, applied to every non-terminal transition.
        batch_size: transitions per gradient step; ``None`` uses the profile's batch size.
        fused_adam: use torch's fused Adam kernel (Adam's update rule, a faster optimiser
            step on CPU); ``False`` gives d3rlpy's plain ``AdamFactory``.
        action_scaling: ``none`` or ``minmax`` (continuous actions: each dimension's range in the
            data maps to [-1, 1] for training, and predictions map back; d3rlpy's
            ``MinMaxActionScaler``).  A policy's tanh then spans what the data does, and a critic
            is not asked about actions far outside it (LIBERO: notes/libero.md).
    """

    discrete: ClassVar[bool]
    """Whether the algorithm acts in a discrete action space."""
    paper: ClassVar[str]
    """The paper that introduced the algorithm."""

    hidden_units: tuple[int, ...] = (256, 256)
    activation: str = "relu"
    instruction_projection: int = 0
    gamma: float = 0.99
    batch_size: int | None = None
    fused_adam: bool = True
    action_scaling: str = "none"

    def __post_init__(self) -> None:
        if not self.hidden_units or any(int(h) <= 0 for h in self.hidden_units):
            raise UsageError(f"hidden_units must be positive layer sizes, got {self.hidden_units!r}.")
        object.__setattr__(self, "hidden_units", tuple(int(h) for h in self.hidden_units))
        if self.activation not in ACTIVATIONS:
            raise UsageError(f"Unknown activation {self.activation!r}; valid choices: {', '.join(ACTIVATIONS)}.")
        if self.instruction_projection < 0:
            raise UsageError(f"instruction_projection must be >= 0, got {self.instruction_projection}.")
        if not 0.0 <= self.gamma <= 1.0:
            raise UsageError(f"gamma must lie in [0, 1], got {self.gamma}.")
        if self.action_scaling not in ACTION_SCALINGS:
            raise UsageError(f"action_scaling must be one of {', '.join(ACTION_SCALINGS)}, got {self.action_scaling!r}.")
        if self.discrete and self.action_scaling != "none":
            raise UsageError(f"{type(self).__name__} acts in a discrete action space; action_scaling must be 'none'.")
        if self.batch_size is not None and self.batch_size <= 0:
            raise UsageError(f"batch_size must be positive, got {self.batch_size}.")
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name.endswith("learning_rate") and not value > 0:
                raise UsageError(f"{f.name} must be positive, got {value}.")

    # ------------------------------------------------------------------ building
    def encoder_factory(self, ctx: BuildContext):
        """The d3rlpy encoder factory for ``state ⊕ embedding`` inputs."""
        from imaginebench.algos.encoders import InstructionEncoderFactory

        return InstructionEncoderFactory(hidden_units=list(self.hidden_units), activation=self.activation,
                                         state_dim=ctx.state_dim, instruction_projection=self.instruction_projection)

    def optimizers(self, *names: str, decay: str = "none", ctx: BuildContext | None = None,
                   every: dict[str, int] | None = None) -> dict[str, Any]:
        """``{name: optimizer factory}`` for the d3rlpy config's optimiser fields ``names``.

        ``decay="cosine"`` anneals each optimiser's learning rate along a half cosine to 0 over
        the steps it takes in the run (d3rlpy's ``CosineAnnealingLRFactory``): ``ctx.total_steps``,
        or a ``every[name]``-th of them for an optimiser that steps once per that many updates."""
        if self.fused_adam:
            from imaginebench.algos.optimizers import FusedAdamFactory as factory
        else:
            factory = load_d3rlpy().optimizers.AdamFactory
        if decay == "none":
            return {name: factory() for name in names}
        if decay != "cosine":
            raise UsageError(f"Unknown lr_decay {decay!r}; valid choices: {', '.join(LR_DECAYS)}.")
        if ctx is None or not ctx.total_steps:
            raise UsageError(f"{type(self).__name__} with lr_decay={decay!r} needs the run's total gradient steps; "
                             "build it through the training runner or pass total_steps.")
        schedule = load_d3rlpy().optimizers.CosineAnnealingLRFactory
        total, every = int(ctx.total_steps), every or {}
        return {name: factory(lr_scheduler_factory=schedule(T_max=-(-total // int(every.get(name, 1)))))
                for name in names}

    def common_kwargs(self, ctx: BuildContext) -> dict[str, Any]:
        """Keyword arguments every d3rlpy config takes."""
        kwargs = {"batch_size": self.batch_size or ctx.batch_size, "gamma": self.gamma,
                  "observation_scaler": ctx.observation_scaler}
        if self.action_scaling == "minmax":
            if ctx.action_scaler is None:
                raise UsageError(f"{type(self).__name__} with action_scaling='minmax' needs the data's action range; "
                                 "build it from a data source (imaginebench.algos.factory.build_algorithm).")
            kwargs["action_scaler"] = ctx.action_scaler
        return kwargs

    def d3rlpy_config(self, ctx: BuildContext):
        """The d3rlpy ``LearnableConfig`` for this algorithm (implemented per algorithm)."""
        raise NotImplementedError

    def create(self, ctx: BuildContext):
        """A fresh, un-built d3rlpy algorithm."""
        if ctx.discrete != self.discrete:
            kind = "discrete" if self.discrete else "continuous"
            raise UsageError(f"{type(self).__name__} needs {kind} actions.")
        return self.d3rlpy_config(ctx).create(device=ctx.device)

    def attach(self, algo, source) -> None:
        """Give the built ``algo`` what it needs from the run's data before training (e.g. PRDC's
        neighbour index over every transition of ``source``, real and imaginary).  Called by
        :func:`imaginebench.algos.factory.build_algorithm`; nothing by default."""

    def derived(self, source) -> dict[str, Any]:
        """Settings the algorithm takes from the run's data rather than from its fields (e.g.
        Decision Transformer's target return), JSON-friendly; the runner records them under
        ``config.derived``.  None by default."""
        return {}

    def update(self, algo, source, batch_size: int) -> dict[str, float]:
        """One gradient step of ``algo`` on a batch drawn from ``source`` (a
        :class:`~imaginebench.algos.sampler.MixedReplaySource`); returns the losses.  The default
        draws a transition batch; algorithms that learn from other batches override it."""
        from imaginebench.algos.sampler import fast_update

        return fast_update(algo, source.sample_transition_batch(batch_size))

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly field values (for run records)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    def replace(self, **changes: Any) -> "AlgoConfig":
        """A copy with ``changes`` (validated); unknown names raise ``ValueError``."""
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise UsageError(f"{type(self).__name__} has no field(s) {unknown}; fields: {', '.join(sorted(names))}.")
        types = {f.name: str(f.type) for f in dataclasses.fields(self)}
        for name, value in changes.items():
            check_field_type(name, types[name], value)
        return dataclasses.replace(self, **changes)


def check_lr_decay(value: str) -> None:
    """Raise :class:`UsageError` unless ``value`` is a known learning-rate schedule."""
    if value not in LR_DECAYS:
        raise UsageError(f"lr_decay must be one of {', '.join(LR_DECAYS)}, got {value!r}.")


def check_field_type(name: str, annotation: str, value: Any) -> None:
    """Raise :class:`UsageError` if ``value`` cannot be a config field annotated ``annotation``.

    Fields are plain ``int``/``float``/``bool``/``str``/``tuple`` (optionally ``| None``); a
    value given on the command line (``--set lr=abc``) is checked here, before any arithmetic
    on it could fail with a bare ``TypeError``.
    """
    kinds = set(re.findall(r"\b(int|float|bool|str|tuple|None)\b", annotation))
    if not kinds or annotation.replace(" ", "").startswith(("Literal", "Callable")):
        return
    if annotation.startswith("tuple"):  # element types are checked below, not the field's own
        kinds = {"tuple"} | (kinds & {"None"})
    if value is None:
        ok = "None" in kinds
    elif isinstance(value, bool):
        ok = "bool" in kinds
    elif isinstance(value, int):
        ok = bool(kinds & {"int", "float"})
    elif isinstance(value, float):
        ok = "float" in kinds
    elif isinstance(value, str):
        ok = "str" in kinds
    elif isinstance(value, (tuple, list)):
        ok = "tuple" in kinds and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    else:
        ok = False
    if not ok:
        words = {"int": "an integer", "float": "a number", "bool": "true or false", "str": "a string",
                 "tuple": "a list of integers such as [256, 256]", "None": "null"}
        wanted = " or ".join(words[k] for k in ("bool", "int", "float", "str", "tuple", "None") if k in kinds
                             and not (k == "int" and "float" in kinds))
        raise UsageError(f"{name} must be {wanted}, got {value!r}.")


@dataclass(frozen=True)
class AlgoSpec:
    """One registered algorithm.

    Attributes:
        name: registry name, e.g. ``"discrete_cql"``.
        family: the name shared by its continuous and discrete versions, e.g. ``"cql"`` (and its
            folder, ``imaginebench/algos/cql/``).
        label: how tables and figures write it, e.g. ``"CQL"``.
        config_cls: the frozen config dataclass holding its defaults.
        stacked: ``"module:Class"`` of its trainer stacked over seeds, or ``None`` (seeds train one
            at a time through d3rlpy's own update).  A string, so that the registry imports no torch.
    """

    name: str
    family: str
    label: str
    config_cls: type[AlgoConfig]
    stacked: str | None = None

    @property
    def discrete(self) -> bool:
        return self.config_cls.discrete

    @property
    def action_kind(self) -> str:
        return "discrete" if self.discrete else "continuous"

    def default_config(self, **overrides) -> AlgoConfig:
        """The default config, with ``overrides`` applied (validated)."""
        return self.config_cls().replace(**overrides) if overrides else self.config_cls()
