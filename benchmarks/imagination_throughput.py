"""Throughput of the rollout language model: fine-tuning steps/s, peak memory, imagined steps/s.

Each configuration runs in its own process (so peak RSS is its own) on real CLEVR data of
the ``tiny`` profile (built in a temporary data home unless ``--home`` points at one)::

    python benchmarks/imagination_throughput.py                         # tiny + smollm2-135m defaults
    python benchmarks/imagination_throughput.py --configs smollm2:lora smollm2:full:8 --train-steps 10

Config syntax: ``<backbone>:<lora|full>[:<layers>][:late<k>]``; ``smollm2`` is ``smollm2-135m``;
``late<k>`` is late entry (numbers enter the top ``k`` layers, ``ModelConfig.numeric_layers``),
e.g. ``smollm2:lora::late4``.
Fine-tuning: ``--train-steps`` timed steps after 2 warm-up steps, batch ``--batch-size``.
Generation: ``--rollouts`` rollouts of CLEVR hard tasks in batches of ``--gen-batch``, each
capped at ``--gen-steps`` steps, greedy, with the KV cache.  Prints a table row per config as it
finishes (``--json PATH`` writes the table too).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from harness import Report, add_json_argument

DEFAULT_CONFIGS = ("tiny:full", "smollm2:lora", "smollm2:full", "smollm2:lora:8", "smollm2:full:8",
                   "smollm2:lora::late4", "smollm2:lora::late2")


def _parse(config: str) -> tuple[str, bool, int | None, int | None]:
    parts = config.split(":")
    backbone = {"smollm2": "smollm2-135m"}.get(parts[0], parts[0])
    lora = parts[1] == "lora" if len(parts) > 1 else True
    layers = int(parts[2]) if len(parts) > 2 and parts[2] else None
    late = int(parts[3][4:]) if len(parts) > 3 and parts[3].startswith("late") else None
    return backbone, lora, layers, late


def run_one(args: argparse.Namespace) -> dict:
    import numpy as np
    import torch

    from imaginebench.data import load_real
    from imaginebench.envs.registry import load_domain
    from imaginebench.imagination.backbones import load_backbone
    from imaginebench.imagination.lm_training import TrainConfig, _episodes, _optimizer, _Sampler, peak_rss_mb
    from imaginebench.imagination.formats import SequenceBuilder, collate
    from imaginebench.imagination.decoding import GenerateConfig, imagine, initial_starts
    from imaginebench.imagination.model import ModelConfig, Normaliser, RolloutLM

    torch.set_num_threads(args.threads)
    backbone, lora, layers, late = _parse(args.one)
    real = load_real("CLEVR-v0", "train", "tiny")
    domain = load_domain("CLEVR-v0")
    torch.manual_seed(0)
    model = RolloutLM(load_backbone(backbone, num_layers=layers), ModelConfig(backbone=backbone, lora=lora,
                      num_layers=layers, numeric_layers=late), 10, True, 40, Normaliser.fit(real.states)).train()
    tcfg = TrainConfig(batch_size=args.batch_size, bf16=args.bf16)
    sampler = _Sampler(SequenceBuilder(model.tokenizer, 10, True, 40), _episodes(real), tcfg)
    opt = _optimizer(model, tcfg)
    rng = np.random.default_rng(0)
    positions = 0
    for i in range(args.train_steps + 2):
        if i == 2:
            t0, positions = time.perf_counter(), 0
        batch = collate([sampler.example(rng) for _ in range(args.batch_size)])
        positions += batch.mask.sum()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            out = model.losses(batch)
        opt.zero_grad()
        out["total"].backward()
        opt.step()
    train_s = time.perf_counter() - t0
    train_rss = peak_rss_mb()
    parameters = model.parameter_counts()  # before merging: LoRA tensors count as trainable
    model.eval().merge_lora()
    starts = initial_starts("CLEVR-v0", "hard", args.rollouts, seed=0)
    cfg = GenerateConfig(temperature=0.0, batch_size=args.gen_batch, max_steps=args.gen_steps, bf16=args.bf16)
    imagine(model, domain, starts[: min(4, len(starts))], cfg, progress=False)  # warm-up
    _, gen = imagine(model, domain, starts, cfg, progress=False)
    return {
        "config": args.one, "backbone": backbone, "lora": lora, "layers": layers, "numeric_layers": late,
        "threads": args.threads,
        "bf16": args.bf16, "batch_size": args.batch_size, "train_steps_per_s": args.train_steps / train_s,
        "train_s_per_step": train_s / args.train_steps, "train_positions_per_s": float(positions / train_s),
        "peak_rss_mb_train": train_rss, "imagined_steps_per_s": gen["steps_per_second"],
        "imagined_steps": gen["imagined_steps"], "gen_batch": args.gen_batch, "rollouts": args.rollouts,
        "parameters": parameters, "peak_rss_mb": peak_rss_mb(),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", nargs="*", default=list(DEFAULT_CONFIGS))
    p.add_argument("--train-steps", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--rollouts", type=int, default=64)
    p.add_argument("--gen-batch", type=int, default=64)
    p.add_argument("--gen-steps", type=int, default=20)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--home", default=None, help="Data home with CLEVR tiny real data (default: a temporary one).")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)
    add_json_argument(p)
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.one:
        print("RESULT " + json.dumps(run_one(args)), flush=True)
        return
    report = Report(__file__, args.json)  # each configuration's torch runs in its own process, not here
    home = args.home or tempfile.mkdtemp(prefix="ib-bench-")
    env = {**os.environ, "IMAGINEBENCH_HOME": home}
    if not os.path.exists(os.path.join(home, "datasets", "CLEVR-v0", "tiny", "real-train.npz")):
        os.environ["IMAGINEBENCH_HOME"] = home
        from imaginebench.data.hub import build_real

        build_real("CLEVR-v0", "train", "tiny", progress=False)
    smol_cache = os.path.expanduser("~/.imaginebench/models/smollm2-135m")
    target = os.path.join(home, "models", "smollm2-135m")
    if os.path.isdir(smol_cache) and not os.path.exists(target):  # reuse the converted SmolLM2 copy
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.symlink(smol_cache, target)
    table = report.table(f"Rollout model: fine-tuning (batch {args.batch_size}, {args.train_steps} timed steps) and "
                         f"generation ({args.rollouts} CLEVR hard rollouts, batches of {args.gen_batch}, "
                         f"{args.gen_steps} steps), {args.threads} torch thread(s){', bf16' if args.bf16 else ''}",
                         ["config", "parameters", "trainable", "train s/step", "steps/s", "positions/s",
                          "peak RSS MB (training)", "peak RSS MB", "imagined steps", "imagined steps/s"],
                         {"parameters": "{:,}", "trainable": "{:,}", "train s/step": "{:.3f}", "steps/s": "{:.2f}",
                          "positions/s": "{:.0f}", "peak RSS MB (training)": "{:.0f}", "peak RSS MB": "{:.0f}",
                          "imagined steps": "{}", "imagined steps/s": "{:.0f}"})
    for config in args.configs:
        cmd = [sys.executable, __file__, "--one", config, "--train-steps", str(args.train_steps),
               "--batch-size", str(args.batch_size), "--rollouts", str(args.rollouts), "--gen-batch",
               str(args.gen_batch), "--gen-steps", str(args.gen_steps), "--threads", str(args.threads)]
        if args.bf16:
            cmd.append("--bf16")
        out = subprocess.run(cmd, env=env, capture_output=True, text=True)
        line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
        if not line:
            print(f"{config} failed:\n{out.stderr[-2000:]}", file=sys.stderr)
            continue
        r = json.loads(line[-1][7:])
        table.add(r["config"], r["parameters"]["total"], r["parameters"]["trainable"], r["train_s_per_step"],
                  r["train_steps_per_s"], r["train_positions_per_s"], r["peak_rss_mb_train"], r["peak_rss_mb"],
                  r["imagined_steps"], r["imagined_steps_per_s"])
    report.finish()


if __name__ == "__main__":
    main()
