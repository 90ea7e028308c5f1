"""make FOLDER OUT.json: sha256 of every tensor in FOLDER/model.safetensors; check FOLDER REF.json: compare."""
import hashlib, json, sys
from safetensors.numpy import load_file

def manifest(folder):
    t = load_file(f"{folder}/model.safetensors")
    return {k: [str(v.dtype), list(v.shape), hashlib.sha256(v.tobytes()).hexdigest()] for k, v in sorted(t.items())}

cmd, folder = sys.argv[1], sys.argv[2]
if cmd == "make":
    json.dump(manifest(folder), open(sys.argv[3], "w"), indent=0)
else:
    ref, got = json.load(open(sys.argv[3])), manifest(folder)
    diff = sorted(k for k in set(ref) | set(got) if ref.get(k) != got.get(k))
    print(f"MODEL CHECK: tensors {len(got)} here vs {len(ref)} reference; differing {len(diff)} {diff[:5]}")
    sys.exit(1 if diff else 0)
