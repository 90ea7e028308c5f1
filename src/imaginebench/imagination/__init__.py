"""The imagination stage: a rollout language model fine-tuned on real rollouts (KALM), which
then imagines rollouts for novel instructions, and the quality metrics of those rollouts.

Modules: ``backbones`` (named LM backbones), ``formats`` (the four fine-tuning prompts),
``model`` (backbone + numeric adapters), ``lm_training``, ``checkpoint``, ``decoding``,
``generate``, ``best_of_n``, ``filters``, ``quality``, ``grounding``, ``pipeline`` (train / generate /
quality as the CLI runs them).  Needs the ``llm`` extra (torch,
transformers, peft); names are imported lazily so ``import imaginebench`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ModelConfig": "model", "RolloutLM": "model", "Normaliser": "model",
    "TrainConfig": "lm_training", "train_rollout_model": "lm_training",
    "GenerateConfig": "decoding", "initial_starts": "decoding", "generate_level": "generate",
    "check_rollouts": "quality", "dataset_quality": "quality", "transition_tolerance": "quality",
    "load_backbone": "backbones", "backbone_names": "backbones",
    "load_checkpoint": "checkpoint", "default_checkpoint_dir": "checkpoint",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"imaginebench.imagination.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'imaginebench.imagination' has no attribute {name!r}")
