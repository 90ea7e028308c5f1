"""Print the cells of CELLS that have no published row yet (run by prep.sh into .gpugrid/cells.txt)."""
import argparse

from imaginebench.evaluation.published import reference_results

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("cells", help="cells.txt: one `ENV ALGO LEVEL [FLAGS]` per line")
args = ap.parse_args()

DATA = {"--real-only": "real", "--real-upper-bound": "real-upper-bound"}
published = {(r["env"], r["level"], r["algorithm"], r["data"]) for r in reference_results(None, "small")}
for line in open(args.cells):
    words = line.split()
    if not words or words[0].startswith("#"):
        print(line, end="")
        continue
    env, algo, level, flags = words[0], words[1], words[2], words[3:]
    data = DATA.get(flags[0], "imaginary") if flags else "imaginary"
    if flags[:1] == ["--imaginary"]:
        data = "imaginary" if flags[1] == "honest" else f"imaginary-{flags[1]}"
    if (env, level, algo, data) in published:
        print(f"# published: {line}", end="")
    else:
        print(line, end="")
