"""``imaginebench experts``: bad input gets one line on stderr and exit code 2; the domains it serves come from their cards."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from imaginebench.cli import app


def _fails(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2  # usage errors
    assert message in result.output
    assert "Traceback" not in result.output


def test_scripted_domains_have_nothing_to_train():
    _fails(["experts", "train", "--env", "CLEVR-v0"], "CLEVR-v0's expert is scripted, nothing to train")


def test_unknown_policy_and_env_and_bad_steps():
    _fails(["experts", "train", "--env", "HalfCheetah-v0", "--task", "fly"],
           "Unknown HalfCheetah-v0 expert policy 'fly'")
    _fails(["experts", "train", "--env", "Cheetah-v9"], "Unknown environment id 'Cheetah-v9'")
    _fails(["experts", "train", "--env", "HalfCheetah-v0", "--steps", "0"], "--steps must be positive")


def test_list_shows_the_shipped_running_experts():
    result = CliRunner().invoke(app, ["experts", "list", "--env", "HalfCheetah-v0"])
    assert result.exit_code == 0
    assert "run_forward: {" in result.output and "run_forward_faster: {" in result.output


def test_which_domains_have_trained_experts_comes_from_their_cards(monkeypatch):
    """The command names no domain: it asks each domain's card (``Domain.trained_experts``)."""
    pytest.importorskip("mujoco")
    from imaginebench.cli.experts import trained_domains
    from imaginebench.domains.halfcheetah.domain import HalfCheetahDomain

    assert "HalfCheetah-v0" in trained_domains() and "CLEVR-v0" not in trained_domains()
    _fails(["experts", "train", "--env", "CLEVR-v0"], "trained experts: HalfCheetah-v0")
    monkeypatch.setattr(HalfCheetahDomain, "trained_experts", None)  # the card alone decides
    _fails(["experts", "list", "--env", "HalfCheetah-v0"], "HalfCheetah-v0's expert is scripted")
    assert "HalfCheetah-v0" not in trained_domains()
