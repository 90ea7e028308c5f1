"""COMBO's dynamics fit on a run's own data: seconds per epoch with and without the per-phrasing
first layer (one run, same machine), and each epoch's validation error, to choose an epoch cap.

    python benchmarks/combo_dynamics_fit.py --env HalfCheetah-v0 --level rephrase --epochs 40

Builds the COMBO algorithm exactly as ``imaginebench train --algo combo`` does (same sources,
encoder, scalers and seed), then fits its ensemble for ``--epochs`` epochs with early stopping off
(``patience`` = epochs), printing every epoch's mean and best-elite validation MSE (normalised
targets) and when the default rule (no member 1% better for 5 epochs) would have stopped.
``--time-epochs N`` first times N epochs of the fit with the phrasing split off and on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np


def cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def build(env: str, level: str, profile: str, data: str, seed: int):
    import torch

    from imaginebench.algos.factory import build_algorithm
    from imaginebench.algos.sampler import MixedReplaySource
    from imaginebench.language import get_encoder
    from imaginebench.training import RunSpec
    from imaginebench.training.sources import load_sources
    from imaginebench.training.spec import resolve_run

    spec = RunSpec(env, "combo", level=level, seed=seed, profile=profile, data=data)
    resolved = resolve_run(spec)
    encoder = get_encoder(spec.encoder)
    sources, weights, _ = load_sources(spec, env)
    source = MixedReplaySource(sources, weights, encoder=encoder, seed=seed)
    config = resolved.algo.default_config(**dict(spec.algo_options))
    torch.manual_seed(seed)
    algo = build_algorithm(config, source, batch_size=config.batch_size or spec.batch, standardize=spec.standardize)
    return algo, source


def stopping_epoch(history: np.ndarray, patience: int = 5, improvement: float = 0.01) -> int:
    """The epoch the fit's default rule stops at, replayed on a recorded history."""
    best = np.full(history.shape[1], np.inf)
    since = 0
    for epoch, mse in enumerate(history, start=1):
        improved = mse < best * (1 - improvement)
        best = np.where(improved, mse, best)
        since = 0 if improved.any() else since + 1
        if since >= patience:
            return epoch
    return len(history)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", default="HalfCheetah-v0")
    ap.add_argument("--level", default="rephrase")
    ap.add_argument("--profile", default="small")
    ap.add_argument("--data", default="imaginary", choices=["imaginary", "real", "real-upper-bound"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--time-epochs", type=int, default=1)
    ap.add_argument("--json", default=None, help="write the measurements here")
    args = ap.parse_args()

    import torch

    from imaginebench.algos.combo.dynamics import TransitionTable
    from imaginebench.algos.encoders import shortcuts

    algo, source = build(args.env, args.level, args.profile, args.data, args.seed)
    cfg = algo.config
    table = TransitionTable.from_source(source, "cpu")
    print(f"{args.env} {args.level} ({args.data}), {len(table):,} transitions, "
          f"{table.state_dim} state + {table.embeddings.shape[1]} embedding + {source.action_size} action columns; "
          f"{torch.get_num_threads()} thread(s), {cpu_name()}", flush=True)

    def fit(epochs: int, split: bool):
        from imaginebench.algos.combo.dynamics import GaussianEnsemble

        torch.manual_seed(args.seed)
        dyn = algo.impl.dynamics
        ensemble = GaussianEnsemble(dyn.n_members, dyn.n_elites, dyn.in_dim, dyn.out_dim, cfg.dynamics_hidden_units,
                                    dyn.embedding_columns)
        t0 = time.perf_counter()
        with shortcuts(phrasings=split):
            result = ensemble.fit(table, learning_rate=cfg.dynamics_learning_rate, batch_size=cfg.dynamics_batch_size,
                                  weight_decay=cfg.dynamics_weight_decay, holdout_ratio=cfg.dynamics_holdout_ratio,
                                  max_holdout=cfg.dynamics_max_holdout, patience=epochs + 1, max_epochs=epochs)
        return result, (time.perf_counter() - t0) / epochs

    out: dict = {"env": args.env, "level": args.level, "data": args.data, "transitions": len(table),
                 "cpu": cpu_name(), "threads": torch.get_num_threads()}
    if args.time_epochs:
        _, plain = fit(args.time_epochs, split=False)
        _, split = fit(args.time_epochs, split=True)
        out.update(seconds_per_epoch_plain=plain, seconds_per_epoch_split=split)
        print(f"seconds per epoch: plain {plain:.1f}, per-phrasing first layer {split:.1f} ({plain / split:.2f}x)",
              flush=True)
    result, per_epoch = fit(args.epochs, split=True)
    history = result.history
    elite = np.sort(history, axis=1)[:, :cfg.n_elites].mean(axis=1)
    print("\n| epoch | mean val MSE | elites' mean |\n|---:|---:|---:|")
    for e, (m, el) in enumerate(zip(history.mean(axis=1), elite), start=1):
        print(f"| {e} | {m:.4f} | {el:.4f} |")
    stop = stopping_epoch(history)
    print(f"\nthe default rule (1% for 5 epochs) stops at epoch {stop} of {args.epochs} "
          f"({per_epoch:.1f} s per epoch with the split)")
    out.update(history=history.tolist(), stop_epoch=stop, seconds_per_epoch=per_epoch)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
