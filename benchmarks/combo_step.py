"""COMBO's cost next to TD3+BC's (and CQL's), one process: gradient steps per second at the same batch and
network sizes, the cost of one rollout round, and of one dynamics epoch.

Data: the synthetic episodes of ``sampling.py`` (10-d states, 384-d instruction embedding, half
real / half imaginary), batch 256, 2×256 MLPs.  COMBO's step rate is measured with a filled
model buffer (its dynamics fit and rollouts timed apart); the amortised rate adds one rollout
round of ``rollout_batch_size`` states every ``rollout_freq`` steps.  The three algorithms
are measured in interleaved rounds; the median round is printed.  Usage::

    python benchmarks/combo_step.py [--seconds 20] [--threads 1] [--episodes 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))

from algorithm_steps import rate  # noqa: E402
from sampling import load_average, synthetic  # noqa: E402

from imaginebench.algos.factory import build_algorithm  # noqa: E402
from imaginebench.algos.registry import get_spec  # noqa: E402
from imaginebench.algos.sampler import MixedReplaySource  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from sampling import EMBED_DIM

    real, imaginary = synthetic(args.episodes, False, 0), synthetic(args.episodes // 2, False, 1)
    instructions = sorted(set(real.instructions) | set(imaginary.instructions))
    table = torch.randn(len(instructions), EMBED_DIM, generator=torch.Generator().manual_seed(0)).numpy()
    source = MixedReplaySource({"real": real, "imaginary": imaginary}, embeddings=dict(zip(instructions, table)),
                               seed=0)
    print(f"load average before: {load_average()}; torch threads {args.threads}; {source}")

    td3, cql = get_spec("td3bc").default_config(), get_spec("cql").default_config()
    combo = get_spec("combo").default_config(dynamics_max_epochs=1)
    algos = {}
    for name, config in (("TD3+BC", td3), ("CQL", cql), ("COMBO", combo)):
        torch.manual_seed(0)
        algos[name] = (config, build_algorithm(config, source, batch_size=args.batch))
    algo = algos["COMBO"][1]
    t0 = time.perf_counter()
    fit = algo.fit_dynamics()
    epoch_s = (time.perf_counter() - t0) / fit.epochs
    t0 = time.perf_counter()
    added = algo.rollout()
    rollout_s = time.perf_counter() - t0
    algo.set_grad_step(1)  # past the step-0 rollout: time the gradient step alone
    rates: dict[str, list[float]] = {name: [] for name in algos}
    for _ in range(args.rounds):  # interleaved, so that a change of load hits every algorithm alike
        for name, (config, built) in algos.items():
            rates[name].append(rate(lambda: config.update(built, source, args.batch), args.seconds / args.rounds))
    td3_rate, cql_rate, combo_rate = (float(np.median(rates[n])) for n in ("TD3+BC", "CQL", "COMBO"))
    amortised = 1.0 / (1.0 / combo_rate + rollout_s / combo.rollout_freq)

    print(f"TD3+BC          {td3_rate:8.1f} steps/s")
    print(f"CQL             {cql_rate:8.1f} steps/s")
    print(f"COMBO step      {combo_rate:8.1f} steps/s   ({td3_rate / combo_rate:.2f}x slower than TD3+BC)")
    print(f"COMBO amortised {amortised:8.1f} steps/s   (one rollout round of {added} transitions: {rollout_s:.2f} s "
          f"every {combo.rollout_freq} steps)")
    print(f"dynamics fit: {epoch_s:.2f} s per epoch over {source.transition_count} transitions "
          f"({combo.ensemble_size} members, {list(combo.dynamics_hidden_units)})")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
