"""COMBO (continuous actions only).

Yu, Kumar, Rafailov, Rajeswaran, Levine & Finn, "COMBO: Conservative Offline Model-Based Policy
Optimization", NeurIPS 2021.  Implemented in :mod:`imaginebench.algos.combo.algorithm` on d3rlpy's CQL.

Defaults: the paper's dynamics model (MBPO's: 7 probabilistic members, 5 elites, 4×200 swish
layers, per-layer weight decay, Adam 1e-3, batch 256, hold-out early stopping, here capped at 25
epochs by measurement) and its SAC/CQL
learning rates; real-data ratio f = 0.5; rollouts every 1,000 steps from 50,000 states, kept
for 5 rounds (MBPO/MOPO code, which COMBO builds on).  β = 5 is the paper's value for its
near-expert (medium-expert) D4RL datasets, the closest to our demonstrations; it searched
β ∈ {0.5, 1, 5} and h ∈ {1, 5} per dataset.  h = 1 here by default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from imaginebench.algos.algo_config import AlgoConfig, BuildContext
from imaginebench.config import data_home
from imaginebench.errors import UsageError


@dataclass(frozen=True)
class COMBOConfig(AlgoConfig):
    """COMBO: SAC with a CQL-style critic term pushing Q down on model-rollout states and up on data.

    Attributes:
        actor_learning_rate: policy learning rate.
        critic_learning_rate: Q-function learning rate.
        temp_learning_rate: SAC temperature learning rate.
        tau: soft target-update rate.
        n_critics: Q-functions in the ensemble.
        initial_temperature: initial SAC temperature.
        conservative_weight: β, weight of the conservative term (fixed, no Lagrangian).
        n_action_samples: actions sampled per state to estimate log-sum-exp of Q.
        real_ratio: f, share of each batch drawn from the data (the rest from model rollouts).
        rollout_horizon: h, model steps per rollout.
        rollout_batch_size: start states per rollout round (drawn from the data).
        rollout_freq: gradient steps between rollout rounds.
        model_retain_epochs: rollout rounds the FIFO model buffer keeps.
        ensemble_size: dynamics members trained.
        n_elites: members kept for rollouts (lowest validation MSE).
        dynamics_hidden_units: hidden layers of each member (swish).
        dynamics_learning_rate: Adam learning rate of the dynamics fit.
        dynamics_batch_size: transitions per member per dynamics step.
        dynamics_weight_decay: L2 weight per dynamics layer, input to output (one more than hidden layers).
        dynamics_holdout_ratio: share of the transitions held out for validation ...
        dynamics_max_holdout: ... at most this many.
        dynamics_patience: epochs without a 1% validation improvement before the fit stops.
        dynamics_max_epochs: cap on dynamics epochs (``None``: until early stopping).  25 by
            measurement: on HalfCheetah's small rephrase data (192k transitions) MBPO's early
            stopping (no member 1% better for 5 epochs) had not stopped after 40 epochs (~2 h of
            one core here), while the elites' validation error at epoch 25 was within 16% of
            epoch 40's (0.0159 vs 0.0137; epoch 10: 0.0201) — and a 25-epoch fit gave COMBO 97.5%
            on HalfCheetah's train level (notes/algorithms.md, notes/throughput.md).
        dynamics_seed: seed of the dynamics fit.  The fit depends on the data and these settings
            only (not on the run's seed), so the seeds and cells of a grid that train on the same
            data share one fit, cached in ``<data home>/cache/dynamics``; run seeds vary the
            policy, the critics and the sampling.
    """

    discrete: ClassVar[bool] = False
    paper: ClassVar[str] = "Yu et al., NeurIPS 2021"

    actor_learning_rate: float = 1e-4
    critic_learning_rate: float = 3e-4
    temp_learning_rate: float = 1e-4
    tau: float = 0.005
    n_critics: int = 2
    initial_temperature: float = 1.0
    conservative_weight: float = 5.0
    n_action_samples: int = 10
    real_ratio: float = 0.5
    rollout_horizon: int = 1
    rollout_batch_size: int = 50_000
    rollout_freq: int = 1000
    model_retain_epochs: int = 5
    ensemble_size: int = 7
    n_elites: int = 5
    dynamics_hidden_units: tuple[int, ...] = (200, 200, 200, 200)
    dynamics_learning_rate: float = 1e-3
    dynamics_batch_size: int = 256
    dynamics_weight_decay: tuple[float, ...] = (2.5e-5, 5e-5, 7.5e-5, 7.5e-5, 1e-4)
    dynamics_holdout_ratio: float = 0.2
    dynamics_max_holdout: int = 1000
    dynamics_patience: int = 5
    dynamics_max_epochs: int | None = 25
    dynamics_seed: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "dynamics_hidden_units", tuple(int(h) for h in self.dynamics_hidden_units))
        object.__setattr__(self, "dynamics_weight_decay", tuple(float(w) for w in self.dynamics_weight_decay))
        if not 0.0 < self.real_ratio < 1.0:
            raise UsageError(f"real_ratio must lie strictly between 0 and 1, got {self.real_ratio}.")
        for name in ("n_critics", "n_action_samples", "rollout_horizon", "rollout_batch_size", "rollout_freq",
                     "model_retain_epochs", "ensemble_size", "n_elites", "dynamics_batch_size",
                     "dynamics_max_holdout", "dynamics_patience"):
            if int(getattr(self, name)) <= 0:
                raise UsageError(f"{name} must be positive, got {getattr(self, name)}.")
        if self.n_elites > self.ensemble_size:
            raise UsageError(f"n_elites ({self.n_elites}) cannot exceed ensemble_size ({self.ensemble_size}).")
        if not self.dynamics_hidden_units or min(self.dynamics_hidden_units) <= 0:
            raise UsageError(f"dynamics_hidden_units must be positive layer sizes, got {self.dynamics_hidden_units}.")
        if len(self.dynamics_weight_decay) != len(self.dynamics_hidden_units) + 1:
            raise UsageError(f"dynamics_weight_decay needs {len(self.dynamics_hidden_units) + 1} values (one per "
                             f"layer of {list(self.dynamics_hidden_units)} plus the output layer), got "
                             f"{list(self.dynamics_weight_decay)}.")
        if not 0.0 < self.dynamics_holdout_ratio < 1.0:
            raise UsageError(f"dynamics_holdout_ratio must lie strictly between 0 and 1, got "
                             f"{self.dynamics_holdout_ratio}.")
        if int(self.dynamics_seed) < 0:
            raise UsageError(f"dynamics_seed must be 0 or more, got {self.dynamics_seed}.")
        if self.dynamics_max_epochs is not None and self.dynamics_max_epochs <= 0:
            raise UsageError(f"dynamics_max_epochs must be positive or null, got {self.dynamics_max_epochs}.")

    def d3rlpy_config(self, ctx: BuildContext):
        from imaginebench.algos.combo.algorithm import COMBOConfig as D3COMBOConfig

        enc = self.encoder_factory(ctx)
        return D3COMBOConfig(
            **self.common_kwargs(ctx), actor_learning_rate=self.actor_learning_rate,
            critic_learning_rate=self.critic_learning_rate, temp_learning_rate=self.temp_learning_rate,
            actor_encoder_factory=enc, critic_encoder_factory=enc, tau=self.tau, n_critics=self.n_critics,
            initial_temperature=self.initial_temperature, conservative_weight=self.conservative_weight,
            n_action_samples=self.n_action_samples, state_dim=ctx.state_dim, real_ratio=self.real_ratio,
            rollout_horizon=self.rollout_horizon, rollout_batch_size=self.rollout_batch_size,
            rollout_freq=self.rollout_freq, model_retain_epochs=self.model_retain_epochs,
            ensemble_size=self.ensemble_size, n_elites=self.n_elites,
            dynamics_hidden_units=list(self.dynamics_hidden_units), dynamics_learning_rate=self.dynamics_learning_rate,
            dynamics_batch_size=self.dynamics_batch_size, dynamics_weight_decay=list(self.dynamics_weight_decay),
            dynamics_holdout_ratio=self.dynamics_holdout_ratio, dynamics_max_holdout=self.dynamics_max_holdout,
            dynamics_patience=self.dynamics_patience, dynamics_max_epochs=self.dynamics_max_epochs,
            dynamics_seed=self.dynamics_seed,
            **self.optimizers("actor_optim_factory", "critic_optim_factory", "temp_optim_factory"),
        )

    def batch_split(self, batch_size: int) -> tuple[int, int]:
        """``(source rows, model rows)`` of a batch of ``batch_size`` (at least one of each)."""
        return split_batch(batch_size, self.real_ratio)

    def attach(self, algo, source) -> None:
        """Attach ``source``: its transitions fit the dynamics (lazily, in the first update of an
        untrained ensemble — a resumed checkpoint already holds the trained one) and its states
        start the model rollouts; finished fits are shared through the data home's cache."""
        algo.attach(source)
        algo.dynamics_cache = data_home() / "cache" / "dynamics"

    def update(self, algo, source, batch_size: int) -> dict[str, float]:
        """One COMBO step: ``real_ratio · batch_size`` transitions of ``source`` (in its own
        real/imaginary shares), the rest from the model buffer."""
        n_real, n_model = self.batch_split(batch_size)
        return algo.combo_update(source.sample_transition_batch(n_real), n_model)


def split_batch(batch_size: int, real_ratio: float) -> tuple[int, int]:
    """``(source rows, model rows)`` of a COMBO batch of ``batch_size`` (at least one of each)."""
    if batch_size < 2:
        raise UsageError(f"COMBO needs a batch of at least 2 (data and model rows), got {batch_size}.")
    n_model = min(batch_size - 1, max(1, round((1.0 - real_ratio) * batch_size)))
    return batch_size - n_model, n_model
