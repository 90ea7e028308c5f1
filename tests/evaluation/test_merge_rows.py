"""``merge_rows``: how a publish script puts measured rows into the published file."""

from __future__ import annotations

import json

import imaginebench.evaluation.published as published


def _row(level, data, mean):
    return {"env": "CLEVR-v0", "level": level, "algorithm": "discrete_bc", "data": data, "mean": mean}


def test_a_new_row_replaces_its_cell_and_a_dry_run_writes_nothing(tmp_path, monkeypatch):
    path = tmp_path / "results-small.json"
    path.write_text(json.dumps({"profile": "small", "rows": [_row("easy", "real", 0.5), _row("hard", "real", 0.1)]}))
    monkeypatch.setattr(published, "results_path", lambda profile="small": path)
    before = path.read_text()
    rows = published.merge_rows([_row("easy", "real", 0.7)], dry_run=True)
    assert path.read_text() == before and [r["mean"] for r in rows] == [0.1, 0.7]
    published.merge_rows([_row("easy", "real", 0.6), _row("easy", "real", 0.7), _row("easy", "real-retrieval", 0.3)])
    saved = json.loads(path.read_text())
    assert saved["profile"] == "small"
    assert [(r["level"], r["data"], r["mean"]) for r in saved["rows"]] == [
        ("hard", "real", 0.1), ("easy", "real", 0.7), ("easy", "real-retrieval", 0.3)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results-small.json"]  # no temporary file left


def test_a_row_measured_before_its_domain_was_resized_is_marked(monkeypatch):
    from types import MappingProxyType

    from imaginebench.config import get_profile
    from imaginebench.domains.clevr.domain import ClevrDomain

    real = get_profile("small").episodes(ClevrDomain, "real", "train")
    row = {**_row("easy", "real", 0.5), "data_label": "real only", "n": 3, "std": 0.1, "normalised": 40.0,
           "steps": 20000, "real_episodes": real, "version": "0.1.0", "commit": "abcdef0"}
    assert published.is_current(row) and "older sizes" not in published.format_rows([row])
    monkeypatch.setattr(ClevrDomain, "profile_sizes", MappingProxyType({"small": {"real": 2 * real}}))
    assert not published.is_current(row)
    assert f"(real {real}, 20000 steps: older sizes)" in published.format_rows([row])
    assert published.is_current({**row, "real_episodes": 2 * real})
    assert not published.is_current({**row, "real_episodes": 2 * real, "steps": 5000})


def test_every_published_row_names_its_real_data_size():
    rows = published.reference_results(profile="small")
    assert rows and all(isinstance(r["real_episodes"], int) and r["real_episodes"] > 0 for r in rows)
    assert all(r["profile"] == "small" for r in rows)


def test_a_row_measured_before_its_card_changed_an_algorithm_setting_is_marked(monkeypatch):
    from types import MappingProxyType

    from imaginebench.config import get_profile
    from imaginebench.domains.clevr.domain import ClevrDomain

    real = get_profile("small").episodes(ClevrDomain, "real", "train")
    row = {**_row("easy", "real", 0.5), "data_label": "real only", "n": 3, "std": 0.1, "normalised": 40.0,
           "steps": 20000, "real_episodes": real, "version": "0.1.0", "commit": "abcdef0"}
    assert published.is_current(row) and published.card_settings_changed(row) == {}
    monkeypatch.setattr(ClevrDomain, "algo_defaults", MappingProxyType({"discrete_bc": {"lr_decay": "cosine"}}))
    # a row without its algorithm config was measured with the algorithm's own defaults
    assert published.card_settings_changed(row) == {"lr_decay": ("none", "cosine")}
    assert not published.is_current(row)
    assert "(older settings: lr_decay none (now cosine))" in published.format_rows([row])
    assert published.is_current({**row, "algorithm_config": {"lr_decay": "cosine", "learning_rate": 0.001}})
    assert not published.is_current({**row, "algorithm_config": {"lr_decay": "linear"}})
    # another algorithm's rows are untouched by this algorithm's card settings
    assert published.is_current({**row, "algorithm": "discrete_cql"})


def test_rows_from_records_carry_the_algorithm_config_they_ran():
    record = {"env": "CLEVR-v0", "level": "easy", "algo": "discrete_bc", "tag": None, "data": "real", "profile": "small",
              "settings": {}, "seed": 0, "score": {"easy": 0.5}, "normalised": {"easy": 40.0}, "steps": 20000,
              "sources": [{"name": "real", "episodes": 100}], "eval": {"episodes_per_task": 2},
              "versions": {"imaginebench": "0.1.0"}, "config": {"algorithm": {"lr_decay": "cosine"}}}
    (row,) = published.rows_from_records([record], commit="abcdef0", command="x", measured_on="d", machine="m")
    assert row["algorithm_config"] == {"lr_decay": "cosine"}
