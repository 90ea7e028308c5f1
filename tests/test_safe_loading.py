"""No code path loads pickles: every ``torch.load`` passes ``weights_only=True`` and nothing calls
``pickle.load``/``numpy.load(allow_pickle=True)`` (a checkpoint or dataset from elsewhere must not
be able to run code)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "imaginebench"
UNSAFE = (re.compile(r"weights_only\s*=\s*False"), re.compile(r"\bpickle\.loads?\("), re.compile(r"\bdill\."),
          re.compile(r"allow_pickle\s*=\s*True"), re.compile(r"\bcloudpickle\.loads?\("))


def _calls(text: str, name: str) -> list[tuple[int, str]]:
    """``(line, call text)`` of every ``name(`` call, its arguments up to the matching parenthesis."""
    out = []
    for match in re.finditer(re.escape(name) + r"\(", text):
        depth, i = 1, match.end()
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        out.append((text.count("\n", 0, match.start()) + 1, text[match.start():i]))
    return out


def test_no_unsafe_loading_in_the_package():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 50
    found = []
    for path in files:
        text = path.read_text()
        for pattern in UNSAFE:
            for m in pattern.finditer(text):
                found.append(f"{path.relative_to(PACKAGE)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}")
        for line, call in _calls(text, "torch.load"):
            if not re.search(r"weights_only\s*=\s*True", call):
                found.append(f"{path.relative_to(PACKAGE)}:{line}: torch.load without weights_only=True")
    assert found == []


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_a_checkpoint_with_a_pickled_object_is_refused(tmp_path):
    torch = pytest.importorskip("torch")
    import pickle

    class Payload:
        def __reduce__(self):
            return (print, ("this would run",))

    path = tmp_path / "resume.pt"
    with open(path, "wb") as f:
        pickle.dump({"optimizer": Payload()}, f)
    from imaginebench.imagination.checkpoint import file_sha256, load_resume_state

    with pytest.raises(ValueError, match="pickled objects"):  # even with a matching digest
        load_resume_state(tmp_path, {"files": {"optimizer": "resume.pt"}, "sha256": {"resume.pt": file_sha256(path)}})
