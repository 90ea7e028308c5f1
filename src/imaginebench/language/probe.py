"""Can a policy tell goals apart from the instruction embedding? A linear probe says.

SPEC §4: sentence encoders blur the words these tasks hinge on ("left" vs "right" have cosine
0.989 with all-MiniLM-L6-v2). The probe fits a linear classifier from the (standardised)
embedding to the task and to each task parameter, on the train phrasings of the train tasks,
and scores it on their held-out rephrase phrasings.  Target: ≥ 95% per domain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable

import numpy as np


@dataclass(frozen=True)
class ProbeResult:
    """Held-out accuracy of the linear probe: per target ("task" and each parameter)."""

    env_id: str
    encoder: str
    accuracy: dict[str, float]
    train_phrasings: int
    test_phrasings: int

    @property
    def task_accuracy(self) -> float:
        return self.accuracy["task"]


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


def probe_domain(env_id: str, encoder: str | None = None, ridge: float = 1e-2) -> ProbeResult:
    """Fit on train phrasings of the train tasks; score on their rephrase phrasings."""
    from imaginebench.envs.registry import load_domain
    from imaginebench.language.encoders import get_encoder

    domain = load_domain(env_id)
    enc = get_encoder(encoder)
    tasks = domain.tasks("train")
    train_text, train_task, test_text, test_task = [], [], [], []
    for t in tasks:
        train_text += list(t.bank("train"))
        train_task += [t.name] * len(t.bank("train"))
        test_text += list(t.bank("rephrase"))
        test_task += [t.name] * len(t.bank("rephrase"))
    x_train, x_test = enc.encode(train_text), enc.encode(test_text)
    by_name = {t.name: t for t in tasks}
    targets: dict[str, tuple[np.ndarray, np.ndarray]] = {"task": (np.array(train_task), np.array(test_task))}
    keys = sorted({k for t in tasks for k, v in t.params.items() if isinstance(v, Hashable)})
    for key in keys:
        values_train = [str(by_name[n].params.get(key)) for n in train_task]
        values_test = [str(by_name[n].params.get(key)) for n in test_task]
        if len(set(values_train)) > 1:
            targets[key] = (np.array(values_train), np.array(values_test))
    accuracy = {}
    for key, (y_train, y_test) in targets.items():
        model = fit_linear_probe(x_train, y_train, ridge)
        accuracy[key] = float(np.mean(predict_linear_probe(model, x_test) == y_test))
    return ProbeResult(env_id, enc.name, accuracy, len(train_text), len(test_text))
