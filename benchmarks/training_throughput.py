"""Training throughput: ours vs plain d3rlpy for every algorithm, stacked seeds, and BC against
the machine's matmul ceiling — all measured in one run.

* **plain d3rlpy**: a d3rlpy ``ReplayBuffer`` (transitions picked one at a time) and
  ``algo.update`` — what a user of d3rlpy alone gets;
* **ours, S=1**: the path ``imaginebench train`` takes for one seed — the stacked trainer
  where the algorithm has one (``imaginebench.algos.vectorised``), else our vectorised sampler
  with ``fast_update``;
  On a GPU the stacked update replays as one CUDA graph per step (``graph_step``); the eager
  stacked update's S=1 rate is printed under it.
* **stacked, S seeds**: S seeds in one update; reported as gradient steps per second *per
  seed* (updates/s: every update advances each seed by one step); the total is S times that.

Data: CLEVR-shaped synthetic episodes (10-d states, up to 50 steps) with a 384-d instruction
embedding (obs 394), half real / half imaginary, batch 256, 2×256 MLPs (the benchmark's
defaults).  BC's useful arithmetic per seed-step is counted from its layer shapes (forward,
weight gradients, input gradients of the hidden layers) and compared with two ceilings measured
on the same machine in the same run: a 2048³ fp32 matmul and a batched matmul of BC's first
layer.  Each side runs for ``--seconds`` after a warm-up.  Usage::

    python benchmarks/training_throughput.py [--algos ...] [--seeds 1 3 8] [--threads 1] [--device cpu] [--json PATH]
"""

from __future__ import annotations

import argparse
import functools
import time

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from imaginebench.algos.encoders import shortcuts
from imaginebench.algos.factory import build_algorithm
from imaginebench.algos.registry import algorithm_names, get_spec
from imaginebench.algos.sampler import MixedReplaySource, to_d3rlpy_buffer
from imaginebench.algos.vectorised import stacked_trainers, trainer_for
from imaginebench.algos.vectorised.batches import StackedSampler
from harness import ACTION_DIM, EMBED_DIM, STATE_DIM, Report, add_json_argument, synthetic
from imaginebench.data import EpisodeDataset


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def rate(step, seconds: float, device: str, warmup: int = 5, min_steps: int = 5) -> float:
    """Calls of ``step`` per second over about ``seconds`` (after ``warmup`` calls)."""
    for _ in range(warmup):
        step()
    sync(device)
    n, start = 0, time.perf_counter()
    while n < min_steps or time.perf_counter() - start < seconds:
        step()
        n += 1
        if device.startswith("cuda") and n % 50 == 0:
            sync(device)
    sync(device)
    return n / (time.perf_counter() - start)


def matmul_flops(step, calls: int = 2) -> float:
    """Matmul FLOPs (forward and backward) of one call of ``step``, averaged over ``calls`` calls
    (TD3's actor trains every 2nd step), counted by ``torch.utils.flop_counter``."""
    with FlopCounterMode(display=False) as counter:
        for _ in range(calls):
            step()
    return counter.get_total_flops() / calls


class _MatmulRecorder(TorchDispatchMode):
    """Records every matrix product an update runs (op, argument shapes and strides)."""

    OPS = {torch.ops.aten.mm.default, torch.ops.aten.bmm.default, torch.ops.aten.addmm.default,
           torch.ops.aten.baddbmm.default}

    def __init__(self) -> None:
        super().__init__()
        self.calls: list = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in self.OPS:
            spec = [(tuple(a.shape), a.stride(), a.device) if isinstance(a, torch.Tensor) else a for a in args]
            self.calls.append((func, spec, dict(kwargs or {})))
        return func(*args, **(kwargs or {}))


def matmul_bound(step, seconds: float, device: str, calls: int = 2) -> float:
    """Steps/s if an update did nothing but its own matrix products: every matmul of ``calls``
    calls of ``step`` recorded, then replayed on fresh tensors of the same shapes and strides
    and timed — the realistic ceiling of an update with exactly this arithmetic on this machine."""
    with _MatmulRecorder() as recorder:
        for _ in range(calls):
            step()
    replay = []
    for func, spec, kwargs in recorder.calls:
        args = [torch.empty_strided(a[0], a[1], device=a[2]).normal_() if isinstance(a, tuple) and len(a) == 3
                and isinstance(a[2], torch.device) else a for a in spec]
        replay.append((func, args, kwargs))

    def products() -> None:
        for func, args, kwargs in replay:
            func(*args, **kwargs)
    return rate(products, seconds, device) * calls


def bc_flops(batch: int, obs: int, hidden=(256, 256), out: int = ACTION_DIM) -> float:
    """FLOPs of one BC gradient step: forward, weight gradients, input gradients past layer 1."""
    sizes = [obs, *hidden, out]
    layers = list(zip(sizes[:-1], sizes[1:]))
    fwd = sum(2 * batch * i * o for i, o in layers)
    back_inputs = sum(2 * batch * i * o for i, o in layers[1:])
    return 2 * fwd + back_inputs


def ceilings(device: str, seconds: float, stacked: int, batch: int, obs: int) -> dict[str, float]:
    """GFLOP/s of a 2048³ matmul and of BC's first layer as a batched matmul over ``stacked`` seeds."""
    a = torch.randn(2048, 2048, device=device)
    b = torch.randn(2048, 2048, device=device)
    square = rate(lambda: a @ b, seconds, device) * 2 * 2048 ** 3 / 1e9
    x = torch.randn(stacked, batch, obs, device=device)
    w = torch.randn(stacked, 256, obs, device=device)
    first = rate(lambda: torch.bmm(x, w.transpose(1, 2)), seconds, device) * 2 * stacked * batch * obs * 256 / 1e9
    return {"matmul 2048^3": square, f"bmm S={stacked} {batch}x{obs}x256": first}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", nargs="+", default=list(algorithm_names()))
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 3, 8], help="stacked seed counts S")
    parser.add_argument("--seconds", type=float, default=3.0, help="timed seconds per measurement")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--episodes", type=int, default=2000, help="episodes per source")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu:0")
    parser.add_argument("--no-d3rlpy", action="store_true", help="skip the plain d3rlpy column")
    parser.add_argument("--embed-dim", type=int, default=EMBED_DIM,
                        help="instruction embedding width (384: CLEVR/BabyAI's; 1152: Meta-World/HalfCheetah's)")
    add_json_argument(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    report = Report(__file__, args.json)
    dev, batch = args.device, args.batch_size
    embed_dim = args.embed_dim
    obs = STATE_DIM + embed_dim
    where = torch.cuda.get_device_name() if dev.startswith("cuda") else f"CPU, {args.threads} thread(s)"

    data = {}
    for discrete in (False, True):
        real, imaginary = synthetic(args.episodes, discrete, seed=0), synthetic(args.episodes, discrete, seed=1)
        rng = np.random.default_rng(2)
        vectors = {s: rng.normal(size=embed_dim).astype(np.float32) for s in real.instructions + imaginary.instructions}
        source = MixedReplaySource({"real": real, "imaginary": imaginary}, {"real": 0.5, "imaginary": 0.5},
                                   embeddings=vectors, seed=0)
        plain = None if args.no_d3rlpy else to_d3rlpy_buffer(EpisodeDataset.concatenate([real, imaginary]),
                                                             embeddings=vectors, action_size=source.action_size)
        data[discrete] = (source, plain)

    seed_columns = [f"S={s}/seed" for s in args.seeds]
    steps = report.table(f"Gradient steps/s, {where}; batch {batch}, obs {STATE_DIM}+{embed_dim}, 2x256 MLPs, "
                         f"~{args.seconds:g} s per measurement. d3rlpy: its buffer and update, the plain encoder "
                         f"(no shortcut); ours S=1 w/o split: ours without the per-phrasing first layer",
                         ["algorithm", "d3rlpy", "ours S=1", "ratio", "ours S=1 w/o split", *seed_columns, "engine"],
                         {"d3rlpy": "{:.1f}", "ours S=1": "{:.1f}", "ratio": "{:.2f}x", "ours S=1 w/o split": "{:.1f}",
                          **dict.fromkeys(seed_columns, "{:.1f}")})
    bc_rates: dict[int, float] = {}
    roofline: list[tuple[str, float, float, float, float, float]] = []
    for name in args.algos:
        spec = get_spec(name)
        source, plain = data[spec.discrete]
        # COMBO's one-off dynamics fit is not part of an update's rate: one epoch is enough to train
        config = spec.default_config(**({"dynamics_max_epochs": 1} if name == "combo" else {}))

        def build(seed: int):
            torch.manual_seed(seed)
            return build_algorithm(config, source, batch_size=batch, standardize="all", device=dev)

        theirs = float("nan")
        if plain is not None:
            algo = build(0)
            sample = functools.partial(plain.sample_transition_batch, batch)
            with shortcuts(repeats=False, phrasings=False):
                theirs = rate(lambda: algo.update(sample()), args.seconds, dev)
                their_flops = matmul_flops(lambda: algo.update(sample()))
        stacked = type(build(0)).__name__ in stacked_trainers()
        per_seed = {}
        if stacked:
            for s in sorted({1, *args.seeds}):
                algos = [build(i) for i in range(s)]
                trainer = trainer_for(algos)
                sampler = StackedSampler(source, [np.random.default_rng(i) for i in range(s)], dev,
                                         algos[0].config.observation_scaler)
                if dev.startswith("cuda"):
                    per_seed[s] = rate(lambda: trainer.graph_step(sampler, batch), args.seconds, dev)
                    if s == 1:
                        eager = rate(lambda: trainer.step(sampler.sample(trainer.source_rows(batch))), args.seconds, dev)
                else:
                    per_seed[s] = rate(lambda: trainer.step(sampler.sample(trainer.source_rows(batch))), args.seconds, dev)
            ours = per_seed[1]
            trainer = trainer_for([build(0)])
            sampler = StackedSampler(source, [np.random.default_rng(0)], dev, trainer.config.observation_scaler)
            our_flops = matmul_flops(lambda: trainer.step(sampler.sample(trainer.source_rows(batch))))
            bound = matmul_bound(lambda: trainer.step(sampler.sample(trainer.source_rows(batch))), args.seconds, dev)
        unsplit = None
        if not stacked:  # the runner's own update (config.update: returns-to-go where the algorithm needs them)
            algo = build(0)
            with shortcuts(repeats=True, phrasings=False):
                unsplit = rate(lambda: config.update(algo, source, batch), args.seconds, dev)
            algo = build(0)
            ours = rate(lambda: config.update(algo, source, batch), args.seconds, dev)
            our_flops = matmul_flops(lambda: config.update(algo, source, batch))
            bound = matmul_bound(lambda: config.update(algo, source, batch), args.seconds, dev)
        if plain is not None:
            roofline.append((name, their_flops, our_flops, theirs, ours, bound))
        if name == "bc":
            bc_rates = per_seed
        engine = ("stacked+graph" if dev.startswith("cuda") else "stacked") if stacked else "d3rlpy"
        steps.add(name, theirs, ours, ours / theirs, unsplit, *(per_seed.get(s) for s in args.seeds), engine)
        if stacked and dev.startswith("cuda"):
            steps.add("(eager S=1)", None, eager, eager / theirs, None, *(None for _ in args.seeds), None)

    ceil = ceilings(dev, args.seconds, 3, batch, obs) if dev.startswith("cpu") else {}
    if roofline:
        top = ceil.get("matmul 2048^3", float("nan"))
        table = report.table(f"Roofline, S=1. GF/step: matmul FLOPs per update (torch's FlopCounterMode). matmul-only: "
                             f"steps/s of our update's own matrix products replayed alone (its realistic ceiling "
                             f"here); max ratio = that / d3rlpy. 2048^3 matmul: {top:.0f} GFLOP/s.",
                             ["algorithm", "GF/step d3rlpy", "GF/step ours", "GFLOP/s d3rlpy", "GFLOP/s ours",
                              "ours of 2048^3", "matmul-only steps/s", "ours of it", "max ratio"],
                             {"GF/step d3rlpy": "{:.3f}", "GF/step ours": "{:.3f}", "GFLOP/s d3rlpy": "{:.0f}",
                              "GFLOP/s ours": "{:.0f}", "ours of 2048^3": "{:.0%}", "matmul-only steps/s": "{:.1f}",
                              "ours of it": "{:.0%}", "max ratio": "{:.2f}x"})
        for name, tf, of, tr, orate, bound in roofline:
            table.add(name, tf / 1e9, of / 1e9, tf * tr / 1e9, of * orate / 1e9, of * orate / 1e9 / top, bound,
                      orate / bound, bound / tr)
    if bc_rates and not dev.startswith("cpu"):
        print("\n(the matmul ceilings are measured on the CPU only)")
    elif bc_rates:
        flops = bc_flops(batch, obs)
        table = report.table("Matmul ceilings on this machine", ["ceiling", "GFLOP/s"], {"GFLOP/s": "{:.0f}"})
        for k, v in ceil.items():
            table.add(k, v)
        share_columns = [f"of {k}" for k in ceil]
        table = report.table(f"BC against the ceilings: {flops / 1e9:.3f} GFLOP per seed-step (forward, weight and "
                             "hidden-input gradients)",
                             ["S", "updates/s", "seed-steps/s", "GFLOP/s", *share_columns],
                             {"S": "{}", "updates/s": "{:.1f}", "seed-steps/s": "{:.0f}", "GFLOP/s": "{:.0f}",
                              **dict.fromkeys(share_columns, "{:.0%}")})
        for s, r in sorted(bc_rates.items()):
            achieved = r * s * flops / 1e9
            table.add(s, r, r * s, achieved, *(achieved / v for v in ceil.values()))
    report.finish()


if __name__ == "__main__":
    main()
