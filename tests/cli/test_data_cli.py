from __future__ import annotations

import json

from typer.testing import CliRunner

from imaginebench.cli import app

runner = CliRunner()


def test_help_on_every_verb():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0 and "envs" in result.output and "data" in result.output
    for verb in (["envs"], ["data"], ["data", "collect"], ["data", "info"], ["data", "export-minari"]):
        assert runner.invoke(app, [*verb, "--help"]).exit_code == 0, verb


def test_envs_lists_domains_and_whether_their_extra_is_installed(monkeypatch):
    result = runner.invoke(app, ["envs"])
    assert result.exit_code == 0
    assert "CLEVR-v0" in result.output and "Discrete(40)" in result.output and "80 tasks" in result.output
    assert "yes [clevr]" in result.output
    import importlib.util

    find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "minigrid" else find(name, *a))
    result = runner.invoke(app, ["envs"])
    assert "no: pip install 'imaginebench[babyai]'" in result.output and "yes [clevr]" in result.output


def test_collect_info_and_errors(data_home):
    result = runner.invoke(app, ["data", "collect", "--env", "CLEVR-v0", "--profile", "tiny", "--episodes", "6"])
    assert result.exit_code == 0, result.output
    assert "wrote 6 episodes" in result.output
    again = runner.invoke(app, ["data", "collect", "--env", "CLEVR-v0", "--profile", "tiny", "--episodes", "6"])
    assert again.exit_code == 1 and "already exists" in again.output and "--overwrite" in again.output
    skip = runner.invoke(app, ["data", "collect", "--profile", "tiny", "--episodes", "6", "--skip-existing"])
    assert skip.exit_code == 0 and "skipped" in skip.output
    info = runner.invoke(app, ["data", "info", "--json"])
    assert info.exit_code == 0
    rows = json.loads(info.output)
    assert rows[0]["episodes"] == 6 and rows[0]["domain"] == "CLEVR-v0" and rows[0]["source"] == "real"
    assert not rows[0]["shipped"]
    # then the reference imaginary data the package ships (what get_dataset falls back on)
    shipped = [r for r in rows if r["shipped"]]
    assert shipped and all(r["source"] == "imaginary" and "reference_data" in r["path"] for r in shipped)
    assert any(r["domain"] == "CLEVR-v0" and r["level"] == "rephrase" for r in shipped)

    bad = runner.invoke(app, ["data", "collect", "--env", "Nope-v0"])
    assert bad.exit_code == 2 and bad.output.count("\n") == 1 and "Valid choices" in bad.output
    bad_level = runner.invoke(app, ["data", "collect", "--level", "medium"])
    assert bad_level.exit_code == 2 and "train, rephrase, easy, hard" in bad_level.output


def test_info_on_a_corrupt_file_is_one_line(tmp_path):
    path = tmp_path / "broken.npz"
    path.write_bytes(b"PK\x03\x04 not really a zip")
    result = runner.invoke(app, ["data", "info", str(path)])
    assert result.exit_code == 1 and "broken.npz" in result.output and "Traceback" not in result.output
