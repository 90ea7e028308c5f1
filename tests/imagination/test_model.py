"""The rollout model: training signal, KV-cache generation, checkpoints."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from imaginebench.imagination import checkpoint as ckpt
from imaginebench.imagination.formats import SequenceBuilder, collate
from imaginebench.imagination.decoding import GenerateConfig, imagine_batch, initial_starts
from imaginebench.imagination.model import Normaliser

from .conftest import make_model


def _fixed_batch(model, n=4, seed=0):
    b = SequenceBuilder(model.tokenizer, model.state_dim, model.discrete, model.action_dim)
    rng = np.random.default_rng(seed)
    seqs = []
    for i, task in enumerate(["rollout", "dynamics", "consequence", "explanation"] * 2):
        states = rng.uniform(-0.3, 0.3, (4, model.state_dim)).astype(np.float32)
        seqs.append(b.example(task, f"push ball {i % 3} to the left", states, rng.integers(0, 40, 3), rng))
    return collate(seqs[:n + 2])


@pytest.mark.parametrize("lora", [False, True])
def test_losses_decrease_on_a_fixed_batch(lora):
    model = make_model(lora=lora).train()
    batch = _fixed_batch(model)
    params = [p for p in model.parameters() if p.requires_grad]
    if lora:
        assert sum(p.numel() for p in params) < 0.5 * sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(params, lr=3e-3)
    first = {k: float(v.detach()) for k, v in model.losses(batch).items() if k in ("state", "action", "text", "total")}
    for _ in range(12):
        out = model.losses(batch)
        opt.zero_grad()
        out["total"].backward()
        opt.step()
    last = {k: float(v.detach()) for k, v in model.losses(batch).items() if k in first}
    for k in first:
        assert last[k] < first[k], (k, first[k], last[k])
    assert last["total"] < 0.5 * first["total"]


@pytest.fixture(scope="module")
def clevr_starts():
    pytest.importorskip("mujoco")
    return initial_starts("CLEVR-v0", "hard", 5, seed=3)


@pytest.fixture(scope="module")
def clevr_domain():
    pytest.importorskip("mujoco")
    from imaginebench.envs.registry import load_domain

    return load_domain("CLEVR-v0")


def _generate(model, domain, starts, **kw):
    cfg = GenerateConfig(temperature=0.0, max_steps=4, **kw)
    return imagine_batch(model, domain, starts, cfg, torch.Generator().manual_seed(0))


def test_kv_cache_generation_equals_recomputation(tiny_model, clevr_domain, clevr_starts):
    cached = _generate(tiny_model, clevr_domain, clevr_starts, use_cache=True)
    plain = _generate(tiny_model, clevr_domain, clevr_starts, use_cache=False)
    assert [len(e) for e in cached] == [len(e) for e in plain]
    assert sum(len(e) for e in cached) > len(cached)
    for a, b in zip(cached, plain):
        np.testing.assert_array_equal(a.actions, b.actions)
        np.testing.assert_allclose(a.states, b.states, atol=1e-4)


def test_batched_generation_equals_one_at_a_time(tiny_model, clevr_domain, clevr_starts):
    together = _generate(tiny_model, clevr_domain, clevr_starts)
    for start, ep in zip(clevr_starts, together):
        alone = _generate(tiny_model, clevr_domain, [start])[0]
        np.testing.assert_array_equal(alone.actions, ep.actions)
        np.testing.assert_allclose(alone.states, ep.states, atol=1e-4)
        assert alone.instruction == start.instruction and alone.task == start.task.name
        np.testing.assert_array_equal(ep.states[0], start.state)


def test_generated_rollouts_are_labelled_by_the_domain(tiny_model, clevr_domain, clevr_starts):
    for ep in _generate(tiny_model, clevr_domain, clevr_starts):
        task = clevr_domain.task(ep.task)
        rewards, success = clevr_domain.score_rollout(task, ep.states, ep.actions)
        np.testing.assert_allclose(ep.rewards, rewards, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(ep.successes, success)
        # Stops at the first success or at the (capped) horizon.
        assert ep.successes[-1] or len(ep) == 4
        assert not ep.successes[:-1].any()
        assert ep.terminals[-1] == ep.successes[-1] and ep.truncations[-1] != ep.successes[-1]


def test_integer_state_dims_are_rounded():
    states = np.random.default_rng(0).integers(0, 5, (50, 4)).astype(np.float32)
    states[:, 3] += 0.5
    norm = Normaliser.fit(states)
    assert norm.integer.tolist() == [True, True, True, False]
    again = Normaliser.from_dict(norm.to_dict())
    np.testing.assert_array_equal(again.std, norm.std)


def test_checkpoint_round_trip(tmp_path):
    model = make_model(lora=True, seed=5)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.01)
    ckpt.save_checkpoint(tmp_path / "ck", model, {"env_id": "CLEVR-v0", "step": 3})
    loaded, meta = ckpt.load_checkpoint(tmp_path / "ck", device="cpu")
    assert meta["step"] == 3 and meta["model"]["lora"] is True and meta["package_version"]
    batch = _fixed_batch(model)
    with torch.no_grad():
        a, b = model.losses(batch), loaded.losses(batch)
    for k in ("state", "action", "text"):
        torch.testing.assert_close(a[k], b[k])


def test_a_damaged_checkpoint_file_is_refused_by_its_checksum(tmp_path):
    model = make_model(lora=True, seed=5)
    files = ckpt.save_checkpoint(tmp_path / "ck", model, {"env_id": "CLEVR-v0", "profile": "tiny", "step": 3},
                                 resume_state={"step": torch.tensor(3)})
    meta = ckpt.read_checkpoint_meta(tmp_path / "ck")
    assert set(meta["sha256"]) == set(files.values())
    ckpt.load_resume_state(tmp_path / "ck")  # intact: loads
    weights = tmp_path / "ck" / files["weights"]
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01  # one bit of one tensor: safetensors itself would not notice
    weights.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="SHA-256 does not match.*imaginebench imagine train --env CLEVR-v0"):
        ckpt.load_checkpoint(tmp_path / "ck", device="cpu")
    optimizer = tmp_path / "ck" / files["optimizer"]
    data = bytearray(optimizer.read_bytes())
    data[len(data) // 2] ^= 0x01
    optimizer.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="SHA-256 does not match"):
        ckpt.load_resume_state(tmp_path / "ck")


def test_missing_checkpoint_names_the_train_command(tmp_path):
    with pytest.raises(FileNotFoundError, match="imaginebench imagine train --env CLEVR-v0"):
        ckpt.load_checkpoint(tmp_path / "nothing", train_hint=ckpt.train_command("CLEVR-v0", "tiny", "tiny"))


class _PointDomain:
    """A minimal continuous-action domain (no simulator): reach x > 1."""

    from imaginebench.domains.base import StepOutcome as _Out

    env_id, state_dim, horizon, discrete_actions, action_dim = "Point-v0", 3, 6, False, 2

    def task_horizon(self, task):
        return self.horizon

    def initial_progress(self, task, state):
        return np.zeros(0)

    def outcome(self, task, s, a, s2, progress):
        return self._Out(success=bool(s2[0] > 1.0), reward=float(s2[0] - s[0]), progress=progress)


def test_continuous_actions_train_and_generate():
    from imaginebench.domains.base import Task
    from imaginebench.imagination.backbones import load_backbone
    from imaginebench.imagination.decoding import Start
    from imaginebench.imagination.model import ModelConfig, RolloutLM

    rng = np.random.default_rng(0)
    norm = Normaliser.fit(rng.normal(size=(20, 3)))
    model = RolloutLM(load_backbone("tiny"), ModelConfig(backbone="tiny", lora=False), 3, False, 2, norm)
    b = SequenceBuilder(model.tokenizer, 3, False, 2)
    seqs = [b.rollout("go right", rng.normal(size=(4, 3)).astype(np.float32),
                      rng.uniform(-1, 1, (3, 2)).astype(np.float32)) for _ in range(3)]
    out = model.losses(collate(seqs))
    assert out["n_action"] == 9 and out["n_state"] == 9 and torch.isfinite(out["total"])
    task = Task("right", "reach", "train", instructions=("go right",))
    starts = [Start(task, "go right", np.zeros(3, np.float32)), Start(task, "move right", np.ones(3, np.float32))]
    eps = imagine_batch(model.eval(), _PointDomain(), starts, GenerateConfig(temperature=0.0),
                        torch.Generator().manual_seed(0))
    for ep in eps:
        assert ep.actions.shape[1:] == (2,) and np.all(np.abs(ep.actions) <= 1.0)
        assert ep.states.shape[1] == 3 and (ep.successes[-1] or len(ep) == 6)


def test_merging_lora_keeps_generation(clevr_domain, clevr_starts):
    model = make_model(lora=True, seed=2)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.05)
    before = _generate(model, clevr_domain, clevr_starts)
    after = _generate(model.merge_lora(), clevr_domain, clevr_starts)
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a.actions, b.actions)
        np.testing.assert_allclose(a.states, b.states, atol=1e-4)
    with pytest.raises(RuntimeError, match="merged"):
        model.trainable_state()


def test_end_head_loss_reads_the_hidden_state_at_each_state():
    from torch.nn import functional as F

    from imaginebench.imagination.formats import STATE

    model = make_model(seed=3)
    with torch.no_grad():
        model.end_head.weight.normal_(0, 0.5)
    b = SequenceBuilder(model.tokenizer, model.state_dim, model.discrete, model.action_dim)
    rng = np.random.default_rng(0)
    seqs = [b.rollout("push the red ball", rng.normal(size=(4, 10)).astype(np.float32), rng.integers(0, 40, 3),
                      ends_here=bool(i % 2)) for i in range(3)]
    batch = collate(seqs + [b.dynamics(rng.normal(size=10).astype(np.float32), 2, np.zeros(10, np.float32))])
    with torch.no_grad():
        out = model.losses(batch)
        t = model.tensors(batch)
        hidden = model.decode(model.embed(t["kinds"], t["tokens"], t["states"], t["actions"]),
                              attention_mask=t["mask"].long()).last_hidden_state
    rows, cols = np.nonzero(batch.ends >= 0)
    assert (batch.kinds[rows, cols] == STATE).all() and int(out["n_end"]) == 12
    logits = model.predict_end(hidden[torch.as_tensor(rows), torch.as_tensor(cols)])
    assert logits.shape == (12,) and logits.dtype == torch.float32
    want = F.binary_cross_entropy_with_logits(logits, torch.as_tensor(batch.ends[rows, cols], dtype=torch.float32))
    torch.testing.assert_close(out["end"], want)
    parts = sum(float(out[k]) for k in ("state", "action", "end"))
    assert float(out["total"]) == pytest.approx(parts, rel=1e-5)
    with torch.no_grad():
        weighted = model.losses(batch, {"end": 3.0})
    assert float(weighted["total"]) == pytest.approx(parts + 2 * float(out["end"]), rel=1e-4)


def test_end_head_starts_at_the_prior_and_learns():
    from imaginebench.imagination.model import END_PRIOR

    model = make_model(seed=4).train()
    hidden = torch.randn(5, model.hidden_size)
    torch.testing.assert_close(torch.sigmoid(model.predict_end(hidden)), torch.full((5,), END_PRIOR))
    b = SequenceBuilder(model.tokenizer, model.state_dim, model.discrete, model.action_dim)
    rng = np.random.default_rng(1)
    batch = collate([b.rollout("go", rng.normal(size=(4, 10)).astype(np.float32), rng.integers(0, 40, 3))
                     for _ in range(4)])
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    first = float(model.losses(batch)["end"].detach())
    for _ in range(20):
        loss = model.losses(batch)["end"]
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(model.losses(batch)["end"].detach()) < 0.5 * first


def test_embedding_scale_matches_token_embeddings():
    from imaginebench.imagination.backbones import load_backbone
    from imaginebench.imagination.model import ModelConfig, RolloutLM

    norm = Normaliser.fit(np.random.default_rng(0).normal(size=(200, 10)))
    for discrete in (True, False):
        nums = {}
        for match in (False, True):
            torch.manual_seed(0)
            cfg = ModelConfig(backbone="tiny", lora=False, match_embedding_scale=match)
            nums[match] = RolloutLM(load_backbone("tiny"), cfg, 10, discrete, 6 if discrete else 3, norm)
        raw, matched = nums[False].embedding_norms(), nums[True].embedding_norms()
        assert raw["token"] == pytest.approx(matched["token"])
        assert raw["state"] > 5 * raw["token"] and raw["action"] > 5 * raw["token"]  # default inits: far larger
        assert matched["state"] == pytest.approx(matched["token"], rel=1e-4)
        assert matched["action"] == pytest.approx(matched["token"], rel=1e-4)
        # The measured output norm on standardised states agrees with the analytic one.
        z = torch.as_tensor(np.random.default_rng(1).normal(size=(4000, 10)), dtype=torch.float32)
        with torch.no_grad():
            measured = nums[True].state_embed(z).norm(dim=-1).pow(2).mean().sqrt()
        assert float(measured) == pytest.approx(matched["state"], rel=0.05)


def test_older_checkpoints_are_refused_with_the_command_that_remakes_them(tmp_path):
    import json

    from imaginebench.imagination.backbones import load_backbone
    from imaginebench.imagination.model import ModelConfig, RolloutLM

    norm = Normaliser.fit(np.random.default_rng(0).uniform(-0.4, 0.4, (64, 10)))
    cfg = ModelConfig(backbone="tiny", lora=True, end_head=False, match_embedding_scale=False)
    model = RolloutLM(load_backbone("tiny"), cfg, 10, True, 40, norm)
    folder = tmp_path / "old"
    files = ckpt.save_checkpoint(folder, model, {"env_id": "CLEVR-v0", "step": 7})
    # Rewrite it into the layout of checkpoints written before the end head and atomic saves existed.
    (folder / files["weights"]).rename(folder / ckpt.WEIGHTS)
    meta = json.loads((folder / ckpt.META).read_text())
    del meta["files"], meta["model"]["end_head"], meta["model"]["match_embedding_scale"]
    meta["schema_version"] = 1
    (folder / ckpt.META).write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=r"older imaginebench \(schema 1.*train again.*imagine train --env CLEVR-v0"):
        ckpt.load_checkpoint(folder, device="cpu", train_hint="imaginebench imagine train --env CLEVR-v0")
    # a current checkpoint whose digests were removed is refused as well
    files = ckpt.save_checkpoint(tmp_path / "new", model, {"env_id": "CLEVR-v0", "step": 7})
    meta = json.loads((tmp_path / "new" / ckpt.META).read_text())
    del meta["sha256"]
    (tmp_path / "new" / ckpt.META).write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=f"{files['weights']}: checkpoint.json records no SHA-256"):
        ckpt.load_checkpoint(tmp_path / "new", device="cpu")


def test_checkpoint_save_is_atomic_and_cleans_up(tmp_path, monkeypatch):
    model = make_model(seed=6)
    folder = tmp_path / "ck"
    first = ckpt.save_checkpoint(folder, model, {"env_id": "CLEVR-v0", "step": 2}, {"x": 1})
    with torch.no_grad():
        model.end_head.bias.add_(1.0)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    # A save interrupted after its weights were written leaves the previous checkpoint intact.
    monkeypatch.setattr(ckpt.torch, "save", killed)
    with pytest.raises(KeyboardInterrupt):
        ckpt.save_checkpoint(folder, model, {"env_id": "CLEVR-v0", "step": 4}, {"x": 2})
    monkeypatch.undo()
    meta = ckpt.read_checkpoint_meta(folder)
    assert meta["step"] == 2 and meta["files"] == first
    loaded, _ = ckpt.load_checkpoint(folder, device="cpu")
    assert not torch.equal(loaded.end_head.bias, model.end_head.bias)
    assert ckpt.load_resume_state(folder) == {"x": 1}
    second = ckpt.save_checkpoint(folder, model, {"env_id": "CLEVR-v0", "step": 4}, {"x": 2}, best="weights")
    assert second["best"] == second["weights"]
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted([ckpt.META, second["weights"], second["optimizer"]])
    loaded, meta = ckpt.load_checkpoint(folder, device="cpu")
    assert torch.equal(loaded.end_head.bias, model.end_head.bias) and meta["loaded"]["which"] == "best"


def test_every_name_the_imagination_package_exports_resolves():
    import imaginebench.imagination as imagination

    assert all(getattr(imagination, name) is not None for name in imagination.__all__)
