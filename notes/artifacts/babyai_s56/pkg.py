"""Copy BabyAI rephrase/easy files from a data home into the package's reference data (deflated), rewrite SHA256SUMS."""
import hashlib, shutil, sys
from pathlib import Path
from imaginebench.data.storage import load_dataset, save_dataset

home = Path(sys.argv[1]) / "datasets/BabyAI-v0/small"
ref = Path("/work/main/src/imaginebench/reference_data")
dst = ref / "BabyAI-v0/small"
for level in sys.argv[2:]:
    for suffix in ("", ".grounded", ".unfiltered"):
        src = home / f"imaginary-{level}{suffix}.npz"
        ds = load_dataset(src)
        save_dataset(ds, dst / src.name, overwrite=True, compress=True)
        print(src.name, len(ds.episodes) if hasattr(ds, "episodes") else "", (dst / src.name).stat().st_size)
    shutil.copy(home / f"imaginary-{level}.quality.json", dst / f"imaginary-{level}.quality.json")
head = [l for l in (ref / "SHA256SUMS").read_text().splitlines() if l.startswith("#")]
lines = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(ref)}" for p in sorted(ref.rglob("*.npz"))]
(ref / "SHA256SUMS").write_text("\n".join(head + lines) + "\n")
