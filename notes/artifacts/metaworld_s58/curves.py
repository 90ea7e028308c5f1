"""Print the train-level success curve of each run folder's seeds: from checkpoint.pt while a run
trains, from record.json once it has finished (the runner removes the checkpoint then)."""
import glob
import json
import os
import sys

import torch

for run in sys.argv[1:]:
    rows = {}
    for seed in sorted(glob.glob(os.path.join(run, "seed*"))):
        record = os.path.join(seed, "record.json")
        if os.path.exists(record):
            curve = json.load(open(record))["curve"]
        else:
            curve = torch.load(os.path.join(seed, "checkpoint.pt"), weights_only=False, map_location="cpu")["curve"]
        rows[os.path.basename(seed)] = [(p["step"], p["train"]["success"]) for p in curve]
    print(run)
    for s, pts in rows.items():
        print(" ", s, " ".join(f"{v*100:.0f}" for _, v in pts))
    n = min(len(p) for p in rows.values())
    mean = [sum(rows[s][i][1] for s in rows) / len(rows) * 100 for i in range(n)]
    print("  mean", " ".join(f"{m:.1f}" for m in mean), "| last five", f"{sum(mean[-5:]) / len(mean[-5:]):.1f}" if n >= 5 else "")
