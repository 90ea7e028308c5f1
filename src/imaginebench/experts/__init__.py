"""Experts that are learned policies, trained online (d3rlpy) and shipped as weights: one module
per domain that has them, named by its card's ``trained_experts``.  Kept out of ``domains/``,
whose modules import no training library (the layer contract in ``pyproject.toml``)."""
