#!/bin/bash
# Undo shrink.sh: move the stashed files back and re-track them.
set -e
R=$(git rev-parse --show-toplevel); cd "$R"; STASH=${STASH:-/work/stash_tree}; LIST=$STASH.list
python3 - "$LIST" "$STASH" <<'PY'
import os, shutil, sys
paths = [p for p in open(sys.argv[1], 'rb').read().decode().split('\0') if p]
for p in paths:
    os.makedirs(os.path.dirname(p) or '.', exist_ok=True); shutil.move(os.path.join(sys.argv[2], p), p)
print(len(paths), "restored")
PY
git reset -q; rm -rf "$STASH" "$LIST"; git status --short | head
