"""Quality of imaginary rollouts (docs/benchmark.md §6): consistency, transition correctness, legality.

* **consistency** — fraction of rollouts whose goal holds at some step, by the domain's
  success test (recomputed here with ``domain.score_rollout``, not read from the file);
* **transition correctness** — fraction of generated transitions ``(s, a, s')`` for which
  the simulator, put into ``s`` (``env.set_state``) and stepped with ``a``, lands within
  :func:`transition_tolerance` of ``s'`` (max absolute difference over state dims);
* **legality** — fraction of generated states (``s_1 .. s_T``; ``s_0`` is real) that
  ``domain.is_legal`` accepts.

Rollout-level rates (all transitions correct / all states legal) drive the optional filter.
Reports are stored as JSON beside the dataset (``imaginary-<level>.quality.json``).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
from tqdm.auto import tqdm

from imaginebench import limits
from imaginebench.data.dataset import Episode, EpisodeDataset
from imaginebench.data.hub import dataset_path, find_imaginary, imaginary_path, imagine_command
from imaginebench.data.storage import load_dataset, save_dataset
from imaginebench.envs.registry import domain_class, load_domain, make
from imaginebench.errors import choice_error
from imaginebench.fileio import write_json
from imaginebench.imagination.filters import KEEP_MODES, honest_ok


def transition_tolerance(env_id: str) -> float:
    """Largest |simulated − generated| over the state entries for a transition to count as correct:
    the domain's ``transition_tolerance`` (its card says how it was measured)."""
    return float(domain_class(env_id).transition_tolerance)


@dataclass
class QualityReport:
    """Quality numbers of one level's rollouts (rates in [0, 1])."""

    env_id: str
    level: str
    episodes: int
    transitions: int
    consistency: float
    transition_correctness: float
    legality: float
    rollouts_transitions_ok: float
    rollouts_legal: float
    mean_length: float
    mean_transition_error: float
    tolerance: float
    replay_success: float = math.nan
    model_replay_success: float = math.nan
    """Share of rollouts whose actions the grounding models (learned from real train data) replay to
    the goal; NaN where no grounding fit is cached (``imaginebench imagine ground`` makes one)."""
    inverse_agreement: float = math.nan
    """Share of imagined actions the grounding inverse model reads off the imagined states."""
    transition_correctness_paper: float | None = None
    by_family: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Checks:
    """Per-rollout results behind a :class:`QualityReport`."""

    report: QualityReport
    success: np.ndarray
    transitions_ok: np.ndarray
    legal: np.ndarray
    replayed: np.ndarray | None = None


def _legal(domain: Any, state: np.ndarray) -> bool:
    if not np.all(np.isfinite(state)):
        return False
    try:
        return bool(domain.is_legal(state))
    except (ValueError, IndexError, KeyError):
        return False


def check_rollouts(env_id: str, level: str, episodes: Sequence[Episode] | EpisodeDataset,
                   tolerance: float | None = None, progress: bool = False, replay: bool = True) -> Checks:
    """Score ``episodes`` of ``level`` with the domain's functions and the simulator.

    Besides consistency, transition correctness and legality: ``replay_success`` (the imagined
    actions replayed in the simulator from the imagined initial state reach the goal; see
    :mod:`.replay`) and, for BabyAI, ``transition_correctness_paper`` (the paper's looser rule:
    a transition is wrong when the agent moves more than two cells at once).
    """
    tol = transition_tolerance(env_id) if tolerance is None else float(tolerance)
    env = make(env_id, level=level, encode_instruction=False)
    sim = env.unwrapped
    domain = sim.domain
    eps = list(episodes)
    n = len(eps)
    success = np.zeros(n, bool)
    trans_ok = np.zeros(n, bool)
    legal_ok = np.zeros(n, bool)
    n_trans = n_trans_ok = n_states = n_legal = 0
    errors: list[float] = []
    fam: dict[str, list[float]] = defaultdict(list)
    n_paper_ok = 0
    has_paper_rule = False
    try:
        for i, ep in enumerate(tqdm(eps, desc=f"quality {level}", unit="rollout", disable=not progress)):
            task = domain.task(ep.task, level=level)
            states = np.asarray(ep.states, np.float64)
            if len(ep):
                try:
                    _, succ = domain.score_rollout(task, states, ep.actions)
                    success[i] = bool(succ.any())
                except (ValueError, FloatingPointError, IndexError, KeyError, OverflowError):
                    success[i] = False  # the success functions cannot read an imagined state: not a success
            env.reset(seed=i, options={"task": task.name})
            ok_all = legal_all = True
            for t in range(len(ep)):
                s, s2 = states[t], states[t + 1]
                good = False
                if np.all(np.isfinite(s)) and np.all(np.isfinite(s2)):
                    try:
                        sim.set_state(s)
                        _, _, _, _, info = sim.step(ep.actions[t])
                        err = float(np.max(np.abs(np.asarray(info["state"], np.float64) - s2)))
                        errors.append(err)
                        good = err <= tol
                    except (ValueError, IndexError, RuntimeError):
                        good = False
                n_trans += 1
                n_trans_ok += good
                paper = domain.paper_transition_ok(s, s2)
                if paper is not None:
                    has_paper_rule = True
                    n_paper_ok += bool(paper)
                ok_all &= good
                leg = _legal(domain, s2)
                n_states += 1
                n_legal += leg
                legal_all &= leg
            trans_ok[i], legal_ok[i] = ok_all, legal_all
            fam[task.family].append(float(success[i]))
    finally:
        env.close()

    def rate(a: float, b: int) -> float:
        return float(a) / b if b else math.nan

    replayed = None
    if replay:
        from imaginebench.imagination.replay import replay_success

        replayed = replay_success(env_id, level, eps)

    report = QualityReport(
        env_id=env_id, level=level, episodes=n, transitions=n_trans,
        consistency=rate(success.sum(), n), transition_correctness=rate(n_trans_ok, n_trans),
        legality=rate(n_legal, n_states), rollouts_transitions_ok=rate(trans_ok.sum(), n),
        rollouts_legal=rate(legal_ok.sum(), n), mean_length=rate(sum(len(e) for e in eps), n),
        mean_transition_error=float(np.mean(errors)) if errors else math.nan, tolerance=tol,
        replay_success=rate(replayed.sum(), n) if replayed is not None else math.nan,
        transition_correctness_paper=rate(n_paper_ok, n_trans) if has_paper_rule else None,
        by_family={k: {"episodes": len(v), "consistency": float(np.mean(v))} for k, v in sorted(fam.items())},
    )
    return Checks(report=report, success=success, transitions_ok=trans_ok, legal=legal_ok, replayed=replayed)


def filter_episodes(episodes: Sequence[Episode], checks: Checks) -> list[Episode]:
    """Keep rollouts whose states are all legal and whose transitions are all correct."""
    keep = checks.transitions_ok & checks.legal
    return [ep for ep, k in zip(episodes, keep) if k]


def quality_path(dataset_file: Path | str) -> Path:
    """``imaginary-<level>.npz`` -> ``imaginary-<level>.quality.json`` (same folder)."""
    p = Path(dataset_file)
    return p.with_name(p.stem + ".quality.json")


def write_quality(path: Path, report: Mapping[str, Any]) -> Path:
    return write_json(path, dict(report))


def _keep_generation_facts(report_file: Path, report: dict[str, Any]) -> None:
    """Copy what only generation knew (throughput, sampling, checkpoint, the scores of all its candidates)
    from an earlier report; ``kept`` and ``candidates_per_kept`` follow the rollouts scored now (a file
    filtered again after generation, ``imagine quality --keep``, holds fewer)."""
    if report_file.exists():
        previous = json.loads(report_file.read_text())
        report.update({k: previous[k] for k in ("throughput", "sampling", "checkpoint", "backbone", "per_task",
                                                "generated", "filter", "oracle", "tasks_short_of_quota", "device",
                                                "device_name", "all") if k in previous})
        if "generated" in previous and "episodes" in report:
            report["kept"] = int(report["episodes"])
            report["candidates_per_kept"] = previous["generated"] / max(int(report["episodes"]), 1)


def dataset_quality(env_id: str, level: str, profile: str | None = None, tolerance: float | None = None,
                    progress: bool = True, save: bool = True, variant: str = "honest") -> dict[str, Any]:
    """Score the stored imaginary dataset of ``level`` (``variant``: honest, unfiltered, oracle)
    and (by default) write its JSON report.  When generation saved a sample of all candidates
    beside it, the report's ``all`` entry scores that sample too."""
    limits.positive("--tolerance", tolerance, allow_none=True)

    ds, path = stored_imaginary(env_id, level, profile, variant)
    shipped = bool(ds.metadata.get("reference", False))
    report = check_rollouts(env_id, level, ds, tolerance=tolerance, progress=progress).report.to_dict()
    report.update(_grounding_numbers(env_id, level, profile, ds))
    old = quality_path(path)
    _keep_generation_facts(old, report)
    sample = path.with_name(f"imaginary-{level}.candidates.npz")
    if variant != "unfiltered" and sample.exists():
        report["all"] = check_rollouts(env_id, level, load_dataset(sample), tolerance=tolerance,
                                       progress=progress).report.to_dict()
    report.update({"dataset": str(path), "filtered": bool(ds.metadata.get("filtered", False)),
                   "dropped": int(ds.metadata.get("dropped", 0)), "generator": ds.metadata.get("generator"),
                   "source": ds.metadata.get("source"), "reference": shipped})
    if save and not shipped:  # the package's own report beside a shipped file is left as installed
        write_quality(old, report)
    return report


def _grounding_numbers(env_id: str, level: str, profile: str | None, episodes: Any) -> dict[str, float]:
    """Model-replay success and inverse agreement when the grounding models are cached, else nothing."""
    from imaginebench.imagination.grounding import cached_grounding, grounding_quality

    model = cached_grounding(env_id, profile)
    if model is None:
        return {}
    return grounding_quality(model, load_domain(env_id), list(episodes), level=level)


def stored_imaginary(env_id: str, level: str, profile: str | None = None,
                     variant: str = "honest") -> tuple[EpisodeDataset, Path]:
    """The imaginary dataset of ``level`` to score and its file, as :func:`get_dataset` picks it
    (:func:`~imaginebench.data.hub.find_imaginary`); none is a one-line error saying how to build it."""
    found = find_imaginary(env_id, level, profile, variant)
    if found is not None:
        return found
    path = imaginary_path(env_id, level, profile, variant)
    raise FileNotFoundError(f"No imaginary {level} dataset for {env_id} at {path}, and none ships with the "
                            f"package. Build it with: {imagine_command(env_id, level, profile)}")


def unfiltered_path(dataset_file: Path | str) -> Path:
    """``imaginary-<level>.npz`` -> ``imaginary-<level>.unfiltered.npz`` (same folder)."""
    p = Path(dataset_file)
    return p.with_name(p.stem + ".unfiltered.npz")


def filter_dataset(env_id: str, level: str, profile: str | None = None, tolerance: float | None = None,
                   progress: bool = True, keep: str = "honest") -> dict[str, Any]:
    """Filter the stored imaginary rollouts of ``level`` in place.

    ``keep="honest"`` (default) keeps rollouts whose goal holds at the last imagined state and
    whose imagined states are all legal, by the domain's pure functions only (no simulator);
    ``keep="oracle"`` also drops rollouts with a transition the simulator disagrees with (a
    diagnostic that reads the simulator on novel tasks; written as ``oracle`` in the metadata).
    The dataset file is replaced by the kept rollouts (metadata ``filter``, ``oracle``,
    ``dropped``, ``generated``); the original is kept beside it as
    ``imaginary-<level>.unfiltered.npz``.  Returns the quality report of the rollouts before
    filtering, with ``dropped`` and ``kept`` (also written as JSON).
    """
    limits.positive("--tolerance", tolerance, allow_none=True)

    if keep not in KEEP_MODES or keep in ("none", "grounded"):
        hint = " (grounded data: imaginebench imagine ground)" if keep == "grounded" else ""
        raise ValueError(f"Unknown filter {keep!r}; choose honest or oracle{hint}.")
    path = dataset_path(env_id, "imaginary", level, profile)
    if not path.exists():
        raise FileNotFoundError(f"No imaginary {level} dataset for {env_id} at {path}. "
                                f"Build it with: {imagine_command(env_id, level, profile)}")
    ds = load_dataset(path)
    episodes = list(ds)
    domain = load_domain(env_id)
    ok = np.asarray([honest_ok(domain, ep) for ep in episodes], bool)
    checks = check_rollouts(env_id, level, episodes, tolerance=tolerance, progress=progress)
    if keep == "oracle":
        ok &= checks.transitions_ok & checks.legal
    kept = [ep for ep, k in zip(episodes, ok) if k]
    if not kept:
        raise ValueError(f"Filtering would drop all {len(episodes)} imaginary {level} rollouts in {path}; "
                         "the file is left as it is. Train the rollout model longer and generate again.")
    already = bool(ds.metadata.get("filtered", False))
    dropped = len(episodes) - len(kept) + (int(ds.metadata.get("dropped", 0)) if already else 0)
    if not already:
        save_dataset(ds, unfiltered_path(path), overwrite=True)
    metadata = {**ds.metadata, "filtered": True, "filter": keep, "oracle": keep == "oracle" or
                bool(ds.metadata.get("oracle", False)), "dropped": dropped, "episodes": len(kept),
                "generated": int(ds.metadata.get("generated", len(episodes)))}
    action_shape = tuple(ds.actions.shape[1:])
    save_dataset(type(ds).from_episodes(kept, metadata=metadata, state_dim=ds.states.shape[1],
                                        action_shape=action_shape), path, overwrite=True)
    report = checks.report.to_dict()
    old = quality_path(path)
    _keep_generation_facts(old, report)
    original = unfiltered_path(path)
    report.update({"dataset": str(path), "filtered": True, "filter": keep, "oracle": metadata["oracle"],
                   "dropped": dropped, "kept": len(kept), "candidates_per_kept": metadata["generated"] / len(kept),
                   "unfiltered_dataset": str(original) if original.exists() else None})
    write_quality(old, report)
    return report


ORACLE_RULES = ("transitions", "transitions+replay", "replay")


def oracle_variant(env_id: str, level: str, profile: str | None = None, tolerance: float | None = None,
                   progress: bool = True, overwrite: bool = False, rule: str = "transitions") -> dict[str, Any]:
    """Write ``imaginary-<level>.oracle.npz``: the honest dataset's legal rollouts that pass
    the simulator check ``rule`` (recorded as ``oracle_rule``): ``transitions`` (every imagined
    transition re-simulated within tolerance), ``replay`` (the imagined actions, replayed in the
    simulator from the imagined first state, reach the goal: the ceiling of any filter that judges
    actions by their outcome) or ``transitions+replay`` (both).  The honest dataset is left as
    it is.  This reads the simulator on novel tasks: a diagnostic, marked ``oracle``.

    Unlike ``imagine generate --keep oracle`` (best-of-N until each task's quota passes the
    oracle), this does not refill: the oracle set is a subset of the honest set.
    """
    limits.positive("--tolerance", tolerance, allow_none=True)
    if rule not in ORACLE_RULES:
        raise choice_error("oracle rule", rule, ORACLE_RULES)

    target = imaginary_path(env_id, level, profile, "oracle")
    if target.exists() and not overwrite:
        raise FileExistsError(f"{target} already exists; pass --overwrite to replace it.")
    ds, source = stored_imaginary(env_id, level, profile, "honest")
    episodes = list(ds)
    checks = check_rollouts(env_id, level, episodes, tolerance=tolerance, progress=progress,
                            replay=rule != "transitions")
    keep = checks.legal.copy()
    if rule != "replay":
        keep &= checks.transitions_ok
    if rule != "transitions":
        keep &= checks.replayed
    kept = [ep for ep, k in zip(episodes, keep) if k]
    if not kept:
        raise ValueError(f"No rollout of {source} passes the oracle check ({rule}); nothing written.")
    inherited = {k: v for k, v in ds.metadata.items() if k not in ("reference", "path")}
    metadata = {**inherited, "filter": "oracle", "oracle": True, "filtered": True, "episodes": len(kept),
                "oracle_source": str(source), "oracle_dropped": len(episodes) - len(kept), "oracle_rule": rule}
    save_dataset(type(ds).from_episodes(kept, metadata=metadata, state_dim=ds.states.shape[1],
                                        action_shape=tuple(ds.actions.shape[1:])), target, overwrite=overwrite)
    return {"env_id": env_id, "level": level, "dataset": str(target), "honest": len(episodes), "kept": len(kept),
            "oracle": True, "oracle_rule": rule}


COLUMNS = (("consistency", "consistency"), ("transition_correctness", "transition"), ("legality", "legality"),
           ("replay_success", "replay"), ("model_replay_success", "model-rp"), ("inverse_agreement", "inv-agree"))


def _pct(value: Any) -> str:
    return "n/a" if value is None or value != value else f"{100 * value:.1f}"


def format_table(reports: Iterable[Mapping[str, Any]]) -> str:
    """A plain-text table of quality reports (percentages): kept rollouts, then all candidates when known."""
    lines = [f"{'env':<16}{'level':<10}{'set':<6}{'rollouts':>9}{'steps':>8}{'consistency':>13}{'transition':>12}"
             f"{'legality':>10}{'replay':>8}{'model-rp':>10}{'inv-agree':>11}{'paper-tr':>9}{'dropped':>9}"]
    for r in reports:
        rows = [("kept", r)] + ([("all", r["all"])] if isinstance(r.get("all"), Mapping) else [])
        for name, q in rows:
            pct = [_pct(q.get(k)) for k, _ in COLUMNS]
            dropped = r.get("dropped", 0) if name == "kept" else ""
            lines.append(f"{r['env_id']:<16}{r['level']:<10}{name:<6}{q['episodes']:>9}{q['transitions']:>8}"
                         f"{pct[0]:>13}{pct[1]:>12}{pct[2]:>10}{pct[3]:>8}{pct[4]:>10}{pct[5]:>11}"
                         f"{_pct(q.get('transition_correctness_paper')):>9}{dropped:>9}")
    return "\n".join(lines)
