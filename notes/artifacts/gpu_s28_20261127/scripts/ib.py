"""`imagine train` / `imagine generate` as cli/imagine.py runs them (same library calls, same defaults, same
printed summary), without the CLI package, whose other verbs import d3rlpy (absent on the device machine).
IB_PURE_DOMAIN=1 builds the Domain from its pure modules (the device has no simulator packages)."""
import argparse
import logging
import os
import sys

logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
if os.environ.get("IB_PURE_DOMAIN"):
    from imaginebench.envs import registry as _reg

    _reg.load_domain = lambda env_id: _reg.domain_class(env_id)()
for _noisy in ("httpx", "urllib3", "filelock", "huggingface_hub"):
    logging.getLogger(_noisy).setLevel(logging.WARNING)


def train(a):
    from imaginebench.imagination.pipeline import train as run

    extra = {"early_stop_min_delta": 0.0, "augment": True, "start_window_share": a.start_window_share}
    if a.eval_every is not None:
        extra["eval_every"] = a.eval_every
    if a.early_stop_patience is not None:
        extra["early_stop_patience"] = a.early_stop_patience
    if a.init_from:
        extra["init_from"] = a.init_from
    if a.checkpoint_every:
        extra["checkpoint_every"] = a.checkpoint_every
    r = run(a.env, a.profile, None, lora=True, steps=a.steps, num_layers=None, batch_size=a.batch_size, lr=None,
            out=a.out, overwrite=False, bf16=a.bf16, threads=None, seed=0, device=a.device, progress=False,
            numeric_layers=a.numeric_layers, action_bins=None, **extra)
    import torch

    gpu = (f", peak GPU memory {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB"
           if torch.cuda.is_available() and torch.cuda.max_memory_allocated() else "")
    print(f"checkpoint {r.checkpoint}: {r.steps_done} steps ({r.steps_run} now, {r.steps_per_second:.2f} steps/s, "
          f"peak RSS {r.peak_rss_mb:.0f} MB{gpu}); ended: {getattr(r, 'ended', None)}, "
          f"best step {getattr(r, 'best_step', None)}", flush=True)
    for task, losses in r.val_losses.items():
        print(f"  validation {task:<12} " + ", ".join(f"{k} {v:.4f}" for k, v in losses.items()), flush=True)


def generate(a):
    import torch

    if torch.cuda.is_available():
        # session 21: cuDNN's fused attention failed on the KV-cached decode ("mha_graph.execute ... is_good()")
        torch.backends.cuda.enable_cudnn_sdp(False)
    from imaginebench.imagination.pipeline import generate as run

    results = run(a.env, a.profile, a.level, backbone=None, checkpoint=a.out, episodes=a.episodes,
                  temperature=a.temperature, batch_size=a.batch_size, seed=1, overwrite=False, bf16=a.bf16,
                  threads=None, max_steps=None, keep=a.keep, budget=a.budget, stop_on_end=True, score=False,
                  device=a.device, progress=False, numeric_layers=None)
    for r in results:
        t, q = r.throughput, r.quality
        print(f"{r.level}: kept {r.episodes} of {r.generated} candidates ({q['candidates_per_kept']:.1f} per kept; "
              f"filter {q['filter']}; {len(q['tasks_short_of_quota'])} tasks short of quota) -> {r.path}; "
              f"{t['imagined_steps']} steps at {t['steps_per_second']:.0f} steps/s", flush=True)


p = argparse.ArgumentParser()
sub = p.add_subparsers(dest="cmd", required=True)
for name in ("train", "generate"):
    s = sub.add_parser(name)
    s.add_argument("--env", required=True)
    s.add_argument("--profile", required=True)
    s.add_argument("--device", default="auto")
    s.add_argument("--bf16", action="store_true")
    s.add_argument("--batch-size", type=int)
    s.add_argument("--out")
    if name == "train":
        s.add_argument("--steps", type=int)
        s.add_argument("--eval-every", type=int)
        s.add_argument("--early-stop-patience", type=int)
        s.add_argument("--start-window-share", type=float, default=0.5)
        s.add_argument("--numeric-layers", type=int)
        s.add_argument("--init-from")
        s.add_argument("--checkpoint-every", type=int)
    else:
        s.add_argument("--level", default="all")
        s.add_argument("--episodes", type=int)
        s.add_argument("--budget", type=float, default=16.0)
        s.add_argument("--keep", default="honest")
        s.add_argument("--temperature", type=float, default=1.0)
a = p.parse_args()
{"train": train, "generate": generate}[a.cmd](a)
