"""``imaginebench experts``: bad input gets one line on stderr and exit code 1."""

from __future__ import annotations

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
