"""Sequential LIBERO cells, 3 seeds each, no curve: argv = algo:level[,level]:data[:mix[:tag]] ..."""
import sys, time
from imaginebench.threads import set_threads
from imaginebench.training import train_seeds
from imaginebench.training.spec import RunSpec

ENV = sys.argv.pop(1) if sys.argv[1].endswith("-v0") else "LIBERO-v0"
set_threads(1)
t0 = time.time()
for cell in sys.argv[1:]:
    parts = cell.split(":")
    algo, level, data = parts[:3]
    mix = float(parts[3]) if len(parts) > 3 else 0.5
    tag = parts[4] if len(parts) > 4 else None
    datas = ("real", "real-retrieval") if data == "real+retrieval" else (data,)
    specs = [RunSpec(ENV, algo, level=lv, seed=s, profile="small", data=d, mix_ratio=mix, tag=tag, curve=False)
             for s in (0, 1, 2) for lv in level.split(",") for d in datas]
    c0 = time.time()
    for r in train_seeds(specs, progress=False):
        rec = r.record
        print(cell, rec["level"], rec["data"], rec["seed"], rec["score"], round(time.time() - t0), flush=True)
    print("cell", cell, "wall", round(time.time() - c0), "s", flush=True)
print("all wall", round(time.time() - t0), "s", flush=True)
