"""The published rows: ``reference_results`` validates its filters and sorts; ``imaginebench results``
shows them without running anything."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import imaginebench
from imaginebench.cli import app
from imaginebench.domains.base import LEVELS
from imaginebench.errors import UsageError
from tests.cli_helpers import error_line


def test_filters_are_validated_resolved_and_rows_come_sorted():
    rows = imaginebench.reference_results()
    keys = [(r["env"], LEVELS.index(r["level"]), r["algorithm"]) for r in rows]
    assert rows and keys == sorted(keys)
    easy = imaginebench.reference_results("BabyAI-v0", level="EASY", algorithm="BC")
    assert easy and {(r["level"], r["algorithm"]) for r in easy} == {("easy", "discrete_bc")}
    assert imaginebench.reference_results("MetaWorld-v0", algorithm="bc")[0]["algorithm"] == "bc"
    assert imaginebench.reference_results("BabyAI-v0", algorithm="td3bc") == []  # fits no discrete domain
    only = imaginebench.reference_results(data="real-retrieval")
    assert only and {r["data"] for r in only} == {"real-retrieval"}
    for bad, match in ((dict(level="medium"), "Unknown level 'medium'. Valid choices: train, rephrase, easy, hard"),
                       (dict(algorithm="ppo"), "Unknown algorithm 'ppo'"),
                       (dict(data="fake"), "Unknown training data variant 'fake'"),
                       (dict(profile="huge"), "Unknown profile 'huge'")):
        with pytest.raises(UsageError, match=match):
            imaginebench.reference_results("CLEVR-v0", **bad)


def test_results_verb_prints_the_rows_and_their_json():
    runner = CliRunner()
    shown = runner.invoke(app, ["results", "--env", "CLEVR-v0", "--level", "rephrase", "--algo", "bc"])
    assert shown.exit_code == 0, shown.output
    want = imaginebench.reference_results("CLEVR-v0", level="rephrase", algorithm="bc")
    assert shown.output.count("| CLEVR-v0 | rephrase | discrete_bc |") == len(want) > 0
    as_json = runner.invoke(app, ["results", "--env", "CLEVR-v0", "--level", "rephrase", "--algo", "bc", "--json"])
    assert json.loads(as_json.output) == want
    none = runner.invoke(app, ["results", "--env", "BabyAI-v0", "--algo", "td3bc"])
    assert none.exit_code == 0 and "No published rows match" in none.output
    bad = runner.invoke(app, ["results", "--level", "medium"])
    assert bad.exit_code == 2 and "Unknown level 'medium'" in error_line(bad)
