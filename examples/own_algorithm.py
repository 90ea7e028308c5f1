"""Your own offline RL method on ImagineBench, without our training code.

A plain PyTorch behaviour-cloning policy (no d3rlpy) is trained on the benchmark's arrays, half
of every batch from the real train-task rollouts and half from the imaginary rollouts of the
target level, then scored with the official protocol (``imaginebench.evaluate``) and printed
beside the published rows of the same cell.

    python examples/own_algorithm.py --env CLEVR-v0 --level rephrase --profile small --steps 20000

Real data that is missing is collected first (``get_dataset(..., build=True)``); the imaginary
data comes from the data home or, failing that, the reference data shipped in the package.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch import nn

import imaginebench


def sample(arrays: dict[str, np.ndarray], n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    rows = rng.integers(0, len(arrays["observations"]), n)
    return arrays["observations"][rows], arrays["actions"][rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="CLEVR-v0")
    parser.add_argument("--level", default="rephrase")
    parser.add_argument("--profile", default="small")
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--encoder", default=None, help="instruction encoder (default: the package's)")
    parser.add_argument("--episodes-per-task", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (one is fastest for networks "
                        "this size; see imaginebench.set_threads)")
    args = parser.parse_args()
    imaginebench.set_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    # 1. the data, as flat arrays (observation = state ⊕ instruction embedding, float32)
    real, imaginary = imaginebench.get_dataset(args.env, args.level, profile=args.profile, build=True)
    sources = [real.arrays(encoder=args.encoder)]
    if imaginary is not None:
        sources.append(imaginary.arrays(encoder=args.encoder))
    print(f"data: {len(real)} real episodes" + (f", {len(imaginary)} imaginary ({args.level})" if imaginary
                                                 else " (no imaginary data for this level: real only)"))
    discrete = sources[0]["actions"].dtype.kind == "i"
    obs_dim = sources[0]["observations"].shape[1]
    out_dim = int(real.metadata["action_dim"])

    # 2. the policy: an MLP; cross-entropy on discrete actions, mean squared error on continuous ones
    net = nn.Sequential(nn.Linear(obs_dim, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, out_dim))
    mean = np.concatenate([s["observations"] for s in sources]).mean(0)
    std = np.concatenate([s["observations"] for s in sources]).std(0) + 1e-3
    optimiser = torch.optim.Adam(net.parameters(), lr=1e-3)
    share = args.batch_size // len(sources)
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        parts = [sample(s, share, rng) for s in sources]  # 50/50 real/imaginary when both exist
        obs = torch.from_numpy((np.concatenate([p[0] for p in parts]) - mean) / std).float()
        target = torch.from_numpy(np.concatenate([p[1] for p in parts]))
        pred = net(obs)
        loss = (nn.functional.cross_entropy(pred, target) if discrete
                else nn.functional.mse_loss(torch.tanh(pred), target.float()))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if step % max(1, args.steps // 5) == 0:
            print(f"step {step}: loss {loss.item():.4f} ({step / (time.perf_counter() - start):.0f} steps/s)")

    # 3. the official evaluation: balanced episodes per task, fixed reset seeds, chance and expert
    @torch.no_grad()
    def policy(observations: np.ndarray) -> np.ndarray:
        out = net(torch.from_numpy((observations - mean) / std).float())
        return out.argmax(-1).numpy() if discrete else torch.tanh(out).numpy()

    result = imaginebench.evaluate(policy, args.env, args.level, seed=args.seed, encoder=args.encoder,
                                   episodes_per_task=args.episodes_per_task, profile=args.profile, num_envs=8)
    print(result)
    norm = f"{result.normalised:.1f}" if result.normalised is not None else "–"
    print(f"| ours: own_algorithm.py (BC), seed {args.seed}, {args.steps} steps | {100 * result.success:.1f} | {norm} |")
    for row in imaginebench.reference_results(args.env, args.profile, level=args.level):
        spread = f" ± {100 * row['std']:.1f}" if row["std"] is not None else ""
        norm = f"{row['normalised']:.1f}" if row["normalised"] is not None else "–"
        print(f"| published: {row['algorithm']}, {row['data_label']}, {row['n']} seeds | "
              f"{100 * row['mean']:.1f}{spread} | {norm} |")


if __name__ == "__main__":
    main()
