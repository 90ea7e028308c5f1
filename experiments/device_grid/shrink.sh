#!/bin/bash
# Take the large tracked files (notes/, the package's reference .npz, pictures) out of the working tree
# while device calls run, so a call's tree + carried folders stay under 64 MiB; restore.sh puts them back.
set -e
R=$(git rev-parse --show-toplevel); cd "$R"; STASH=${STASH:-/work/stash_tree}; LIST=$STASH.list
[ -e "$STASH" ] && { echo "$STASH exists: restore first"; exit 1; }
git diff --cached --quiet || { echo "the index has staged changes: commit them first"; exit 1; }
git ls-files -z -- notes 'src/imaginebench/reference_data/**.npz' '*.png' > "$LIST"
git rm -q -r --cached --pathspec-from-file="$LIST" --pathspec-file-nul
python3 - "$LIST" "$STASH" <<'PY'
import os, shutil, sys
paths = [p for p in open(sys.argv[1], 'rb').read().decode().split('\0') if p]
for p in paths:
    dst = os.path.join(sys.argv[2], p); os.makedirs(os.path.dirname(dst), exist_ok=True); shutil.move(p, dst)
print(len(paths), "moved out")
PY
git ls-files -z | xargs -0 du -cb | tail -1
