"""The README's side-by-side table is the published rows, not a hand copy of them."""

from __future__ import annotations

import re
from pathlib import Path

from imaginebench.evaluation.published import BASELINE_COLUMNS, baselines_table, is_current, reference_results

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_table_is_generated_from_the_published_rows():
    text = README.read_text()
    found = re.search(r"<!-- baselines-table:[^>]*-->\n(.*?)\n<!-- /baselines-table -->", text, re.S)
    assert found, "the README lost its generated baselines table"
    assert found.group(1) == baselines_table(), "refresh it: imaginebench results --baselines"


def test_every_current_reference_cell_appears_with_its_mean():
    table = baselines_table()
    for row in reference_results():
        if row["data"] not in BASELINE_COLUMNS or row["algorithm"] not in ("bc", "discrete_bc", "td3bc",
                                                                          "discrete_cql"):
            continue
        line = next((ln for ln in table.splitlines() if ln.startswith(f"| {row['env']} | {row['algorithm']} | "
                                                                        f"{row['level']} |")), None)
        if not is_current(row):
            continue
        assert line is not None, row
        cell = line.split(" | ")[3 + BASELINE_COLUMNS.index(row["data"])].strip(" |*")
        assert cell.split(" ")[0] == f"{100 * row['mean']:.1f}", (line, row["data"])
