#!/bin/bash
# Offline-RL cells (3 stacked seeds each) on the device machine: training on its GPU (stacked seeds,
# CUDA graphs: `imaginebench train --device cuda`), evaluation on its CPU cores, PAR cells at a time.
#   PHASE=stage  copy this call's carried staging folders into $STAGE (kept while the machine is warm)
#   PHASE=run    (default) install, assemble one data home, run the cells of $CELLS until BUDGET_S,
#                pack every finished record into $OUT/records.tar.xz
# Locally (a dry run on the CPU machine): SKIP_INSTALL=1 PY=.venv/bin/python DEV=cpu PROFILE=tiny ...
set -u
: "${OUT:?}"; R=$PWD; G=$R/.gpugrid; STAGE=${STAGE:-/root/stage}; SITE=${SITE:-/root/site}; IB_HOME=${IB_HOME:-/root/ibhome}
PY=${PY:-python3}; DEV=${DEV:-cuda}; PAR=${PAR:-15}; CELLS=${CELLS:-$G/cells.txt}; PROFILE=${PROFILE:-small}
START=$(date +%s); END_AT=$(( START + ${BUDGET_S:-540} )); MIN_START=${MIN_START:-150}
mkdir -p "$OUT" "$STAGE" "$SITE" "$IB_HOME"
exec > >(tee -a "$OUT/log.txt") 2>&1
stamp() { echo "STAMP $(date -u +%FT%T) +$(( $(date +%s) - START ))s $*"; }
stamp begin PHASE=${PHASE:-run}
for d in .gpu_a .gpu_b .gpu_c .gpu_d; do [ -d "$d" ] && cp -r "$d"/. "$STAGE/"; done
ls -la "$STAGE"; df -h "$STAGE" | tail -1
[ "${PHASE:-run}" = stage ] && { stamp staged; exit 0; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null; nproc
grep -m1 "model name" /proc/cpuinfo
if [ -z "${SKIP_INSTALL:-}" ]; then
  tar -C "$SITE" -xJf "$STAGE/purepy.tar.xz" || { echo "UNPACK FAILED"; exit 11; }
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" "$STAGE"/*.whl || { echo "WHEELS FAILED"; exit 12; }
fi
export PYTHONPATH="$SITE:$R/src" IMAGINEBENCH_HOME="$IB_HOME" PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MUJOCO_GL=${MUJOCO_GL:-disable} TOKENIZERS_PARALLELISM=false
# the data home: embeddings, real data (checksums), calibration references; the package's reference imaginary data
cat "$STAGE"/enc.tar.xz.part* | xz -dc | tar -C "$IB_HOME" -xf - || { echo "ENCODER STORE FAILED"; exit 13; }
for f in "$STAGE"/data/*/real-*; do
  e=$(basename "$(dirname "$f")"); n=$(basename "$f" .xz); DS="$IB_HOME/datasets/$e/$PROFILE"; mkdir -p "$DS"
  case "$f" in *.xz) xz -dc "$f" > "$DS/$n" ;; *) cp "$f" "$DS/$n" ;; esac
  got=$(sha256sum "$DS/$n" | cut -d' ' -f1)
  grep -q "$got  $e/$n" "$STAGE/data.sha256" && echo "$e/$n OK" || { echo "$e/$n CHECKSUM MISMATCH"; exit 14; }
done
mkdir -p "$IB_HOME/references"; cp -r "$STAGE/references/." "$IB_HOME/references/"
for d in "$STAGE"/reference_data/*/; do
  e=$(basename "$d"); mkdir -p "$R/src/imaginebench/reference_data/$e/small"
  cp -n "$d"small/*.npz "$R/src/imaginebench/reference_data/$e/small/" 2>/dev/null || true
done
echo "code: $(git -C "$R" rev-parse HEAD 2>/dev/null || cat "$G/src.commit")"
"$PY" - <<'PYEOF' || { echo "SMOKE FAILED"; exit 15; }
import sys, torch, d3rlpy, numpy
from imaginebench.envs import make
print(sys.version.split()[0], "torch", torch.__version__, torch.cuda.is_available(), "d3rlpy", d3rlpy.__version__, "numpy", numpy.__version__)
for env_id in ("CLEVR-v0", "BabyAI-v0", "MetaWorld-v0", "HalfCheetah-v0"):
    env = make(env_id, level="rephrase")
    obs, _ = env.reset(seed=0)
    env.step(env.action_space.sample())
    print(env_id, "obs", getattr(obs, "shape", None))
    env.close()
PYEOF
stamp setup-done
run_cell() {  # ENV ALGO LEVEL [FLAGS...]
  local env=$1 algo=$2 level=$3; shift 3
  local tag="$env.$algo.$level.$(echo "$*" | tr ' ' '_')" left=$(( END_AT - $(date +%s) ))
  if [ "$left" -lt "$MIN_START" ]; then echo -e "$tag\tnot-started\t0" >> "$OUT/cells.tsv"; return 0; fi
  local t0=$(date +%s)
  timeout $(( left - 30 )) "$PY" -c 'import sys; from imaginebench.cli import main; main(sys.argv[1:])' train \
    --env "$env" --algo "$algo" --level "$level" --seeds 0 1 2 --profile "$PROFILE" --device "$DEV" --no-progress "$@" \
    > "$IB_HOME/cell.$tag.log" 2>&1
  local rc=$?
  echo -e "$tag\trc=$rc\t$(( $(date +%s) - t0 ))" >> "$OUT/cells.tsv"
  [ $rc -eq 0 ] || tail -n 5 "$IB_HOME/cell.$tag.log" | sed "s/^/[$tag] /"
}
export -f run_cell; export END_AT MIN_START OUT IB_HOME PY PROFILE DEV
stamp cells-begin
grep -v '^\s*#' "$CELLS" | grep -v '^\s*$' | xargs -P "$PAR" -L 1 bash -c 'run_cell "$@"' _
stamp cells-end
cat "$OUT/cells.tsv"
(cd "$IB_HOME" && find runs -name record.json | tar -cJf "$OUT/records.tar.xz" -T - && tar -tJf "$OUT/records.tar.xz" | wc -l)
tar -C "$IB_HOME" -cJf "$OUT/cell-logs.tar.xz" $(cd "$IB_HOME" && ls cell.*.log 2>/dev/null) 2>/dev/null
nvidia-smi --query-gpu=memory.used --format=csv 2>/dev/null; ls -la "$OUT"; stamp end
