"""Fine-tuning: resuming gives the same result, early stopping, end labels from the data."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import numpy as np
import pytest
import torch

from imaginebench.data.dataset import Episode, EpisodeDataset
from imaginebench.imagination import checkpoint as ckpt
from imaginebench.imagination.lm_training import TrainConfig, _episodes, train_rollout_model
from imaginebench.imagination.model import ModelConfig

from .conftest import successful_episodes

ENV = "CLEVR-v0"


def _dataset(n: int = 12, seed: int = 0) -> EpisodeDataset:
    """Random episodes (10-dim states, 40 discrete actions); every third one truncated."""
    rng = np.random.default_rng(seed)
    episodes = []
    for i in range(n):
        t = int(rng.integers(3, 7))
        truncated = i % 3 == 2
        terminals = np.zeros(t, bool)
        truncations = np.zeros(t, bool)
        (truncations if truncated else terminals)[-1] = True
        episodes.append(Episode(task=f"task{i % 4}", instruction=f"push ball {i % 4} to the left",
                                states=rng.uniform(-0.4, 0.4, (t + 1, 10)).astype(np.float32),
                                actions=rng.integers(0, 40, t), rewards=np.zeros(t, np.float32),
                                terminals=terminals, truncations=truncations, successes=terminals.copy()))
    return EpisodeDataset.from_episodes(episodes, metadata={"discrete_actions": True, "action_dim": 40})


MODEL = ModelConfig(backbone="tiny", lora=False)
TRAIN = TrainConfig(steps=8, batch_size=4, warmup_steps=2, eval_every=2, checkpoint_every=4, log_every=1,
                    val_episodes=2, val_examples=3)


def _run(folder, tcfg=TRAIN, **kw):
    return train_rollout_model(ENV, _dataset(), folder, MODEL, tcfg, progress=False, device="cpu", **kw)


def _weights(folder, which=None):
    """Trainable tensors and meta of a checkpoint (``which=None``: load_checkpoint's default)."""
    model, meta = ckpt.load_checkpoint(folder, device="cpu", **({"which": which} if which else {}))
    return model.trainable_state(), meta


def _interrupt_at(step):
    def hook(done):
        if done == step:
            raise KeyboardInterrupt

    return hook


def _val_log(folder):
    lines = [json.loads(x) for x in (folder / ckpt.LOG).read_text().splitlines()]
    return [(r["kind"], r["step"], r.get("val"), r.get("loss")) for r in lines]


def test_episodes_carry_the_terminal_flag():
    flags = [terminal for *_, terminal in _episodes(_dataset())]
    assert flags == [i % 3 != 2 for i in range(12)]


@pytest.mark.parametrize("patience", [None, 50])
def test_interrupted_run_resumes_to_the_same_result(tmp_path, patience):
    tcfg = replace(TRAIN, early_stop_patience=patience)
    straight = _run(tmp_path / "a", tcfg)
    assert straight.steps_done == 8 and straight.ended == "steps"

    # Ctrl-C after step 5: the step-4 checkpoint stays as it was, marked "interrupted".
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path / "b", tcfg, on_step=_interrupt_at(5))
    meta = ckpt.read_checkpoint_meta(tmp_path / "b")
    assert meta["step"] == 4 and meta["ended"] == "interrupted" and len(meta["val_history"]) == 2
    resumed = _run(tmp_path / "b", tcfg)
    assert resumed.steps_run == 4 and resumed.steps_done == 8 and resumed.ended == "steps"

    wa, ma = _weights(tmp_path / "a", "last")
    wb, mb = _weights(tmp_path / "b", "last")
    assert set(wa) == set(wb) and "end_head.weight" in wa
    for name in wa:
        assert torch.equal(wa[name], wb[name]), name
    assert ma["val_history"] == mb["val_history"] and len(ma["val_history"]) == 4
    for key in ("step", "ended", "best_step", "best_val"):
        assert ma[key] == mb[key], key
    assert all("end" in h["val"]["rollout"] for h in ma["val_history"])
    assert straight.val_losses == resumed.val_losses
    # The log holds each step once: the lines of the lost step 5 were dropped on resume.
    assert [x[:2] for x in _val_log(tmp_path / "a")] == [x[:2] for x in _val_log(tmp_path / "b")]
    if patience is not None:
        ba, mba = _weights(tmp_path / "a", "best")
        bb, mbb = _weights(tmp_path / "b", "best")
        for m in (mba, mbb):
            assert m["loaded"]["which"] == "best" and m["loaded"]["step"] == ma["best_step"]
        for name in ba:
            assert torch.equal(ba[name], bb[name]), name
    else:
        assert "best" not in ma["files"]


def test_early_stopping_stops_and_keeps_the_best_weights(tmp_path):
    tcfg = replace(TRAIN, steps=40, checkpoint_every=20, early_stop_patience=1, early_stop_min_delta=1e9)
    steps_seen = []
    result = _run(tmp_path / "es", tcfg, on_step=steps_seen.append)
    assert result.ended == "early_stop" and result.steps_done == 4 and steps_seen == [1, 2, 3, 4]
    assert result.best_step == 2
    meta = ckpt.read_checkpoint_meta(tmp_path / "es")
    assert meta["ended"] == "early_stop" and meta["step"] == 4 and meta["best_step"] == 2
    assert meta["best_val"] == pytest.approx(meta["val_history"][0]["val"]["rollout"]["total"])
    assert [h["step"] for h in meta["val_history"]] == [2, 4]
    best, loaded = _weights(tmp_path / "es")  # the default (generation) loads the best weights
    last, _ = _weights(tmp_path / "es", "last")
    assert loaded["loaded"]["which"] == "best" and loaded["loaded"]["step"] == 2
    assert any(not torch.equal(best[k], last[k]) for k in best)

    # A folder kept for generation only (its best weights, no last weights, no optimizer) loads the
    # best weights; asking it for the last weights names the missing file.
    kept = tmp_path / "kept"
    kept.mkdir()
    meta_es = ckpt.read_checkpoint_meta(tmp_path / "es")
    for name in (ckpt.META, meta_es["files"]["best"]):
        shutil.copy(tmp_path / "es" / name, kept / name)
    again_best, again_meta = _weights(kept)
    assert again_meta["loaded"]["step"] == 2 and all(torch.equal(again_best[k], best[k]) for k in best)
    with pytest.raises(FileNotFoundError, match=meta_es["files"]["weights"]):
        _weights(kept, "last")

    # The best weights are those after step 2 (checkpointed by an identical run stopped at step 3).
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path / "two", replace(tcfg, checkpoint_every=2), on_step=_interrupt_at(3))
    at2, meta2 = _weights(tmp_path / "two", "last")
    assert meta2["step"] == 2
    for k in best:
        assert torch.equal(best[k], at2[k]), k

    # Resuming a run that stopped early does nothing; --overwrite starts over and clears old files.
    again = _run(tmp_path / "es", tcfg)
    assert again.steps_run == 0 and again.ended == "early_stop" and again.best_step == 2
    fresh = _run(tmp_path / "es", replace(tcfg, early_stop_patience=None, steps=2), overwrite=True)
    assert fresh.steps_done == 2 and fresh.ended == "steps"
    meta = ckpt.read_checkpoint_meta(tmp_path / "es")
    names = {p.name for p in (tmp_path / "es").iterdir()}
    assert names == {ckpt.META, ckpt.LOG, meta["files"]["weights"], meta["files"]["optimizer"]}


def test_a_checkpoint_of_another_model_or_domain_is_refused_as_every_run_folder_refuses(tmp_path):
    """The same error (and exit code) as an offline run or an online fine-tune with other settings."""
    from imaginebench.run_folder import SettingsClash

    _run(tmp_path / "ckpt", replace(TRAIN, steps=2, eval_every=2, checkpoint_every=2))
    before = sorted(p.name for p in (tmp_path / "ckpt").iterdir())
    other = replace(MODEL, residual_states=not MODEL.residual_states)
    with pytest.raises(SettingsClash, match=r"other settings \(model residual_states .* there vs .* now\).*--overwrite"):
        train_rollout_model(ENV, _dataset(), tmp_path / "ckpt", other, TRAIN, progress=False, device="cpu")
    with pytest.raises(SettingsClash, match=r"env_id 'CLEVR-v0' there vs 'BabyAI-v0' now"):
        train_rollout_model("BabyAI-v0", _dataset(), tmp_path / "ckpt", MODEL, TRAIN, progress=False, device="cpu")
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == before  # nothing written, nothing lost


def _continuous(n: int = 12, seed: int = 0) -> EpisodeDataset:
    """Random episodes of HalfCheetah's shapes (18-dim states, 6-dim actions in [-1, 1])."""
    return successful_episodes(
        n, seed, states=lambda rng, k: rng.normal(size=(k, 18)).astype(np.float32) * (1 + seed),
        actions=lambda rng, k: rng.uniform(-1, 1, (k, 6)).astype(np.float32),
        instruction=lambda i: f"run {'forward' if i % 2 else 'backward'}", discrete=False, action_dim=6)


def test_a_warm_start_copies_what_the_new_model_shares_and_starts_a_new_head_fresh(tmp_path):
    """A binned-action model warm started from a regression one: every tensor but the action head
    (and the normaliser) comes from the checkpoint, even on other data; the head is new."""
    tcfg = replace(TRAIN, augment=False)
    regression = ModelConfig(backbone="tiny", lora=False)
    train_rollout_model("HalfCheetah-v0", _continuous(), tmp_path / "reg", regression, tcfg, progress=False,
                        device="cpu")
    source, _ = ckpt.load_checkpoint(tmp_path / "reg", device="cpu")
    still = replace(tcfg, steps=1, lr=1e-12, adapter_lr=1e-12, init_from=str(tmp_path / "reg"))
    binned = replace(regression, action_bins=5)
    train_rollout_model("HalfCheetah-v0", _continuous(seed=1), tmp_path / "bins", binned, still, progress=False,
                        device="cpu")
    warm, meta = ckpt.load_checkpoint(tmp_path / "bins", device="cpu")
    assert meta["model"]["action_bins"] == 5 and meta["train"]["init_from"] == str(tmp_path / "reg")
    np.testing.assert_array_equal(warm.normaliser.mean, source.normaliser.mean)  # not refit on the new data
    theirs, ours = source.trainable_state(), warm.trainable_state()
    assert set(ours) == set(theirs)
    for name, value in ours.items():
        if name.startswith("action_head"):
            assert value.shape != theirs[name].shape
        else:
            torch.testing.assert_close(value, theirs[name], atol=1e-8, rtol=0, msg=name)
    # a warm start from another domain or another backbone design is refused in one line
    _run(tmp_path / "clevr")
    with pytest.raises(ValueError, match="is a rollout model of CLEVR-v0, not of HalfCheetah-v0"):
        train_rollout_model("HalfCheetah-v0", _continuous(), tmp_path / "x", binned,
                            replace(tcfg, init_from=str(tmp_path / "clevr")), progress=False, device="cpu")
    with pytest.raises(ValueError, match="another backbone design \\(lora False there vs True now\\)"):
        train_rollout_model("HalfCheetah-v0", _continuous(), tmp_path / "y", replace(binned, lora=True),
                            replace(tcfg, init_from=str(tmp_path / "reg")), progress=False, device="cpu")


def test_early_stopping_follows_the_rollout_loss_not_the_sum():
    """The explanation text's larger, noisier loss must not choose the generation checkpoint."""
    from imaginebench.imagination.lm_training import val_score

    better_rollout = {"rollout": {"total": 0.0033}, "explanation": {"total": 0.42}}
    better_sum = {"rollout": {"total": 0.0044}, "explanation": {"total": 0.39}}
    assert val_score(better_rollout) < val_score(better_sum)
    assert val_score({"dynamics": {"total": 0.5}, "consequence": {"total": 0.25}}) == pytest.approx(0.75)
