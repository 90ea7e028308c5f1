"""The imagination stage end to end, as the CLI runs it: train, generate, quality.

Sizes come from the profile (``lm_steps``, ``lm_batch_size``, ``imaginary_episodes``, ...);
arguments override them.  Paths: the real data from :func:`imaginebench.data.load_real`,
checkpoints under ``<data home>/models/rollout-lm/<env>/<profile>/<backbone>[-late<k>]/``, imaginary
datasets at ``dataset_path(env, "imaginary", level, profile)`` with their quality JSON beside.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from imaginebench import limits
from imaginebench.config import get_profile
from imaginebench.data.hub import load_real
from imaginebench.domains.base import Domain
from imaginebench.envs.registry import domain_class, env_ids, env_spec, load_domain
from imaginebench.errors import UsageError, choice_error
from imaginebench.imagination.backbones import check_backbone
from imaginebench.imagination.quality import dataset_quality, filter_dataset


def _levels(level: str | Sequence[str] | None) -> tuple[str, ...]:
    from imaginebench.imagination.generate import IMAGINARY_LEVELS

    if level is None or level == "all":
        return IMAGINARY_LEVELS
    levels = (level,) if isinstance(level, str) else tuple(level)
    for lv in levels:
        if lv not in IMAGINARY_LEVELS:
            raise choice_error("imaginary level", lv, (*IMAGINARY_LEVELS, "all"))
    return levels


def numeric_layers_of(profile: str | None, numeric_layers: int | None) -> int | None:
    """Late entry asked for: ``None`` -> the profile's default, ``0`` -> off (every layer)."""
    if numeric_layers is None:
        return get_profile(profile).lm_numeric_layers
    if numeric_layers < 0:
        raise UsageError(f"--numeric-layers must be >= 0 (0 = every layer), got {numeric_layers}.")
    return numeric_layers or None


def checkpoint_dir(env_id: str, profile: str | None, backbone: str | None, checkpoint: str | Path | None,
                   numeric_layers: int | None = None) -> Path:
    """The rollout model's folder: ``checkpoint`` if given, else the default one of this backbone
    and late-entry setting (``numeric_layers`` as :func:`numeric_layers_of` reads it)."""
    from imaginebench.imagination.checkpoint import default_checkpoint_dir

    if checkpoint is not None:
        return Path(checkpoint).expanduser()
    return default_checkpoint_dir(env_id, profile, backbone or get_profile(profile).lm_backbone,
                                  numeric_layers_of(profile, numeric_layers))


def train(env_id: str, profile: str | None = None, backbone: str | None = None, lora: bool = True,
          steps: int | None = None, num_layers: int | None = None, batch_size: int | None = None,
          lr: float | None = None, out: str | Path | None = None, overwrite: bool = False, resume: bool = True,
          bf16: bool = False, threads: int | None = None, seed: int = 0, progress: bool = True,
          device: str | None = None, numeric_layers: int | None = None, action_bins: int | None = None,
          relations: bool = False, relation_gain: float | None = None, **train_overrides: Any):
    """Fine-tune the rollout model on ``env_id``'s real train data; returns a ``RolloutTrainingResult``.

    ``numeric_layers``: late entry (``None``: the profile's default, 0: every layer).
    ``action_bins``: continuous actions as ``K`` sampled values per dimension
    (:class:`~imaginebench.imagination.model.ModelConfig`); ``None``: regressed.
    ``relations``: add the domain's relational state facts to the state embedding
    (:meth:`Domain.relation_features`; BabyAI has them); ``relation_gain``: the factor on their
    embedding (``None``: :class:`ModelConfig`'s default)."""
    from imaginebench.imagination.lm_training import TrainConfig, train_rollout_model
    from imaginebench.imagination.model import ModelConfig

    env_id = env_spec(env_id).env_id
    prof = get_profile(profile)
    backbone = check_backbone(backbone or prof.lm_backbone)
    late = numeric_layers_of(prof.name, numeric_layers)
    if action_bins is not None:
        if domain_class(env_id).discrete_actions:
            raise UsageError(f"--action-bins is for continuous actions; {env_id}'s actions are discrete (leave it out).")
    if relation_gain is not None and not relations:
        raise UsageError("--relation-gain sets the relational facts' gain; pass --relations with it.")
    if relations:
        if domain_class(env_id).relation_features is Domain.relation_features:
            raise UsageError(f"--relations: {env_id} defines no relational state features (Domain.relation_features); "
                             "train without it.")
    if train_overrides.get("init_from") is not None:
        from imaginebench.imagination.checkpoint import loadable_meta

        loadable_meta(Path(train_overrides["init_from"]))  # a missing or foreign folder fails here, in one line
    real = load_real(env_id, "train", prof.name)
    mcfg = ModelConfig(backbone=backbone, lora=lora, num_layers=num_layers, numeric_layers=late,
                       action_bins=action_bins, relations=relations,
                       **({"relation_gain": relation_gain} if relation_gain is not None else {}))
    settings: dict[str, Any] = {
        "steps": steps if steps is not None else prof.lm_steps,
        "batch_size": batch_size if batch_size is not None else prof.lm_batch_size,
        "lr": lr, "eval_every": prof.lm_eval_every, "checkpoint_every": prof.lm_checkpoint_every,
        "val_episodes": prof.lm_val_episodes, "bf16": bf16, "threads": threads, "seed": seed,
    }
    settings.update(train_overrides)
    tcfg = TrainConfig(**settings)
    folder = checkpoint_dir(env_id, prof.name, backbone, out, late or 0)
    return train_rollout_model(env_id, real, folder, mcfg, tcfg, profile=prof.name, resume=resume,
                               overwrite=overwrite, progress=progress, device=resolve_device(device))


def generate(env_id: str, profile: str | None = None, level: str | Sequence[str] | None = None,
             backbone: str | None = None, checkpoint: str | Path | None = None, episodes: int | None = None,
             temperature: float = 1.0, batch_size: int | None = None, seed: int = 1,
             overwrite: bool = False, bf16: bool = False, threads: int | None = None, progress: bool = True,
             device: str | None = None, max_steps: int | None = None, keep: str = "honest", budget: float = 16.0,
             stop_on_end: bool = True, score: bool = True, numeric_layers: int | None = None,
             physics_prior: bool = False) -> list:
    """Imagine rollouts for each level (default rephrase, easy, hard); returns ``GenerateResult`` s.

    ``keep``: ``honest`` (default; success + legality by the domain's pure functions), ``none``
    or ``oracle`` (also re-simulates every transition: a diagnostic, marked as such).
    ``budget``: best-of-N candidates per kept rollout, at most, per task.
    ``physics_prior``: impose the domain's physics prior on every imagined step
    (:class:`~imaginebench.imagination.decoding.GenerateConfig`); domains without one refuse.
    """
    import torch

    from imaginebench.imagination.checkpoint import load_checkpoint, train_command
    from imaginebench.imagination.decoding import GenerateConfig
    from imaginebench.imagination.generate import generate_level

    env_id = env_spec(env_id).env_id
    prof = get_profile(profile)
    levels = _levels(level)
    if threads:
        torch.set_num_threads(threads)

    domain = load_domain(env_id)
    if physics_prior and not hasattr(domain, "constrain_step"):
        having = [e for e in env_ids() if hasattr(domain_class(e), "constrain_step")]
        raise UsageError(f"--physics-prior: {env_id} has no physics prior (only domains with "
                         f"Domain.constrain_step: {', '.join(having) or 'none'}); leave it out.")
    # a lower bound: the imagined states of one batch, float32, at the longest horizon
    horizon = max((domain.task_horizon(t) for lv in levels for t in domain.tasks(lv)), default=domain.horizon)
    limits.fits_in_memory(4.0 * (batch_size or prof.lm_generate_batch) * (horizon + 1) * domain.state_dim,
                          f"a batch of {batch_size or prof.lm_generate_batch} imagined rollouts",
                          "give a smaller --batch-size")
    cfg = GenerateConfig(temperature=temperature, batch_size=batch_size or prof.lm_generate_batch, seed=seed,
                         bf16=bf16, max_steps=max_steps, keep=keep, budget=budget,
                         stop_on_end=stop_on_end, physics_prior=physics_prior)
    late = numeric_layers_of(prof.name, numeric_layers)
    folder = checkpoint_dir(env_id, prof.name, backbone, checkpoint, late or 0)
    model, meta = load_checkpoint(folder, device=resolve_device(device),
                                  train_hint=train_command(env_id, prof.name, backbone or prof.lm_backbone, late))
    model.merge_lora()  # generation only: fold LoRA into the weights (same outputs, fewer matmuls)
    return [generate_level(env_id, lv, model, meta, folder, profile=prof.name, episodes=episodes, cfg=cfg,
                           overwrite=overwrite, progress=progress, score=score)
            for lv in levels]


def resolve_device(device: str | None) -> Any:
    """``auto``/``None`` -> CUDA when available else CPU; otherwise the named torch device (checked)."""
    import torch

    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ValueError(f"Unknown device {device!r}; use auto, cpu, cuda or cuda:N.") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"Device {device!r} asked for, but torch sees no CUDA GPU here; use --device cpu.")
    return dev


def quality(env_id: str, profile: str | None = None, level: str | Sequence[str] | None = None,
            tolerance: float | None = None, progress: bool = True,
            keep: str | None = None, variant: str = "honest") -> list[dict[str, Any]]:
    """Quality reports of the stored imaginary datasets (also written beside them as JSON).

    With ``keep`` (``honest`` or ``oracle``) the datasets are filtered in place (originals kept as
    ``imaginary-<level>.unfiltered.npz``); see :func:`~imaginebench.imagination.quality.filter_dataset`.
    """
    env_id = env_spec(env_id).env_id
    if keep is None:
        return [dataset_quality(env_id, lv, profile, tolerance=tolerance, progress=progress, variant=variant)
                for lv in _levels(level)]
    return [filter_dataset(env_id, lv, profile, tolerance=tolerance, progress=progress, keep=keep)
            for lv in _levels(level)]
