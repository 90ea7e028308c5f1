"""The estimated core-hours of a ``bench`` grid on this machine, from update rates and evaluation
cost measured here (``imaginebench.sweep.cost``; measurements cached in the data home).

    python benchmarks/grid_cost.py --envs HalfCheetah-v0 --algos bc,cql,bcq,td3bc,prdc,combo \\
        --levels rephrase,easy,hard --data real,imaginary,real-upper-bound --seeds 0 1 2 [--json PATH]
"""

from __future__ import annotations

import argparse

from harness import Report, add_json_argument
from imaginebench.sweep import GridSpec
from imaginebench.sweep.cost import RateCache, estimate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", required=True)
    parser.add_argument("--algos", required=True)
    parser.add_argument("--levels", default="rephrase,easy,hard")
    parser.add_argument("--data", default="real,imaginary,real-upper-bound")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--profile", default=None)
    parser.add_argument("--cpus", type=int, default=None, help="also give the wall time on this many CPUs")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run (bench's --cpus-per-run)")
    add_json_argument(parser)
    args = parser.parse_args()
    split = lambda v: [x.strip() for x in v.split(",") if x.strip()]  # noqa: E731
    grid = GridSpec(envs=split(args.envs), algos=split(args.algos), levels=split(args.levels), data=split(args.data),
                    seeds=args.seeds, profile=args.profile)
    runs = grid.plan().runs
    cache = RateCache(threads=args.threads)
    report = Report(__file__, args.json)
    table = report.table("Estimated cost per (env, algorithm): core-hours of one run and of all its runs",
                         ["env", "algorithm", "runs", "train h/run", "eval h/run", "core-hours"],
                         {"train h/run": "{:.2f}", "eval h/run": "{:.2f}", "core-hours": "{:.1f}"})
    groups: dict[tuple[str, str], list] = {}
    for run in runs:
        groups.setdefault((run.config["env"], run.config["algo"]), []).append(run.spec)
    for (env, algo), specs in groups.items():
        part = estimate(specs, cache, threads=args.threads)
        table.add(env, algo, part.runs, part.train_s / part.runs / 3600, part.eval_s / part.runs / 3600, part.core_hours)
    print(estimate([r.spec for r in runs], cache, threads=args.threads).describe(args.cpus))
    report.finish()


if __name__ == "__main__":
    main()
