"""Report sections: rollout quality, stored calibration, rollout pictures, and the env's start-state reset."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from imaginebench.cli import app
from imaginebench.data.hub import imaginary_path, reference_path
from imaginebench.evaluation.records import SCHEMA_VERSION, runs_root, write_json
from imaginebench.evaluation.reference import (TaskCalibration, calibration_path, load_calibration,
                                               save_calibration)
from imaginebench.imagination.quality import quality_path
from imaginebench.report import build_report
from imaginebench.report.sections import calibration_section, quality_section, rollout_strips

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _records(env: str, profile: str = "small") -> None:
    for level in ("rephrase", "easy", "hard"):
        for data in ("real", "imaginary"):
            rec = {"schema_version": SCHEMA_VERSION, "env": env, "level": level, "data": data, "algo": "discrete_bc",
                   "algo_label": "BC", "seed": 0, "profile": profile, "success": 0.5, "steps": 100,
                   "score": {level: 0.5}, "timing": {"wall_time_s": 1.0}}
            write_json(runs_root() / env / profile / level / data / "discrete_bc" / "seed0/record.json", rec)


def test_quality_table_reads_reference_reports_and_prefers_local_ones():
    lines = "\n".join(quality_section([("BabyAI-v0", "small")]))
    shipped = json.loads(quality_path(reference_path("BabyAI-v0", "easy", "small")).read_text())
    assert "## BabyAI-v0 — quality of the imaginary rollouts (profile `small`)" in lines
    assert f"| easy | reference, honest | kept | {shipped['episodes']} | {100 * shipped['consistency']:.1f} |" in lines
    assert "| *hard* | *original paper (KALM)* |" in lines and "*25.8*" in lines  # SPEC §6 numbers beside ours
    # a locally generated dataset wins over the packaged one
    local = imaginary_path("BabyAI-v0", "easy", "small")
    local.parent.mkdir(parents=True)
    shutil.copy(reference_path("BabyAI-v0", "easy", "small"), local)
    quality_path(local).write_text(json.dumps({**shipped, "consistency": 0.123, "episodes": 7}))
    lines = "\n".join(quality_section([("BabyAI-v0", "small")]))
    assert "| easy | local, honest | kept | 7 | 12.3 |" in lines
    # no imaginary data at all (no reference shipped for the profile either): no section
    assert quality_section([("LIBERO-v0", "tiny")]) == []
    assert quality_section([("HalfCheetah-v0", "tiny")]) == []
    # LIBERO ships rephrase and easy: its reports show, re-scored (an 'all' row of the candidates)
    libero = "\n".join(quality_section([("LIBERO-v0", "small")]))
    lib_report = json.loads(quality_path(reference_path("LIBERO-v0", "rephrase", "small")).read_text())
    assert "## LIBERO-v0 — quality of the imaginary rollouts (profile `small`)" in libero
    assert f"| rephrase | reference, honest | kept | {lib_report['episodes']} | 100.0 |" in libero
    assert f"| rephrase | reference, honest | all | {lib_report['all']['episodes']} |" in libero
    # Meta-World ships every level (session 28): its reports with the candidates' 'all' rows
    meta = "\n".join(quality_section([("MetaWorld-v0", "small")]))
    meta_reports = {level: json.loads(quality_path(reference_path("MetaWorld-v0", level, "small")).read_text())
                    for level in ("rephrase", "hard")}
    assert f"| rephrase | reference, honest | kept | {meta_reports['rephrase']['episodes']} | 100.0 |" in meta
    assert f"| hard | reference, honest | kept | {meta_reports['hard']['episodes']} | 100.0 |" in meta
    assert f"| hard | reference, honest | all | {meta_reports['hard']['all']['episodes']} |" in meta
    assert "| hard | none |" not in meta
    # HalfCheetah ships every level: the table reads its reports, with the unfiltered 'all' rows
    cheetah = "\n".join(quality_section([("HalfCheetah-v0", "small")]))
    reports = {level: json.loads(quality_path(reference_path("HalfCheetah-v0", level, "small")).read_text())
               for level in ("rephrase", "hard")}
    assert f"| hard | reference, honest | kept | {reports['hard']['episodes']} | 100.0 |" in cheetah
    assert f"| rephrase | reference, honest | all | {reports['rephrase']['generated']} |" in cheetah
    assert reports["rephrase"]["generated"] > reports["rephrase"]["episodes"] > 0


def test_damaged_quality_report_is_a_one_line_error():
    local = imaginary_path("CLEVR-v0", "hard", "small")
    local.parent.mkdir(parents=True)
    shutil.copy(reference_path("CLEVR-v0", "hard", "small"), local)
    quality_path(local).write_text("{not json")
    with pytest.raises(ValueError, match=r"imaginary-hard\.quality\.json is damaged .* imagine quality"):
        quality_section([("CLEVR-v0", "small")])


def test_calibration_is_stored_merged_and_summarised():
    assert load_calibration("BabyAI-v0") is None
    assert "make one with: `imaginebench calibrate --env BabyAI-v0`" in "\n".join(calibration_section(["BabyAI-v0"]))
    rows = [TaskCalibration("train", "a", 20, 20, 0, 100), TaskCalibration("easy", "b", 18, 20, 9, 100)]
    save_calibration("BabyAI-v0", rows, {"seed": 0, "max_random_episodes": 100})
    save_calibration("BabyAI-v0", [TaskCalibration("easy", "b", 20, 20, 1, 100)], {"seed": 0})
    stored, settings = load_calibration("BabyAI-v0")
    assert {(r.level, r.task): r.random_successes for r in stored} == {("train", "a"): 0, ("easy", "b"): 1}
    assert settings["env"] == "BabyAI-v0" and calibration_path("BabyAI-v0").with_suffix(".md").exists()
    text = "\n".join(calibration_section(["BabyAI-v0"]))
    assert "| train | 1 | 100.0% | 0.0% | 0.0% | 1 | 0 | 0 | 0 |" in text
    assert "| easy | 1 | 100.0% | 1.0% | 1.0% | 0 | 0 | 1 | 0 |" in text


def test_damaged_calibration_file_names_the_fix():
    path = calibration_path("CLEVR-v0")
    path.parent.mkdir(parents=True)
    path.write_text('{"rows": [{"level": "train"}]}')
    with pytest.raises(ValueError, match="damaged .* imaginebench calibrate --env CLEVR-v0"):
        load_calibration("CLEVR-v0")


def test_calibrate_cli_stores_in_data_home_and_skips_existing():
    args = ["calibrate", "--env", "BabyAI-v0", "--level", "easy", "--task", "go_to_centre", "--expert-episodes", "2",
            "--random-episodes", "4", "--max-random-episodes", "4", "--no-progress"]
    first = CliRunner().invoke(app, args + ["--quiet"])
    assert first.exit_code == 0, first.output
    assert "| level | tasks |" in first.output and "| level | task |" not in first.output  # summary only
    (row,) = load_calibration("BabyAI-v0")[0]
    assert (row.level, row.task, row.expert_episodes, row.random_episodes) == ("easy", "go_to_centre", 2, 4)
    again = CliRunner().invoke(app, args + ["--skip-existing"])
    assert again.exit_code == 0 and "skipped (--skip-existing)" in again.output


@pytest.mark.parametrize("env_id", ["BabyAI-v0", "CLEVR-v0"])
def test_reset_from_a_given_state(env_id):
    import imaginebench

    env = imaginebench.make(env_id, level="hard", encode_instruction=False)
    obs, _ = env.reset(seed=1)
    other, info = env.reset(seed=2, options={"task": env.unwrapped.tasks[0], "state": obs})
    assert np.array_equal(other, obs) and np.array_equal(info["state"], obs)
    with pytest.raises(ValueError, match="valid options: task, instruction, state"):
        env.reset(options={"start": obs})
    env.close()


def test_rollout_pictures_pair_the_imagined_rollout_with_the_expert_from_the_same_start(tmp_path):
    from imaginebench.data.collect import rollout
    from imaginebench.data.hub import load_imaginary
    from imaginebench.imagination.render import state_renderer

    figures, notes = rollout_strips([("BabyAI-v0", "small")], tmp_path, levels=("easy", "hard"))
    assert notes == [] and len(figures) == 2
    for caption, path in figures.items():
        assert "BabyAI-v0" in caption and path.read_bytes().startswith(PNG_MAGIC)
    imagined = load_imaginary("BabyAI-v0", "hard", "small").episode(0)
    env, _ = state_renderer("BabyAI-v0", "hard")
    real = rollout(env.unwrapped, imagined.task, seed=0, initial_state=imagined.states[0],
                   instruction=imagined.instruction)
    env.close()
    assert np.array_equal(real.states[0], imagined.states[0]) and real.instruction == imagined.instruction
    assert real.is_success  # the expert solves the imagined rollout's task from its start


def test_report_has_quality_calibration_and_pictures(tmp_path):
    import base64
    import re

    _records("BabyAI-v0")
    save_calibration("BabyAI-v0", [TaskCalibration("train", "a", 20, 20, 0, 100)], {"max_random_episodes": 100})
    written = build_report(tmp_path / "out")
    text = written["report.md"].read_text()
    assert "quality of the imaginary rollouts" in text and "calibration (expert and uniformly random" in text
    strips = sorted(n for n in written if n.startswith("rollouts-"))
    assert strips == [f"rollouts-BabyAI-v0-small-{lv}.png" for lv in ("easy", "hard", "rephrase")]
    page = written["report.html"].read_text()
    embedded = [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([^"]+)"', page)]
    assert all(written[n].read_bytes() in embedded for n in strips)
    assert "<ul>" in page and page.count("<table>") == text.count("\n|---")
    assert "rollouts-" not in " ".join(build_report(tmp_path / "bare", pictures=False))
