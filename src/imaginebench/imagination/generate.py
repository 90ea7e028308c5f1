"""One level's imaginary dataset, end to end: quotas and horizons, best-of-N generation
(:mod:`imaginebench.imagination.best_of_n`, decoding in :mod:`imaginebench.imagination.decoding`),
the honest (or unfiltered, or oracle) dataset and its quality report written beside it.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch
from tqdm.auto import tqdm

from imaginebench.config import get_profile
from imaginebench.data.dataset import Episode, EpisodeDataset
from imaginebench.data.hub import imaginary_path
from imaginebench.data.storage import save_dataset
from imaginebench.domains.base import check_level
from imaginebench.envs.registry import load_domain
from imaginebench.errors import UsageError, choice_error
from imaginebench.imagination.best_of_n import RoundStore, best_of_n, required_steps, task_quotas
from imaginebench.imagination.decoding import GenerateConfig, StartSampler
from imaginebench.imagination.filters import KEEP_VARIANT
from imaginebench.imagination.formats import ROLLOUT_PROMPT
from imaginebench.imagination.grounding import DEFAULT_MODE, GROUND_MODES, ground_check, load_grounding, summary
from imaginebench.imagination.quality import check_rollouts, quality_path, write_quality
from imaginebench.version import __version__

logger = logging.getLogger("imaginebench.imagination")

IMAGINARY_LEVELS: tuple[str, ...] = ("rephrase", "easy", "hard")


def _announce(env_id: str, level: str, quotas: Mapping[str, int], horizons: Mapping[str, int],
              cfg: GenerateConfig, model: Any, progress: bool) -> None:
    """Say before a level starts what it may cost: its quota, the candidate budget and the
    longest rollouts; the bar's ETA then follows the kept rate measured round by round."""
    total = sum(quotas.values())
    most = sum(int(math.ceil(cfg.budget * q)) for q in quotas.values())
    worst_steps = sum(int(math.ceil(cfg.budget * q)) * horizons[t] for t, q in quotas.items())
    depth = (len(model.decoder.layers), "late entry" if getattr(model, "late_entry", False) else "every layer")
    msg = (f"imagine {env_id}/{level}: {total:,} rollouts over {len(quotas)} tasks; at most {most:,} candidates "
           f"(budget {cfg.budget:g}) and {worst_steps:,} imagined steps; numbers run through {depth[0]} decoder "
           f"layers ({depth[1]}). The bar's ETA follows the kept rate, from the first round on.")
    logger.info(msg)
    if progress:
        tqdm.write(msg)


@dataclass
class GenerateResult:
    """One level's imagination run."""

    level: str
    path: Path
    episodes: int
    generated: int
    dropped: int
    throughput: dict[str, float]
    quality: dict[str, Any]
    resumed_rounds: int = 0
    """Best-of-N rounds taken over from an interrupted run of the same command."""




def generate_level(
    env_id: str,
    level: str,
    model: Any,
    checkpoint_meta: dict[str, Any],
    checkpoint_dir: Path | str,
    profile: str | None = None,
    episodes: int | None = None,
    cfg: GenerateConfig | None = None,
    overwrite: bool = False,
    progress: bool = True,
    score: bool = True,
    candidate_sample: int = 2000,
) -> GenerateResult:
    """Imagine ``level``'s rollouts with best-of-N per task, keep them by ``cfg.keep``, save.

    Files (``dataset_path(env_id, "imaginary", level, profile)`` = ``imaginary-<level>.npz``):
    the kept rollouts under the keep mode's name (honest: ``imaginary-<level>.npz``; oracle:
    ``imaginary-<level>.oracle.npz``; none: ``imaginary-<level>.unfiltered.npz``); with keep
    ``honest``/``oracle`` also the unfiltered data of the same run (each task's first ``quota``
    candidates) as ``imaginary-<level>.unfiltered.npz``, and a random sample of at most
    ``candidate_sample`` candidates as ``imaginary-<level>.candidates.npz`` (quality of "all").
    The quality report (kept and all; per task: quota, kept, candidates) goes beside the kept
    file as ``.quality.json``.  ``score=False`` skips the simulator-based quality metrics
    (run ``imaginebench imagine quality`` later).
    """
    cfg = cfg or GenerateConfig()
    check_level(level)
    if level not in IMAGINARY_LEVELS:
        raise choice_error("imaginary level", level, IMAGINARY_LEVELS)
    prof = get_profile(profile)
    base_path = imaginary_path(env_id, level, prof.name)
    path = imaginary_path(env_id, level, prof.name, KEEP_VARIANT[cfg.keep])
    extra_paths = [] if cfg.keep == "none" else [imaginary_path(env_id, level, prof.name, "unfiltered"),
                                                  base_path.with_name(f"{base_path.stem}.candidates.npz")]
    for p in (path, *extra_paths):
        if p.exists() and not overwrite:
            raise FileExistsError(f"{p} already exists; pass --overwrite to replace it.")
    if checkpoint_meta.get("env_id") not in (None, env_id):
        raise ValueError(f"The checkpoint at {checkpoint_dir} was trained on {checkpoint_meta['env_id']}, "
                         f"not {env_id}.")
    domain = load_domain(env_id)
    if model.state_dim != domain.state_dim or model.action_dim != domain.action_dim:
        raise ValueError(f"The checkpoint's state/action sizes ({model.state_dim}, {model.action_dim}) do not "
                         f"match {env_id} ({domain.state_dim}, {domain.action_dim}).")
    n = episodes if episodes is not None else prof.episodes(domain, "imaginary", level)
    if n <= 0:
        raise UsageError(f"episodes must be positive, got {n}.")

    sampler = StartSampler(env_id, level, seed=cfg.seed)
    try:
        names = sampler.task_names
        quotas = task_quotas(names, n)
        horizons = {t.name: domain.task_horizon(t) for t in domain.tasks(level)}
        cap_floor: dict[str, int] = {}
        if cfg.max_steps is not None:
            cap_floor = required_steps(env_id, level)
            horizons = {t: min(h, max(cfg.max_steps, cap_floor[t])) for t, h in horizons.items()}
        oracle = None
        if cfg.keep == "oracle":
            def oracle(eps: list[Episode]) -> np.ndarray:
                checks = check_rollouts(env_id, level, eps, replay=False)
                return checks.transitions_ok & checks.legal
        run_cfg = replace(cfg, budget=1.0) if cfg.keep == "none" else cfg
        store = RoundStore(path.with_name(f"{path.stem}.partial"), {
            "env_id": env_id, "level": level, "profile": prof.name, "quotas": quotas, "horizons": horizons,
            "sampling": asdict(run_cfg), "checkpoint": str(checkpoint_dir),
            "checkpoint_step": (checkpoint_meta.get("loaded") or {}).get("step", checkpoint_meta.get("step")),
            "model": model.config.to_dict()})
        if overwrite:
            store.remove()
        _announce(env_id, level, quotas, horizons, run_cfg, model, progress)
        ground = None
        if cfg.keep == "grounded":
            grounding = load_grounding(env_id, prof.name, progress=progress)

            def ground(ep: Episode) -> Episode | None:
                return ground_check(grounding, domain, ep, level=level, **GROUND_MODES[DEFAULT_MODE])
        result = best_of_n(model, domain, sampler, quotas, run_cfg, horizons,
                           oracle if cfg.keep != "none" else None, progress, desc=f"imagine {env_id}/{level}",
                           store=store, ground=ground)
        kept = result.unfiltered if cfg.keep == "none" else result.kept
    finally:
        sampler.close()
    short = {t: v for t, v in result.per_task.items() if v["kept"] < v["quota"]}
    if not kept:
        raise ValueError(f"No imagined {level} rollout passed the {cfg.keep} filter within the budget "
                         f"({result.generated} candidates); nothing saved. Train the rollout model longer, "
                         "raise --budget, or generate with --keep none.")
    device = str(model.device)
    gpu = torch.cuda.get_device_name(model.device) if model.device.type == "cuda" else None
    metadata = {
        "domain": env_id, "level": level, "source": "imaginary", "generator": "rollout-lm",
        "profile": prof.name, "seed": cfg.seed, "episodes": len(kept), "generated": result.generated,
        "state_dim": domain.state_dim, "discrete_actions": domain.discrete_actions, "action_dim": domain.action_dim,
        "backbone": model.backbone_name, "backbone_source": model.backbone_source,
        "model": model.config.to_dict(), "checkpoint": str(checkpoint_dir),
        "checkpoint_step": (checkpoint_meta.get("loaded") or {}).get("step", checkpoint_meta.get("step")),
        "checkpoint_last_step": checkpoint_meta.get("step"), "checkpoint_ended": checkpoint_meta.get("ended"),
        "prompt": ROLLOUT_PROMPT, "sampling": asdict(cfg), "filter": cfg.keep, "oracle": cfg.keep == "oracle",
        "filtered": cfg.keep != "none", "dropped": result.generated - len(kept),
        "quota_shortfall_tasks": len(short), "device": device, "device_name": gpu,
        "step_cap": {"max_steps": cfg.max_steps, "floor": cap_floor} if cfg.max_steps is not None else None,
        "package_version": __version__,
    }
    if ground is not None:
        metadata["grounding"] = {"mode": DEFAULT_MODE, "state_test": "honest", **summary(grounding)}
    action_shape = () if domain.discrete_actions else (domain.action_dim,)

    def dataset(eps: list[Episode], **md: Any) -> EpisodeDataset:
        return EpisodeDataset.from_episodes(eps, metadata={**metadata, **md, "episodes": len(eps)},
                                            state_dim=domain.state_dim, action_shape=action_shape)

    save_dataset(dataset(kept), path, overwrite=overwrite)
    rng = np.random.default_rng(cfg.seed)
    sample = result.candidates
    if len(sample) > candidate_sample:
        sample = [sample[i] for i in sorted(rng.choice(len(sample), candidate_sample, replace=False))]
    if cfg.keep != "none":
        save_dataset(dataset(result.unfiltered, filter="none", oracle=False, filtered=False, dropped=0),
                     extra_paths[0], overwrite=overwrite)
        save_dataset(dataset(sample, filter="candidates", oracle=False, filtered=False, dropped=0),
                     extra_paths[1], overwrite=overwrite)
    report: dict[str, Any] = {"env_id": env_id, "level": level, "episodes": len(kept)}
    if score:
        report = check_rollouts(env_id, level, kept, progress=progress).report.to_dict()
        report["all"] = check_rollouts(env_id, level, sample, progress=progress).report.to_dict()
    report.update({
        "filter": cfg.keep, "oracle": cfg.keep == "oracle", "filtered": cfg.keep != "none",
        "kept": len(kept), "generated": result.generated, "dropped": result.generated - len(kept),
        "candidates_per_kept": result.generated / len(kept), "per_task": result.per_task,
        "tasks_short_of_quota": sorted(short), "throughput": result.throughput, "dataset": str(path),
        "checkpoint": str(checkpoint_dir), "sampling": asdict(cfg), "backbone": model.backbone_name,
        "device": device, "device_name": gpu, "scored": bool(score),
    })
    write_quality(quality_path(path), report)
    store.remove()  # the level is saved: its rounds are no longer needed
    return GenerateResult(level=level, path=path, episodes=len(kept), generated=result.generated,
                          dropped=result.generated - len(kept), throughput=result.throughput, quality=report,
                          resumed_rounds=result.resumed_rounds)
