"""``imaginebench calibrate``: table, JSON beside it, one-line errors."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from imaginebench.cli import app


def test_calibrate_writes_table_and_json(tmp_path):
    out = tmp_path / "cal.md"
    result = CliRunner().invoke(app, ["calibrate", "--env", "CLEVR-v0", "--level", "easy", "--task", "move_red_left",
                                      "--expert-episodes", "5", "--random-episodes", "40",
                                      "--max-random-episodes", "80", "--no-progress", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "| easy | move_red_left | 100.0% |" in out.read_text()
    rows = json.loads(out.with_suffix(".json").read_text())["rows"]
    assert rows[0]["task"] == "move_red_left" and rows[0]["expert_episodes"] == 5
    assert rows[0]["random_episodes"] in (40, 80) and len(rows[0]["random_ci"]) == 2


def test_calibrate_errors_are_one_line(tmp_path):
    for args, needle in ((["--env", "CLEVR-v0", "--level", "medium"], "medium"),
                         (["--env", "Nope-v0"], "Nope-v0"),
                         (["--env", "CLEVR-v0", "--level", "easy", "--task", "no_such_task"], "no_such_task")):
        result = CliRunner().invoke(app, ["calibrate", *args, "--no-progress"])
        assert result.exit_code == 2, result.output
        assert needle in result.output and "Traceback" not in result.output
        assert len(result.output.strip().splitlines()) == 1
