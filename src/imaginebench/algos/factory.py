"""Build a ready-to-train d3rlpy algorithm for a :class:`MixedReplaySource`."""

from __future__ import annotations

from imaginebench.algos import AlgoConfig, BuildContext
from imaginebench.algos.sampler import MixedReplaySource


def build_context(source: MixedReplaySource, batch_size: int, standardize: str = "all",
                  device: str = "cpu:0") -> BuildContext:
    """The :class:`BuildContext` of ``source`` (its observation scaler fitted on its batches)."""
    return BuildContext(batch_size=batch_size, state_dim=source.state_dim, embedding_dim=source.embedding_dim,
                        action_size=source.action_size, discrete=source.discrete,
                        observation_scaler=source.observation_scaler(standardize), device=device)


def build_algorithm(config: AlgoConfig, source: MixedReplaySource, batch_size: int, standardize: str = "all",
                    device: str = "cpu:0"):
    """A d3rlpy algorithm with its networks created and attached to ``source``'s data (seed torch
    first for reproducible weights)."""
    algo = config.create(build_context(source, batch_size, standardize, device))
    algo.create_impl((source.observation_dim,), source.action_size)
    config.attach(algo, source)
    return algo
