"""Decision Transformer, continuous and discrete.

Chen et al., "Decision Transformer: Reinforcement Learning via Sequence Modeling", NeurIPS
2021.  A causal GPT over ``(return-to-go, observation, action)`` tokens of a window of K steps,
trained to predict each action; at evaluation it is conditioned on a target return that falls
by each reward earned.  The models are d3rlpy's ``DecisionTransformer`` and
``DiscreteDecisionTransformer``; batches of windows come from
:func:`imaginebench.algos.dt.trajectories.sample_trajectory_batch` (each source's exact share of
windows), evaluation goes through :class:`imaginebench.algos.dt.trajectories.TransformerPolicy`.

Defaults.  Both versions use the paper's Gym model (also d3rlpy's ``reproductions/offline/
decision_transformer.py``): K = 20, width 128 (one linear map of ``state ⊕ embedding`` to 128,
like the paper's linear state embedding), 3 layers, 1 head, dropout 0.1, batch 64 windows,
timesteps up to 1000.  The continuous version also takes the paper's optimiser: AdamW at 1e-4,
weight decay 1e-4 (not on biases, LayerNorms or embeddings), gradient-norm clip 0.25, linear
warm-up over 10k steps.  The discrete version keeps what d3rlpy builds for discrete actions
(the paper's Atari setting, from minGPT): GELU, tanh on the token embeddings, a learned global
position embedding, AdamW at 6e-4 with β = (0.9, 0.95), weight decay 0.1, clip 1.0, and
d3rlpy's linear warm-up over 10,240 tokens then cosine decay to 10% at 30M tokens; its model
is the Gym one rather than d3rlpy's 6 layers × 8 heads (our states are short vectors, not
frames, and one size keeps the family comparable across domains).  Its loss skips padded window
steps, as the continuous loss does (d3rlpy's discrete loss trains padding towards action 0;
see :func:`imaginebench.algos.dt.trajectories.masked_cross_entropy`).

Data-derived settings (:meth:`DecisionTransformerBase.derived`, recorded in the run record):
the target return is the highest return of a real episode (DT conditions on the expert's
return); returns-to-go are scaled by ``1 / max |episode return|`` over all the run's episodes
(the paper divides Gym returns by a fixed 1000; our domains' reward scales differ).
Returns-to-go are undiscounted (as in the paper and d3rlpy): ``gamma`` is not used, nor is
``fused_adam`` (the optimiser is d3rlpy's ``GPTAdamWFactory``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from imaginebench.algos._d3rlpy import load as load_d3rlpy
from imaginebench.algos.algo_config import ACTIVATIONS, AlgoConfig, BuildContext
from imaginebench.errors import UsageError

PAPER = "Chen et al., NeurIPS 2021"
POSITION_ENCODINGS = ("simple", "global")


@dataclass(frozen=True)
class DecisionTransformerBase(AlgoConfig):
    """Fields shared by both Decision Transformers.

    Attributes:
        hidden_units: layers of the observation encoder; the last is the transformer's width
            (no activation after it: ``(128,)`` is the paper's linear embedding).
        context_size: K, steps per window.
        num_layers: transformer blocks.
        num_heads: attention heads (must divide the width).
        dropout: dropout of attention, residual and embedding layers.
        max_timestep: largest timestep embedded (longer episodes reuse the last one).
        batch_size: windows per gradient step (64, the paper's); the profile's transition batch
            does not apply.
        learning_rate: peak AdamW learning rate.
        weight_decay: AdamW weight decay (linear and convolution weights only).
        grad_clip: gradient-norm clip.
        position_encoding: ``simple`` (learned per timestep) or ``global`` (learned per
            timestep plus per window position).
        target_return: return the evaluation policy starts conditioned on; ``None``: the
            highest return of a real episode of the run's data.
        return_scale: multiplier of rewards and returns-to-go; ``None``: ``1 / max |episode
            return|`` of the run's data.
    """

    paper: ClassVar[str] = PAPER

    hidden_units: tuple[int, ...] = (128,)
    context_size: int = 20
    num_layers: int = 3
    num_heads: int = 1
    dropout: float = 0.1
    max_timestep: int = 1000
    batch_size: int | None = 64
    learning_rate: float = 1e-4
    weight_decay: float = 1e-4
    grad_clip: float = 0.25
    position_encoding: str = "simple"
    target_return: float | None = None
    return_scale: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("context_size", "num_layers", "num_heads", "max_timestep"):
            if getattr(self, name) <= 0:
                raise UsageError(f"{name} must be positive, got {getattr(self, name)}.")
        if self.hidden_units[-1] % self.num_heads:
            raise UsageError(f"num_heads ({self.num_heads}) must divide the transformer width "
                             f"(last of hidden_units, {self.hidden_units[-1]}).")
        if not 0.0 <= self.dropout < 1.0:
            raise UsageError(f"dropout must lie in [0, 1), got {self.dropout}.")
        if self.weight_decay < 0 or self.grad_clip <= 0:
            raise UsageError(f"weight_decay must be >= 0 and grad_clip > 0, got {self.weight_decay}, {self.grad_clip}.")
        if self.position_encoding not in POSITION_ENCODINGS:
            raise UsageError(f"Unknown position_encoding {self.position_encoding!r}; valid choices: "
                             f"{', '.join(POSITION_ENCODINGS)}.")
        if self.return_scale is not None and not self.return_scale > 0:
            raise UsageError(f"return_scale must be positive, got {self.return_scale}.")
        if self.instruction_projection:
            raise UsageError("Decision Transformer embeds state ⊕ instruction embedding with one linear map; a "
                             "separate instruction_projection would only limit its rank. Leave it at 0.")

    # ------------------------------------------------------------------ building
    def encoder_factory(self, ctx: BuildContext):
        """d3rlpy's vector encoder with no activation after its last layer (the token embedding)."""
        return load_d3rlpy().models.VectorEncoderFactory(hidden_units=list(self.hidden_units), activation=self.activation,
                                                  exclude_last_activation=True)

    def shared_kwargs(self, ctx: BuildContext) -> dict[str, Any]:
        """Keyword arguments both d3rlpy transformer configs take."""
        kinds = {"simple": load_d3rlpy().PositionEncodingType.SIMPLE, "global": load_d3rlpy().PositionEncodingType.GLOBAL}
        return {**self.common_kwargs(ctx), "context_size": self.context_size, "max_timestep": self.max_timestep,
                "learning_rate": self.learning_rate, "encoder_factory": self.encoder_factory(ctx),
                "num_heads": self.num_heads, "num_layers": self.num_layers, "attn_dropout": self.dropout,
                "resid_dropout": self.dropout, "embed_dropout": self.dropout, "activation_type": self.activation,
                "position_encoding_type": kinds[self.position_encoding]}

    def windows(self, batch_size: int) -> int:
        """Windows per gradient step: the config's batch size, else the runner's."""
        return self.batch_size or batch_size

    # ------------------------------------------------------------------ data
    def derived(self, source) -> dict[str, Any]:
        """The target return and return scale of a run on ``source`` (overrides, else from the data)."""
        from imaginebench.algos.dt.trajectories import return_scale, target_return

        return {"target_return": float(self.target_return if self.target_return is not None else target_return(source)),
                "return_scale": float(self.return_scale if self.return_scale is not None else return_scale(source))}

    def attach(self, algo, source) -> None:
        """Scale rewards and returns-to-go (a d3rlpy reward scaler, saved with the model) and give the
        algorithm its evaluation target return."""
        from d3rlpy.preprocessing import MultiplyRewardScaler

        from imaginebench.algos.dt.trajectories import set_target_return

        derived = self.derived(source)
        algo.config.reward_scaler = MultiplyRewardScaler(derived["return_scale"])
        set_target_return(algo, derived["target_return"])

    def update(self, algo, source, batch_size: int) -> dict[str, float]:
        """One gradient step on a batch of windows (each source's exact share)."""
        from imaginebench.algos.dt.trajectories import sample_trajectory_batch

        return algo.update(sample_trajectory_batch(source, self.windows(batch_size), self.context_size,
                                                   self.max_timestep))


@dataclass(frozen=True)
class DecisionTransformerConfig(DecisionTransformerBase):
    """Decision Transformer for continuous actions (tanh outputs, squared error to the data's
    actions on the unpadded steps).

    Attributes:
        warmup_steps: steps of linear learning-rate warm-up.
    """

    discrete: ClassVar[bool] = False

    warmup_steps: int = 10_000

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.warmup_steps < 0:
            raise UsageError(f"warmup_steps must be >= 0, got {self.warmup_steps}.")

    def d3rlpy_config(self, ctx: BuildContext):
        d3rlpy = load_d3rlpy()
        schedule = (d3rlpy.optimizers.WarmupSchedulerFactory(warmup_steps=self.warmup_steps)
                    if self.warmup_steps else None)
        optim = d3rlpy.optimizers.GPTAdamWFactory(weight_decay=self.weight_decay, clip_grad_norm=self.grad_clip,
                                                  lr_scheduler_factory=schedule)
        return d3rlpy.algos.DecisionTransformerConfig(**self.shared_kwargs(ctx), optim_factory=optim)


@dataclass(frozen=True)
class DiscreteDecisionTransformerConfig(DecisionTransformerBase):
    """Decision Transformer for discrete actions (cross-entropy over action logits).

    Attributes:
        embed_activation: activation applied to every token embedding.
        warmup_tokens: tokens (window steps) of linear learning-rate warm-up.
        final_tokens: tokens at which the cosine decay reaches its floor (10% of the peak).
    """

    discrete: ClassVar[bool] = True

    activation: str = "gelu"
    learning_rate: float = 6e-4
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    position_encoding: str = "global"
    embed_activation: str = "tanh"
    warmup_tokens: int = 10_240
    final_tokens: int = 30_000_000

    BETAS: ClassVar[tuple[float, float]] = (0.9, 0.95)
    """AdamW's β of the paper's Atari runs (minGPT)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.embed_activation not in ACTIVATIONS:
            raise UsageError(f"Unknown embed_activation {self.embed_activation!r}; valid choices: "
                             f"{', '.join(ACTIVATIONS)}.")
        if not 0 <= self.warmup_tokens < self.final_tokens:
            raise UsageError(f"Need 0 <= warmup_tokens < final_tokens, got {self.warmup_tokens}, {self.final_tokens}.")

    def d3rlpy_config(self, ctx: BuildContext):
        d3rlpy = load_d3rlpy()
        optim = d3rlpy.optimizers.GPTAdamWFactory(betas=self.BETAS, weight_decay=self.weight_decay,
                                                  clip_grad_norm=self.grad_clip)
        return d3rlpy.algos.DiscreteDecisionTransformerConfig(
            **self.shared_kwargs(ctx), optim_factory=optim, embed_activation_type=self.embed_activation,
            warmup_tokens=self.warmup_tokens, final_tokens=self.final_tokens)

    def attach(self, algo, source) -> None:
        """As for the continuous version, and the cross-entropy averaged over the windows' real
        steps only (:func:`imaginebench.algos.dt.trajectories.masked_cross_entropy`)."""
        from imaginebench.algos.dt.trajectories import use_masked_cross_entropy

        super().attach(algo, source)
        use_masked_cross_entropy(algo)

    def update(self, algo, source, batch_size: int) -> dict[str, float]:
        """One gradient step; d3rlpy's learning-rate schedule counts tokens in a counter it does not
        checkpoint, so the counter is set from the step first (``step × windows × K``: every window
        position counts), which makes the schedule a function of the step and survive a resume."""
        algo.impl._tokens = algo.grad_step * self.windows(batch_size) * self.context_size
        return super().update(algo, source, batch_size)
