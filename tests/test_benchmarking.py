"""The benchmarks' shared output: markdown tables, the ``--json`` option and its atomic JSON file."""

from __future__ import annotations

import argparse
import json
import math
import os

import numpy as np
import pytest

from benchmarks.harness import Report, Table, add_json_argument, median_times


def tiny_report(path, capsys) -> Report:
    report = Report("benchmarks/example.py", path)
    table = report.table("Speed", ["env", "steps/s", "ratio"], {"steps/s": "{:,.0f}", "ratio": "{:.2f}x"})
    table.add("CLEVR-v0", 11663.4, np.float64(1.094))
    table.add("BabyAI | stock", np.int64(97651), math.nan)
    capsys.readouterr()
    return report


def test_table_prints_github_markdown_row_by_row(capsys):
    table = Table("Speed", ["env", "steps/s", "ratio"], {"steps/s": "{:,.0f}", "ratio": "{:.2f}x"})
    table.add("CLEVR-v0", 11663.4, 1.094)
    first = capsys.readouterr().out
    assert first == "\n### Speed\n\n| env | steps/s | ratio |\n|---|---:|---:|\n| CLEVR-v0 | 11,663 | 1.09x |\n"
    table.add("BabyAI | stock", 97651, None)
    assert capsys.readouterr().out == "| BabyAI \\| stock | 97,651 | - |\n"  # no second header
    assert table.markdown().splitlines()[-1] == "| BabyAI \\| stock | 97,651 | - |"


def test_interleaved_tables_repeat_their_header(capsys):
    norms, runs = Table("Norms", ["model", "norm"]), Table("Runs", ["seed"])
    norms.add("tiny", 0.2)
    runs.add(0)
    norms.add("smol", 3.2)
    capsys.readouterr()
    runs.add(1)
    assert capsys.readouterr().out == "\n### Runs (continued)\n\n| seed |\n|---|\n| 1 |\n"
    runs.add(2)
    assert capsys.readouterr().out == "| 2 |\n"
    assert runs.markdown() == "### Runs\n\n| seed |\n|---|\n| 0 |\n| 1 |\n| 2 |"


def test_table_refuses_rows_and_formats_that_do_not_fit():
    table = Table("t", ["a", "b"])
    with pytest.raises(ValueError, match="2 columns"):
        table.add(1)
    with pytest.raises(ValueError, match="lacks"):
        Table("t", ["a"], {"b": "{}"})
    with pytest.raises(ValueError, match="repeat"):
        Table("t", ["a", "a"])


def test_report_writes_every_table_as_one_json_file(tmp_path, capsys):
    path = tmp_path / "bench.json"
    report = tiny_report(path, capsys)
    report.finish()
    assert f"tables written to {path}" in capsys.readouterr().out
    written = json.loads(path.read_text())
    assert written["script"] == "example.py"
    assert written["machine"] == report.machine and "cores" in written["machine"]
    assert written["tables"] == [{"title": "Speed", "columns": ["env", "steps/s", "ratio"],
                                  "rows": [["CLEVR-v0", 11663.4, 1.094], ["BabyAI | stock", 97651, None]]}]
    assert isinstance(written["tables"][0]["rows"][1][1], int)  # numpy's int stays an integer


def test_report_without_json_path_writes_nothing(tmp_path, capsys):
    tiny_report(None, capsys).finish()
    assert "load average at the end" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []


def test_json_argument_round_trip(tmp_path):
    parser = argparse.ArgumentParser()
    add_json_argument(parser)
    assert parser.parse_args([]).json is None
    assert parser.parse_args(["--json", str(tmp_path / "r.json")]).json == tmp_path / "r.json"


@pytest.mark.parametrize("where", ["file/r.json", "file/missing/r.json", "folder"])
def test_json_argument_refuses_an_unwritable_path_before_the_run(tmp_path, where, capsys):
    """Under a plain file, or a folder itself: refused when parsing, not after an hour of measuring."""
    parser = argparse.ArgumentParser()
    add_json_argument(parser)
    (tmp_path / "file").write_text("")
    (tmp_path / "folder").mkdir()
    with pytest.raises(SystemExit):
        parser.parse_args(["--json", str(tmp_path / where)])
    assert "--json" in capsys.readouterr().err


def test_failed_write_leaves_no_partial_file(tmp_path, capsys, monkeypatch):
    path = tmp_path / "bench.json"
    path.write_text('{"old": true}\n')
    report = tiny_report(path, capsys)

    def disk_full(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    with pytest.raises(OSError, match="No space"):
        report.finish()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.json"]  # no temporary file left behind
    assert json.loads(path.read_text()) == {"old": True}


def test_median_times_alternates_and_takes_the_median():
    calls: list[str] = []
    times = median_times([lambda: calls.append("a"), lambda: calls.append("b")], rounds=3, warmup=1)
    assert calls == ["a", "b"] * 4
    assert len(times) == 2 and all(t >= 0 for t in times)
