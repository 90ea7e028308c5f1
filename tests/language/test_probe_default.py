"""SPEC §4: the default instruction encoder lets a linear probe tell every task and every task
parameter apart from held-out train phrasings (≥ 95%), on every domain that exists."""

from __future__ import annotations

import pytest

from imaginebench.envs.registry import ENV_IDS, is_available, load_domain
from imaginebench.language import DEFAULT_ENCODER
from imaginebench.language.probe import probe_domain

PROBE_BAR = 0.95


@pytest.mark.parametrize("env_id", [e for e in ENV_IDS if is_available(e)])
def test_default_encoder_passes_the_probe(env_id):
    result = probe_domain(load_domain(env_id))
    assert result.encoder == DEFAULT_ENCODER
    failing = {k: round(v, 3) for k, v in result.held_out.items() if v < PROBE_BAR}
    assert not failing, f"{env_id}: probe below {PROBE_BAR:.0%} on held-out phrasings: {failing}"
    # enough held-out phrasings for a rate to mean something (HalfCheetah, 4 train tasks: 80)
    assert result.held_out_phrasings >= 80 and len(result.held_out) >= 3  # task + parameters
