"""Aggregate run records into per-(env, level, data, algorithm) results over seeds.

A cell's value is the run score (mean success over the last five checkpoints) at the run's
target level; over seeds it is reported as mean ± standard deviation (sample std, ``ddof=1``;
0 for a single seed).  Figures draw half a standard deviation as the error bar (SPEC §7).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from imaginebench.domains.base import LEVELS

DATA_ORDER = ("imaginary", "imaginary-unfiltered", "imaginary-oracle", "real", "real-upper-bound")
DATA_TITLES = {
    "imaginary": "Real + imaginary rollouts, honest filter (RLIM default; train level: real only)",
    "imaginary-unfiltered": "Real + imaginary rollouts, unfiltered",
    "imaginary-oracle": "Real + imaginary rollouts, ORACLE filter (reads the simulator on novel tasks; "
                        "a diagnostic, not a method)",
    "real": "Real rollouts only (no imagination)",
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
    wall_time_s: float = 0.0

    @property
    def n(self) -> int:
        return len(self.scores)

    @property
    def mean(self) -> float:
        return float(np.mean(self.scores)) if self.scores else float("nan")

    @property
    def std(self) -> float:
        return float(np.std(self.scores, ddof=1)) if len(self.scores) > 1 else 0.0

    def text(self) -> str:
        return f"{100 * self.mean:.1f} ± {100 * self.std:.1f}" + (f" (n={self.n})" if self.n != 3 else "")


def aggregate(records: Iterable[dict[str, Any]]) -> list[Cell]:
    """Group records by (env, profile, level, data, algorithm), sorted for display."""
    cells: dict[tuple, Cell] = {}
    for r in records:
        tag = r.get("tag")
        algo = f"{r['algo']}@{tag}" if tag else r["algo"]
        label = r.get("algo_label", r["algo"]) + (f" [{tag}]" if tag else "")
        key = (r["env"], r["profile"], r["level"], r["data"], algo)
        cell = cells.setdefault(key, Cell(*key, label=label))
        cell.scores.append(float(r["success"]))
        cell.seeds.append(int(r["seed"]))
        cell.steps = max(cell.steps, int(r.get("steps", 0)))
        cell.wall_time_s += float(r.get("timing", {}).get("wall_time_s") or 0.0)

    def order(c: Cell) -> tuple:
        return (c.env, c.profile, DATA_ORDER.index(c.data) if c.data in DATA_ORDER else 99,
                ALGO_ORDER.index(c.algo.split("@")[0]) if c.algo.split("@")[0] in ALGO_ORDER else 99, c.algo,
                LEVELS.index(c.level) if c.level in LEVELS else 99)

    return sorted(cells.values(), key=order)


def _table(cells: Sequence[Cell]) -> list[str]:
    levels = [lv for lv in LEVELS if any(c.level == lv for c in cells)]
    algos = list(dict.fromkeys((c.algo, c.label) for c in cells))
    lines = ["| algorithm | " + " | ".join(levels) + " |", "|---|" + "---:|" * len(levels)]
    index = {(c.algo, c.level): c for c in cells}
    for algo, label in algos:
        row = [index[(algo, lv)].text() if (algo, lv) in index else "–" for lv in levels]
        lines.append(f"| {label} (`{algo}`) | " + " | ".join(row) + " |")
    return lines


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
        out += [f"## {env} — imaginary rollouts vs none (profile `{profile}`)", "",
                "| algorithm | training data | " + " | ".join(levels) + " |", "|---|---|" + "---:|" * len(levels)]
        for algo, label in dict.fromkeys((c.algo, c.label) for c in group):
            for data in DATA_ORDER:
                if not any((algo, data, lv) in index for lv in levels):
                    continue
                row = [index[(algo, data, lv)].text() if (algo, data, lv) in index else "–" for lv in levels]
                out.append(f"| {label} | {DATA_SHORT.get(data, data)} | " + " | ".join(row) + " |")
        out.append("")
        if any(c.data == "imaginary-oracle" for c in group):
            out += ["† oracle filter: keeps only imagined rollouts whose transitions the simulator confirms; it "
                    "reads the simulator on the novel tasks, so it is an upper-bound diagnostic, not a method.", ""]
    return out


def markdown(cells: Sequence[Cell]) -> str:
    """Markdown tables: one per (env, profile, data variant); success in % as mean ± std over seeds."""
    intro = ("Success rate (%) at each run's target level: mean ± std over seeds of the run score "
             "(mean over the last five checkpoints). `n` is given when it is not 3.")
    out = ["# ImagineBench results", "", intro, ""]
    out += comparison(cells)
    groups: dict[tuple, list[Cell]] = {}
    for env, profile in dict.fromkeys((c.env, c.profile) for c in cells):
        for data in DATA_ORDER:
            group = [c for c in cells if c.env == env and c.profile == profile and in_setting(c, data)]
            if any(c.level != "train" for c in group) or (data == "imaginary" and group):
                groups[(env, profile, data)] = group
    for (env, profile, data), group in groups.items():
        steps = max(c.steps for c in group)
        hours = sum(c.wall_time_s for c in group) / 3600
        out += [f"## {env} — {DATA_TITLES.get(data, data)}", "",
                f"profile `{profile}`, {steps:,} gradient steps, {hours:.2f} h of runs in total", ""]
        out += _table(group) + [""]
    if not groups:
        out.append("No run records found.")
    return "\n".join(out).rstrip() + "\n"
