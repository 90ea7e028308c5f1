"""TD3+BC (and PRDC, its dataset-constraint variant), stacked over seeds (Fujimoto & Gu, "A Minimalist Approach to Offline Reinforcement
Learning", NeurIPS 2021).

Reproduces d3rlpy's ``TD3PlusBCImpl``: a clipped double-Q critic regressed every step on
``r + γ·(1 − terminal)·min_i Q'_i(s', clip(π'(s') + clip(σ·ε, ±c), ±1))``, and every
``update_actor_interval`` steps the actor loss ``−λ·Q_1(s, π(s)) + ‖π(s) − a‖²`` with
``λ = α / mean|Q_1|``, followed by soft target updates of critics and actor.  The target noise
``ε`` comes from each seed's own generator.
"""

from __future__ import annotations

import torch

from imaginebench.algos.vectorised.base import StackedBatch, StackedTrainer, linear


class StackedTD3PlusBC(StackedTrainer):
    """d3rlpy ``TD3PlusBC``."""

    algo_class = "TD3PlusBC"
    regulariser_loss = "bc_loss"
    """The name d3rlpy reports the actor's regulariser under."""

    def policy(self, module: str, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(linear(self.params, f"{module}._fc", self.encode(f"{module}._encoder", x)))

    def q(self, module: str, x: torch.Tensor, action: torch.Tensor, params=None) -> torch.Tensor:
        p = self.params if params is None else params
        return linear(p, f"{module}._fc", self.encode(f"{module}._encoder", x, action, params=p))

    def phase(self, grad_step: int) -> bool:
        return grad_step % self.config.update_actor_interval == 0

    def target_action(self, batch: StackedBatch) -> torch.Tensor:
        """The target policy's action at the next observation with TD3's clipped smoothing noise."""
        cfg = self.config
        action = self.policy("targ_policy", batch.next_observations)
        noise = (cfg.target_smoothing_sigma * self.randn(action.shape[1:])).clamp(
            -cfg.target_smoothing_clip, cfg.target_smoothing_clip)
        return (action + noise).clamp(-1.0, 1.0)

    def critic_step(self, batch: StackedBatch, y: torch.Tensor) -> dict[str, torch.Tensor]:
        """The critics regressed on ``y`` (squared error, summed over the ensemble)."""
        critic_loss = sum(((self.q(f"q_funcs.{i}", batch.observations, batch.actions) - y) ** 2).mean(dim=(1, 2))
                          for i in range(self.n_critics))
        self.minimise("critic_optim", critic_loss)
        return {"critic_loss": critic_loss.detach()}

    def min_target_q(self, batch: StackedBatch, next_action: torch.Tensor) -> torch.Tensor:
        return torch.stack([self.q(f"targ_q_funcs.{i}", batch.next_observations, next_action)
                            for i in range(self.n_critics)]).min(dim=0).values

    def regulariser_target(self, batch: StackedBatch, pi: torch.Tensor) -> torch.Tensor:
        """The action the actor is pulled towards (TD3+BC: the batch's own action)."""
        return batch.actions

    def update(self, batch: StackedBatch, grad_step: int) -> dict[str, torch.Tensor]:
        cfg = self.config
        with torch.no_grad():
            target = self.min_target_q(batch, self.target_action(batch))
            y = batch.rewards + cfg.gamma * target * (1 - batch.terminals)
        out = self.critic_step(batch, y)
        if grad_step % cfg.update_actor_interval == 0:
            pi = self.policy("policy", batch.observations)
            q_t = self.q("q_funcs.0", batch.observations, pi, params=self.detached("q_funcs.0"))
            lam = cfg.alpha / q_t.abs().mean(dim=(1, 2)).detach()
            bc_loss = ((self.regulariser_target(batch, pi) - pi) ** 2).mean(dim=(1, 2))
            actor_loss = lam * -q_t.mean(dim=(1, 2)) + bc_loss
            self.minimise("actor_optim", actor_loss)
            self.soft_update("targ_q_funcs", "q_funcs", cfg.tau)
            self.soft_update("targ_policy", "policy", cfg.tau)
            out.update({"actor_loss": actor_loss.detach(), self.regulariser_loss: bc_loss.detach()})
        return out


class StackedPRDC(StackedTD3PlusBC):
    """The package's ``IndexedPRDC`` (d3rlpy's ``PRDC``; Ran et al., ICML 2023): TD3+BC whose actor is
    pulled towards the action of the dataset point nearest to ``(β·s) ⊕ π(s)`` instead of the
    batch's action.  Each seed asks its own algorithm's :class:`~imaginebench.algos.prdc.NeighbourIndex`
    with its own policy's (detached) actions; seeds sharing one index are asked in one query."""

    algo_class = "IndexedPRDC"
    regulariser_loss = "dc_loss"

    def __init__(self, algos, generators=None) -> None:
        super().__init__(algos, generators)
        if any(getattr(impl, "index", None) is None for impl in self.impls):
            raise ValueError("Stacked PRDC needs every seed's neighbour index attached (prdc.attach_index).")

    def regulariser_target(self, batch: StackedBatch, pi: torch.Tensor) -> torch.Tensor:
        obs, actions = batch.observations, pi.detach()
        indexes = [impl.index for impl in self.impls]
        if all(index is indexes[0] for index in indexes):
            s, b = obs.shape[:2]
            nearest = indexes[0].neighbour_actions(obs.reshape(s * b, -1), actions.reshape(s * b, -1)).view(s, b, -1)
        else:
            nearest = torch.stack([index.neighbour_actions(obs[i], actions[i]) for i, index in enumerate(indexes)])
        return nearest.to(pi.dtype)


class StackedReBRAC(StackedTD3PlusBC):
    """d3rlpy ``ReBRAC`` (Tarasov et al., NeurIPS 2023): TD3 whose critic target subtracts
    ``β₂·‖a' − a'_data‖²`` (the smoothed target action against the dataset's next action) and whose
    actor minimises ``mean(−Q_min(s, π(s)) / mean|Q_min| + β₁·‖π(s) − a‖²)`` (squared error summed
    over the action); the same schedule of actor and target updates as TD3+BC."""

    algo_class = "ReBRAC"

    def update(self, batch: StackedBatch, grad_step: int) -> dict[str, torch.Tensor]:
        cfg = self.config
        with torch.no_grad():
            next_action = self.target_action(batch)
            target = self.min_target_q(batch, next_action)
            penalty = ((next_action - batch.next_actions) ** 2).sum(dim=2, keepdim=True)
            y = batch.rewards + cfg.gamma * (target - cfg.critic_beta * penalty) * (1 - batch.terminals)
        out = self.critic_step(batch, y)
        if grad_step % cfg.update_actor_interval == 0:
            pi = self.policy("policy", batch.observations)
            frozen = self.detached("q_funcs")
            q_t = torch.stack([self.q(f"q_funcs.{i}", batch.observations, pi, params=frozen)
                               for i in range(self.n_critics)]).min(dim=0).values
            lam = 1.0 / q_t.abs().mean(dim=(1, 2)).detach()
            bc = ((batch.actions - pi) ** 2).sum(dim=2, keepdim=True)
            actor_loss = (lam.view(-1, 1, 1) * -q_t + cfg.actor_beta * bc).mean(dim=(1, 2))
            self.minimise("actor_optim", actor_loss)
            self.soft_update("targ_q_funcs", "q_funcs", cfg.tau)
            self.soft_update("targ_policy", "policy", cfg.tau)
            out.update(actor_loss=actor_loss.detach(), bc_loss=bc.mean(dim=(1, 2)).detach())
        return out
