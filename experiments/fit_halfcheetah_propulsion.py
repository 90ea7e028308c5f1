"""Refit HalfCheetah-v0's propulsion model (the learned dynamics the honest filter's propulsion
check uses) on a real train dataset; how the shipped ``dynamics.npz`` was made.  A maintainer's
tool on the public API, kept out of the domain's folder because it reads datasets (the data layer
sits above the domains)."""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import numpy as np

from imaginebench.data.storage import load_dataset
from imaginebench.domains.halfcheetah import physics as PH
from imaginebench.domains.halfcheetah import propulsion as P


def main(argv: list[str] | None = None) -> None:
    """``python experiments/fit_halfcheetah_propulsion.py REAL_TRAIN.npz [OUT.npz]``: fit the model
    on a real train dataset and write it (default: the shipped ``dynamics.npz``)."""
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("real")
    ap.add_argument("out", nargs="?", default=str(P.DYNAMICS_FILE))
    ap.add_argument("--epochs", type=int, default=8)
    args = ap.parse_args(argv)
    try:
        data = load_dataset(args.real)
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: {e} Pass a HalfCheetah-v0 real train dataset (imaginebench data collect).")
    if data.states.shape[1] != PH.STATE_DIM:
        raise SystemExit(f"error: {args.real} holds {data.states.shape[1]}-number states, not HalfCheetah-v0's "
                         f"{PH.STATE_DIM}. Pass a HalfCheetah-v0 real train dataset.")
    arrays = P.fit(list(data), epochs=args.epochs)
    digest = hashlib.sha256(Path(args.real).read_bytes()).hexdigest()
    tmp = Path(args.out).with_suffix(".partial.npz")
    np.savez_compressed(tmp, **arrays, source_sha256=np.array(digest), epochs=np.array(args.epochs))
    tmp.replace(args.out)  # never a half-written model in place of the old one
    print(f"wrote {args.out} (fit on {args.real}, sha256 {digest[:12]}…, {args.epochs} epochs)")


if __name__ == "__main__":
    main()
