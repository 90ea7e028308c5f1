"""Publish this session's finished cells: HOME/runs records -> rows in results-small.json.

    python notes/artifacts/grounding_s39/publish.py --home /work/hm --commit <commit> --machine "..." --data imaginary-grounded real-retrieval [--env E ...] [--dry-run]

Only records of the given data variants (and envs) with seeds 0, 1, 2 at the profile's full steps; a row of
the same (env, level, algorithm, data) is replaced.
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict
from datetime import date
from pathlib import Path

from imaginebench.config import get_profile
from imaginebench.evaluation.published import merge_rows, results_path, rows_from_records

COMMAND = "imaginebench train --env {env} --algo {algo} --level {level} --seeds {seeds} --profile {profile}{data_flag}"

ap = argparse.ArgumentParser()
ap.add_argument("--home", required=True)
ap.add_argument("--commit", required=True)
ap.add_argument("--machine", required=True)
ap.add_argument("--profile", default="small")
ap.add_argument("--dry-run", action="store_true")
ap.add_argument("--data", nargs="+", required=True)
ap.add_argument("--env", nargs="*", default=None)
args = ap.parse_args()
steps = get_profile(args.profile).train_steps
groups: dict[tuple, list[dict]] = defaultdict(list)
for path in sorted((Path(args.home) / "runs").rglob("record.json")):
    rec = json.loads(path.read_text())
    if rec.get("profile") == args.profile and rec["data"] in args.data and not rec.get("tag") and (not args.env or rec["env"] in args.env):
        groups[(rec["env"], rec["level"], rec["algo"], rec["data"])].append(rec)
rows = []
for key, recs in sorted(groups.items()):
    seeds = sorted(int(r["seed"]) for r in recs)
    if seeds != [0, 1, 2] or any(int(r["steps"]) != steps for r in recs):
        print(f"left out {key}: seeds {seeds}")
        continue
    rows += rows_from_records(recs, commit=args.commit, command=COMMAND, measured_on=date.today().isoformat(),
                              machine=args.machine)
merge_rows(rows, args.profile, dry_run=args.dry_run)
for row in rows:
    print(f"{row['env']} {row['level']} {row['algorithm']} {row['data']}: {100 * row['mean']:.1f} ± {100 * (row['std'] or 0):.1f}")
print(f"{len(rows)} rows {'(dry run)' if args.dry_run else 'written to ' + str(results_path(args.profile))}")
