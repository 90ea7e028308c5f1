from __future__ import annotations

import pytest

import imaginebench
from imaginebench.envs import registry


def test_public_constants():
    assert imaginebench.ENV_IDS == ("CLEVR-v0", "BabyAI-v0", "MetaWorld-v0", "LIBERO-v0", "HalfCheetah-v0")
    assert imaginebench.LEVELS == ("train", "rephrase", "easy", "hard")


def test_unknown_env_id_lists_choices():
    with pytest.raises(ValueError, match=r"CLEVR-v0, BabyAI-v0, MetaWorld-v0, LIBERO-v0, HalfCheetah-v0"):
        imaginebench.make("CLEVR-v9")
    with pytest.raises(ValueError, match="Did you mean 'CLEVR-v0'"):
        imaginebench.make("CLEVR-v1")


def test_unknown_level_lists_choices():
    with pytest.raises(ValueError, match=r"train, rephrase, easy, hard"):
        imaginebench.make("CLEVR-v0", level="medium")


def test_missing_extra_names_the_install_command(monkeypatch):
    spec = registry.ENV_SPECS["CLEVR-v0"]
    monkeypatch.setitem(registry.ENV_SPECS, "CLEVR-v0",
                        registry.EnvSpec(spec.env_id, spec.env_entry, spec.domain_entry, "clevr", ("no_such_module_xyz",)))
    with pytest.raises(ImportError, match=r"pip install 'imaginebench\[clevr\]'"):
        imaginebench.make("CLEVR-v0", encode_instruction=False)
