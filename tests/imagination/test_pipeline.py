"""The imagination stage end to end on CLEVR with the tiny backbone, library and CLI."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

pytest.importorskip("mujoco")

import imaginebench  # noqa: E402
from imaginebench.cli import app  # noqa: E402
from imaginebench.data import build_real, get_dataset  # noqa: E402
from imaginebench.imagination import pipeline  # noqa: E402
from imaginebench.imagination.quality import check_rollouts, filter_episodes, quality_path  # noqa: E402

ENV = "CLEVR-v0"


@pytest.fixture()
def real_data():
    build_real(ENV, "train", "tiny", episodes=60, progress=False)


def test_real_data_scores_perfectly(real_data):
    real, _ = get_dataset(ENV, "train", "tiny")
    report = check_rollouts(ENV, "train", real).report
    assert report.consistency == 1.0 and report.transition_correctness == 1.0 and report.legality == 1.0


def test_filter_drops_exactly_the_failing_rollouts(real_data):
    real, _ = get_dataset(ENV, "train", "tiny")
    episodes = list(real)[:6]
    bad_state = episodes[1].states.copy()
    bad_state[-1, :2] = bad_state[-1, 2:4]  # red on top of blue: illegal
    bad_move = episodes[3].states.copy()
    bad_move[1] = bad_move[0]  # nothing moves: wrong transition (a push moves a ball ~0.15)
    episodes[1] = replace(episodes[1], states=bad_state)
    episodes[3] = replace(episodes[3], states=bad_move)
    checks = check_rollouts(ENV, "train", episodes)
    assert checks.legal.tolist() == [True, False, True, True, True, True]
    assert checks.transitions_ok.tolist() == [True, False, True, False, True, True]
    kept = filter_episodes(episodes, checks)
    assert [ep.states.tobytes() for ep in kept] == [episodes[i].states.tobytes() for i in (0, 2, 4, 5)]
    assert checks.report.rollouts_legal == pytest.approx(5 / 6)


def test_train_generate_quality_and_load(real_data, data_home, monkeypatch):
    result = pipeline.train(ENV, "tiny", "tiny", lora=False, steps=6, progress=False)
    assert result.steps_done == 6 and set(result.val_losses) == {"rollout", "dynamics", "consequence", "explanation"}
    meta = json.loads((result.checkpoint / "checkpoint.json").read_text())
    assert meta["package_version"] == imaginebench.__version__ and len(meta["normaliser"]["mean"]) == 10
    assert meta["step"] == 6 and meta["val_history"][-1]["step"] == 6

    # Resuming continues from step 6.
    again = pipeline.train(ENV, "tiny", "tiny", lora=False, steps=8, progress=False)
    assert again.steps_run == 2 and again.steps_done == 8

    # A tiny random model rarely reaches a goal: let every non-empty rollout pass the honest filter
    # here (the filter itself is tested in test_best_of_n.py).
    from imaginebench.imagination import best_of_n as bon

    monkeypatch.setattr(bon, "honest_ok", lambda domain, ep: len(ep) > 0)
    results = pipeline.generate(ENV, "tiny", backbone="tiny", episodes=6, batch_size=4, max_steps=12,
                                progress=False)
    assert [r.level for r in results] == ["rephrase", "easy", "hard"]
    env = imaginebench.make(ENV, level="hard")
    for r in results:
        real, imaginary = get_dataset(ENV, r.level, "tiny")
        assert imaginary is not None and len(imaginary) == 6
        md = imaginary.metadata
        assert md["source"] == "imaginary" and md["backbone"] == "tiny" and md["checkpoint_step"] == 8
        assert "Generate a rollout" in md["prompt"] and md["sampling"]["temperature"] == 1.0
        assert md["filter"] == "honest" and md["oracle"] is False and md["device"] == "cpu"
        _, unfiltered = get_dataset(ENV, r.level, "tiny", variant="unfiltered")
        assert unfiltered is not None and len(unfiltered) == 6 and unfiltered.metadata["filter"] == "none"
        # The step cap never cuts below what the level's tasks need (expert lengths).
        assert all(v >= 1 for v in md["step_cap"]["floor"].values())
        # Instructions come from the level's bank, never from the real data.
        assert not set(imaginary.instructions) & set(real.instructions)
        # Tasks balanced round-robin over the level's tasks.
        tasks = imaginebench.make(ENV, level=r.level, encode_instruction=False).unwrapped.tasks
        assert imaginary.episode_tasks() == [tasks[i % len(tasks)] for i in range(6)]
        q = json.loads(r.path.with_name(r.path.stem + ".quality.json").read_text())
        for key in ("consistency", "transition_correctness", "legality", "replay_success"):
            assert 0.0 <= q[key] <= 1.0 and 0.0 <= q["all"][key] <= 1.0
        assert q["filter"] == "honest" and sum(v["kept"] for v in q["per_task"].values()) == 6
    # The env's own get_dataset sees it too.
    _, imaginary = env.get_dataset(level="hard", profile="tiny")
    assert imaginary is not None

    reports = pipeline.quality(ENV, "tiny", "easy", progress=False)
    assert reports[0]["level"] == "easy" and reports[0]["episodes"] == 6

    with pytest.raises(FileExistsError, match="--overwrite"):
        pipeline.generate(ENV, "tiny", "hard", backbone="tiny", episodes=2, progress=False)


def test_cli(real_data):
    runner = CliRunner()
    res = runner.invoke(app, ["imagine", "generate", "--env", ENV, "--profile", "tiny", "--backbone", "tiny"])
    hint = "imaginebench imagine train --env CLEVR-v0 --backbone tiny --profile tiny"
    assert res.exit_code == 1 and hint in res.output
    res = runner.invoke(app, ["imagine", "train", "--env", ENV, "--profile", "tiny", "--backbone", "gpt-17"])
    assert res.exit_code == 2 and "smollm2-135m, tiny" in res.output
    res = runner.invoke(app, ["imagine", "train", "--env", ENV, "--profile", "tiny", "--backbone", "tiny",
                              "--lora", "--steps", "3"])
    assert res.exit_code == 0, res.output
    assert "validation explanation" in res.output
    res = runner.invoke(app, ["imagine", "generate", "--env", ENV, "--profile", "tiny", "--backbone", "tiny",
                              "--level", "easy", "--episodes", "4", "--temperature", "0", "--keep", "none"])
    assert res.exit_code == 0, res.output
    assert "consistency" in res.output and "easy" in res.output and "filter none" in res.output
    res = runner.invoke(app, ["imagine", "quality", "--env", ENV, "--profile", "tiny", "--level", "easy", "--json",
                              "--variant", "unfiltered"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)[0]["level"] == "easy"
    res = runner.invoke(app, ["imagine", "quality", "--env", ENV, "--profile", "tiny", "--level", "medium"])
    assert res.exit_code == 2 and "rephrase, easy, hard, all" in res.output
    res = runner.invoke(app, ["imagine", "quality", "--env", ENV, "--profile", "tiny", "--level", "hard"])
    assert res.exit_code == 1 and "imaginebench imagine generate" in res.output


def test_filtering_a_stored_dataset_keeps_the_original(real_data, data_home):
    from imaginebench.data.hub import dataset_path
    from imaginebench.data.storage import load_dataset, save_dataset
    from imaginebench.data.dataset import EpisodeDataset
    from imaginebench.imagination.quality import unfiltered_path

    real, _ = get_dataset(ENV, "train", "tiny")
    episodes = list(real)[:5]
    bad = episodes[2].states.copy()
    bad[-1, :2] = bad[-1, 2:4]  # two balls on one spot: illegal
    episodes[2] = replace(episodes[2], states=bad)
    path = dataset_path(ENV, "imaginary", "rephrase", "tiny")
    save_dataset(EpisodeDataset.from_episodes(episodes, metadata={"source": "imaginary"}, state_dim=10), path)
    original = path.read_bytes()

    report = pipeline.quality(ENV, "tiny", "rephrase", progress=False, keep="oracle")[0]
    assert report["dropped"] == 1 and report["kept"] == 4 and report["episodes"] == 5
    assert unfiltered_path(path).read_bytes() == original  # nothing already written is lost
    filtered = load_dataset(path)
    assert len(filtered) == 4 and filtered.metadata["filtered"] and filtered.metadata["dropped"] == 1
    assert filtered.metadata["oracle"] is True and report["oracle"] is True
    assert [ep.states.tobytes() for ep in filtered] == [episodes[i].states.tobytes() for i in (0, 1, 3, 4)]
    # Filtering again drops nothing more and leaves the original copy alone.
    again = pipeline.quality(ENV, "tiny", "rephrase", progress=False, keep="oracle")[0]
    assert again["kept"] == 4 and again["dropped"] == 1
    assert unfiltered_path(path).read_bytes() == original
    # Scored again, the report describes the 4 kept and keeps what only generation knew (the scores of
    # all its candidates, whose sample is not beside the file here)
    q = json.loads(quality_path(path).read_text())
    quality_path(path).write_text(json.dumps({**q, "generated": 20, "all": {"consistency": 0.5}}))
    rescored = pipeline.quality(ENV, "tiny", "rephrase", progress=False)[0]
    assert rescored["episodes"] == 4 and rescored["kept"] == 4 and rescored["candidates_per_kept"] == 5.0
    assert rescored["all"] == {"consistency": 0.5}

    # All rollouts bad: one-line error, the file is not touched.
    save_dataset(EpisodeDataset.from_episodes([episodes[2]], metadata={"source": "imaginary"}, state_dim=10),
                 path, overwrite=True)
    before = path.read_bytes()
    runner = CliRunner()
    res = runner.invoke(app, ["imagine", "quality", "--env", ENV, "--profile", "tiny", "--level", "rephrase",
                              "--keep", "oracle"])
    assert res.exit_code == 1 and "drop all 1" in res.output and "Traceback" not in res.output
    assert path.read_bytes() == before


def test_oracle_variant_leaves_the_honest_dataset_alone(real_data, data_home):
    from imaginebench.data.dataset import EpisodeDataset
    from imaginebench.data.hub import imaginary_path
    from imaginebench.data.storage import save_dataset

    real, _ = get_dataset(ENV, "train", "tiny")
    episodes = list(real)[:4]
    bad = episodes[1].states.copy()
    bad[1] = bad[0]  # nothing moves: a wrong transition, which only the simulator can tell
    episodes[1] = replace(episodes[1], states=bad)
    path = imaginary_path(ENV, "rephrase", "tiny")
    save_dataset(EpisodeDataset.from_episodes(episodes, metadata={"source": "imaginary", "filter": "honest"},
                                              state_dim=10), path)
    before = path.read_bytes()
    res = CliRunner().invoke(app, ["imagine", "quality", "--env", ENV, "--profile", "tiny", "--level", "rephrase",
                                   "--write-oracle"])
    assert res.exit_code == 0, res.output
    assert path.read_bytes() == before
    _, oracle = get_dataset(ENV, "rephrase", "tiny", variant="oracle")
    assert len(oracle) == 3 and oracle.metadata["oracle"] is True and oracle.metadata["filter"] == "oracle"
    assert oracle.metadata["oracle_rule"] == "transitions"

    # --oracle-rule replay judges the actions by their outcome only: the frozen state is not
    # checked, and its expert actions still reach the goal in the simulator
    res = CliRunner().invoke(app, ["imagine", "quality", "--env", ENV, "--profile", "tiny", "--level", "rephrase",
                                   "--write-oracle", "--oracle-rule", "replay", "--overwrite"])
    assert res.exit_code == 0, res.output
    assert "oracle (replay) kept 4 of 4" in res.output
    _, by_outcome = get_dataset(ENV, "rephrase", "tiny", variant="oracle")
    assert by_outcome.metadata["oracle_rule"] == "replay" and len(by_outcome) == 4

    # --oracle-replay also asks the imagined actions to reach the goal in the simulator: an expert
    # rollout cut before its last step keeps correct, legal transitions but never reaches its goal
    cut = list(real)[:4]
    i = next(k for k, e in enumerate(cut) if len(e) >= 2)
    e = cut[i]
    cut[i] = replace(e, states=e.states[:-1], actions=e.actions[:-1], rewards=e.rewards[:-1],
                     terminals=np.zeros_like(e.terminals[:-1]), truncations=e.truncations[:-1],
                     successes=np.zeros_like(e.successes[:-1]))
    save_dataset(EpisodeDataset.from_episodes(cut, metadata={"source": "imaginary", "filter": "honest"},
                                              state_dim=10), path, overwrite=True)
    res = CliRunner().invoke(app, ["imagine", "quality", "--env", ENV, "--profile", "tiny", "--level", "rephrase",
                                   "--write-oracle", "--oracle-replay", "--overwrite"])
    assert res.exit_code == 0, res.output
    assert "oracle (transitions+replay) kept 3 of 4" in res.output
    _, replayed = get_dataset(ENV, "rephrase", "tiny", variant="oracle")
    assert replayed.metadata["oracle_rule"] == "transitions+replay" and len(replayed) == 3
    assert not any(len(r) == len(cut[i]) and np.array_equal(r.states, cut[i].states) for r in replayed)


@pytest.mark.parametrize("args, message", [
    (["imagine", "generate", "--keep", "strict"], "Unknown keep mode 'strict'"),
    (["imagine", "generate", "--budget", "0.5"], "budget must be >= 1"),
    (["imagine", "generate", "--device", "tpu9"], "Unknown device 'tpu9'"),
    (["imagine", "generate", "--max-steps", "0"], "--max-steps must be at least 1"),
    (["imagine", "quality", "--variant", "best"], "Unknown imaginary data variant 'best'"),
    (["imagine", "quality", "--oracle-replay"], "--oracle-replay only applies with --write-oracle"),
    (["imagine", "quality", "--oracle-rule", "replay"], "--oracle-rule only applies with --write-oracle"),
    (["imagine", "quality", "--write-oracle", "--oracle-rule", "replays"], "Unknown --oracle-rule 'replays'"),
    (["imagine", "quality", "--write-oracle", "--oracle-replay", "--oracle-rule", "replay"],
     "--oracle-replay means --oracle-rule transitions+replay"),
    (["train", "--algo", "discrete_bc", "--level", "easy", "--imaginary", "perfect"], "Unknown --imaginary 'perfect'"),
])
def test_bad_imagination_options_give_one_line_errors(args, message):
    res = CliRunner().invoke(app, [*args, "--env", ENV, "--profile", "tiny"])
    assert res.exit_code != 0 and message in res.output and "Traceback" not in res.output
    assert len([line for line in res.output.splitlines() if line.startswith("error")]) == 1


def test_warm_start_from_a_folder_that_keeps_only_its_best_weights(real_data, data_home, tmp_path):
    """Checkpoints kept for generation (as the repository's notes/artifacts) hold the best weights
    and checkpoint.json only: a warm start loads exactly those, so it must not ask for the rest."""
    import shutil

    full = pipeline.train(ENV, "tiny", "tiny", lora=False, steps=4, eval_every=2, early_stop_patience=5,
                          out=tmp_path / "full",
                          progress=False)
    meta = json.loads((full.checkpoint / "checkpoint.json").read_text())
    kept = tmp_path / "kept"
    kept.mkdir()
    best = "best-00000002-kept.safetensors"  # a best file apart from the (absent) last weights
    shutil.copy(full.checkpoint / meta["files"]["best"], kept / best)
    meta["sha256"][best] = meta["sha256"][meta["files"]["best"]]
    meta["files"]["best"] = best
    (kept / "checkpoint.json").write_text(json.dumps(meta))
    assert not (kept / meta["files"]["weights"]).exists()
    warm = pipeline.train(ENV, "tiny", "tiny", lora=False, steps=1, out=tmp_path / "warm", progress=False,
                          init_from=str(kept))
    assert warm.steps_done == 1
    assert json.loads((warm.checkpoint / "checkpoint.json").read_text())["train"]["init_from"] == str(kept)

    (kept / best).unlink()  # nothing left to load: one clear error, nothing trained
    with pytest.raises(FileNotFoundError, match="missing"):
        pipeline.train(ENV, "tiny", "tiny", lora=False, steps=1, out=tmp_path / "never", progress=False,
                       init_from=str(kept))
    assert not (tmp_path / "never").exists()


def test_quality_scores_the_shipped_reference_dataset_in_an_empty_data_home(real_data, data_home, tmp_path,
                                                                            monkeypatch):
    """`imagine quality` (and --write-oracle) read the reference dataset get_dataset falls back to,
    instead of asking to generate one; the package's folder is left as installed."""
    import hashlib

    from imaginebench.data import hub
    from imaginebench.data.dataset import EpisodeDataset
    from imaginebench.data.storage import save_dataset

    real, _ = get_dataset(ENV, "train", "tiny")
    episodes = list(real)[:4]
    bad = episodes[1].states.copy()
    bad[1] = bad[0]  # a wrong transition only the simulator can tell
    episodes[1] = replace(episodes[1], states=bad)
    root = tmp_path / "reference_data"
    shipped = save_dataset(EpisodeDataset.from_episodes(episodes, metadata={"source": "imaginary", "filter": "honest"},
                                                        state_dim=10), root / ENV / "tiny" / "imaginary-rephrase.npz")
    digest = hashlib.sha256(shipped.read_bytes()).hexdigest()
    (root / hub.REFERENCE_SUMS).write_text(f"{digest}  {ENV}/tiny/imaginary-rephrase.npz\n")
    monkeypatch.setattr(hub, "REFERENCE_ROOT", root)
    assert not hub.imaginary_path(ENV, "rephrase", "tiny").exists()
    before = sorted(p.name for p in shipped.parent.iterdir())

    res = CliRunner().invoke(app, ["imagine", "quality", "--env", ENV, "--profile", "tiny", "--level", "rephrase"])
    assert res.exit_code == 0 and "rephrase" in res.output, res.output
    report = pipeline.quality(ENV, "tiny", "rephrase", progress=False)[0]
    assert report["reference"] is True and report["dataset"] == str(shipped) and report["episodes"] == 4
    assert report["transition_correctness"] < 1.0 and report["legality"] == 1.0
    assert sorted(p.name for p in shipped.parent.iterdir()) == before  # no report written into the package

    res = CliRunner().invoke(app, ["imagine", "quality", "--env", ENV, "--profile", "tiny", "--level", "rephrase",
                                   "--write-oracle"])
    assert res.exit_code == 0, res.output
    assert "kept 3 of 4" in res.output
    _, oracle = get_dataset(ENV, "rephrase", "tiny", variant="oracle")
    assert len(oracle) == 3 and oracle.metadata["oracle_source"] == str(shipped)
    assert "reference" not in oracle.metadata  # built here, not shipped
    assert hub.imaginary_path(ENV, "rephrase", "tiny", "oracle").is_file()

    # A damaged shipped file: one line that says to reinstall, nothing written.
    (root / hub.REFERENCE_SUMS).write_text(f"{'0' * 64}  {ENV}/tiny/imaginary-rephrase.npz\n")
    res = CliRunner().invoke(app, ["imagine", "quality", "--env", ENV, "--profile", "tiny", "--level", "rephrase"])
    assert res.exit_code == 1 and "reinstall" in res.output and "Traceback" not in res.output
