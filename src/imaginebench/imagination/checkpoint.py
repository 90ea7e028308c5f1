"""Saving and loading rollout-model checkpoints.

A checkpoint is a folder (default ``<data home>/models/rollout-lm/<env>/<profile>/<backbone>/``)::

    checkpoint.json    format, schema, package version, env id, profile, step, model config,
                       train config, normaliser (state mean/std/integer dims), validation history,
                       ``ended`` / ``best_step`` / ``best_val`` (from fine-tuning) and ``files``:
                       the names of the three files below that belong to this checkpoint, and
                       ``sha256``: each one's digest, verified whenever it is loaded
    weights-<step>-<id>.safetensors  the trainable tensors at ``step`` (LoRA + numeric adapters;
                       the whole model for full fine-tuning or a randomly initialised backbone)
    optimizer-<step>-<id>.pt  optimiser/scheduler/RNG state to resume training (optional)
    best-<step>-<id>.safetensors  the trainable tensors of the best validation (only with early
                       stopping; may also be the weights file itself when that step was the best)
    log.jsonl          one JSON line per logged training step / validation

**Atomic checkpoints.**  Every file is written to a temporary name and renamed, and data
files get fresh names at every save; ``checkpoint.json`` is written last and is the commit
point.  Files no longer named by it are deleted afterwards.  A save killed at any moment leaves
the previous checkpoint complete and valid.  Checkpoints written before this layout
(``weights.safetensors``, ``optimizer.pt``, no ``files`` entry) still load.

:func:`load_checkpoint` loads the best weights when the checkpoint has them (``which="best"``,
the default, used by generation) and the last ones with ``which="last"`` (resuming training).
The backbone itself is rebuilt from its name (``imaginebench.imagination.backbones``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from pathlib import Path
from typing import Any, Mapping

import torch

from imaginebench.config import data_home, get_profile
from imaginebench.envs.registry import env_spec, load_domain
from imaginebench.fileio import atomic_path, torch_load_plain
from imaginebench.imagination.backbones import load_backbone
from imaginebench.imagination.model import ModelConfig, Normaliser, RolloutLM, default_device
from imaginebench.version import __version__

FORMAT = "imaginebench-rollout-lm"
SCHEMA_VERSION = 2
"""2: data files named in ``files`` (atomic saves), best weights, ``ended``; 1: fixed file names."""
META = "checkpoint.json"
WEIGHTS = "weights.safetensors"
"""Weights file name of checkpoints without a ``files`` entry (older layout)."""
OPTIMIZER = "optimizer.pt"
"""Resume-state file name of checkpoints without a ``files`` entry (older layout)."""
LOG = "log.jsonl"
_DATA_FILE = re.compile(r"^(?:(?:weights|best)-.+\.safetensors|optimizer-.+\.pt)$")
_STALE_TMP = re.compile(r"^\.(?:(?:weights|best)-.+\.safetensors|optimizer-.+\.pt|checkpoint\.json)\..*\.tmp$")


def backbone_slug(backbone: str) -> str:
    """A folder-safe name of a backbone (a path's last component for folder backbones)."""
    name = Path(backbone).name if ("/" in backbone or os.sep in backbone) else backbone
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name) or "backbone"


def default_checkpoint_dir(env_id: str, profile: str | None, backbone: str, numeric_layers: int | None = None) -> Path:
    """``<home>/models/rollout-lm/<env>/<profile>/<backbone>[-late<k>]`` (late entry: its own folder,
    so a full-depth model and a late-entry one of the same backbone live side by side)."""
    slug = backbone_slug(backbone) + (f"-late{numeric_layers}" if numeric_layers else "")
    return data_home() / "models" / "rollout-lm" / env_spec(env_id).env_id / get_profile(profile).name / slug


def train_command(env_id: str, profile: str | None, backbone: str, numeric_layers: int | None = None) -> str:
    prof = get_profile(profile)
    late = "" if numeric_layers == prof.lm_numeric_layers else f" --numeric-layers {numeric_layers or 0}"
    return f"imaginebench imagine train --env {env_id} --backbone {backbone} --profile {prof.name}{late}"


def _atomic_write(path: Path, write) -> None:
    with atomic_path(path) as tmp:
        write(str(tmp))


def _fresh_name(kind: str, step: int, suffix: str) -> str:
    return f"{kind}-{int(step):08d}-{secrets.token_hex(4)}{suffix}"


def _save_tensors(folder: Path, name: str, tensors: Mapping[str, torch.Tensor]) -> None:
    from safetensors.torch import save_file

    cpu = {k: v.detach().to("cpu").contiguous() for k, v in tensors.items()}
    _atomic_write(folder / name, lambda tmp: save_file(cpu, tmp, metadata={"format": FORMAT}))


def checkpoint_files(meta: Mapping[str, Any]) -> dict[str, str]:
    """``{"weights", "optimizer"[, "best"]}`` file names of a checkpoint."""
    return dict(meta["files"])


def save_checkpoint(folder: Path, model: Any, meta: Mapping[str, Any],
                    resume_state: Mapping[str, Any] | None = None,
                    best: Mapping[str, torch.Tensor] | str | None = None) -> dict[str, str]:
    """Write ``model``'s trainable tensors, the resume state and ``meta`` as one atomic checkpoint.

    ``best``: the best-validation tensors to store beside (a mapping), ``"weights"`` (they are
    this save's weights), the name of a file of the current checkpoint to keep, or ``None``.
    ``meta["step"]`` tags the file names.  Returns the ``files`` entry written to the meta.
    """

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    step = int(meta.get("step", 0))
    files = {"weights": _fresh_name("weights", step, ".safetensors")}
    _save_tensors(folder, files["weights"], model.trainable_state())
    if resume_state is not None:
        files["optimizer"] = _fresh_name("optimizer", step, ".pt")
        _atomic_write(folder / files["optimizer"], lambda tmp: torch.save(dict(resume_state), tmp))
    if isinstance(best, str):
        if best != "weights" and not (folder / best).exists():
            raise FileNotFoundError(f"Best-weights file {folder / best} does not exist.")
        files["best"] = files["weights"] if best == "weights" else best
    elif best is not None:
        files["best"] = _fresh_name("best", int(meta.get("best_step", step) or 0), ".safetensors")
        _save_tensors(folder, files["best"], best)
    digests = {name: file_sha256(folder / name) for name in set(files.values())}
    full = {
        "format": FORMAT, "schema_version": SCHEMA_VERSION, "package_version": __version__,
        "backbone_source": model.backbone_source, "backbone_pretrained": model.backbone_pretrained,
        "state_dim": model.state_dim, "discrete_actions": model.discrete, "action_dim": model.action_dim,
        "normaliser": model.normaliser.to_dict(), "model": model.config.to_dict(), **dict(meta), "files": files,
        "sha256": digests,
    }
    _write_meta(folder, full)  # the commit point
    _collect_garbage(folder, files)
    return files


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verified(folder: Path, meta: Mapping[str, Any], name: str) -> Path:
    """``folder / name`` after checking it against the digest ``checkpoint.json`` holds for it; a
    checkpoint without a digest for it (written before digests were recorded) is refused."""
    path = Path(folder) / name
    expected = (meta.get("sha256") or {}).get(name)
    if expected is None or file_sha256(path) != expected:
        again = train_command(str(meta.get("env_id", "<env>")), meta.get("profile"),
                              str(meta.get("model", {}).get("backbone", "<backbone>")),
                              meta.get("model", {}).get("numeric_layers"))
        why = ("checkpoint.json records no SHA-256 for it (a checkpoint of an older version)" if expected is None
               else "its SHA-256 does not match checkpoint.json (a damaged or replaced file)")
        raise ValueError(f"{path}: {why}; delete {Path(folder)} and train again: {again} --overwrite")
    return path


def _write_meta(folder: Path, meta: Mapping[str, Any]) -> None:
    _atomic_write(folder / META, lambda tmp: Path(tmp).write_text(json.dumps(dict(meta), indent=1)))


def _collect_garbage(folder: Path, files: Mapping[str, str]) -> None:
    """Delete data files (and temporaries of killed saves) the committed checkpoint does not name."""
    keep = set(files.values())
    for path in folder.iterdir():
        name = path.name
        stale = (_DATA_FILE.match(name) or _STALE_TMP.match(name) or name in (WEIGHTS, OPTIMIZER))
        if stale and name not in keep and path.is_file():
            path.unlink(missing_ok=True)


def update_meta(folder: Path, **changes: Any) -> dict[str, Any]:
    """Rewrite fields of an existing checkpoint's ``checkpoint.json`` atomically (data files unchanged)."""
    meta = read_checkpoint_meta(folder)
    meta.update(changes)
    _write_meta(Path(folder), meta)
    return meta


def remove_checkpoint(folder: Path) -> None:
    """Delete a checkpoint (``checkpoint.json`` first, so a half-deleted one is no checkpoint) and its log."""
    folder = Path(folder)
    (folder / META).unlink(missing_ok=True)
    if folder.is_dir():
        _collect_garbage(folder, {})
    (folder / LOG).unlink(missing_ok=True)


def read_checkpoint_meta(folder: Path, train_hint: str | None = None,
                         require: tuple[str, ...] = ("weights", "best")) -> dict[str, Any]:
    """The checkpoint's ``checkpoint.json``; a clear error (naming ``train_hint``) when there is none
    or when a file of ``require`` (keys of ``files``) that it names is missing."""
    folder = Path(folder)
    path = folder / META
    hint = f" Train one with: {train_hint}" if train_hint else ""
    if not path.exists():
        raise FileNotFoundError(f"No rollout-model checkpoint at {folder}.{hint}")
    meta = json.loads(path.read_text())
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path} is not a rollout-model checkpoint (format {meta.get('format')!r}).")
    if meta.get("schema_version", 0) > SCHEMA_VERSION:
        raise ValueError(f"{path} has schema {meta.get('schema_version')}; this imaginebench reads up to "
                         f"{SCHEMA_VERSION}. Upgrade imaginebench.")
    if meta.get("schema_version", 0) < SCHEMA_VERSION or not isinstance(meta.get("files"), dict):
        raise ValueError(f"{path} is a checkpoint of an older imaginebench (schema {meta.get('schema_version')}, "
                         f"without file digests), which this version does not load; delete {folder} and train "
                         f"again.{hint}")
    require_files(folder, meta, require, train_hint)
    return meta


def require_files(folder: Path, meta: Mapping[str, Any], keys: tuple[str, ...], train_hint: str | None = None) -> None:
    """``FileNotFoundError`` naming the files of ``keys`` (keys of ``files``) that ``meta`` names
    and ``folder`` lacks."""
    hint = f" Train one with: {train_hint}" if train_hint else ""
    missing = [n for k, n in checkpoint_files(meta).items() if k in keys and not (Path(folder) / n).exists()]
    if missing:
        raise FileNotFoundError(f"No complete rollout-model checkpoint at {folder} (missing {missing}).{hint}")


def loadable_meta(folder: Path, train_hint: str | None = None, which: str = "best") -> tuple[dict[str, Any], str]:
    """``(meta, key)``: the checkpoint's meta and the ``files`` key :func:`load_checkpoint` loads
    (``"best"`` when asked for and present, else ``"weights"``), after checking that file is there —
    only that one: a folder kept for generation may hold just its best weights."""
    if which not in ("best", "last"):
        raise ValueError(f"which must be 'best' or 'last', got {which!r}.")
    meta = read_checkpoint_meta(Path(folder), train_hint, require=())
    key = "best" if which == "best" and "best" in checkpoint_files(meta) else "weights"
    require_files(Path(folder), meta, (key,), train_hint)
    return meta, key


def domain_relations(config: ModelConfig, env_id: str | None) -> Any:
    """The domain's relational state features when ``config.relations`` asks for them, else ``None``."""
    if not config.relations:
        return None
    return load_domain(str(env_id)).relation_features


def load_checkpoint(folder: Path, device: torch.device | str | None = None,
                    train_hint: str | None = None, which: str = "best") -> tuple[Any, dict[str, Any]]:
    """Rebuild the rollout model saved in ``folder``; returns ``(model, meta)``.

    ``which``: ``"best"`` loads the best-validation weights when the checkpoint has them (early
    stopping) and the last weights otherwise; ``"last"`` always loads the last (resume) weights.
    ``meta["loaded"]`` says which: ``{"which", "file", "step"}``.
    """
    from safetensors.torch import load_file


    folder = Path(folder)
    meta, key = loadable_meta(folder, train_hint, which)
    use_best = key == "best"
    path = verified(folder, meta, checkpoint_files(meta)[key])
    meta["loaded"] = {"which": "best" if use_best else "last", "file": path.name,
                      "step": meta.get("best_step") if use_best else meta.get("step")}
    config = ModelConfig.from_dict(meta["model"])
    backbone = load_backbone(config.backbone, num_layers=config.num_layers)
    model = RolloutLM(backbone, config, meta["state_dim"], meta["discrete_actions"], meta["action_dim"],
                      Normaliser.from_dict(meta["normaliser"]), relations=domain_relations(config, meta.get("env_id")))
    saved = load_file(str(path))
    params = dict(model.named_parameters())
    unknown = sorted(set(saved) - set(params))
    if unknown:
        raise ValueError(f"{path} holds tensors this model does not have: {unknown[:5]}")
    needed = set(model.trainable_state())
    missing = sorted(needed - set(saved))
    if missing:
        raise ValueError(f"{path} lacks tensors: {missing[:5]}")
    with torch.no_grad():
        for name, value in saved.items():
            if params[name].shape != value.shape:
                raise ValueError(f"{name}: saved shape {tuple(value.shape)} != model {tuple(params[name].shape)}")
            params[name].copy_(value)
    model.to(torch.device(device) if device is not None else default_device())
    model.eval()
    return model, meta


def load_resume_state(folder: Path, meta: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The optimiser/scheduler/RNG state of the checkpoint in ``folder`` (``None`` if absent)."""
    meta = meta if meta is not None else read_checkpoint_meta(folder)
    path = Path(folder) / checkpoint_files(meta)["optimizer"]
    if not path.exists():
        return None
    verified(folder, meta, path.name)
    try:
        return torch_load_plain(path)  # plain tensors and numbers: no pickled code
    except ValueError as exc:
        raise ValueError(f"Cannot resume from {path} ({exc}); train with --overwrite to start over.") from None


def append_log(folder: Path, record: Mapping[str, Any]) -> None:
    Path(folder).mkdir(parents=True, exist_ok=True)
    with open(Path(folder) / LOG, "a") as fh:
        fh.write(json.dumps(dict(record)) + "\n")


def truncate_log(folder: Path, step: int) -> None:
    """Drop log records of steps after ``step`` (work lost when a run stopped between checkpoints)."""
    path = Path(folder) / LOG
    if not path.exists():
        return
    lines = path.read_text().splitlines()
    keep = []
    for line in lines:
        try:
            rec_step = json.loads(line).get("step")
        except (json.JSONDecodeError, AttributeError):
            continue  # a line cut short by a kill
        if rec_step is None or rec_step <= step:
            keep.append(line)
    if len(keep) != len(lines):
        _atomic_write(path, lambda tmp: Path(tmp).write_text("".join(f"{x}\n" for x in keep)))
