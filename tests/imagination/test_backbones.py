"""Backbone registry."""

from __future__ import annotations

import pytest
import torch

from imaginebench.imagination.backbones import backbone_names, load_backbone, tiny_tokenizer


def test_unknown_backbone_lists_choices():
    with pytest.raises(ValueError, match=r"smollm2-135m, tiny"):
        load_backbone("gpt-17")
    with pytest.raises(ValueError, match="Did you mean 'tiny'"):
        load_backbone("tin")
    assert {"smollm2-135m", "tiny"} <= set(backbone_names())


def test_tiny_backbone_is_deterministic_and_offline():
    a, b = load_backbone("tiny"), load_backbone("tiny")
    assert not a.pretrained
    for (n1, p1), (n2, p2) in zip(a.model.named_parameters(), b.model.named_parameters()):
        assert n1 == n2 and torch.equal(p1, p2)
    tok = tiny_tokenizer()
    text = "Could you push the cyan ball behind the purple one? Rollout:"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == text and len(ids) < len(text)
    assert tok.eos_token_id is not None


def test_layer_truncation():
    b = load_backbone("tiny", num_layers=1)
    assert len(b.model.get_decoder().layers) == 1 and b.model.config.num_hidden_layers == 1
    with pytest.raises(ValueError, match="num_layers"):
        load_backbone("tiny", num_layers=9)


def test_folder_backbone(tmp_path):
    b = load_backbone("tiny")
    b.model.save_pretrained(tmp_path / "m")
    b.tokenizer.save_pretrained(tmp_path / "m")
    again = load_backbone(str(tmp_path / "m"))
    assert again.pretrained
    torch.testing.assert_close(again.model.get_input_embeddings().weight, b.model.get_input_embeddings().weight)
