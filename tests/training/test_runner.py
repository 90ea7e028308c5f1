"""Training runs: records, determinism, resume, skipping, data variants and their errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from imaginebench.evaluation import eval_seed, stable_view
from imaginebench.training import RunSpec, train
from imaginebench.evaluation.protocol import Evaluator, last_checkpoints_mean
from imaginebench.run_folder import CHECKPOINT_NAME, MODEL_NAME
from tests.algos.helpers import HASH_ENCODER, HashEncoder, build_toy_data, save_imaginary

SMALL = dict(profile="tiny", encoder=HASH_ENCODER, train_steps=40, checkpoint_every=10, eval_episodes_per_task=2,
             batch_size=16, algo_options=(("hidden_units", (16, 16)),))


class Stop(Exception):
    pass


@pytest.fixture
def toy_data(toy_envs):
    build_toy_data("Toy-v0", ("train", "easy"), episodes=30)
    build_toy_data("ToyCont-v0", ("train",), episodes=30)
    save_imaginary("Toy-v0", "easy")
    return toy_envs


def test_record_has_the_protocol_fields(toy_data, data_home):
    result = train(RunSpec("Toy-v0", "bc", level="easy", seed=0, **SMALL), progress=False)
    rec = result.record
    assert result.path == data_home / "runs/Toy-v0/tiny/easy/imaginary/discrete_bc/seed0"
    assert (result.path / "record.json").exists() and (result.path / MODEL_NAME).exists()
    assert not (result.path / CHECKPOINT_NAME).exists()
    assert rec["algo"] == "discrete_bc" and rec["algo_requested"] == "bc" and rec["algo_family"] == "bc"
    assert [c["step"] for c in rec["curve"]] == [10, 20, 30, 40]
    assert rec["eval"]["levels"] == ["train", "easy"]
    assert rec["eval"]["episodes"] == {"train": 4, "easy": 2}  # 2 per task, balanced
    assert rec["score"]["easy"] == pytest.approx(last_checkpoints_mean([c["easy"]["success"] for c in rec["curve"]]))
    assert rec["success"] == rec["score"]["easy"]
    assert set(rec["per_task"]["train"]) == {"go_left", "go_right"}
    assert [(s["name"], s["weight"]) for s in rec["sources"]] == [("real", 0.5), ("imaginary", 0.5)]
    assert rec["sources"][0]["episodes"] == 30 and rec["mix_ratio"] == 0.5
    assert {"torch", "d3rlpy", "imaginebench"} <= set(rec["versions"])
    assert rec["config"]["algorithm"]["hidden_units"] == [16, 16]
    assert rec["timing"]["wall_time_s"] > 0
    json.dumps(rec)  # serialisable
    import d3rlpy  # the saved model reloads with its config, scaler, encoder and optimiser factories

    model = d3rlpy.load_learnable(str(result.path / MODEL_NAME))
    obs = np.concatenate([[2.0], HashEncoder().encode(["go to the left end"])[0]])[None].astype(np.float32)
    assert model.predict(obs).shape == (1,)


def test_a_domain_cards_algorithm_settings_reach_the_run_and_the_runs_own_come_last(toy_data, data_home,
                                                                                     monkeypatch):
    from types import MappingProxyType

    from imaginebench.training.spec import resolve_run
    from tests.algos.helpers import ToyContDomain

    monkeypatch.setattr(ToyContDomain, "algo_defaults", MappingProxyType({"bc": {"lr_decay": "cosine"}}))
    assert resolve_run(RunSpec("ToyCont-v0", "bc", **SMALL)).config().lr_decay == "cosine"
    assert resolve_run(RunSpec("ToyCont-v0", "td3bc", **SMALL)).config().to_dict() == \
        resolve_run(RunSpec("ToyCont-v0", "td3bc", **SMALL)).algo.default_config(hidden_units=(16, 16)).to_dict()
    own = dict(SMALL, algo_options=SMALL["algo_options"] + (("lr_decay", "none"),))
    assert resolve_run(RunSpec("ToyCont-v0", "bc", **own)).config().lr_decay == "none"

    rec = train(RunSpec("ToyCont-v0", "bc", seed=0, **SMALL), progress=False).record
    assert rec["config"]["algorithm"]["lr_decay"] == "cosine"
    import d3rlpy  # the saved model reloads with its schedule, annealed to 0 over the run's 40 steps

    model = d3rlpy.load_learnable(str(data_home / "runs/ToyCont-v0/tiny/train/real/bc/seed0" / MODEL_NAME))
    assert model.impl.modules.optim.optim.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)

    # min-max action scaling from a card: trained in [-1, 1], saved with its scaler, predicts in the data's units
    monkeypatch.setattr(ToyContDomain, "algo_defaults", MappingProxyType({"td3bc": {"action_scaling": "minmax"}}))
    result = train(RunSpec("ToyCont-v0", "td3bc", seed=0, **SMALL), progress=False)
    assert result.record["config"]["algorithm"]["action_scaling"] == "minmax"
    model = d3rlpy.load_learnable(str(result.path / MODEL_NAME))
    scaler = model.config.action_scaler
    assert type(scaler).__name__ == "MinMaxActionScaler"
    obs = np.random.default_rng(0).normal(size=(16, model.impl.observation_shape[0])).astype(np.float32)
    predicted = model.predict(obs)
    assert (predicted >= scaler.minimum - 1e-5).all() and (predicted <= scaler.maximum + 1e-5).all()


def test_every_domain_cards_algorithm_settings_make_a_valid_config_of_a_fitting_algorithm():
    """A card setting is a field of that algorithm with a value it accepts (a misspelt field or a
    discrete algorithm on a continuous domain would fail every run of the domain, late)."""
    from imaginebench.algos.registry import get_spec
    from imaginebench.envs.registry import ENV_IDS, domain_class

    for env_id in ENV_IDS:
        card = domain_class(env_id)
        for name, settings in card.algo_defaults.items():
            spec = get_spec(name)
            assert spec.discrete == card.discrete_actions, (env_id, name)
            config = spec.default_config(**dict(settings))
            assert {k: getattr(config, k) for k in settings} == dict(settings), (env_id, name)
    assert dict(domain_class("LIBERO-v0").algo_defaults["td3bc"]) == {"action_scaling": "minmax", "alpha": 0.25}


def test_same_seed_gives_the_same_record(toy_data, data_home, tmp_path, monkeypatch):
    first = train(RunSpec("ToyCont-v0", "td3bc", seed=3, **SMALL), progress=False).record
    monkeypatch.setenv("IMAGINEBENCH_HOME", str(tmp_path / "other_home"))
    build_toy_data("ToyCont-v0", ("train",), episodes=30)
    second = train(RunSpec("ToyCont-v0", "td3bc", seed=3, **SMALL), progress=False).record
    first_sources = [{k: v for k, v in s.items() if k != "path"} for s in first.pop("sources")]
    second_sources = [{k: v for k, v in s.items() if k != "path"} for s in second.pop("sources")]
    assert first_sources == second_sources
    assert stable_view(first) == stable_view(second)
    assert first["timing"] != {} and "timing" not in stable_view(first)
    assert first["files"] == second["files"]  # the same weights give the same model.pt, byte for byte


def test_killed_run_resumes_from_its_checkpoint_and_finished_run_is_skipped(toy_data):
    spec = RunSpec("Toy-v0", "discrete_cql", level="easy", seed=1, **SMALL)

    def kill_after_second(step, entry):
        if step == 20:
            raise Stop

    with pytest.raises(Stop):
        train(spec, progress=False, on_checkpoint=kill_after_second)
    from imaginebench.training import run_dir

    assert (run_dir(spec) / CHECKPOINT_NAME).exists() and not (run_dir(spec) / "record.json").exists()
    seen = []
    resumed = train(spec, progress=False, on_checkpoint=lambda step, entry: seen.append(step))
    assert resumed.resumed_from == 20 and seen == [30, 40] and not resumed.skipped
    assert [c["step"] for c in resumed.record["curve"]] == [10, 20, 30, 40]

    # an uninterrupted run of the same seed gives the same record
    import shutil

    shutil.rmtree(run_dir(spec))
    straight = train(spec, progress=False)
    assert stable_view(straight.record) == stable_view(resumed.record)

    again = train(spec, progress=False, on_checkpoint=lambda *a: pytest.fail("trained a finished run"))
    assert again.skipped and again.record == straight.record


def test_real_upper_bound_and_real_only_runs(toy_data):
    ub = train(RunSpec("Toy-v0", "bc", level="easy", data="real-upper-bound", **SMALL), progress=False)
    assert [s["name"] for s in ub.record["sources"]] == ["real", "real-easy"]
    assert ub.record["sources"][1]["level"] == "easy" and ub.record["data"] == "real-upper-bound"
    assert "real-upper-bound" in str(ub.path)
    only = train(RunSpec("Toy-v0", "bc", level="easy", data="real", **SMALL), progress=False)
    assert [s["name"] for s in only.record["sources"]] == ["real"] and only.record["mix_ratio"] == 0.0


def test_missing_data_names_the_command_that_builds_it(toy_envs):
    with pytest.raises(FileNotFoundError, match="imaginebench data collect --env Toy-v0 --level train --profile tiny"):
        train(RunSpec("Toy-v0", "bc", **SMALL), progress=False)
    build_toy_data("Toy-v0", ("train",), episodes=10)
    with pytest.raises(FileNotFoundError, match="imaginebench imagine generate --env Toy-v0 --level hard"):
        train(RunSpec("Toy-v0", "bc", level="hard", **SMALL), progress=False)
    with pytest.raises(FileNotFoundError, match="data collect --env Toy-v0 --level hard"):
        train(RunSpec("Toy-v0", "bc", level="hard", data="real-upper-bound", **SMALL), progress=False)


def test_spec_validation():
    with pytest.raises(ValueError, match="novel level"):
        RunSpec("Toy-v0", "bc", level="train", data="real-upper-bound")
    with pytest.raises(ValueError, match="Valid choices: imaginary, imaginary-unfiltered, imaginary-oracle, imaginary-grounded, real, real-retrieval, real-upper-bound"):
        RunSpec("Toy-v0", "bc", data="fake")
    with pytest.raises(ValueError, match="Unknown level"):
        RunSpec("Toy-v0", "bc", level="medium")


def test_evaluation_is_balanced_seeded_and_reads_success_at_episode_end(toy_envs):
    evaluator = Evaluator("Toy-v0", "train", episodes_per_task=3, seed=5, encoder=HashEncoder(), pool=4)
    schedule = evaluator.schedule()
    assert [t for t, _ in schedule].count("go_left") == [t for t, _ in schedule].count("go_right") == 3
    assert [s for _, s in schedule] == [eval_seed(5, "train", i) for i in range(6)]
    always_right = evaluator(lambda obs: np.ones(len(obs), dtype=np.int64))
    assert always_right.per_task == {"go_left": 0.0, "go_right": 1.0} and always_right.success_rate == 0.5
    assert always_right.episodes == 6
    assert evaluator(lambda obs: np.ones(len(obs), dtype=np.int64)) == always_right  # same seeds every time


def test_other_settings_need_a_tag(toy_data):
    import dataclasses

    spec = RunSpec("Toy-v0", "bc", seed=4, **SMALL)
    first = train(spec, progress=False)
    with pytest.raises(ValueError, match=r"other settings \(standardize 'all' there vs 'none' now\).*--tag"):
        train(dataclasses.replace(spec, standardize="none"), progress=False)
    tagged = train(dataclasses.replace(spec, standardize="none", tag="nostd"), progress=False)
    assert tagged.path.parent.name == "discrete_bc@nostd" and tagged.record["tag"] == "nostd"
    assert first.record["settings"]["standardize"] == "all" and tagged.record["settings"]["standardize"] == "none"


def test_a_run_made_before_an_algorithm_field_existed_is_still_finished_unless_the_field_now_differs(
        toy_data, monkeypatch):
    """A record (or checkpoint) written before a config field was added does not name it: it ran
    at the field's default, so the finished run is skipped; a card that now sets the field to
    something else is a clash, as any other change of settings."""
    import json
    from types import MappingProxyType

    from imaginebench.evaluation.records import RECORD_NAME
    from tests.algos.helpers import ToyContDomain

    spec = RunSpec("ToyCont-v0", "bc", seed=5, **SMALL)
    first = train(spec, progress=False)
    record_path = first.path / RECORD_NAME
    record = json.loads(record_path.read_text())
    assert record["config"]["algorithm"].pop("lr_decay") == "none"  # as made before lr_decay existed
    record_path.write_text(json.dumps(record))
    again = train(spec, progress=False)
    assert again.skipped and again.record["score"] == first.record["score"]
    monkeypatch.setattr(ToyContDomain, "algo_defaults", MappingProxyType({"bc": {"lr_decay": "cosine"}}))
    with pytest.raises(ValueError, match=r"other settings \(algorithm lr_decay 'none' there vs 'cosine' now\)"):
        train(spec, progress=False)


def test_settings_name_the_resolved_encoder(toy_envs):
    from imaginebench.language import DEFAULT_ENCODER

    assert RunSpec("Toy-v0", "bc", profile="tiny").settings()["encoder"] == DEFAULT_ENCODER
    assert RunSpec("Toy-v0", "bc", profile="tiny", encoder=HASH_ENCODER).settings()["encoder"] == HASH_ENCODER


def test_a_checkpoint_whose_model_bytes_changed_is_refused(toy_data):
    import torch

    from imaginebench.training import run_dir

    spec = RunSpec("Toy-v0", "discrete_bc", seed=3, **SMALL)

    def stop(step, entry):
        raise Stop

    with pytest.raises(Stop):
        train(spec, progress=False, on_checkpoint=stop)
    path = run_dir(spec) / CHECKPOINT_NAME
    state = torch.load(path, weights_only=True)
    assert len(state["model_sha256"]) == 64
    model = bytearray(state["model"])
    model[len(model) // 2] ^= 0x01  # a valid torch file whose model bytes are not the ones saved
    torch.save({**state, "model": bytes(model)}, path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="Cannot resume from .*SHA-256.*delete that file"):
        train(spec, progress=False)
    assert path.read_bytes() == before  # left for the user to look at, not overwritten


def test_an_algorithm_batch_size_is_the_batch_sampled_and_recorded(toy_data, monkeypatch):
    from imaginebench.algos.sampler import MixedReplaySource

    sizes = []
    original = MixedReplaySource.sample_transition_batch
    monkeypatch.setattr(MixedReplaySource, "sample_transition_batch",
                        lambda self, n: (sizes.append(n), original(self, n))[1])
    options = (("hidden_units", (16, 16)), ("batch_size", 8))
    record = train(RunSpec("Toy-v0", "bc", level="easy", **{**SMALL, "algo_options": options}), progress=False).record
    assert set(sizes) == {8} and record["batch_size"] == 8 and SMALL["batch_size"] == 16


def test_a_finished_run_made_with_other_algorithm_values_is_not_skipped(toy_data):
    """E.g. a run made under an older package default: skipping it would report old numbers as new."""
    spec = RunSpec("Toy-v0", "bc", level="easy", **SMALL)
    first = train(spec, progress=False)
    record_path = first.path / "record.json"
    record = json.loads(record_path.read_text())
    record["config"]["algorithm"]["learning_rate"] = 0.5
    record_path.write_text(json.dumps(record))
    with pytest.raises(ValueError, match="algorithm learning_rate 0.5 there vs 0.001 now.*--tag"):
        train(spec, progress=False)


def test_a_checkpoint_made_with_other_algorithm_values_is_not_resumed(toy_data):
    import torch

    spec = RunSpec("Toy-v0", "discrete_cql", level="easy", seed=1, **SMALL)
    with pytest.raises(Stop):
        train(spec, progress=False, on_checkpoint=lambda step, entry: (_ for _ in ()).throw(Stop()))
    from imaginebench.training import run_dir

    path = run_dir(spec) / CHECKPOINT_NAME
    state = torch.load(path, weights_only=True)
    assert state["settings"]["algorithm alpha"] == 1.0
    state["settings"]["algorithm alpha"] = 4.0
    torch.save(state, path)
    with pytest.raises(ValueError, match="algorithm alpha 4.0 there vs 1.0 now"):
        train(spec, progress=False)


def test_training_leaves_the_threads_float_mode_as_it_found_it(toy_data):
    """Gradient steps flush denormals (speed); the caller's process keeps its IEEE behaviour."""
    import torch

    from imaginebench.training import flushed_denormals

    assert float(torch.tensor([1e-40], dtype=torch.float32)[0]) != 0.0
    with flushed_denormals():
        assert float(torch.tensor([1e-40], dtype=torch.float32)[0]) == 0.0
    train(RunSpec("ToyCont-v0", "calql", **SMALL), progress=False)
    assert float(torch.tensor([1e-40], dtype=torch.float32)[0]) != 0.0
    assert np.float32(1e-40) * np.float32(1.0) != 0.0


def test_the_domain_card_caps_the_environments_an_evaluator_opens(toy_envs, monkeypatch):
    """``Domain.eval_envs`` bounds the pool (LIBERO's envs hold ~240 MB each); results do not change."""
    from imaginebench.domains.libero.domain import LiberoDomain
    from tests.algos.helpers import ToyDomain

    assert LiberoDomain.eval_envs == 4
    always_right = lambda obs: np.ones(len(obs), dtype=np.int64)  # noqa: E731
    wide = Evaluator("Toy-v0", "train", episodes_per_task=3, seed=5, encoder=HashEncoder(), pool=6)
    expected = wide(always_right)
    assert len(wide.envs) == 6
    monkeypatch.setattr(ToyDomain, "eval_envs", 2)
    capped = Evaluator("Toy-v0", "train", episodes_per_task=3, seed=5, encoder=HashEncoder(), pool=6)
    assert capped(always_right) == expected and len(capped.envs) == 2


def test_real_data_of_another_size_than_the_profiles_is_named(toy_data, caplog, monkeypatch):
    import logging

    from imaginebench.config import PROFILES

    monkeypatch.setitem(PROFILES["tiny"].real_episodes, "Toy-v0", 200)
    with caplog.at_level(logging.WARNING, logger="imaginebench.training"):
        train(RunSpec("Toy-v0", "bc", level="easy", data="real", **SMALL), progress=False)
    assert ("Toy-v0's real train data holds 30 episodes; the tiny profile uses 200" in caplog.text
            and "imaginebench data collect --env Toy-v0 --level train --profile tiny --overwrite" in caplog.text)


def test_a_checkpoint_that_cannot_be_written_is_one_line_naming_the_file(toy_data, monkeypatch):
    import errno
    import os

    import torch

    from imaginebench.cli.common import os_error_message
    from imaginebench.training import run_dir

    save = torch.save

    def full_disk(obj, f, *args, **kwargs):  # writes to memory work, writes to a file fail as torch reports them
        if isinstance(f, (str, os.PathLike)):
            raise RuntimeError("[enforce fail at inline_container.cc:783] . PytorchStreamWriter failed writing file "
                               "data/0: file write failed")
        return save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", full_disk)
    monkeypatch.setattr("imaginebench.fileio.FULL_DISK_BYTES", 2**62)  # as if the disk were full
    spec = RunSpec("Toy-v0", "bc", level="easy", data="real", **SMALL)
    with pytest.raises(OSError) as info:
        train(spec, progress=False)
    line = os_error_message(info.value)
    assert info.value.errno == errno.ENOSPC and str(run_dir(spec) / CHECKPOINT_NAME) in line
    assert "No space left on device" in line and "Free some space" in line and "\n" not in line
    assert not list(run_dir(spec).glob(".checkpoint*"))  # no temporary left behind
