"""`imagine train` / `imagine generate` as the imaginebench CLI runs them (cli/imagine.py at the
pinned commit: the same library calls with the same defaults, the same printed summary), without
importing the whole CLI package, whose other verbs import d3rlpy (absent on the device).
INFO logging goes to stderr.  IB_BLOCK=a,b,c makes those modules unimportable (to mimic the
device in a CPU dry run); IB_MODLIST=<file> appends the top-level modules imported at exit."""
import argparse
import atexit
import logging
import os
import sys
import traceback

for _m in filter(None, os.environ.get("IB_BLOCK", "").split(",")):
    sys.modules[_m] = None
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
for _noisy in ("httpx", "urllib3", "filelock", "huggingface_hub"):
    logging.getLogger(_noisy).setLevel(logging.WARNING)
if os.environ.get("IB_MODLIST"):
    def _dump() -> None:
        with open(os.environ["IB_MODLIST"], "a") as f:
            f.write("\n".join(sorted({m.split(".")[0] for m in list(sys.modules)})) + "\n")
    atexit.register(_dump)


def train(a: argparse.Namespace) -> None:
    from imaginebench.imagination.pipeline import train as run

    extra: dict = {"early_stop_min_delta": 0.0, "augment": True}
    if a.eval_every is not None:
        extra["eval_every"] = a.eval_every
    if a.early_stop_patience is not None:
        extra["early_stop_patience"] = a.early_stop_patience
    r = run(a.env, a.profile, None, lora=True, steps=a.steps, num_layers=None, batch_size=a.batch_size, lr=None,
            out=None, overwrite=False, bf16=a.bf16, threads=None, seed=0, device=a.device, progress=a.progress,
            numeric_layers=None, **extra)
    import torch

    gpu = (f", peak GPU memory {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB"
           if torch.cuda.is_available() and torch.cuda.max_memory_allocated() else "")
    print(f"checkpoint {r.checkpoint}: {r.steps_done} steps ({r.steps_run} now, {r.steps_per_second:.2f} steps/s, "
          f"peak RSS {r.peak_rss_mb:.0f} MB{gpu}); ended: {getattr(r, 'ended', None)}, "
          f"best step {getattr(r, 'best_step', None)}")
    for task, losses in r.val_losses.items():
        parts = ", ".join(f"{k} {v:.4f}" for k, v in losses.items())
        print(f"  validation {task:<12} {parts}")


def generate(a: argparse.Namespace) -> None:
    from imaginebench.imagination.pipeline import generate as run

    results = run(a.env, a.profile, a.level, backbone=None, checkpoint=None, episodes=a.episodes, temperature=1.0,
                  batch_size=a.batch_size, seed=1, filter_invalid=False, overwrite=False, bf16=a.bf16, threads=None,
                  max_steps=None, keep="honest", budget=a.budget, stop_on_end=True, score=a.score, device=a.device,
                  progress=a.progress, numeric_layers=None)
    for r in results:
        t, q = r.throughput, r.quality
        print(f"{r.level}: kept {r.episodes} of {r.generated} candidates ({q['candidates_per_kept']:.1f} per kept; "
              f"filter {q['filter']}; {len(q['tasks_short_of_quota'])} tasks short of quota) -> {r.path}; "
              f"{t['imagined_steps']} steps at {t['steps_per_second']:.0f} steps/s")


p = argparse.ArgumentParser()
sub = p.add_subparsers(dest="cmd", required=True)
for name in ("train", "generate"):
    s = sub.add_parser(name)
    s.add_argument("--env", required=True)
    s.add_argument("--profile", required=True)
    s.add_argument("--device", default="auto")
    s.add_argument("--bf16", action="store_true")
    s.add_argument("--batch-size", type=int)
    s.add_argument("--no-progress", dest="progress", action="store_false")
    if name == "train":
        s.add_argument("--steps", type=int)
        s.add_argument("--eval-every", type=int)
        s.add_argument("--early-stop-patience", type=int)
    else:
        s.add_argument("--level", default="all")
        s.add_argument("--episodes", type=int)
        s.add_argument("--budget", type=float, default=16.0)
        s.add_argument("--no-score", dest="score", action="store_false")
args = p.parse_args()
try:
    (train if args.cmd == "train" else generate)(args)
except Exception:
    traceback.print_exc()
    sys.exit(1)
