"""COMBO on d3rlpy's classes: a learned dynamics ensemble, model rollouts and a conservative critic.

Yu, Kumar, Rafailov, Rajeswaran, Levine & Finn, "COMBO: Conservative Offline Model-Based Policy
Optimization", NeurIPS 2021.  No package that installs beside our pins ships COMBO, so it is
built here on d3rlpy 2.8's CQL (:class:`COMBOImpl` subclasses ``CQLImpl``)::

    every transition of the source (real + imaginary)
        └─ fit once ─> GaussianEnsemble: 7 members, 5 elites, (obs, action) -> N(Δstate, reward) + terminal
    every ``rollout_freq`` steps: source states ─ policy sample, random elite, h steps ─> ModelBuffer (FIFO)
    every step: batch = (f·B source transitions) ⊕ ((1 − f)·B model transitions)
        critic: TD loss on the whole batch (CQL's backup)
                + β·( mean_{s ~ model} log Σ_a exp Q(s, a)  −  mean_{(s, a) ~ source} Q(s, a) )
        actor, temperature: SAC on the whole batch

The log-sum-exp is CQL's importance-sampled estimate (uniform actions, and policy actions at
``s`` and ``s'``), taken over the model rows of the batch only: Q is pushed down on model-rollout
states and up on the data's state-action pairs.  β is fixed (no Lagrangian), as in the paper.

Observations are ``state ⊕ instruction embedding``; the ensemble reads the whole observation
(the reward depends on the instruction) and the action, predicts the change of the state part
and the reward, and the embedding is carried over unchanged.  The model buffer stores states
and instruction ids, not embeddings.  Our episodes terminate on success, so each member also has
a terminal logit (cross-entropy, beside the Gaussian NLL): a model sample is terminal when its
member's logit is positive, and terminal samples end their rollout (MOPO/COMBO use hand-written
termination rules of the D4RL tasks instead; ours depend on the task behind an instruction).

Everything lives in the impl's modules, so ``impl.save_model``/``load_model`` (and the runner's
checkpoints) hold the ensemble, its normalisers, elites and "trained" flag, and the model
buffer: a resumed run skips the dynamics fit and continues with the same buffer.  The fit runs
lazily in the first update whose ensemble is untrained.  All randomness (fit shuffles, elite
choice, model and policy noise, buffer sampling) comes from torch's global CPU generator, and
rollout start states from the source's ``rng`` — both restored from a checkpoint by the runner.
:meth:`COMBO.save` (the final ``model.d3``) leaves the model buffer out: it is training state,
often hundreds of MB, and a reloaded model refills it at its next update.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from imaginebench.algos._d3rlpy import load as _load_d3rlpy

_load_d3rlpy()

import torch  # noqa: E402
from d3rlpy.base import DeviceArg, LearnableConfig, register_learnable  # noqa: E402
from d3rlpy.constants import ActionSpace  # noqa: E402
from d3rlpy.dataset import TransitionMiniBatch  # noqa: E402
from d3rlpy.models.builders import create_continuous_q_function, create_normal_policy, create_parameter  # noqa: E402
from d3rlpy.models.encoders import EncoderFactory, make_encoder_field  # noqa: E402
from d3rlpy.models.q_functions import QFunctionFactory, make_q_func_field  # noqa: E402
from d3rlpy.algos.qlearning.base import QLearningAlgoBase  # noqa: E402
from d3rlpy.algos.qlearning.torch.cql_impl import CQLImpl, CQLModules  # noqa: E402
from d3rlpy.optimizers.optimizers import OptimizerFactory, make_optimizer_field  # noqa: E402
from d3rlpy.torch_utility import TorchMiniBatch  # noqa: E402
from d3rlpy.types import Shape, TorchObservation  # noqa: E402

from imaginebench.algos.combo.dynamics import DynamicsFit, GaussianEnsemble, ModelBuffer, TransitionTable  # noqa: E402
from imaginebench.algos.sampler import torch_batch  # noqa: E402

logger = logging.getLogger(__name__)

ALGO_TYPE = "imaginebench_combo"


# ---------------------------------------------------------------------------- impl
@dataclasses.dataclass(frozen=True)
class COMBOModules(CQLModules):
    dynamics: GaussianEnsemble
    model_buffer: ModelBuffer


class COMBOImpl(CQLImpl):
    """CQL's impl with COMBO's conservative term: the first ``n_real`` rows of each batch are
    source transitions (pushed up), the rest model transitions (pushed down)."""

    _modules: COMBOModules
    _n_real: int = 0

    def update_mixed(self, batch: TorchMiniBatch, n_real: int, grad_step: int) -> dict[str, float]:
        """One step on a batch whose first ``n_real`` rows are source data and the rest model data."""
        if not 0 < n_real < len(batch.actions):
            raise ValueError(f"A COMBO batch needs source and model rows, got {n_real} of {len(batch.actions)} real.")
        self._n_real = n_real
        return self.update(batch, grad_step)

    def _compute_conservative_loss(self, obs_t: TorchObservation, act_t: torch.Tensor, obs_tp1: TorchObservation,
                                   returns_to_go: torch.Tensor) -> torch.Tensor:
        n = self._n_real
        model_obs, model_next = obs_t[n:], obs_tp1[n:]
        values_t, log_probs_t = self._compute_policy_is_values(model_obs, model_obs, returns_to_go)
        values_tp1, log_probs_tp1 = self._compute_policy_is_values(model_next, model_obs, returns_to_go)
        random_values, random_log_probs = self._compute_random_is_values(model_obs)
        # (critics, model rows, 3 · samples) -> (critics, model rows)
        logsumexp = torch.logsumexp(torch.cat([values_t - log_probs_t, values_tp1 - log_probs_tp1,
                                               random_values - random_log_probs], dim=2), dim=2)
        data_values = self._q_func_forwarder.compute_expected_q(obs_t[:n], act_t[:n], "none")
        gap = logsumexp.mean(dim=1) - data_values.mean(dim=(1, 2))
        return self._conservative_weight * (gap - self._alpha_threshold)

    @property
    def dynamics(self) -> GaussianEnsemble:
        return self._modules.dynamics

    @property
    def model_buffer(self) -> ModelBuffer:
        return self._modules.model_buffer


# ---------------------------------------------------------------------------- config and algorithm
@dataclasses.dataclass()
class COMBOConfig(LearnableConfig):
    """d3rlpy config of :class:`COMBO` (see :mod:`imaginebench.algos.combo.config` for the
    paper's values and what each field means).

    Args:
        state_dim: length of the state part of each observation (the rest is the embedding).
        conservative_weight: β of the conservative term.
        real_ratio: f, the share of source transitions in each batch.
        rollout_horizon, rollout_batch_size, rollout_freq, model_retain_epochs: model rollouts;
            the buffer holds ``rollout_batch_size · rollout_horizon · model_retain_epochs`` rows.
        ensemble_size, n_elites, dynamics_*: the dynamics ensemble and its fit
            (``dynamics_max_epochs`` ``None`` = until early stopping).
    """

    actor_learning_rate: float = 1e-4
    critic_learning_rate: float = 3e-4
    temp_learning_rate: float = 1e-4
    actor_optim_factory: OptimizerFactory = make_optimizer_field()
    critic_optim_factory: OptimizerFactory = make_optimizer_field()
    temp_optim_factory: OptimizerFactory = make_optimizer_field()
    actor_encoder_factory: EncoderFactory = make_encoder_field()
    critic_encoder_factory: EncoderFactory = make_encoder_field()
    q_func_factory: QFunctionFactory = make_q_func_field()
    batch_size: int = 256
    gamma: float = 0.99
    tau: float = 0.005
    n_critics: int = 2
    initial_temperature: float = 1.0
    conservative_weight: float = 5.0
    n_action_samples: int = 10
    state_dim: int = 0
    real_ratio: float = 0.5
    rollout_horizon: int = 1
    rollout_batch_size: int = 50_000
    rollout_freq: int = 1000
    model_retain_epochs: int = 5
    ensemble_size: int = 7
    n_elites: int = 5
    dynamics_hidden_units: list[int] = dataclasses.field(default_factory=lambda: [200, 200, 200, 200])
    dynamics_learning_rate: float = 1e-3
    dynamics_batch_size: int = 256
    dynamics_weight_decay: list[float] = dataclasses.field(
        default_factory=lambda: [2.5e-5, 5e-5, 7.5e-5, 7.5e-5, 1e-4])
    dynamics_holdout_ratio: float = 0.2
    dynamics_max_holdout: int = 1000
    dynamics_patience: int = 5
    dynamics_max_epochs: Optional[int] = None
    dynamics_seed: int = 0

    def create(self, device: DeviceArg = False, enable_ddp: bool = False) -> "COMBO":
        return COMBO(self, device, enable_ddp)

    @staticmethod
    def get_type() -> str:
        return ALGO_TYPE


class COMBO(QLearningAlgoBase[COMBOImpl, COMBOConfig]):
    """COMBO: attach a source (:meth:`attach`), then call :meth:`combo_update` (or d3rlpy's
    :meth:`update` with a batch of source transitions) once per gradient step."""

    _source: Any = None
    _table: Optional[TransitionTable] = None
    dynamics_fit: Optional[DynamicsFit] = None
    """The report of the dynamics fit this process ran or loaded (``None`` if neither, e.g. resumed)."""
    dynamics_cache: Optional[Path] = None
    """Folder of finished dynamics fits keyed by :meth:`dynamics_key` (``None``: fit every time)."""

    def inner_create_impl(self, observation_shape: Shape, action_size: int) -> None:
        cfg = self._config
        obs_dim = int(observation_shape[0])
        if not 0 < cfg.state_dim <= obs_dim:
            raise ValueError(f"COMBO needs 0 < state_dim <= {obs_dim} (the observation length), got {cfg.state_dim}.")
        policy = create_normal_policy(observation_shape, action_size, cfg.actor_encoder_factory,
                                      device=self._device, enable_ddp=self._enable_ddp)
        q_funcs, q_forwarder = create_continuous_q_function(
            observation_shape, action_size, cfg.critic_encoder_factory, cfg.q_func_factory,
            n_ensembles=cfg.n_critics, device=self._device, enable_ddp=self._enable_ddp)
        targ_q_funcs, targ_q_forwarder = create_continuous_q_function(
            observation_shape, action_size, cfg.critic_encoder_factory, cfg.q_func_factory,
            n_ensembles=cfg.n_critics, device=self._device, enable_ddp=self._enable_ddp)
        log_temp = create_parameter((1, 1), math.log(cfg.initial_temperature), device=self._device,
                                    enable_ddp=self._enable_ddp)
        log_alpha = create_parameter((1, 1), 0.0, device=self._device, enable_ddp=self._enable_ddp)  # fixed α = 1
        dynamics = GaussianEnsemble(cfg.ensemble_size, cfg.n_elites, obs_dim + action_size, cfg.state_dim + 1,
                                    cfg.dynamics_hidden_units,
                                    (cfg.state_dim, obs_dim) if cfg.state_dim < obs_dim else None).to(self._device)
        capacity = cfg.rollout_batch_size * cfg.rollout_horizon * cfg.model_retain_epochs
        buffer = ModelBuffer(capacity, cfg.state_dim, action_size).to(self._device)
        actor_optim = cfg.actor_optim_factory.create(policy.named_modules(), lr=cfg.actor_learning_rate,
                                                     compiled=False)
        critic_optim = cfg.critic_optim_factory.create(q_funcs.named_modules(), lr=cfg.critic_learning_rate,
                                                       compiled=False)
        temp_optim = (cfg.temp_optim_factory.create(log_temp.named_modules(), lr=cfg.temp_learning_rate,
                                                    compiled=False) if cfg.temp_learning_rate > 0 else None)
        modules = COMBOModules(policy=policy, q_funcs=q_funcs, targ_q_funcs=targ_q_funcs, log_temp=log_temp,
                               log_alpha=log_alpha, actor_optim=actor_optim, critic_optim=critic_optim,
                               temp_optim=temp_optim, alpha_optim=None, dynamics=dynamics, model_buffer=buffer)
        self._impl = COMBOImpl(
            observation_shape=observation_shape, action_size=action_size, modules=modules,
            q_func_forwarder=q_forwarder, targ_q_func_forwarder=targ_q_forwarder, gamma=cfg.gamma, tau=cfg.tau,
            alpha_threshold=0.0, conservative_weight=cfg.conservative_weight,
            n_action_samples=cfg.n_action_samples, soft_q_backup=False, max_q_backup=False, compiled=False,
            device=self._device)

    def get_action_type(self) -> ActionSpace:
        return ActionSpace.CONTINUOUS

    # ------------------------------------------------------------------ data
    def attach(self, source: Any) -> None:
        """Train on ``source`` (a :class:`~imaginebench.algos.sampler.MixedReplaySource`): its
        transitions fit the dynamics, its states start the rollouts (drawn with its ``rng``)."""
        if self._impl is None:
            raise ValueError("Build COMBO (create_impl) before attaching a source.")
        if source.state_dim != self._config.state_dim:
            raise ValueError(f"The source's state has {source.state_dim} columns, COMBO was built for "
                             f"{self._config.state_dim}.")
        self._source = source
        self._table = TransitionTable.from_source(source, self._device)

    def _attached(self) -> tuple[COMBOImpl, TransitionTable]:
        if self._impl is None or self._table is None:
            raise ValueError("COMBO has no data: call attach(source) after create_impl (build_algorithm does).")
        return self._impl, self._table

    def fit_dynamics(self) -> DynamicsFit:
        """Fit the ensemble on every transition of the attached source, or load the fit of the same
        data and settings from :attr:`dynamics_cache`.

        The fit is a function of the data and the ``dynamics_*`` settings alone: it runs from
        ``dynamics_seed`` (re-initialising the members) inside a fork of torch's generator, so the
        run's own random stream is untouched and every seed of a grid cell — every cell on the same
        data — gets the same model.  That is what lets one fit serve them all.
        """
        impl, table = self._attached()
        cfg = self._config
        key = self.dynamics_key()
        cached = self.dynamics_cache / f"{key}.pt" if self.dynamics_cache is not None else None
        if cached is not None and cached.exists():
            try:
                saved = torch.load(cached, map_location="cpu", weights_only=True)
                impl.dynamics.load_state_dict(saved["state"])
                fit = saved["fit"]
                self.dynamics_fit = DynamicsFit(epochs=int(fit["epochs"]), **{
                    k: fit[k].numpy() for k in ("val_mse", "holdout", "elites", "history")})
                return self.dynamics_fit
            except Exception as e:  # a damaged cache file is refitted, never trusted
                logger.warning("Refitting the dynamics: the cached fit %s could not be read (%s).", cached, e)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.dynamics_seed)
            impl.dynamics.reset_parameters()
            self.dynamics_fit = impl.dynamics.fit(
                table, learning_rate=cfg.dynamics_learning_rate, batch_size=cfg.dynamics_batch_size,
                weight_decay=cfg.dynamics_weight_decay, holdout_ratio=cfg.dynamics_holdout_ratio,
                max_holdout=cfg.dynamics_max_holdout, patience=cfg.dynamics_patience,
                max_epochs=cfg.dynamics_max_epochs)
        if cached is not None:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_name(f".{cached.name}.{os.getpid()}.tmp")
            fit = {k: torch.from_numpy(np.asarray(v)) for k, v in dataclasses.asdict(self.dynamics_fit).items()
                   if k != "epochs"}
            torch.save({"state": impl.dynamics.state_dict(), "fit": {"epochs": self.dynamics_fit.epochs, **fit}}, tmp)
            os.replace(tmp, cached)
        return self.dynamics_fit

    def dynamics_key(self) -> str:
        """SHA-256 (hex, 24 digits) of everything the dynamics fit depends on: the attached
        transitions, the ensemble's shape, the ``dynamics_*`` settings and the device type."""
        impl, table = self._attached()
        cfg = self._config
        h = hashlib.sha256(f"combo-dynamics-v1|{impl.dynamics.in_mean.device.type}".encode())
        settings = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg) if f.name.startswith("dynamics_")}
        settings.update(ensemble_size=cfg.ensemble_size, n_elites=cfg.n_elites, state_dim=cfg.state_dim)
        h.update(json.dumps(settings, sort_keys=True, default=str).encode())
        for f in dataclasses.fields(table):
            tensor = getattr(table, f.name).detach().cpu().contiguous()
            h.update(f"{f.name}{tuple(tensor.shape)}{tensor.dtype}".encode())
            h.update(tensor.numpy().tobytes())
        return h.hexdigest()[:24]

    def _scaled(self, obs: torch.Tensor, next_obs: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The algorithm's scalers applied as :func:`~imaginebench.algos.sampler.torch_batch` applies them."""
        cfg = self._config
        if cfg.observation_scaler is not None:
            obs, next_obs = cfg.observation_scaler.transform(obs), cfg.observation_scaler.transform(next_obs)
        if cfg.action_scaler is not None:
            actions = cfg.action_scaler.transform(actions)
        if cfg.reward_scaler is not None:
            rewards = cfg.reward_scaler.transform(rewards)
        return obs, next_obs, actions, rewards

    @torch.no_grad()
    def rollout(self) -> int:
        """Roll the policy out in the model from ``rollout_batch_size`` source states for
        ``rollout_horizon`` steps (a random elite per sample and step; terminal samples stop)
        into the model buffer; returns the number of transitions added."""
        impl, table = self._attached()
        cfg = self._config
        device = table.states.device
        start = torch.as_tensor(self._source.sample_indices(cfg.rollout_batch_size), device=device)
        states, instr = table.states[table.obs_rows[start]], table.instr[start]
        dynamics, added = impl.dynamics, 0
        for _ in range(cfg.rollout_horizon):
            n = len(states)
            obs = table.observations(states, instr)
            scaled = cfg.observation_scaler.transform(obs) if cfg.observation_scaler is not None else obs
            out = impl.policy(scaled)
            assert out.logstd is not None
            actions = torch.tanh(out.mu + out.logstd.exp() * torch.randn(out.mu.shape).to(device))
            if cfg.action_scaler is not None:
                actions = cfg.action_scaler.reverse_transform(actions)
            member = dynamics.elites[torch.randint(dynamics.n_elites, (n,)).to(device)]
            noise = torch.randn(n, dynamics.out_dim).to(device)
            y, terminal = dynamics.sample(torch.cat([obs, actions], dim=1), member, noise)
            next_states = states + y[:, : cfg.state_dim]
            impl.model_buffer.add(states=states, actions=actions, rewards=y[:, cfg.state_dim:],
                                  next_states=next_states, terminals=terminal.float(), instr=instr)
            added += n
            alive = ~terminal[:, 0]
            states, instr = next_states[alive], instr[alive]
            if not len(states):
                break
        return added

    def _model_batch(self, n: int) -> tuple[torch.Tensor, ...]:
        impl, table = self._attached()
        rows = impl.model_buffer.sample(n)
        obs = table.observations(rows["states"], rows["instr"])
        next_obs = table.observations(rows["next_states"], rows["instr"])
        return (*self._scaled(obs, next_obs, rows["actions"], rows["rewards"]), rows["terminals"])

    def model_rows(self, n: int, grad_step: int,
                   before_rollout: Optional[Callable[[], None]] = None) -> tuple[torch.Tensor, ...]:
        """``n`` model transitions for the update at ``grad_step`` (scaled observations, next
        observations, actions, rewards, terminals): fits the dynamics first if the ensemble is
        untrained, and refills the model buffer every ``rollout_freq`` steps (and whenever it is
        empty; ``before_rollout`` runs first, e.g. to bring a stacked trainer's policy up to date)."""
        impl, _ = self._attached()
        if not bool(impl.dynamics.trained):
            self.fit_dynamics()
        if grad_step % self._config.rollout_freq == 0 or len(impl.model_buffer) == 0:
            if before_rollout is not None:
                before_rollout()
            self.rollout()
        return self._model_batch(n)

    # ------------------------------------------------------------------ training
    def combo_update(self, real: TransitionMiniBatch, n_model: int) -> dict[str, float]:
        """One gradient step on ``real`` (source transitions) plus ``n_model`` model transitions.

        Fits the dynamics first if the ensemble is untrained, and refills the model buffer
        every ``rollout_freq`` steps (and whenever it is empty).
        """
        obs, next_obs, actions, rewards, terminals = self.model_rows(n_model, self._grad_step)
        r = torch_batch(real, self)
        n_real = len(real.actions)
        batch = TorchMiniBatch(
            observations=torch.cat([r.observations, obs]), actions=torch.cat([r.actions, actions]),
            rewards=torch.cat([r.rewards, rewards]), next_observations=torch.cat([r.next_observations, next_obs]),
            next_actions=torch.cat([r.next_actions, torch.zeros_like(actions)]),
            returns_to_go=torch.zeros(n_real + n_model, 1, device=actions.device),
            terminals=torch.cat([r.terminals, terminals]),
            intervals=torch.ones(n_real + n_model, 1, device=actions.device), device=r.device)
        step = self._grad_step
        loss = self._attached()[0].update_mixed(batch, n_real, step)
        self.set_grad_step(step + 1)
        return loss

    def update(self, batch: TransitionMiniBatch) -> dict[str, float]:
        """d3rlpy's update (what ``fit`` calls): ``batch`` is the source share of the step, and
        model transitions are added so that it makes up ``real_ratio`` of it."""
        f = self._config.real_ratio
        return self.combo_update(batch, max(1, round(len(batch.actions) * (1.0 - f) / f)))

    def save(self, fname: str) -> None:
        """d3rlpy's ``save`` (config and weights, with the dynamics) without the model buffer."""
        assert self._impl is not None
        with self._impl.model_buffer.emptied():
            super().save(fname)


register_learnable(COMBOConfig)
