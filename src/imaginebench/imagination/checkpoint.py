"""Saving and loading rollout-model checkpoints.

A checkpoint is a folder (default ``<data home>/models/rollout-lm/<env>/<profile>/<backbone>/``)::

    checkpoint.json    format, schema, package version, env id, profile, step, model config,
                       train config, normaliser (state mean/std/integer dims), validation history
    weights.safetensors  the trainable tensors (LoRA + numeric adapters; the whole model for full
                       fine-tuning or a randomly initialised backbone)
    optimizer.pt       optimiser/scheduler/RNG state to resume training (optional)
    log.jsonl          one JSON line per logged training step / validation

Every file is written to a temporary name and renamed.  The backbone itself is rebuilt from
its name (``imaginebench.imagination.backbones``) when loading.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Mapping

import torch

from imaginebench.config import data_home, get_profile
from imaginebench.fileio import atomic_path

FORMAT = "imaginebench-rollout-lm"
SCHEMA_VERSION = 1
META = "checkpoint.json"
WEIGHTS = "weights.safetensors"
OPTIMIZER = "optimizer.pt"
LOG = "log.jsonl"


def backbone_slug(backbone: str) -> str:
    """A folder-safe name of a backbone (a path's last component for folder backbones)."""
    name = Path(backbone).name if ("/" in backbone or os.sep in backbone) else backbone
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name) or "backbone"


def default_checkpoint_dir(env_id: str, profile: str | None, backbone: str) -> Path:
    from imaginebench.envs.registry import env_spec

    return (data_home() / "models" / "rollout-lm" / env_spec(env_id).env_id / get_profile(profile).name
            / backbone_slug(backbone))


def train_command(env_id: str, profile: str | None, backbone: str) -> str:
    return (f"imaginebench imagine train --env {env_id} --backbone {backbone} "
            f"--profile {get_profile(profile).name}")


def _atomic_write(path: Path, write) -> None:
    with atomic_path(path) as tmp:
        write(str(tmp))


def save_checkpoint(folder: Path, model: Any, meta: Mapping[str, Any],
                    resume_state: Mapping[str, Any] | None = None) -> Path:
    """Write ``model``'s trainable tensors, ``meta`` and (optionally) the resume state."""
    from safetensors.torch import save_file

    from imaginebench import __version__

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().to("cpu").contiguous() for k, v in model.trainable_state().items()}
    _atomic_write(folder / WEIGHTS, lambda tmp: save_file(tensors, tmp, metadata={"format": FORMAT}))
    if resume_state is not None:
        _atomic_write(folder / OPTIMIZER, lambda tmp: torch.save(dict(resume_state), tmp))
    full = {
        "format": FORMAT, "schema_version": SCHEMA_VERSION, "package_version": __version__,
        "backbone_source": model.backbone_source, "backbone_pretrained": model.backbone_pretrained,
        "state_dim": model.state_dim, "discrete_actions": model.discrete, "action_dim": model.action_dim,
        "normaliser": model.normaliser.to_dict(), "model": model.config.to_dict(), **dict(meta),
    }
    _atomic_write(folder / META, lambda tmp: Path(tmp).write_text(json.dumps(full, indent=1)))
    return folder


def read_checkpoint_meta(folder: Path, train_hint: str | None = None) -> dict[str, Any]:
    """The checkpoint's ``checkpoint.json``; a clear error (naming ``train_hint``) when there is none."""
    folder = Path(folder)
    path = folder / META
    if not path.exists() or not (folder / WEIGHTS).exists():
        hint = f" Train one with: {train_hint}" if train_hint else ""
        raise FileNotFoundError(f"No rollout-model checkpoint at {folder}.{hint}")
    meta = json.loads(path.read_text())
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path} is not a rollout-model checkpoint (format {meta.get('format')!r}).")
    if meta.get("schema_version", 0) > SCHEMA_VERSION:
        raise ValueError(f"{path} has schema {meta.get('schema_version')}; this imaginebench reads up to "
                         f"{SCHEMA_VERSION}. Upgrade imaginebench.")
    return meta


def load_checkpoint(folder: Path, device: torch.device | str | None = None,
                    train_hint: str | None = None) -> tuple[Any, dict[str, Any]]:
    """Rebuild the rollout model saved in ``folder``; returns ``(model, meta)``."""
    from safetensors.torch import load_file

    from imaginebench.imagination.backbones import load_backbone
    from imaginebench.imagination.model import ModelConfig, Normaliser, RolloutLM, default_device

    folder = Path(folder)
    meta = read_checkpoint_meta(folder, train_hint)
    config = ModelConfig(**meta["model"])
    backbone = load_backbone(config.backbone, num_layers=config.num_layers)
    model = RolloutLM(backbone, config, meta["state_dim"], meta["discrete_actions"], meta["action_dim"],
                      Normaliser.from_dict(meta["normaliser"]))
    saved = load_file(str(folder / WEIGHTS))
    params = dict(model.named_parameters())
    unknown = sorted(set(saved) - set(params))
    if unknown:
        raise ValueError(f"{folder / WEIGHTS} holds tensors this model does not have: {unknown[:5]}")
    needed = set(model.trainable_state())
    missing = sorted(needed - set(saved))
    if missing:
        raise ValueError(f"{folder / WEIGHTS} lacks tensors: {missing[:5]}")
    with torch.no_grad():
        for name, value in saved.items():
            if params[name].shape != value.shape:
                raise ValueError(f"{name}: saved shape {tuple(value.shape)} != model {tuple(params[name].shape)}")
            params[name].copy_(value)
    model.to(torch.device(device) if device is not None else default_device())
    model.eval()
    return model, meta


def load_resume_state(folder: Path) -> dict[str, Any] | None:
    path = Path(folder) / OPTIMIZER
    if not path.exists():
        return None
    return torch.load(path, map_location="cpu", weights_only=False)


def append_log(folder: Path, record: Mapping[str, Any]) -> None:
    Path(folder).mkdir(parents=True, exist_ok=True)
    with open(Path(folder) / LOG, "a") as fh:
        fh.write(json.dumps(dict(record)) + "\n")
