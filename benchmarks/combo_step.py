"""COMBO's cost next to TD3+BC's (and CQL's), one process: gradient steps per second at the same batch and
network sizes, the cost of one rollout round, and of one dynamics epoch.

Data: the synthetic episodes of ``sampling.py`` (10-d states, 384-d instruction embedding, half
real / half imaginary), batch 256, 2×256 MLPs.  COMBO's step rate is measured with a filled
model buffer (its dynamics fit and rollouts timed apart); the amortised rate adds one rollout
round of ``rollout_batch_size`` states every ``rollout_freq`` steps.  The three algorithms
are measured in interleaved rounds; the median round is printed.  Usage::

    python benchmarks/combo_step.py [--seconds 20] [--threads 1] [--episodes 2000] [--rounds 3] [--json PATH]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from imaginebench.algos.factory import build_algorithm
from imaginebench.algos.registry import get_spec
from imaginebench.algos.sampler import MixedReplaySource
from harness import EMBED_DIM, Report, Stopwatch, add_json_argument, calls_per_second, synthetic


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    add_json_argument(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    report = Report(__file__, args.json)

    real, imaginary = synthetic(args.episodes, False, 0), synthetic(args.episodes // 2, False, 1)
    instructions = sorted(set(real.instructions) | set(imaginary.instructions))
    vectors = torch.randn(len(instructions), EMBED_DIM, generator=torch.Generator().manual_seed(0)).numpy()
    source = MixedReplaySource({"real": real, "imaginary": imaginary}, embeddings=dict(zip(instructions, vectors)),
                               seed=0)

    td3, cql = get_spec("td3bc").default_config(), get_spec("cql").default_config()
    combo = get_spec("combo").default_config(dynamics_max_epochs=1)
    algos = {}
    for name, config in (("TD3+BC", td3), ("CQL", cql), ("COMBO", combo)):
        torch.manual_seed(0)
        algos[name] = (config, build_algorithm(config, source, batch_size=args.batch))
    algo = algos["COMBO"][1]
    with Stopwatch() as fitting:
        fit = algo.fit_dynamics()
    epoch_s = fitting.seconds / fit.epochs
    with Stopwatch() as rolling_out:
        added = algo.rollout()
    rollout_s = rolling_out.seconds
    algo.set_grad_step(1)  # past the step-0 rollout: time the gradient step alone
    rates: dict[str, list[float]] = {name: [] for name in algos}
    for _ in range(args.rounds):  # interleaved, so that a change of load hits every algorithm alike
        for name, (config, built) in algos.items():
            rates[name].append(calls_per_second(lambda: config.update(built, source, args.batch),
                                                args.seconds / args.rounds))
    td3_rate, cql_rate, combo_rate = (float(np.median(rates[n])) for n in ("TD3+BC", "CQL", "COMBO"))
    amortised = 1.0 / (1.0 / combo_rate + rollout_s / combo.rollout_freq)

    steps = report.table(f"Gradient steps/s, median of {args.rounds} interleaved rounds, batch {args.batch}: {source}",
                         ["algorithm", "steps/s", "slower than TD3+BC"],
                         {"steps/s": "{:.1f}", "slower than TD3+BC": "{:.2f}x"})
    steps.add("TD3+BC", td3_rate, None)
    steps.add("CQL", cql_rate, None)
    steps.add("COMBO step", combo_rate, td3_rate / combo_rate)
    steps.add("COMBO amortised (one rollout round every rollout_freq steps)", amortised, None)
    rollout = report.table("COMBO rollout round", ["transitions added", "seconds", "every steps"],
                           {"transitions added": "{}", "seconds": "{:.2f}", "every steps": "{}"})
    rollout.add(added, rollout_s, combo.rollout_freq)
    dynamics = report.table("COMBO dynamics fit", ["s per epoch", "transitions", "members", "hidden units"],
                            {"s per epoch": "{:.2f}", "transitions": "{}", "members": "{}"})
    dynamics.add(epoch_s, source.transition_count, combo.ensemble_size, str(list(combo.dynamics_hidden_units)))
    report.finish()


if __name__ == "__main__":
    main()
