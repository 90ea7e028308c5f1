"""Chance and expert in every result: reference rows and normalised scores on a tiny grid of
real runs (CLEVR and BabyAI), and the reference/calibration helpers."""

from __future__ import annotations

import math

import pytest
import torch

from imaginebench.training import RunSpec, train
from imaginebench.evaluation.reference import (calibrate_task, normalised_score, reference_path, reference_scores,
                                               wilson_interval)
from imaginebench.report import aggregate, build_report, markdown
from tests.algos.helpers import HASH_ENCODER

torch.set_num_threads(1)
TINY = dict(profile="tiny", encoder=HASH_ENCODER, train_steps=20, checkpoint_every=10, eval_episodes_per_task=1,
            batch_size=16, algo_options=(("hidden_units", (16, 16)),))


def test_report_of_a_tiny_grid_shows_chance_expert_and_normalised_scores(tmp_path):
    from imaginebench.data.hub import build_real

    records = []
    for env_id in ("CLEVR-v0", "BabyAI-v0"):
        build_real(env_id, "train", "tiny", episodes=40, progress=False)
        build_real(env_id, "easy", "tiny", episodes=40, progress=False)
        for seed in (0, 1):
            for data in ("real", "real-upper-bound"):
                rec = train(RunSpec(env_id, "bc", level="easy", data=data, seed=seed, **TINY), progress=False).record
                ref = reference_scores(env_id, "easy", 1, seed)
                assert rec["reference"]["easy"]["random"] == ref["random"]["success"]
                assert rec["reference"]["easy"]["expert"] == ref["expert"]["success"] == 1.0
                expected = normalised_score(rec["score"]["easy"], ref["random"]["success"], 1.0)
                assert rec["normalised"]["easy"] == pytest.approx(expected)
                records.append(rec)
    text = build_report(tmp_path / "report")["report.md"].read_text()
    for env_id in ("CLEVR-v0", "BabyAI-v0"):
        section = text.split(f"## {env_id} — Real rollouts only")[1].split("\n## ")[0]
        assert "| algorithm | easy | easy norm. |" in section
        assert "| *uniformly random policy (chance)* |" in section and "| *expert* |" in section
        assert "instruction encoder `test-hash`" in section
        comparison = text.split(f"## {env_id} — imaginary rollouts vs none")[1].split("\n## ")[0]
        assert "| *expert* | | 100.0 ± 0.0 (n=2) | 100 |" in comparison
    cells = [c for c in aggregate(records) if c.env == "CLEVR-v0" and c.level == "easy" and c.data == "real"]
    randoms = [reference_scores("CLEVR-v0", "easy", 1, s)["random"]["success"] for s in (0, 1)]
    row = f"| *uniformly random policy (chance)* | {100 * sum(randoms) / 2:.1f}"
    assert row in markdown(cells)


def test_reference_scores_are_cached_and_a_damaged_cache_is_recomputed():
    first = reference_scores("CLEVR-v0", "hard", 1, 5)
    path = reference_path("CLEVR-v0", "hard", 1, 5)
    assert path.exists() and first["episodes"] == 15 and first["expert"]["success"] == 1.0
    assert set(first["random"]["per_task"]) == set(first["expert"]["per_task"])
    path.write_text("{not json")
    assert reference_scores("CLEVR-v0", "hard", 1, 5) == first
    import json

    good = path.read_text()
    damaged = [b"\xff\xfe not utf-8", json.dumps({**first, "expert": {**first["expert"], "success": "high"}}).encode(),
               json.dumps({**first, "random": {**first["random"], "success": 1.7}}).encode(),
               json.dumps({**first, "seed": 6}).encode(), json.dumps([1, 2]).encode(),
               json.dumps({**first, "random": {"success": 0.1, "per_task": {"a": None}}}).encode()]
    for content in damaged:
        path.write_bytes(content)
        assert reference_scores("CLEVR-v0", "hard", 1, 5) == first  # recomputed, never trusted
        assert path.read_text() == good  # and rewritten


def test_normalised_score_and_wilson_interval():
    assert normalised_score(0.5, 0.0, 1.0) == 50.0
    assert normalised_score(0.3, 0.3, 0.9) == 0.0 and normalised_score(0.9, 0.3, 0.9) == pytest.approx(100.0)
    assert math.isnan(normalised_score(0.5, 1.0, 1.0))  # expert not above chance: undefined
    lo, hi = wilson_interval(0, 100)
    assert lo == 0.0 and 0.03 < hi < 0.04
    lo, hi = wilson_interval(50, 100)
    assert lo == pytest.approx(1 - hi) and 0.39 < lo < 0.41


def test_calibration_keeps_adding_random_episodes_until_the_5_percent_verdict_is_resolved():
    # a 3-goal sequential task: chance is about 1%; episodes double until the interval is below 5%
    row = calibrate_task("CLEVR-v0", "hard", "seq_red_left_of_green_and_blue_right_of_green_and_purple_behind_green",
                         expert_episodes=10, random_episodes=100, max_random_episodes=400)
    assert row.expert == 1.0 and row.random_episodes in (100, 200, 400)
    assert row.verdict == "ok" and row.random_ci[1] < 0.05
    if row.random_episodes > 100:  # the first 100 did not resolve it
        first = calibrate_task("CLEVR-v0", "hard", row.task, expert_episodes=1, random_episodes=row.random_episodes // 2,
                               max_random_episodes=row.random_episodes // 2)
        assert first.random_ci[0] <= 0.05 <= first.random_ci[1]
    # a relation task: chance ~30%, above 5% at once
    row = calibrate_task("CLEVR-v0", "train", "red_left_of_blue", expert_episodes=5, random_episodes=40,
                         max_random_episodes=400)
    assert row.verdict == "random>5%" and row.random_episodes == 40 and row.random_ci[0] > 0.05
    with pytest.raises(ValueError, match="positive episode counts"):
        calibrate_task("CLEVR-v0", "train", "red_left_of_blue", random_episodes=10, max_random_episodes=5)
