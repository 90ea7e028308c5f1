"""Collect the key numbers of a run into one JSON: checkpoint metadata (validation history, best
step, ended) and each level's quality report (kept, candidates, per task, throughput)."""
import json
import sys
from pathlib import Path

out, home, profile = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
env = "HalfCheetah-v0"
s: dict = {"checkpoints": {}, "levels": {}}
for ck in sorted((home / "models" / "rollout-lm" / env / profile).glob("*/checkpoint.json")):
    m = json.loads(ck.read_text())
    s["checkpoints"][ck.parent.name] = {k: m.get(k) for k in (
        "step", "ended", "best_step", "best_val", "files", "sha256", "train", "train_config", "model", "model_config",
        "validation", "val_history", "history")}
    log = ck.parent / "log.jsonl"
    if log.exists():
        s["checkpoints"][ck.parent.name]["log_tail"] = log.read_text().splitlines()[-60:]
ds = home / "datasets" / env / profile
for q in sorted(ds.glob("imaginary-*.quality.json")):
    r = json.loads(q.read_text())
    s["levels"][r.get("level", q.name)] = {k: r.get(k) for k in (
        "kept", "generated", "dropped", "candidates_per_kept", "per_task", "tasks_short_of_quota", "throughput",
        "device", "device_name", "filter", "checkpoint", "sampling")}
for st in sorted(ds.glob("imaginary-*.partial/state.json")):
    r = json.loads(st.read_text())
    s["levels"].setdefault(st.parent.name, {})["partial"] = {
        "rounds": len(r["rounds"]), "candidates": sum(x["candidates"] for x in r["rounds"]),
        "passed": sum(sum(x["ok"]) for x in r["rounds"]), "extra": {k: v for k, v in r["extra"].items() if k != "gen_state"}}
s["files"] = {p.name: p.stat().st_size for p in sorted(ds.glob("*")) if p.is_file()}
out.write_text(json.dumps(s, indent=1, default=str))
print(json.dumps({"levels": {k: {kk: v.get(kk) for kk in ("kept", "generated", "candidates_per_kept", "tasks_short_of_quota")}
                              for k, v in s["levels"].items()},
                  "checkpoints": {k: {kk: v.get(kk) for kk in ("step", "ended", "best_step", "best_val")}
                                  for k, v in s["checkpoints"].items()}}, default=str))
