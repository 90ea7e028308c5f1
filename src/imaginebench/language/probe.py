"""Can a policy tell goals apart from the instruction embedding? A linear probe says.

docs/benchmark.md §4: sentence encoders blur the words these tasks hinge on ("left" vs "right" have cosine
0.989 with all-MiniLM-L6-v2). The probe fits a linear classifier from the (standardised)
embedding to the task and to each task parameter, on the train phrasings of the train tasks,
and scores it on their held-out rephrase phrasings.  Target: ≥ 95% per domain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, Mapping

import numpy as np

from imaginebench.language.encoders import get_encoder


HELD_OUT_EVERY = 4
"""Every 4th train phrasing of each task is held out (banks list phrasings template by
template, so this holds out whole templates across tasks)."""
RIDGE = 1.0
"""Ridge strength (times the sample count) of the probe."""


@dataclass(frozen=True)
class ProbeResult:
    """Accuracy of the linear probe per target ("task" and each scalar task parameter).

    ``held_out``: on held-out train-bank templates (the docs/benchmark.md §4 ≥ 95% check);
    ``rephrase``: on the rephrase bank (the language-generalisation gap the rephrase level tests).
    """

    env_id: str
    encoder: str
    held_out: dict[str, float]
    rephrase: dict[str, float]
    fit_phrasings: int
    held_out_phrasings: int
    rephrase_phrasings: int

    @property
    def task_accuracy(self) -> float:
        return self.held_out["task"]


def fit_linear_probe(x: np.ndarray, y: np.ndarray, ridge: float = 1e-2) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Standardise ``x`` and fit ridge regression onto one-hot ``y``; returns (mean, std, W, classes)."""
    mean, std = x.mean(0), x.std(0) + 1e-6
    z = np.concatenate([(x - mean) / std, np.ones((len(x), 1))], axis=1)
    classes, idx = np.unique(y, return_inverse=True)
    onehot = np.eye(len(classes))[idx]
    w = np.linalg.solve(z.T @ z + ridge * len(x) * np.eye(z.shape[1]), z.T @ onehot)
    return mean, std, w, classes


def predict_linear_probe(model: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], x: np.ndarray) -> np.ndarray:
    mean, std, w, classes = model
    z = np.concatenate([(x - mean) / std, np.ones((len(x), 1))], axis=1)
    return classes[np.argmax(z @ w, axis=1)]


def flatten_params(params: Mapping[str, Any], prefix: str = "") -> dict[str, Hashable]:
    """Task parameters as scalar leaves: ``{"goals": (("red", "left", "blue"),)}`` ->
    ``{"goals[0][0]": "red", "goals[0][1]": "left", "goals[0][2]": "blue"}``."""
    out: dict[str, Hashable] = {}
    for key, value in params.items():
        _flatten(f"{prefix}{key}", value, out)
    return out


def _flatten(key: str, value: Any, out: dict[str, Hashable]) -> None:
    if isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            _flatten(f"{key}[{i}]", item, out)
    elif isinstance(value, Mapping):
        for k, item in value.items():
            _flatten(f"{key}.{k}", item, out)
    elif isinstance(value, Hashable):
        out[key] = value


def probe_domain(domain: Any, encoder: str | None = None, ridge: float = RIDGE) -> ProbeResult:
    """Fit on most train phrasings of ``domain``'s train tasks (a :class:`~imaginebench.domains.base.Domain`,
    e.g. ``imaginebench.envs.load_domain(env_id)``); score on held-out templates and rephrasings."""
    enc = get_encoder(encoder)
    tasks = domain.tasks("train")
    split: dict[str, tuple[list[str], list[str]]] = {"fit": ([], []), "held_out": ([], []), "rephrase": ([], [])}
    for t in tasks:
        for i, text in enumerate(t.bank("train")):
            part = split["held_out" if i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1 else "fit"]
            part[0].append(text)
            part[1].append(t.name)
        for text in t.bank("rephrase"):
            split["rephrase"][0].append(text)
            split["rephrase"][1].append(t.name)
    x = {k: enc.encode(texts) for k, (texts, _) in split.items()}
    leaves = {t.name: flatten_params(t.params) for t in tasks}
    label_fns = {"task": lambda name: name}
    for key in sorted({k for flat in leaves.values() for k in flat}):
        if len({str(flat.get(key)) for flat in leaves.values()}) > 1:
            label_fns[key] = lambda name, key=key: str(leaves[name].get(key))
    held_out, rephrase = {}, {}
    for key, fn in label_fns.items():
        y = {k: np.array([fn(n) for n in names]) for k, (_, names) in split.items()}
        model = fit_linear_probe(x["fit"], y["fit"], ridge)
        held_out[key] = float(np.mean(predict_linear_probe(model, x["held_out"]) == y["held_out"]))
        rephrase[key] = float(np.mean(predict_linear_probe(model, x["rephrase"]) == y["rephrase"]))
    return ProbeResult(domain.env_id, enc.name, held_out, rephrase, len(split["fit"][0]), len(split["held_out"][0]),
                       len(split["rephrase"][0]))
