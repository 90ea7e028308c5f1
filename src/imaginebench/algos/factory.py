"""Build a ready-to-train d3rlpy algorithm for a :class:`MixedReplaySource`."""

from __future__ import annotations

from imaginebench.algos import AlgoConfig, BuildContext
from imaginebench.algos.sampler import MixedReplaySource


def build_context(source: MixedReplaySource, batch_size: int, standardize: str = "all",
                  device: str = "cpu:0", total_steps: int | None = None) -> BuildContext:
    """The :class:`BuildContext` of ``source`` (its observation scaler fitted on its batches)."""
    return BuildContext(batch_size=batch_size, state_dim=source.state_dim, embedding_dim=source.embedding_dim,
                        action_size=source.action_size, discrete=source.discrete,
                        observation_scaler=source.observation_scaler(standardize), device=device,
                        total_steps=total_steps, action_scaler=None if source.discrete else source.action_scaler())


def build_algorithm(config: AlgoConfig, source: MixedReplaySource, batch_size: int, standardize: str = "all",
                    device: str = "cpu:0", total_steps: int | None = None):
    """A d3rlpy algorithm with its networks created and attached to ``source``'s data (seed torch
    first for reproducible weights); ``total_steps`` is what a learning-rate schedule spans."""
    algo = config.create(build_context(source, batch_size, standardize, device, total_steps))
    algo.create_impl((source.observation_dim,), source.action_size)
    config.attach(algo, source)
    return algo
