"""The online fine-tuning part of the report, from synthetic fine-tune records with known curves."""

from __future__ import annotations

import base64
import re

import numpy as np
import pytest

from imaginebench.config import data_home
from imaginebench.evaluation.records import SCHEMA_VERSION, write_json
from imaginebench.report import build_report
from imaginebench.report.finetune import _columns, finetune_curves, finetune_section, load_finetune_records

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
STARTS = {"scratch": ("scratch", "scratch"), "real": ("discrete_cql-real", "offline real"),
          "imaginary": ("discrete_cql-imaginary", "offline real+imaginary")}
BASE = {"scratch": [10, 15, 20, 30, 40], "real": [40, 50, 60, 70, 80], "imaginary": [60, 65, 70, 80, 90]}
"""Success (%) of seed 1 at 0, 250, 500, 750, 1000 env steps; seed 0 is 10 points lower, seed 2 10 higher."""


def _record(start: str, seed: int, success: list[float], budget: int = 1000, every: int = 250,
            env: str = "CLEVR-v0", expert: float = 0.8, tag: str | None = None) -> dict:
    name, label = STARTS[start]
    steps = list(range(0, budget + 1, every))
    curve = [{"env_steps": s, "grad_steps": s, "success": v, "per_task": {}, "episodes": 20, "mean_length": 9.0,
              "loss": {}, "online": {}} for s, v in zip(steps, success)]
    half = next((s for s, v in zip(steps, success) if v >= 0.5 * expert), None)
    auc = float(np.sum((np.array(success[1:]) + success[:-1]) * every) / 2 / budget)
    return {"schema_version": SCHEMA_VERSION, "kind": "finetune", "env": env, "level": "hard", "profile": "tiny",
            "method": "discrete_cql", "method_label": "CQL", "tag": tag, "seed": seed, "budget": budget,
            "eval_every": every, "eval": {"level": "hard", "episodes_per_task": 5, "episodes": 20},
            "start": {"kind": "scratch" if start == "scratch" else "offline", "name": name, "label": label,
                      "algo": None if start == "scratch" else "discrete_cql", "data": None},
            "curve": curve, "score": {"initial": success[0], "final": success[-1], "auc": auc,
                                      "steps_to_half_expert": half},
            "reference": {"random": 0.05, "expert": expert}, "timing": {"env_steps_per_s": 100.0}}


def _write(record: dict) -> None:
    method = record["method"] + (f"@{record['tag']}" if record["tag"] else "")
    folder = (data_home() / "finetune" / record["env"] / record["profile"] / record["level"] / record["start"]["name"]
              / method / f"seed{record['seed']}")
    write_json(folder / "record.json", record)


def _write_records(env: str = "CLEVR-v0") -> None:
    for start in ("imaginary", "scratch", "real"):  # not in display order
        for seed in range(3):
            _write(_record(start, seed, [(v + 10 * (seed - 1)) / 100 for v in BASE[start]], env=env))


def _rows(lines: list[str]) -> dict[str, str]:
    return {line.split(" | ")[0].lstrip("| "): line for line in lines if line.startswith("| ")}


def test_table_numbers_order_and_references():
    _write_records()
    lines = finetune_section(load_finetune_records())
    assert lines[0] == "## Online fine-tuning" and "### CLEVR-v0 — `hard` (profile `tiny`)" in lines
    assert "budget 1,000 environment steps, evaluated every 250; method CQL" in lines
    assert "| start | method | n | 0 | 250 | 500 | 750 | 1k | AUC | steps to ½ expert |" in lines
    rows = _rows(lines)
    assert rows["scratch"] == ("| scratch | CQL | 3 | 10.0 ± 10.0 | 15.0 ± 10.0 | 20.0 ± 10.0 | 30.0 ± 10.0 "
                               "| 40.0 ± 10.0 | 22.5 ± 10.0 | 875 (2/3 reached) |")
    assert rows["offline real"].endswith("| 70.0 ± 10.0 | 80.0 ± 10.0 | 60.0 ± 10.0 | 83 (3/3 reached) |")
    assert rows["offline real+imaginary"].endswith("| 90.0 ± 10.0 | 72.5 ± 10.0 | 0 (3/3 reached) |")
    order = [line.split(" | ")[0] for line in lines if line.startswith("| ") and " CQL " in line]
    assert order == ["| scratch", "| offline real", "| offline real+imaginary"]
    assert "Chance (uniformly random policy): 5.0 ± 0.0 %; expert: 80.0 ± 0.0 % (same evaluation episodes)." in lines


def test_never_reaching_half_the_expert_is_a_dash():
    records = [_record("scratch", s, [0.0, 0.1, 0.2, 0.3, 0.4], expert=1.0) for s in range(2)]
    assert _rows(finetune_section(records))["scratch"].endswith("| 20.0 ± 0.0 | – |")


def test_other_budgets_are_not_averaged_together():
    _write_records()  # e.g. a record from another data home: same start, method and seed, twice the budget
    lines = finetune_section(load_finetune_records() + [_record("scratch", 0, [0.9] * 5, budget=2000, every=500)])
    assert "budget 2,000 environment steps, evaluated every 500; method CQL" in lines
    scratch = [line for line in lines if line.startswith("| scratch |")]
    assert len(scratch) == 2 and scratch[0].startswith("| scratch | CQL | 3 | 10.0 ± 10.0 |")
    assert scratch[1] == "| scratch | CQL | 1 | 90.0 ± 0.0 | 90.0 ± 0.0 | 90.0 ± 0.0 | 90.0 ± 0.0 | 90.0 ± 0.0 " \
                         "| 90.0 ± 0.0 | 0 (1/1 reached) |"
    assert "| start | method | n | 0 | 500 | 1k | 1,500 | 2k | AUC | steps to ½ expert |" in lines


def test_long_curves_show_a_subset_of_evaluations():
    assert _columns(list(range(11))) == list(range(11))
    assert _columns(list(range(21))) == list(range(0, 21, 2))
    assert _columns(list(range(24))) == [0, 3, 6, 9, 12, 15, 18, 21, 23]
    lines = finetune_section([_record("scratch", 0, list(np.linspace(0, 1, 21)), budget=5000)])
    assert "| start | method | n | 0 | 500 | 1k | 1,500 | 2k | 2,500 | 3k | 3,500 | 4k | 4,500 | 5k | AUC " \
           "| steps to ½ expert |" in lines
    assert any("(columns: 11 of 21 evaluations)" in line for line in lines)


def test_tags_and_same_labels_get_their_own_rows():
    records = [_record("real", 0, [0.5] * 5), _record("real", 0, [0.7] * 5, tag="lr3")]
    assert "| offline real | CQL [lr3] | 1 | 70.0 ± 0.0 |" in "\n".join(finetune_section(records))
    other = _record("real", 0, [0.1] * 5)
    other["start"] = {**other["start"], "name": "discrete_bc-real"}
    rows = [line for line in finetune_section(records + [other]) if line.startswith("| offline real")]
    assert len(rows) == 3 and any("| CQL [lr3] | 1 | 70.0 ± 0.0 |" in r for r in rows)
    assert any(r.startswith("| offline real (`discrete_bc-real`) | CQL | 1 | 10.0") for r in rows)


def test_curves_figure_is_a_png(tmp_path):
    _write_records()
    _write_records("Other-v0")
    path = finetune_curves(load_finetune_records(), tmp_path / "ft.png")
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 5_000
    assert finetune_curves([], tmp_path / "none.png") is None and not (tmp_path / "none.png").exists()


def test_report_with_fine_tune_records_only(tmp_path):
    _write_records()
    _write_records("Other-v0")
    written = build_report(tmp_path / "out", env="CLEVR-v0")
    assert set(written) == {"report.md", "finetune.png", "report.html"}
    text = written["report.md"].read_text()
    assert text.startswith("# ImagineBench results") and "## Online fine-tuning" in text
    assert "### CLEVR-v0 — `hard`" in text and "Other-v0" not in text
    page = written["report.html"].read_text(encoding="utf-8")
    assert "<h2>Online fine-tuning</h2>" in page and "<td>scratch</td>" in page
    embedded = [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([^"]+)"', page)]
    assert embedded == [written["finetune.png"].read_bytes()]
    assert "during online fine-tuning" in page


def test_report_with_both_kinds_and_with_none(tmp_path):
    from tests.report.test_report import _write_records as write_offline

    with pytest.raises(FileNotFoundError, match="nor fine-tune records"):
        build_report(tmp_path / "empty")
    write_offline()
    _write_records()
    written = build_report(tmp_path / "out", pictures=False, finetune_runs=data_home() / "finetune")
    assert {"success.png", "upper_bound.png", "finetune.png"} <= set(written)
    text = written["report.md"].read_text()
    assert text.index("## CLEVR-v0 — Real upper bound") < text.index("## Online fine-tuning")
    assert "## Online fine-tuning" not in build_report(tmp_path / "o2", pictures=False,
                                                       finetune_runs=tmp_path / "nowhere")["report.md"].read_text()
