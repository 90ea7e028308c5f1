#!/bin/bash
# Main device job (call 3): fine-tune the rollout LM on HalfCheetah-v0 real data, then imagine the
# three levels with the honest filter; results go to $OUT as they finish.
# Env: OUT, SITE, IB_HOME, PROFILE, DEV, BF16, TRAIN_ARGS, GEN_BATCH, LEVELS, END_AT (epoch seconds by
# which everything must be packed), PY, REAL_XZ (carried real-train.npz.xz), REAL_SHA (its sha256 file)
set -u
: "${OUT:?}"; SITE=${SITE:-/root/site}; IB_HOME=${IB_HOME:-/root/ibhome}; PROFILE=${PROFILE:-small}
DEV=${DEV:-cuda}; BF16=${BF16---bf16}; GEN_BATCH=${GEN_BATCH:-1024}; LEVELS=${LEVELS:-rephrase easy hard}
TRAIN_ARGS=${TRAIN_ARGS:---batch-size 32 --steps 2000 --eval-every 100 --early-stop-patience 8}
PY=${PY:-python3}; J=$(cd "$(dirname "$0")" && pwd); END_AT=${END_AT:-$(( $(date +%s) + 540 ))}
REAL_XZ=${REAL_XZ:-.gpudata/real-train.npz.xz}; REAL_SHA=${REAL_SHA:-.gpudata/real-train.npz.sha256}
ENV_ID=HalfCheetah-v0
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
SRCROOT=${SRCROOT:-/root/ibsrc}
[ -d "$SRCROOT/src/imaginebench" ] || { mkdir -p "$SRCROOT" && "$PY" -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter='data')" "$J/src.tar.xz" "$SRCROOT"; }
echo "code: commit $(cat "$J/src.commit") (git archive of src/, reference_data npz and expert weights left out) at $SRCROOT/src"
export PYTHONPATH="$SITE:$SRCROOT/src" IMAGINEBENCH_HOME="$IB_HOME" MUJOCO_GL=${MUJOCO_GL:-disable} PYTHONUNBUFFERED=1
[ -f "$IB_HOME/models/smollm2-135m/model.safetensors" ] && "$PY" -c "import gymnasium, mujoco, glfw, imaginebench" \
  || { echo "SETUP MISSING (the call-2 setup did not leave the model, wheels or code here): stopping"; exit 20; }
[ -f /root/use_site_peft ] && export PYTHONPATH="/root/site_peft:$PYTHONPATH" && echo "using peft from /root/site_peft (setup's fallback)"
stamp() { echo "STAMP $(date -u +%FT%T.%3NZ) $(date +%s.%N) $*"; }
left() { echo $(( END_AT - $(date +%s) )); }
stamp run-begin "END_AT=$END_AT left=$(left)s profile=$PROFILE dev=$DEV bf16=$BF16 train=[$TRAIN_ARGS] gen_batch=$GEN_BATCH"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || echo "no nvidia-smi"
DS="$IB_HOME/datasets/$ENV_ID/$PROFILE"
mkdir -p "$DS"
# 1. the real data collected on the CPU machine
if [ -f "$REAL_XZ" ]; then
  "$PY" -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.decompress(open(sys.argv[1],'rb').read()))" "$REAL_XZ" "$DS/real-train.npz"
fi
got=$(sha256sum "$DS/real-train.npz" | cut -d' ' -f1); want=$(cut -d' ' -f1 "$REAL_SHA")
echo "real-train.npz sha256 $got expected $want $([ "$got" = "$want" ] && echo OK || echo MISMATCH)"
[ "$got" = "$want" ] || { echo "REAL DATA MISMATCH: stopping"; exit 21; }
"$PY" "$J/summarize.py" "$OUT/summary.json" "$IB_HOME" "$PROFILE" >/dev/null 2>&1
# 2. fine-tune
stamp train-begin
timeout $(( $(left) - ${GEN_RESERVE:-300} )) "$PY" "$J/ib.py" train --env $ENV_ID --profile "$PROFILE" --device "$DEV" $BF16 $TRAIN_ARGS --no-progress
echo "TRAIN rc=$?"
stamp train-end
CK=$(ls -d "$IB_HOME/models/rollout-lm/$ENV_ID/$PROFILE"/*/ 2>/dev/null | head -1)
if [ -n "$CK" ]; then
  du -sh "$CK"; ls -la "$CK"
  # the optimizer state (resume only) goes back at the end if the limits leave room
  tar -C "$(dirname "$CK")" --exclude='optimizer-*.pt' -cf - "$(basename "$CK")" | "$PY" "$J/xzc.py" > "$OUT/checkpoint.tar.xz"
  ls -la "$OUT/checkpoint.tar.xz"
fi
"$PY" "$J/summarize.py" "$OUT/summary.json" "$IB_HOME" "$PROFILE"
stamp pack-ckpt-end
# 3. imagine each level (honest filter, best-of-N, default budget 16)
for L in $LEVELS; do
  t=$(( $(left) - 25 ))
  if [ $t -lt 30 ]; then echo "LEVEL $L SKIPPED: only $(left)s left"; stamp "gen-$L-skipped"; continue; fi
  stamp "gen-$L-begin (timeout ${t}s)"
  timeout $t "$PY" "$J/ib.py" generate --env $ENV_ID --profile "$PROFILE" --device "$DEV" $BF16 \
      --batch-size $GEN_BATCH --no-score --level $L ${GEN_EXTRA:-}
  rc=$?; echo "GENERATE $L rc=$rc"
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && tail -n 60 "$OUT/log.txt" | grep -q "out of memory" && [ $(( $(left) - 25 )) -gt 60 ]; then
    echo "GENERATE $L: out of GPU memory at batch $GEN_BATCH; again at batch $(( GEN_BATCH / 4 ))"; GEN_BATCH=$(( GEN_BATCH / 4 ))
    timeout $(( $(left) - 25 )) "$PY" "$J/ib.py" generate --env $ENV_ID --profile "$PROFILE" --device "$DEV" $BF16 \
        --batch-size $GEN_BATCH --no-score --level $L ${GEN_EXTRA:-}
    rc=$?; echo "GENERATE $L (retry) rc=$rc"
  fi
  stamp "gen-$L-end rc=$rc"
  ls -la "$DS" | grep "imaginary-$L" ; du -sh "$DS/imaginary-$L.partial" 2>/dev/null
  files=$(cd "$DS" && ls "imaginary-$L.quality.json" "imaginary-$L.npz" "imaginary-$L.unfiltered.npz" 2>/dev/null)
  [ -f "$DS/imaginary-$L.partial/state.json" ] && files="$files imaginary-$L.partial/state.json"
  if [ -n "$files" ]; then
    tar -C "$DS" -cf - $files | "$PY" "$J/xzc.py" > "$OUT/level-$L.tar.xz"
    sz=$(stat -c %s "$OUT/level-$L.tar.xz")
    if [ $sz -gt 16000000 ]; then split -b 15M -d "$OUT/level-$L.tar.xz" "$OUT/level-$L.tar.xz.part" && rm "$OUT/level-$L.tar.xz"; fi
    ls -la "$OUT"
  fi
  "$PY" "$J/summarize.py" "$OUT/summary.json" "$IB_HOME" "$PROFILE"
  stamp "pack-$L-end"
done
# 4. candidates samples, only while the returned total stays within the limits (8 files, 64 MiB)
for L in $LEVELS; do
  f="$DS/imaginary-$L.candidates.npz"; [ -f "$f" ] || continue
  [ $(left) -gt 20 ] || break
  "$PY" "$J/xzc.py" < "$f" > "/root/cand-$L.npz.xz"
  n=$(ls "$OUT" | wc -l); tot=$(du -cb "$OUT"/* | tail -1 | cut -f1); sz=$(stat -c %s "/root/cand-$L.npz.xz")
  if [ $n -lt 8 ] && [ $sz -lt 16000000 ] && [ $(( tot + sz )) -lt 62000000 ]; then
    cp "/root/cand-$L.npz.xz" "$OUT/"; echo "candidates $L returned ($sz bytes)"
  else echo "candidates $L NOT returned: $sz bytes, $n files, $tot bytes already"; fi
done
if [ -n "$CK" ] && [ $(left) -gt 10 ]; then
  opt=$(ls "$CK"/optimizer-*.pt 2>/dev/null | head -1)
  n=$(ls "$OUT" | wc -l); tot=$(du -cb "$OUT"/* | tail -1 | cut -f1)
  if [ -n "$opt" ] && [ $n -lt 8 ] && [ $(( tot + $(stat -c %s "$opt") )) -lt 62000000 ]; then
    cp "$opt" "$OUT/"; echo "optimizer state returned: $(basename "$opt")"
  else echo "optimizer state NOT returned (${opt:-none}; $n files, $tot bytes already)"; fi
fi
ls -la "$OUT"; du -cb "$OUT"/* | tail -1
stamp run-end
