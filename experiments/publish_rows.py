"""Publish finished cells: HOME/runs records -> rows in results-small.json (used since session 39).

    python experiments/publish_rows.py --home /work/hm --commit <commit> --machine "..." --data real real-retrieval [--env E ...] [--level L ...] [--dry-run]

Only records of the given data variants (and envs, levels) with seeds 0, 1, 2 at the profile's full steps for
their domain (Profile.steps_for) and its real train size (Profile.episodes); a row of the same (env, level,
algorithm, data) is replaced.
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict
from datetime import date
from pathlib import Path

from imaginebench.config import get_profile
from imaginebench.envs.registry import domain_class
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
ap.add_argument("--level", nargs="*", default=None)
ap.add_argument("--algo", nargs="*", default=None, help="only these algorithms (as records name them, e.g. discrete_cql)")
args = ap.parse_args()
prof = get_profile(args.profile)
groups: dict[tuple, list[dict]] = defaultdict(list)
for path in sorted((Path(args.home) / "runs").rglob("record.json")):
    rec = json.loads(path.read_text())
    if (rec.get("profile") == args.profile and rec["data"] in args.data and not rec.get("tag")
            and (not args.env or rec["env"] in args.env) and (not args.level or rec["level"] in args.level)
            and (not args.algo or rec["algo"] in args.algo)):
        groups[(rec["env"], rec["level"], rec["algo"], rec["data"])].append(rec)
rows = []
for key, recs in sorted(groups.items()):
    seeds = sorted(int(r["seed"]) for r in recs)
    card = domain_class(key[0])
    steps, real = prof.steps_for(card), prof.episodes(card, "real", "train")
    sizes = {(int(r["steps"]), next(s["episodes"] for s in r["sources"] if s["name"] == "real")) for r in recs}
    if seeds != [0, 1, 2] or sizes != {(steps, real)}:
        print(f"left out {key}: seeds {seeds}, (steps, real episodes) {sorted(sizes)} vs the profile's {(steps, real)}")
        continue
    rows += rows_from_records(recs, commit=args.commit, command=COMMAND, measured_on=date.today().isoformat(),
                              machine=args.machine)
merge_rows(rows, args.profile, dry_run=args.dry_run)
for row in rows:
    print(f"{row['env']} {row['level']} {row['algorithm']} {row['data']}: {100 * row['mean']:.1f} ± {100 * (row['std'] or 0):.1f}")
print(f"{len(rows)} rows {'(dry run)' if args.dry_run else 'written to ' + str(results_path(args.profile))}")
