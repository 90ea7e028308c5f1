#!/bin/bash
# Build the staging folders for an offline-RL grid on the device machine (see README.md beside this file).
# Run on the CPU machine from the repository root with the project's venv and the data homes named below.
# Each staging folder, with the shrunk working tree, stays under the device tool's 64 MiB per call.
set -eu
R=$(pwd); SP=$R/.venv/lib/python3.11/site-packages; PY=$R/.venv/bin/python
HOME_DISCRETE=${HOME_DISCRETE:-/work/home_pub}          # CLEVR + BabyAI real data and references
MW_TRAIN=${MW_TRAIN:-/work/home_mw/datasets/MetaWorld-v0/small/real-train.npz}
HC_TRAIN=${HC_TRAIN:-/work/home_hc/datasets/HalfCheetah-v0/small/real-train.npz}
MW_LEVELS=${MW_LEVELS:-/work/home_mw_full/datasets/MetaWorld-v0/small}  # real-{rephrase,easy,hard}.npz: Real upper bounds
REFS=${REFS:-"/work/home_pub/references /work/home_mw_full/references /work/home_hc_pub/references"}
ENC_HOME=${ENC_HOME:-/work/gridstage/home}               # `imaginebench embed` of the four domains, all levels
for d in .gpu_a .gpu_b .gpu_c .gpu_d .gpugrid; do grep -qx "/$d/" .git/info/exclude || echo "/$d/" >> .git/info/exclude; done
rm -rf .gpu_a .gpu_b .gpu_c .gpu_d; mkdir -p .gpu_a .gpu_b/data .gpu_c/data .gpu_d/data .gpugrid
# A: what the device image lacks (it has torch, numpy, scipy, sklearn, h5py, transformers, rich, tqdm, imageio)
plat="--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
ver() { $PY -m pip show "$1" | sed -n 's/^Version: //p'; }
for p in mujoco==$(ver mujoco) pygame-ce==$(ver pygame-ce) pydantic-core==$(ver pydantic-core); do
  $PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $plat -d .gpu_a "$p"
done
tar -C "$SP" --exclude=__pycache__ -cf - d3rlpy gym gym_notices structlog dataclasses_json marshmallow gymnasium \
  farama_notifications metaworld minigrid glfw typer pydantic annotated_types typing_inspection annotated_doc \
  | xz -6 -T2 > .gpu_a/purepy.tar.xz   # typer and pydantic at the versions the CLI was tested with
# B, C: the instruction-embedding store (exact vectors; the device has no copy of the encoder model) in two parts
[ -d "$ENC_HOME/encoders" ] || { echo "no $ENC_HOME/encoders: run imaginebench embed first (README)"; exit 1; }
tar -C "$ENC_HOME" -cf - encoders | xz -2 -T2 | split -b 45000000 -d - .gpu_b/enc.tar.xz.part
mv .gpu_b/enc.tar.xz.part01 .gpu_c/
for e in CLEVR-v0 BabyAI-v0; do mkdir -p .gpu_b/data/$e; cp "$HOME_DISCRETE"/datasets/$e/small/real-*.npz .gpu_b/data/$e/; done
mkdir -p .gpu_c/data/MetaWorld-v0 .gpu_d/data/HalfCheetah-v0
xz -6 -T2 -c "$MW_TRAIN" > .gpu_c/data/MetaWorld-v0/real-train.npz.xz
xz -0 -T2 -c "$HC_TRAIN" > .gpu_d/data/HalfCheetah-v0/real-train.npz.xz
mkdir -p .gpu_c/data/MetaWorld-v0 .gpu_d/data/MetaWorld-v0; MW_REAL=()
for lv in rephrase easy hard; do  # 4.2 / 4.5 / 10.2 MB in xz (the 91-d slots are mostly constant)
  f="$MW_LEVELS/real-$lv.npz"; [ -f "$f" ] || continue
  d=.gpu_d; [ $lv = hard ] && d=.gpu_c  # keeps every call under 64 MiB with the 5.5 MB tree
  xz -6 -T2 -c "$f" > $d/data/MetaWorld-v0/real-$lv.npz.xz; MW_REAL+=("$f")
done
# D: the package's reference imaginary data (the shrunk tree leaves it out), calibration references, checksums
mkdir -p .gpu_d/reference_data
for e in CLEVR-v0 BabyAI-v0 MetaWorld-v0 HalfCheetah-v0; do
  mkdir -p .gpu_d/reference_data/$e/small; cp src/imaginebench/reference_data/$e/small/*.npz .gpu_d/reference_data/$e/small/; done
mkdir -p .gpu_d/references; for r in $REFS; do cp -r "$r"/. .gpu_d/references/; done
( sha256sum "$HOME_DISCRETE"/datasets/{CLEVR,BabyAI}-v0/small/real-*.npz "$MW_TRAIN" "$HC_TRAIN" "${MW_REAL[@]}" | sed 's#  .*/\([^/]*-v0\)/small/#  \1/#' ) > .gpu_d/data.sha256
cp experiments/device_grid/grid.sh .gpugrid/
PYTHONPATH=src $PY experiments/device_grid/prune_cells.py experiments/device_grid/cells.txt > .gpugrid/cells.txt  # drop cells already published
git rev-parse HEAD > .gpugrid/src.commit
du -sb .gpu_a .gpu_b .gpu_c .gpu_d .gpugrid
for d in .gpu_a .gpu_b .gpu_c .gpu_d; do  # each call carries one of them + .gpugrid + the shrunk tree (~5.5 MB)
  [ $(du -sb $d | cut -f1) -lt 61000000 ] || echo "WARNING: $d is over 61 MB: with the tree it may pass the 64 MiB limit"
done
