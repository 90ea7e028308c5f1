"""Print the cells of CELLS that have no published row yet (run by prep.sh into .gpugrid/cells.txt)."""
import sys

from imaginebench.evaluation.published import reference_results

DATA = {"--real-only": "real", "--real-upper-bound": "real-upper-bound"}
published = {(r["env"], r["level"], r["algorithm"], r["data"]) for r in reference_results(None, "small")}
for line in open(sys.argv[1]):
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
