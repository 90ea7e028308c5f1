"""An offline run's training data: the real train data and, by the run's data variant, the
level's imaginary rollouts or the expert rollouts of the level's tasks, with each source's share
of every batch."""

from __future__ import annotations

import logging
from typing import Any

from imaginebench.data.hub import (
    check_sources_match, collect_command, dataset_path, imaginary_path, imagine_command, load_imaginary, load_real,
    reference_available,
)
from imaginebench.envs.registry import domain_class
from imaginebench.errors import UsageError
from imaginebench.training.spec import IMAGINARY_DATA, RunSpec

logger = logging.getLogger("imaginebench.training")


def load_sources(spec: RunSpec, env_id: str) -> tuple[dict[str, Any], dict[str, float], list[dict[str, Any]]]:
    """Datasets, batch shares and a description of each source for ``spec``.

    Raises ``FileNotFoundError`` naming the command that builds a missing dataset.
    """
    real = load_real(env_id, "train", spec.profile)
    _warn_if_resized(real, env_id, spec)
    sources = {"real": real}
    described = [("real", "real", "train")]
    paths = {"real": str(dataset_path(env_id, "real", "train", spec.profile))}
    if spec.data_tag in IMAGINARY_DATA:
        variant = IMAGINARY_DATA[spec.data_tag]
        found = (imaginary_path(env_id, spec.level, spec.profile, variant).exists()
                 or reference_available(env_id, spec.level, spec.profile, variant))
        imaginary = load_imaginary(env_id, spec.level, spec.profile, variant) if found else None
        if imaginary is None:  # one error line, not load_imaginary's warning followed by it
            raise FileNotFoundError(
                f"No {variant} imaginary {spec.level} dataset for {env_id} at "
                f"{imaginary_path(env_id, spec.level, spec.profile, variant)}. Build it with: "
                f"{imagine_command(env_id, spec.level, spec.profile)} (or train on real data only with --real-only)."
            )
        sources["imaginary"] = imaginary
        described.append(("imaginary", "imaginary", spec.level))
        paths["imaginary"] = str(imaginary.metadata.get("path") or
                                 imaginary_path(env_id, spec.level, spec.profile, variant))
    elif spec.data_tag == "real-upper-bound":
        sources[f"real-{spec.level}"] = load_real(env_id, spec.level, spec.profile)
        paths[f"real-{spec.level}"] = str(dataset_path(env_id, "real", spec.level, spec.profile))
        described.append((f"real-{spec.level}", "real", spec.level))
    check_sources_match(env_id, sources, paths, {name: level for name, _, level in described}, spec.profile)
    weights = ({"real": 1.0} if len(sources) == 1 else
               {name: (1.0 - spec.mix_ratio if name == "real" else spec.mix_ratio) for name in sources})
    info = [{"name": name, "source": source, "level": level, "episodes": len(sources[name]),
             "transitions": sources[name].num_transitions, "weight": weights[name],
             "path": paths.get(name) or str(dataset_path(env_id, source, level, spec.profile)),
             **({k: sources[name].metadata.get(k) for k in ("filter", "oracle", "reference", "backbone", "model",
                                                               "device", "generated", "checkpoint_step")}
                if source == "imaginary" else {})}
            for name, source, level in described]
    return sources, weights, info


def _warn_if_resized(real: Any, env_id: str, spec: RunSpec) -> None:
    """Say so when the real train set on disk is not the profile's size (collected with
    ``--episodes``, or before the domain's card resized the profile): the run trains on what is
    there and its record names that size, but it is then not comparable with the published rows."""
    try:
        wanted = spec.profile_obj.episodes(domain_class(env_id), "real", "train")
    except UsageError:  # a domain without a size for this profile (a plugin's): nothing to compare with
        return
    if len(real) != wanted:
        logger.warning(
            "%s's real train data holds %d episodes; the %s profile uses %d (published rows are measured at that "
            "size). Rebuild it with: %s --overwrite", env_id, len(real), spec.profile_name, wanted,
            collect_command(env_id, "train", spec.profile))

