"""Publish the device run's finished cells: records.tar.xz -> rows in results-small.json.

    python experiments/device_grid/publish.py RECORDS.tar.xz --home /work/home_device \
        --commit <grid's commit> --machine "one NVIDIA H200 ... " [--dry-run]

Unpacks the records into HOME/runs, groups them (env, level, algorithm, data, tag, settings) and
writes one row per group that has seeds 0, 1, 2 at the profile's full steps — replacing a row of
the same (env, level, algorithm, data); a partial or shortened group is listed and left out.
"""

from __future__ import annotations

import argparse
import json
import tarfile
from collections import defaultdict
from datetime import date
from pathlib import Path

from imaginebench.config import get_profile
from imaginebench.evaluation.published import merge_rows, results_path, rows_from_records

COMMAND = "imaginebench train --env {env} --algo {algo} --level {level} --seeds {seeds} --profile {profile}{data_flag} --device cuda"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("records")
    ap.add_argument("--home", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--machine", required=True)
    ap.add_argument("--measured-on", default=date.today().isoformat())
    ap.add_argument("--profile", default="small")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    home = Path(args.home)
    home.mkdir(parents=True, exist_ok=True)
    with tarfile.open(args.records) as tf:
        tf.extractall(home, filter="data")
    steps = get_profile(args.profile).train_steps
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for path in sorted((home / "runs").rglob("record.json")):
        rec = json.loads(path.read_text())
        if rec.get("profile") != args.profile:
            continue
        groups[(rec["env"], rec["level"], rec["algo"], rec["data"], rec.get("tag"))].append(rec)
    rows = []
    for key, recs in sorted(groups.items(), key=lambda kv: str(kv[0])):
        seeds = sorted(int(r["seed"]) for r in recs)
        full = all(int(r["steps"]) == steps for r in recs)
        if seeds != [0, 1, 2] or not full or key[4]:
            print(f"left out {key}: seeds {seeds}, steps {sorted({int(r['steps']) for r in recs})}, tag {key[4]}")
            continue
        rows += rows_from_records(recs, commit=args.commit, command=COMMAND, measured_on=args.measured_on,
                                  machine=args.machine)
    merge_rows(rows, args.profile, dry_run=args.dry_run)
    for row in rows:
        print(f"{row['env']} {row['level']} {row['algorithm']} {row['data']}: "
              f"{100 * row['mean']:.1f} ± {100 * (row['std'] or 0):.1f}")
    print(f"{len(rows)} rows {'(dry run, nothing written)' if args.dry_run else 'written to ' + str(results_path(args.profile))}")

if __name__ == "__main__":
    main()
