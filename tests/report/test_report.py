"""Reports from synthetic run records: the markdown table and the PNG figures."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from imaginebench.cli import app
from imaginebench.evaluation.records import SCHEMA_VERSION, runs_root, write_json
from imaginebench.report import aggregate, build_report, markdown

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _record(env, level, data, algo, seed, success, label):
    return {"schema_version": SCHEMA_VERSION, "env": env, "level": level, "data": data, "algo": algo,
            "algo_label": label, "seed": seed, "profile": "tiny", "success": success, "steps": 100,
            "score": {level: success}, "timing": {"wall_time_s": 10.0}}


def _write_records() -> None:
    rng = np.random.default_rng(0)
    for algo, label in (("discrete_bc", "BC"), ("discrete_cql", "CQL")):
        for seed in range(3):
            for level in ("train", "rephrase", "easy", "hard"):
                data = "real" if level == "train" else "imaginary"
                rec = _record("CLEVR-v0", level, data, algo, seed, float(rng.uniform(0.2, 0.9)), label)
                write_json(runs_root() / "CLEVR-v0/tiny" / level / data / algo / f"seed{seed}/record.json", rec)
            for level in ("easy", "hard"):
                rec = _record("CLEVR-v0", level, "real-upper-bound", algo, seed, float(rng.uniform(0.5, 1)), label)
                folder = runs_root() / "CLEVR-v0/tiny" / level / "real-upper-bound" / algo / f"seed{seed}"
                write_json(folder / "record.json", rec)


def test_mean_and_std_over_seeds():
    records = [_record("E", "hard", "imaginary", "bc", s, v, "BC") for s, v in enumerate([0.2, 0.4, 0.6])]
    (cell,) = aggregate(records)
    assert cell.mean == pytest.approx(0.4) and cell.std == pytest.approx(0.2) and cell.n == 3
    assert cell.text() == "40.0 ± 20.0"
    table = markdown([cell])
    assert "| BC (`bc`) | 40.0 ± 20.0 |" in table and "| algorithm | hard |" in table


def test_report_writes_table_and_figures(tmp_path):
    _write_records()
    written = build_report(tmp_path / "out")
    assert set(written) == {"report.md", "success.png", "upper_bound.png", "report.html"}
    text = written["report.md"].read_text()
    assert "## CLEVR-v0 — Real + imaginary rollouts" in text and "## CLEVR-v0 — Real upper bound" in text
    assert "| algorithm | train | rephrase | easy | hard |" in text and "| CQL (`discrete_cql`) |" in text
    for name in ("success.png", "upper_bound.png"):
        data = written[name].read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5_000


def test_html_report_is_one_self_contained_page(tmp_path):
    import base64
    import re

    _write_records()
    written = build_report(tmp_path / "out")
    page = written["report.html"].read_text(encoding="utf-8")
    # every table of the markdown becomes an HTML table, with its reference rows marked
    assert page.count("<table>") == written["report.md"].read_text().count("| algorithm |")
    assert "<h2>CLEVR-v0 — Real upper bound" in page
    assert "<td>CQL (<code>discrete_cql</code>)</td>" in page
    # both figures embedded byte for byte; nothing refers to a file or the network
    embedded = [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([^"]+)"', page)]
    assert embedded == [written["success.png"].read_bytes(), written["upper_bound.png"].read_bytes()]
    assert not re.search(r'(src|href)="(?!data:)', page)


def test_report_cli(tmp_path):
    _write_records()
    result = CliRunner().invoke(app, ["report", "--out", str(tmp_path / "r"), "--env", "CLEVR-v0"])
    assert result.exit_code == 0, result.output
    assert "# ImagineBench results" in result.output and (tmp_path / "r/success.png").exists()


def test_report_without_records_says_how_to_make_them(tmp_path):
    result = CliRunner().invoke(app, ["report", "--out", str(tmp_path / "r")])
    assert result.exit_code == 1
    assert "No run records" in result.output and "imaginebench train" in result.output


def test_comparison_table_marks_the_oracle_filter():
    records = []
    for data, value in (("real", 0.3), ("imaginary", 0.5), ("imaginary-unfiltered", 0.1), ("imaginary-oracle", 0.6),
                        ("real-upper-bound", 0.9)):
        records += [_record("CLEVR-v0", "easy", data, "discrete_bc", s, value, "BC") for s in range(3)]
    text = markdown(aggregate(records))
    assert "## CLEVR-v0 — imaginary rollouts vs none" in text
    assert "| BC | real only | 30.0 ± 0.0 |" in text
    assert "| BC | real + imaginary (honest filter) | 50.0 ± 0.0 |" in text
    assert "| BC | real + imaginary (unfiltered) | 10.0 ± 0.0 |" in text
    assert "| BC | real + imaginary (oracle filter) † | 60.0 ± 0.0 |" in text
    assert "ORACLE filter" in text and "† oracle filter" in text


def test_markdown_to_html_tables_and_reference_rows():
    from imaginebench.report.html import markdown_to_html

    body = markdown_to_html("# T\n\nsome `code` <b>\n\n| algorithm | hard |\n|---|---:|\n| BC (`bc`) | 40.0 ± 20.0 |\n"
                            "| *expert* | 100.0 |\n")
    assert body.startswith("<h1>T</h1>\n<p>some <code>code</code> &lt;b&gt;</p>")
    assert '<tr><td>BC (<code>bc</code>)</td><td class="num">40.0 ± 20.0</td></tr>' in body
    assert '<tr class="reference"><td>expert</td><td class="num">100.0</td></tr>' in body


def test_mixed_step_counts_are_stated_per_cell():
    records = [_record("E", "hard", "imaginary", "bc", 0, 0.5, "BC"), _record("E", "easy", "imaginary", "bc", 0, 0.5, "BC"),
               {**_record("E", "hard", "real", "bc", 0, 0.25, "BC"), "steps": 20000},
               {**_record("E", "hard", "real", "bc", 1, 0.75, "BC"), "steps": 100}]
    text = markdown(aggregate(records, references=False))
    assert text.count("gradient steps differ between cells: each cell states its own") == 2  # comparison + real table
    assert "| BC | real only | – | 50.0 ± 35.4 (n=2) @100–20k steps (mixed) |" in text
    assert "| BC | real + imaginary (honest filter) | 50.0 (n=1) @100 steps | 50.0 (n=1) @100 steps |" in text
    # a table whose cells share one count says it once, in its header
    assert "profile `tiny`, 100 gradient steps" in text and "| BC (`bc`) | 50.0 (n=1) | 50.0 (n=1) |" in text


def test_one_seed_shows_no_spread_in_either_column():
    (cell,) = aggregate([_record("E", "hard", "imaginary", "bc", 0, 0.5, "BC")], references=False)
    cell.normalised.append(42.25)
    assert cell.text() == "50.0 (n=1)" and cell.normalised_text() == "42.2"
    cell.normalised.append(44.25)
    assert cell.normalised_text() == "43.2 ± 1.4"
