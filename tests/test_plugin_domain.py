"""A domain from outside the package, added with the public call, goes through every stage.

``Lamps-v0`` (:mod:`tests.conformance.toy_domain`, one folder) is registered with
``imaginebench.register_domain`` and nothing else; then the same verbs a user runs: collect real
data -> fine-tune a (tiny) rollout model -> imagine rollouts -> train -> evaluate -> report."""

from __future__ import annotations

import numpy as np
import pytest

import imaginebench
from imaginebench.cli import run_app
from imaginebench.errors import UsageError

LAMPS = dict(env_entry="tests.conformance.toy_domain.env:LampsEnv",
             domain_entry="tests.conformance.toy_domain.domain:LampsDomain")


@pytest.fixture
def lamps():
    spec = imaginebench.register_domain("Lamps-v0", **LAMPS)
    yield spec
    imaginebench.unregister_domain("Lamps-v0")


def test_a_registered_domain_is_everywhere_ids_are_listed(lamps, capsys):
    assert "Lamps-v0" in imaginebench.ENV_IDS and "Lamps-v0" in imaginebench.env_ids()
    assert imaginebench.register_domain("Lamps-v0", **LAMPS) == lamps  # the same spec again: nothing happens
    assert run_app(["envs"]) == 0
    assert "Lamps-v0" in capsys.readouterr().out


def test_registration_errors_say_what_is_wrong(lamps):
    with pytest.raises(UsageError, match="already registered"):
        imaginebench.register_domain("Lamps-v0", env_entry=LAMPS["env_entry"], domain_entry="x.y:Other")
    with pytest.raises(UsageError, match="look like 'Name-v0'"):
        imaginebench.register_domain("lamps", **LAMPS)
    with pytest.raises(UsageError, match="package.module:Class"):
        imaginebench.register_domain("Other-v0", env_entry="no colon", domain_entry=LAMPS["domain_entry"])
    with pytest.raises(UsageError, match="built in"):
        imaginebench.unregister_domain("CLEVR-v0")


def test_after_unregistering_the_id_is_unknown_again():
    imaginebench.register_domain("Lamps-v0", **LAMPS)
    imaginebench.unregister_domain("Lamps-v0")
    assert "Lamps-v0" not in imaginebench.ENV_IDS
    with pytest.raises(ValueError, match="Unknown environment id 'Lamps-v0'"):
        imaginebench.make("Lamps-v0")


def test_a_plug_in_domain_goes_end_to_end(lamps, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IMAGINEBENCH_HOME", str(tmp_path))
    steps = [
        ["data", "collect", "--env", "Lamps-v0", "--profile", "tiny", "--episodes", "60"],
        ["imagine", "train", "--env", "Lamps-v0", "--profile", "tiny", "--backbone", "tiny", "--steps", "4",
         "--no-progress"],
        ["imagine", "generate", "--env", "Lamps-v0", "--profile", "tiny", "--backbone", "tiny", "--level", "easy",
         "--keep", "none", "--episodes", "20", "--no-progress"],
        ["train", "--env", "Lamps-v0", "--algo", "bc", "--level", "easy", "--seeds", "0", "--profile", "tiny",
         "--steps", "40", "--checkpoint-every", "20", "--eval-episodes", "2", "--imaginary", "unfiltered",
         "--no-progress"],
        ["report", "--env", "Lamps-v0", "--profile", "tiny", "--out", str(tmp_path / "report"), "--no-pictures"],
    ]
    for args in steps:
        assert run_app(args) == 0, (args, capsys.readouterr().err)
    out = capsys.readouterr().out
    assert "Lamps-v0 discrete_bc easy/imaginary-unfiltered seed 0" in out
    record = next((tmp_path / "runs" / "Lamps-v0" / "tiny" / "easy").rglob("record.json"))
    assert record.is_file()
    assert "Lamps-v0" in (tmp_path / "report" / "report.md").read_text()

    real, imaginary = imaginebench.get_dataset("Lamps-v0", "easy", profile="tiny", variant="unfiltered")
    assert len(real) == 60 and len(imaginary) == 20
    rng = np.random.default_rng(0)
    result = imaginebench.evaluate(lambda obs: rng.integers(0, 3, len(obs)), "Lamps-v0", "easy",
                                   episodes_per_task=2, profile="tiny")
    tasks = {t.name for t in imaginebench.envs.load_domain("Lamps-v0").tasks("easy")}
    assert 0.0 <= result.success <= 1.0 and result.env_id == "Lamps-v0" and set(result.per_task) == tasks
