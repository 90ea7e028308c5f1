"""Per-task success (mean over seeds 0-2) of a level's finished cells: python per_task.py HOME LEVEL ALGO DATA..."""
import json, sys
from pathlib import Path
home, level, algo, *datas = sys.argv[1:]
table = {}
for data in datas:
    recs = [json.loads(p.read_text()) for p in sorted((Path(home) / "runs/MetaWorld-v0/small" / level / data / algo).glob("seed*/record.json"))]
    for task in recs[0]["per_task"][level]:
        table.setdefault(task, {})[data] = 100 * sum(r["per_task"][level][task] for r in recs) / len(recs)
print("task".ljust(28), *(d[:14].rjust(14) for d in datas))
for task, row in table.items():
    print(task.ljust(28), *(f"{row.get(d, float('nan')):14.1f}" for d in datas))
