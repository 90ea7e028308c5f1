from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

import imaginebench
from imaginebench.data import build_real, collect, dataset_path, get_dataset, load_dataset


def test_same_seed_gives_identical_dataset_independent_of_workers():
    a = collect("CLEVR-v0", "train", 24, seed=7, progress=False)
    b = collect("CLEVR-v0", "train", 24, seed=7, workers=2, progress=False)
    c = collect("CLEVR-v0", "train", 24, seed=8, progress=False)
    for name in a.ARRAYS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.instructions == b.instructions
    assert not np.array_equal(a.states[:10], c.states[:10])


def test_collected_labels_match_the_domain_functions():
    ds = collect("CLEVR-v0", "train", 12, seed=1, progress=False)
    domain = imaginebench.envs.load_domain("CLEVR-v0")
    assert len(ds.tasks) == 12  # round-robin over the 80 train tasks
    for ep in ds:
        task = domain.task(ep.task)
        assert ep.instruction in task.bank("train")
        rewards, success = domain.score_rollout(task, ep.states.astype(np.float64), ep.actions)
        np.testing.assert_array_equal(success, ep.successes)
        np.testing.assert_allclose(rewards, ep.rewards, atol=1e-5)
        assert ep.terminals[-1] == ep.successes[-1]
        assert not (ep.terminals & ep.truncations).any()
    assert ds.episode_success().mean() >= 0.9


def test_get_dataset_round_trip_and_messages(caplog):
    with pytest.raises(FileNotFoundError, match="imaginebench data collect --env CLEVR-v0 --level train --profile tiny"):
        get_dataset("CLEVR-v0", "easy", profile="tiny")
    path = build_real("CLEVR-v0", "train", "tiny", episodes=10, progress=False)
    assert path == dataset_path("CLEVR-v0", "real", "train", "tiny")
    assert path.name == "real-train.npz" and dataset_path("CLEVR-v0", "real", "easy", "tiny").name == "real-easy.npz"
    with pytest.raises(FileExistsError):
        build_real("CLEVR-v0", "train", "tiny", episodes=10, progress=False)
    real, imaginary = get_dataset("CLEVR-v0", "train", profile="tiny")
    assert len(real) == 10 and imaginary is None
    with caplog.at_level(logging.WARNING, logger="imaginebench.data"):
        real, imaginary = get_dataset("CLEVR-v0", "hard", profile="tiny")
    assert imaginary is None and "imaginebench imagine generate" in caplog.text
    env = imaginebench.make("CLEVR-v0", level="easy", encode_instruction=False)
    real2, _ = env.get_dataset(profile="tiny")
    assert real2.metadata == load_dataset(path).metadata and real2.metadata["seed"] == 0


def test_unknown_source_and_train_imaginary():
    with pytest.raises(ValueError, match="real, imaginary"):
        dataset_path("CLEVR-v0", "dreamed", "train")
    with pytest.raises(ValueError, match="train level has no imaginary"):
        dataset_path("CLEVR-v0", "imaginary", "train")
    with pytest.raises(ValueError, match="tiny, small, paper"):
        dataset_path("CLEVR-v0", "real", "train", profile="huge")


@pytest.mark.xdist_group("ray")
def test_collection_as_ray_tasks_gives_the_same_dataset():
    pytest.importorskip("ray")
    from typer.testing import CliRunner

    from imaginebench.cli import app

    local = collect("CLEVR-v0", "train", 120, seed=3, workers=1, progress=False)
    on_ray = collect("CLEVR-v0", "train", 120, seed=3, workers=2, progress=False, ray_address="local")
    for name in ("states", "actions", "rewards", "terminals", "truncations", "lengths"):
        assert np.array_equal(getattr(local, name), getattr(on_ray, name)), name
    assert local.instructions == on_ray.instructions and local.tasks == on_ray.tasks
    result = CliRunner().invoke(app, ["data", "collect", "--env", "CLEVR-v0", "--episodes", "60", "--ray", "local",
                                      "--workers", "2"])
    assert result.exit_code == 0, result.output
    assert load_dataset(dataset_path("CLEVR-v0", "real", "train")).metadata["episodes"] == 60


def test_a_collection_keeps_its_finished_chunks_and_a_rerun_takes_the_valid_ones_over(tmp_path, monkeypatch):
    import importlib

    collect_module = importlib.import_module("imaginebench.data.collect")
    from imaginebench.envs.registry import load_domain

    folder = collect_module.chunk_folder(tmp_path, load_domain("CLEVR-v0"), "train", 3, "expert")
    whole = collect("CLEVR-v0", "train", 120, seed=3, progress=False)
    ran: list[tuple[int, int]] = []
    real_range = collect_module._collect_range
    monkeypatch.setattr(collect_module, "_collect_range", lambda job: ran.append(job[2:4]) or real_range(job))

    first = collect("CLEVR-v0", "train", 120, seed=3, progress=False, keep_chunks=folder)
    assert ran == [(0, 50), (50, 100), (100, 120)]
    assert sorted(p.name for p in folder.iterdir()) == ["chunk-0000000-0000050.npz", "chunk-0000050-0000100.npz",
                                                       "chunk-0000100-0000120.npz"]
    # an interrupted collection's state: one chunk lost, one damaged; the third is taken over as it is
    (folder / "chunk-0000050-0000100.npz").unlink()
    (folder / "chunk-0000000-0000050.npz").write_bytes(b"not a dataset")
    ran.clear()
    resumed = collect("CLEVR-v0", "train", 120, seed=3, progress=False, keep_chunks=folder)
    assert ran == [(0, 50), (50, 100)]
    # a larger collection of the same seed reuses every chunk of the same episode indices
    ran.clear()
    collect("CLEVR-v0", "train", 150, seed=3, progress=False, keep_chunks=folder)
    assert ran == [(100, 150)]  # the kept 100-120 chunk covers other indices than 100-150's
    for ds in (first, resumed):
        for name in whole.ARRAYS:
            np.testing.assert_array_equal(getattr(ds, name), getattr(whole, name))
        assert ds.instructions == whole.instructions and ds.metadata == whole.metadata
    # another seed or another level is another folder; other code is another folder too
    assert collect_module.chunk_folder(tmp_path, load_domain("CLEVR-v0"), "train", 4, "expert") != folder
    assert collect_module.chunk_folder(tmp_path, load_domain("CLEVR-v0"), "easy", 3, "expert") != folder
    monkeypatch.setattr(collect_module, "code_digest", lambda domain: "0" * 16)
    assert collect_module.chunk_folder(tmp_path, load_domain("CLEVR-v0"), "train", 3, "expert") != folder


def test_build_real_removes_its_kept_chunks_once_the_dataset_is_written():
    from imaginebench.config import data_home

    path = build_real("CLEVR-v0", "train", "tiny", episodes=60, progress=False)
    assert path.exists()
    assert not list((data_home() / "cache" / "collect").rglob("*.npz"))


def test_the_code_digest_reads_code_not_docstrings_or_comments(tmp_path, monkeypatch):
    """A collection's kept chunks survive an edited docstring, comment or layout in the domain's
    folder, and not a changed line of code."""
    import importlib
    import shutil

    from imaginebench.envs.registry import load_domain

    collect_module = importlib.import_module("imaginebench.data.collect")

    domain = load_domain("CLEVR-v0")
    folder = tmp_path / "clevr"
    shutil.copytree(Path(collect_module.__file__).parents[1] / "domains" / "clevr", folder)
    module = folder / "tasks.py"
    monkeypatch.setattr(collect_module.inspect, "getfile", lambda _: str(folder / "domain.py"))
    before = collect_module.code_digest(domain)
    text = module.read_text()
    module.write_text(text.replace('"""', '"""Edited. ', 1) + "\n# a comment\n\n\n")
    assert collect_module.code_digest(domain) == before
    module.write_text(text + "\nEXTRA = 1\n")
    assert collect_module.code_digest(domain) != before
