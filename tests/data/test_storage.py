from __future__ import annotations

import zipfile

import numpy as np
import pytest

from imaginebench.data import DatasetError, load_dataset, read_manifest, save_dataset
from tests.data.helpers import random_dataset


@pytest.mark.parametrize("discrete", [True, False])
def test_round_trip_is_bit_exact(tmp_path, discrete):
    ds = random_dataset(discrete=discrete)
    path = save_dataset(ds, tmp_path / "d.npz")
    back = load_dataset(path)
    for name in ds.ARRAYS:
        a, b = getattr(ds, name), getattr(back, name)
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes(), name
    assert back.tasks == ds.tasks and back.instructions == ds.instructions
    assert dict(back.metadata) == dict(ds.metadata)
    manifest = read_manifest(path)
    assert manifest["schema_version"] == 1
    assert all(len(spec["sha256"]) == 64 for spec in manifest["arrays"].values())


def test_same_dataset_gives_identical_bytes(tmp_path):
    a = save_dataset(random_dataset(seed=3), tmp_path / "a.npz")
    b = save_dataset(random_dataset(seed=3), tmp_path / "b.npz")
    assert a.read_bytes() == b.read_bytes()


def test_compressed_file_round_trips_smaller_and_reproducibly(tmp_path):
    ds = random_dataset(seed=5)
    ds.states[:, 1:] = 0.0  # wide, repetitive columns: what compression is for (Meta-World's empty slots)
    plain = save_dataset(ds, tmp_path / "plain.npz")
    packed = save_dataset(ds, tmp_path / "packed.npz", compress=True)
    again = save_dataset(ds, tmp_path / "again.npz", compress=True)
    assert packed.stat().st_size < plain.stat().st_size and packed.read_bytes() == again.read_bytes()
    with zipfile.ZipFile(packed) as zf:
        assert {i.compress_type for i in zf.infolist()} == {zipfile.ZIP_DEFLATED}
    back = load_dataset(packed)
    for name in ds.ARRAYS:
        assert getattr(back, name).tobytes() == getattr(ds, name).tobytes(), name
    assert np.load(packed)["states"].shape == ds.states.shape  # still a plain numpy .npz


def test_corrupted_file_names_the_file(tmp_path):
    path = save_dataset(random_dataset(n=50), tmp_path / "corrupt.npz")
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("states.npy")
    pos = info.header_offset + 30 + len(info.filename) + 200  # inside the states payload
    raw[pos] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(DatasetError, match="corrupt.npz"):
        load_dataset(path)


def test_checksum_mismatch_is_detected(tmp_path):
    """A member rewritten consistently (valid zip CRC) but with different data fails the checksum."""
    ds = random_dataset()
    path = save_dataset(ds, tmp_path / "tampered.npz")
    members = {}
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            members[name] = zf.read(name)
    import io

    buf = io.BytesIO()
    np.lib.format.write_array(buf, ds.rewards + 1.0)
    members["rewards.npy"] = buf.getvalue()
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    with pytest.raises(DatasetError, match=r"tampered\.npz.*checksum"):
        load_dataset(path)


def test_truncated_file_names_the_file(tmp_path):
    path = save_dataset(random_dataset(n=50), tmp_path / "trunc.npz")
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DatasetError, match="trunc.npz"):
        load_dataset(path)
    with pytest.raises(DatasetError, match="trunc.npz"):
        read_manifest(path)


def test_not_a_dataset(tmp_path):
    path = tmp_path / "junk.npz"
    path.write_text("hello")
    with pytest.raises(DatasetError, match="junk.npz"):
        load_dataset(path)


def test_existing_file_is_kept_and_no_partial_files(tmp_path):
    path = save_dataset(random_dataset(seed=1), tmp_path / "keep.npz")
    before = path.read_bytes()
    with pytest.raises(FileExistsError, match="overwrite"):
        save_dataset(random_dataset(seed=2), path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.npz"]


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np.lib.format, "write_array", boom)
    with pytest.raises(OSError):
        save_dataset(random_dataset(), tmp_path / "x.npz")
    assert list(tmp_path.iterdir()) == []


def _damaged(ds, column, edit):
    """A copy of ``ds`` whose ``column`` is changed by ``edit`` (written with valid checksums)."""
    import dataclasses

    array = getattr(ds, column).copy()
    edit(array)
    return dataclasses.replace(ds, **{column: array})


def _set_nan_row5(a):
    a[5, 1] = np.nan


def _set_inf(a):
    a[3] = np.inf


def _action_7(a):
    a[4] = 7


def _early_terminal(a):
    a[0] = True  # episode 0 has more than one step in random_dataset(seed=0)


@pytest.mark.parametrize("column, edit, metadata, message", [
    ("states", _set_nan_row5, {}, "a state holds NaN or inf"),
    ("rewards", _set_inf, {}, "a reward is NaN or inf"),
    ("actions", _action_7, {"action_dim": 5, "discrete_actions": True}, "a discrete action is outside 0..4"),
    ("terminals", _early_terminal, {}, "flag sits before an episode's last step"),
    (None, None, {"state_dim": 6}, "states have 4 values, the metadata's state_dim is 6"),
])
def test_unusable_contents_are_refused_with_one_line(tmp_path, column, edit, metadata, message):
    import dataclasses

    ds = random_dataset()
    assert ds.lengths[0] > 1
    ds = dataclasses.replace(ds, metadata={**ds.metadata, **metadata})
    if column is not None:
        ds = _damaged(ds, column, edit)
    path = save_dataset(ds, tmp_path / "real-train.npz")
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    text = str(info.value)
    assert "\n" not in text and str(path) in text and message in text and "(first at episode " in text
    assert "imaginebench data collect --env Test-v0 --level train --overwrite" in text
    assert load_dataset(path, verify=False).metadata["domain"] == "Test-v0"  # the file itself is left as it is


def test_continuous_actions_outside_the_box_are_refused(tmp_path):
    import dataclasses

    ds = random_dataset(discrete=False)
    ds = dataclasses.replace(ds, metadata={**ds.metadata, "action_dim": 3, "discrete_actions": False,
                                           "source": "imaginary", "level": "hard"})
    assert load_dataset(save_dataset(ds, tmp_path / "ok.npz")).num_transitions == ds.num_transitions
    bad = _damaged(ds, "actions", lambda a: a.__setitem__((2, 1), 1.5))
    with pytest.raises(DatasetError, match=r"outside \[-1, 1\] .* imagine generate --env Test-v0 --level hard"):
        load_dataset(save_dataset(bad, tmp_path / "bad.npz"))


def test_data_info_on_a_nan_dataset_is_one_line(tmp_path):
    from typer.testing import CliRunner

    from imaginebench.cli import app

    path = save_dataset(_damaged(random_dataset(), "states", _set_nan_row5), tmp_path / "real-train.npz")
    result = CliRunner().invoke(app, ["data", "info", str(path)])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "a state holds NaN or inf" in result.output
