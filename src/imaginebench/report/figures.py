"""Figures of the paper, drawn with matplotlib's Agg backend (no display needed).

* :func:`success_bars` (paper Fig. 5): per domain, success per level, per algorithm one bar
  with imaginary rollouts and one without, error bars of half a standard deviation over seeds.
* :func:`upper_bound_bars` (paper Fig. 6): per domain and novel level, each algorithm trained
  with imaginary rollouts next to the same algorithm on the Real upper-bound data.

Both draw, over each level's bars, the chance level (uniformly random policy, dashed) and the
expert (dotted) measured on the same evaluation episodes, when the records carry them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from imaginebench.domains.base import LEVELS
from imaginebench.report.aggregate import Cell, in_setting, level_references


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ImportError("Figures need matplotlib. Install it with: pip install 'imaginebench[rl]'") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _grouped(ax, groups: Sequence[str], series: Sequence[tuple[str, dict[str, Cell], dict]], title: str,
             cells: Sequence[Cell] = ()) -> None:
    width = 0.8 / max(1, len(series))
    x = np.arange(len(groups))
    for i, (name, by_group, style) in enumerate(series):
        means = [100 * by_group[g].mean if g in by_group else np.nan for g in groups]
        half_std = [50 * by_group[g].std if g in by_group else 0.0 for g in groups]
        ax.bar(x - 0.4 + width * (i + 0.5), means, width, yerr=half_std, capsize=3, label=name, **style)
    labelled = set()
    for gx, level in zip(x, groups):
        refs = level_references(cells, level)
        for name, style in (("random", {"color": "black", "linestyle": "--"}),
                            ("expert", {"color": "black", "linestyle": ":"})):
            if name in refs:
                label = {"random": "chance (random policy)", "expert": "expert"}[name]
                ax.hlines(100 * refs[name][0], gx - 0.45, gx + 0.45, linewidth=1.2,
                          label=None if name in labelled else label, **style)
                labelled.add(name)
    ax.set_xticks(x, groups)
    ax.set_ylim(0, 105)
    ax.set_yticks(range(0, 101, 20))
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3, frameon=False)
    ax.set_ylabel("success rate (%)")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def success_bars(cells: Sequence[Cell], path: str | Path) -> Path | None:
    """Fig. 5: success per level and algorithm, one panel per domain.  Each algorithm's bar with
    imaginary rollouts (train level: real data) stands beside its real-only bar (hatched) on
    the novel levels where real-only runs exist."""
    plt = _pyplot()
    chosen = [c for c in cells if in_setting(c, "imaginary") or (c.data == "real" and c.level != "train")]
    if not chosen:
        return None
    envs = list(dict.fromkeys(c.env for c in chosen))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, axes = plt.subplots(1, len(envs), figsize=(5.5 * len(envs), 4.6), squeeze=False)
    for ax, env in zip(axes[0], envs):
        mine = [c for c in chosen if c.env == env]
        levels = [lv for lv in LEVELS if any(c.level == lv for c in mine)]
        algos = list(dict.fromkeys((c.algo, c.label) for c in mine))
        both = any(c.data == "real" and c.level != "train" for c in mine) and any(
            c.data == "imaginary" for c in mine)
        series = []
        for k, (algo, label) in enumerate(algos):
            color = colors[k % len(colors)]
            imagined = {c.level: c for c in mine if c.algo == algo and in_setting(c, "imaginary")}
            if imagined:
                series.append((f"{label} (real + imaginary)" if both else label, imagined, {"color": color}))
            real = {c.level: c for c in mine if c.algo == algo and c.data == "real" and c.level != "train"}
            if real and both:
                series.append((f"{label} (real only)", real,
                               {"color": color, "alpha": 0.45, "hatch": "..", "edgecolor": "black"}))
            elif real and not imagined:
                series.append((f"{label} (real only)", real, {"color": color}))
        _grouped(ax, levels, series, env, mine)
    fig.suptitle("Success rate by level, with and without imaginary rollouts\n(error bars: ½ std over seeds)",
                 fontsize=10)
    path = _save(fig, Path(path))
    plt.close(fig)
    return path


def upper_bound_bars(cells: Sequence[Cell], path: str | Path) -> Path | None:
    """Fig. 6: imaginary-rollout training against the Real upper bound, per novel level."""
    plt = _pyplot()
    ub = [c for c in cells if c.data == "real-upper-bound"]
    if not ub:
        return None
    envs = list(dict.fromkeys(c.env for c in ub))
    fig, axes = plt.subplots(1, len(envs), figsize=(5.5 * len(envs), 4.6), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, env in zip(axes[0], envs):
        mine = [c for c in cells if c.env == env and c.level != "train"]
        levels = [lv for lv in LEVELS if any(c.level == lv for c in mine if c.data == "real-upper-bound")]
        algos = list(dict.fromkeys((c.algo, c.label) for c in mine if c.data == "real-upper-bound"))
        series = []
        for k, (algo, label) in enumerate(algos):
            color = colors[k % len(colors)]
            imagined = {c.level: c for c in mine if c.algo == algo and c.data == "imaginary"}
            upper = {c.level: c for c in mine if c.algo == algo and c.data == "real-upper-bound"}
            series.append((f"{label} (imaginary)", imagined, {"color": color, "alpha": 0.55}))
            series.append((f"{label} (Real)", upper, {"color": color, "hatch": "//", "edgecolor": "black"}))
        _grouped(ax, levels, series, env, mine)
    fig.suptitle("Imaginary rollouts vs the Real upper bound (error bars: ½ std over seeds)", fontsize=10)
    path = _save(fig, Path(path))
    plt.close(fig)
    return path
