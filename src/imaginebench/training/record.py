"""An offline run's results record (the fields are listed in :mod:`imaginebench.evaluation.records`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from imaginebench.evaluation.protocol import LAST_CHECKPOINTS, last_checkpoints_mean
from imaginebench.evaluation.records import SCHEMA_VERSION, versions
from imaginebench.evaluation.reference import normalised_score, reference_scores
from imaginebench.training.spec import ResolvedRun


def add_references(record: dict[str, Any]) -> dict[str, Any]:
    """Add the random and expert policies' success on the run's own evaluation episodes, and
    the normalised score (0 = random, 100 = expert), to ``record`` (in place; returned)."""
    refs, norm = {}, {}
    for lv in record["eval"]["levels"]:
        ref = reference_scores(record["env"], lv, record["eval"]["episodes_per_task"], record["seed"])
        refs[lv] = {"random": ref["random"]["success"], "expert": ref["expert"]["success"],
                    "episodes": ref["episodes"]}
        value = normalised_score(record["score"][lv], refs[lv]["random"], refs[lv]["expert"])
        norm[lv] = value if np.isfinite(value) else None  # null: the expert is not above chance here
    record["reference"] = refs
    record["normalised"] = norm
    return record


def build_record(run: ResolvedRun, config: Any, source: Any, encoder_name: str, source_info: list[dict[str, Any]],
                 curve: list[dict[str, Any]], levels: tuple[str, ...]) -> dict[str, Any]:
    """The record of a run trained to its last checkpoint (without ``timing`` and ``files``)."""
    spec, algo_spec, domain = run.spec, run.algo, run.domain
    tail = curve[-LAST_CHECKPOINTS:]
    score = {lv: last_checkpoints_mean([c[lv]["success"] for c in curve]) for lv in levels}
    per_task = {lv: {task: float(np.mean([c[lv]["per_task"][task] for c in tail])) for task in tail[-1][lv]["per_task"]}
                for lv in levels} if tail else {}
    return {
        "schema_version": SCHEMA_VERSION,
        "env": domain.env_id, "level": spec.level, "algo": algo_spec.name, "algo_family": algo_spec.family,
        "algo_label": algo_spec.label, "algo_requested": spec.algo, "tag": spec.tag, "seed": spec.seed,
        "profile": spec.profile_name, "settings": spec.settings(),
        "data": spec.data_tag, "sources": source_info, "mix_ratio": spec.mix_ratio if len(source_info) > 1 else 0.0,
        "steps": spec.steps, "checkpoint_every": spec.every, "batch_size": config.batch_size or spec.batch,
        "eval": {"levels": list(levels), "episodes_per_task": spec.episodes_per_task,
                 "episodes": {lv: curve[-1][lv]["episodes"] for lv in levels} if curve else {},
                 "last_checkpoints": min(LAST_CHECKPOINTS, len(curve)),
                 "checkpoints": "every" if spec.curve else "scored"},
        "score": score, "success": score[spec.level], "per_task": per_task, "curve": curve,
        "config": {"algorithm": config.to_dict(), "encoder": encoder_name,
                   "embedding_dim": source.embedding_dim, "state_dim": source.state_dim,
                   "standardize": spec.standardize, "mix_ratio": spec.mix_ratio,
                   "instructions": len(source.instructions),
                   **({"derived": derived} if (derived := config.derived(source)) else {})},
        "versions": versions(),
    }
