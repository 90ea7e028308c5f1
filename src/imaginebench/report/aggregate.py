"""Aggregate run records into per-(env, level, data, algorithm) results over seeds.

A cell's value is the run score (mean success over the last five checkpoints) at the run's
target level; over seeds it is reported as mean ± standard deviation (sample std, ``ddof=1``;
0 for a single seed).  Figures draw half a standard deviation as the error bar (docs/benchmark.md §7).

Every table also shows the chance level and the ceiling: the uniformly random policy's and the
expert's success on the same evaluation episodes (same protocol, same seeds; see
:mod:`imaginebench.evaluation.reference`), and beside each success rate the **normalised
score** 100·(success − random)/(expert − random), per seed, then mean ± std (D4RL's convention:
0 = chance, 100 = expert).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from imaginebench.domains.base import LEVELS
from imaginebench.training.record import add_references

DATA_ORDER = ("imaginary", "imaginary-grounded", "imaginary-unfiltered", "imaginary-oracle", "real", "real-retrieval",
              "real-upper-bound")
DATA_TITLES = {
    "imaginary": "Real + imaginary rollouts, honest filter (RLIM default; train level: real only)",
    "imaginary-unfiltered": "Real + imaginary rollouts, unfiltered",
    "imaginary-oracle": "Real + imaginary rollouts, ORACLE filter (reads the simulator on novel tasks; "
                        "a diagnostic, not a method)",
    "imaginary-grounded": "Real + imaginary rollouts, grounded filter (actions replayed through dynamics "
                          "learned from real train data; no simulator)",
    "real": "Real rollouts only (no imagination)",
    "real-retrieval": "Retrieval baseline (real rollouts only; each novel instruction replaced by its nearest "
                      "train phrasing)",
    "real-upper-bound": "Real upper bound (real + expert rollouts of the level's tasks)",
}
ALGO_ORDER = ("bc", "cql", "bcq", "td3bc", "sac", "iql", "discrete_bc", "discrete_cql", "discrete_bcq", "discrete_sac")


@dataclass
class Cell:
    """The seeds of one (env, profile, level, data, algorithm) group.

    Attributes:
        scores: each seed's score at the target level.
        seeds: the seeds, in the same order.
        steps: gradient steps of the runs (the largest, if they differ).
        step_counts: every gradient-step count among the runs.
        wall_time_s: total wall time of the runs.
    """

    env: str
    profile: str
    level: str
    data: str
    algo: str
    label: str
    scores: list[float] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    steps: int = 0
    step_counts: set[int] = field(default_factory=set)
    wall_time_s: float = 0.0
    normalised: list[float] = field(default_factory=list)
    reference: dict[tuple[int, int], tuple[float, float]] = field(default_factory=dict)
    """(seed, evaluation episodes per task) -> (random success, expert success)."""
    encoders: set[str] = field(default_factory=set)
    """Instruction encoders of the runs."""

    @property
    def n(self) -> int:
        return len(self.scores)

    @property
    def mean(self) -> float:
        return float(np.mean(self.scores)) if self.scores else float("nan")

    @property
    def std(self) -> float:
        return float(np.std(self.scores, ddof=1)) if len(self.scores) > 1 else 0.0

    def text(self, show_steps: bool = False) -> str:
        """``mean ± std`` in %, ``(n=…)`` when not 3 seeds, and with ``show_steps`` the gradient steps."""
        out = _ref_text(self.mean, self.std, self.n)
        return out + (f" @{steps_text(self.step_counts)}" if show_steps else "")

    def normalised_text(self) -> str:
        """Normalised score, mean ± std over seeds ("–" when undefined: expert not above chance); one seed
        has no spread to show."""
        values = [v for v in self.normalised if np.isfinite(v)]
        if not values or len(values) < len(self.normalised):
            return "–"
        if len(values) == 1:
            return f"{values[0]:.1f}"
        return f"{float(np.mean(values)):.1f} ± {float(np.std(values, ddof=1)):.1f}"


def steps_text(counts: set[int]) -> str:
    """``20k`` / ``10k–20k`` steps (``k`` for whole thousands)."""
    short = lambda n: f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else f"{n:,}"  # noqa: E731
    lo, hi = min(counts), max(counts)
    return f"{short(lo)} steps" if lo == hi else f"{short(lo)}–{short(hi)} steps (mixed)"


def mixed_steps(cells: Sequence[Cell]) -> bool:
    """Whether ``cells`` were not all trained for one number of gradient steps."""
    return len({n for c in cells for n in c.step_counts}) > 1


def _with_references(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with reference scores (records written before they existed get them now)."""
    if "reference" in record and record["level"] in record.get("reference", {}):
        return record
    if "eval" not in record or "score" not in record:  # not a protocol run: nothing to compare with
        return record

    return add_references(dict(record))


def aggregate(records: Iterable[dict[str, Any]], references: bool = True) -> list[Cell]:
    """Group records by (env, profile, level, data, algorithm), sorted for display.

    With ``references`` each cell also gets the random/expert reference of its seeds and the
    normalised scores (computed and cached for records that lack them).
    """
    cells: dict[tuple, Cell] = {}
    for r in records:
        if references:
            r = _with_references(r)
        tag = r.get("tag")
        algo = f"{r['algo']}@{tag}" if tag else r["algo"]
        label = r.get("algo_label", r["algo"]) + (f" [{tag}]" if tag else "")
        key = (r["env"], r["profile"], r["level"], r["data"], algo)
        cell = cells.setdefault(key, Cell(*key, label=label))
        cell.scores.append(float(r["success"]))
        cell.seeds.append(int(r["seed"]))
        cell.steps = max(cell.steps, int(r.get("steps", 0)))
        cell.step_counts.add(int(r.get("steps", 0)))
        cell.wall_time_s += float(r.get("timing", {}).get("wall_time_s") or 0.0)
        cell.encoders.add(str(r.get("config", {}).get("encoder") or "default"))
        if "reference" in r:
            ref = r["reference"][r["level"]]
            cell.reference[(int(r["seed"]), int(r["eval"]["episodes_per_task"]))] = (ref["random"], ref["expert"])
            value = r["normalised"][r["level"]]
            cell.normalised.append(float("nan") if value is None else float(value))

    def order(c: Cell) -> tuple:
        return (c.env, c.profile, DATA_ORDER.index(c.data) if c.data in DATA_ORDER else 99,
                ALGO_ORDER.index(c.algo.split("@")[0]) if c.algo.split("@")[0] in ALGO_ORDER else 99, c.algo,
                LEVELS.index(c.level) if c.level in LEVELS else 99)

    return sorted(cells.values(), key=order)


REFERENCE_LABELS = {"random": "uniformly random policy (chance)", "expert": "expert"}


def level_references(cells: Sequence[Cell], level: str) -> dict[str, tuple[float, float, int]]:
    """Random and expert success at ``level`` over the (seed, episodes) settings of ``cells``:
    ``{"random": (mean, std, n), "expert": (...)}``; empty when no cell has references."""
    merged: dict[tuple[int, int], tuple[float, float]] = {}
    for c in cells:
        if c.level == level:
            merged.update(c.reference)
    if not merged:
        return {}
    out = {}
    for i, name in enumerate(("random", "expert")):
        values = [v[i] for v in merged.values()]
        out[name] = (float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else 0.0, len(values))
    return out


def _ref_text(mean: float, std: float, n: int) -> str:
    """``mean ± std`` in % with ``(n=…)`` when not 3 seeds; one seed has no spread to show."""
    if n == 1:
        return f"{100 * mean:.1f} (n=1)"
    return f"{100 * mean:.1f} ± {100 * std:.1f}" + (f" (n={n})" if n != 3 else "")


def _reference_rows(cells: Sequence[Cell], levels: Sequence[str], lead: int, normalised: bool) -> list[str]:
    """Markdown rows for chance and expert (``lead`` empty cells after the label)."""
    refs = {lv: level_references(cells, lv) for lv in levels}
    if not any(refs.values()):
        return []
    rows = []
    for name, label in REFERENCE_LABELS.items():
        row = []
        for lv in levels:
            row.append(_ref_text(*refs[lv][name]) if name in refs[lv] else "–")
            if normalised:
                row.append(("0" if name == "random" else "100") if name in refs[lv] else "–")
        rows.append(f"| *{label}* | " + "| " * lead + " | ".join(row) + " |")
    return rows


def _header(levels: Sequence[str], normalised: bool) -> tuple[str, int]:
    if not normalised:
        return " | ".join(levels), len(levels)
    return " | ".join(f"{lv} | {lv} norm." for lv in levels), 2 * len(levels)


def _cells_text(cell: Cell | None, normalised: bool, show_steps: bool = False) -> list[str]:
    if cell is None:
        return ["–", "–"] if normalised else ["–"]
    return [cell.text(show_steps), cell.normalised_text()] if normalised else [cell.text(show_steps)]


def _table(cells: Sequence[Cell]) -> list[str]:
    levels = [lv for lv in LEVELS if any(c.level == lv for c in cells)]
    algos = list(dict.fromkeys((c.algo, c.label) for c in cells))
    normalised = any(c.normalised for c in cells)
    header, width = _header(levels, normalised)
    lines = ["| algorithm | " + header + " |", "|---|" + "---:|" * width]
    index = {(c.algo, c.level): c for c in cells}
    mixed = mixed_steps(cells)
    for algo, label in algos:
        row = [t for lv in levels for t in _cells_text(index.get((algo, lv)), normalised, mixed)]
        lines.append(f"| {label} (`{algo}`) | " + " | ".join(row) + " |")
    return lines + _reference_rows(cells, levels, 0, normalised)


def in_setting(cell: Cell, data: str) -> bool:
    """Whether ``cell`` belongs to the results of training-data variant ``data``.

    The ``train`` level has no imaginary rollouts: its real-only runs are the train column of
    the imaginary-rollout (RLIM) results as well as of the real-only results.
    """
    if data == "imaginary":
        return cell.data == "imaginary" or (cell.level == "train" and cell.data == "real")
    return cell.data == data


DATA_SHORT = {"imaginary": "real + imaginary (honest filter)", "imaginary-unfiltered": "real + imaginary (unfiltered)",
              "imaginary-oracle": "real + imaginary (oracle filter) †", "real": "real only",
              "real-retrieval": "retrieval (real only, nearest train phrasing)", "imaginary-grounded": "real + imaginary (grounded filter)",
              "real-upper-bound": "Real upper bound"}


def comparison(cells: Sequence[Cell]) -> list[str]:
    """One table per (env, profile): rows algorithm × training data, columns novel levels.

    † marks the oracle filter, which reads the simulator on novel tasks (a diagnostic).
    """
    out: list[str] = []
    novel = [lv for lv in LEVELS if lv != "train"]
    for env, profile in dict.fromkeys((c.env, c.profile) for c in cells):
        group = [c for c in cells if c.env == env and c.profile == profile and c.level in novel]
        levels = [lv for lv in novel if any(c.level == lv for c in group)]
        if not levels or len({c.data for c in group}) < 2:
            continue
        index = {(c.algo, c.data, c.level): c for c in group}
        normalised = any(c.normalised for c in group)
        header, width = _header(levels, normalised)
        mixed = mixed_steps(group)
        steps = ("gradient steps differ between cells: each cell states its own (`@…`)" if mixed else
                 f"{steps_text({n for c in group for n in c.step_counts})} of training in every cell")
        out += [f"## {env} — imaginary rollouts vs none (profile `{profile}`)", "", steps, "",
                "| algorithm | training data | " + header + " |", "|---|---|" + "---:|" * width]
        for algo, label in dict.fromkeys((c.algo, c.label) for c in group):
            for data in DATA_ORDER:
                if not any((algo, data, lv) in index for lv in levels):
                    continue
                row = [t for lv in levels for t in _cells_text(index.get((algo, data, lv)), normalised, mixed)]
                out.append(f"| {label} | {DATA_SHORT.get(data, data)} | " + " | ".join(row) + " |")
        out += _reference_rows(group, levels, 1, normalised)
        out.append("")
        if any(c.data == "imaginary-oracle" for c in group):
            out += ["† oracle filter: keeps only imagined rollouts whose transitions the simulator confirms; it "
                    "reads the simulator on the novel tasks, so it is an upper-bound diagnostic, not a method.", ""]
    return out


def markdown(cells: Sequence[Cell]) -> str:
    """Markdown tables: one per (env, profile, data variant); success in % as mean ± std over seeds."""
    intro = ("Success rate (%) at each run's target level: mean ± std over seeds of the run score "
             "(mean over the last five checkpoints). `n` is given when it is not 3. *Italic rows* are "
             "references measured on the same evaluation episodes (same protocol and seeds): a uniformly "
             "random policy (chance) and the scripted expert. `norm.` is the normalised score "
             "100·(success − random)/(expert − random) per seed, mean ± std: 0 = chance, 100 = expert.")
    out = ["# ImagineBench results", "", intro, ""]
    out += comparison(cells)
    groups: dict[tuple, list[Cell]] = {}
    for env, profile in dict.fromkeys((c.env, c.profile) for c in cells):
        for data in DATA_ORDER:
            group = [c for c in cells if c.env == env and c.profile == profile and in_setting(c, data)]
            if any(c.level != "train" for c in group) or (data == "imaginary" and group):
                groups[(env, profile, data)] = group
    for (env, profile, data), group in groups.items():
        steps = ("gradient steps differ between cells: each cell states its own (`@…`)" if mixed_steps(group) else
                 f"{max(c.steps for c in group):,} gradient steps")
        hours = sum(c.wall_time_s for c in group) / 3600
        encoders = ", ".join(f"`{e}`" for e in sorted({e for c in group for e in c.encoders}))
        out += [f"## {env} — {DATA_TITLES.get(data, data)}", "",
                f"profile `{profile}`, {steps}, instruction encoder {encoders}, "
                f"{hours:.2f} h of runs in total", ""]
        out += _table(group) + [""]
    if not groups:
        out.append("No run records found.")
    return "\n".join(out).rstrip() + "\n"
