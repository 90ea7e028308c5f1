"""Per-task success of a cell's 3 seeds: HOME LEVEL DATA [ALGO [ENV]] (default HalfCheetah-v0; small)."""
import sys, json, numpy as np
from pathlib import Path
home, level, data = sys.argv[1:4]
algo = sys.argv[4] if len(sys.argv) > 4 else "bc"
env = sys.argv[5] if len(sys.argv) > 5 else "HalfCheetah-v0"
root = Path(home) / "runs" / env / "small" / level / data / algo
recs = [json.loads((d / "record.json").read_text()) for d in sorted(root.glob("seed*")) if (d / "record.json").exists()]
tasks = list(recs[0]["per_task"][level])
per = {t: np.mean([r["per_task"][level][t] for r in recs]) for t in tasks}
sc = [100 * r["success"] for r in recs]
print(f"{home.split('/')[-1]} {level} {data} {algo}: {np.mean(sc):.1f} ± {np.std(sc, ddof=1):.1f} ({' / '.join(f'{s:.1f}' for s in sc)}) per task " + ", ".join(f"{t} {v:.2f}" for t, v in per.items()))
