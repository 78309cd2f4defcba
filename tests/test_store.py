"""The on-disk tensor store (olacore.store): keys, atomic checksummed entries, corruption, failed writes.

Every store here lives in ``tmp_path``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from olacore.settings import CacheWriteError
from olacore.store import CacheCorruptionWarning, TensorStore, tensor_digest


def _entry():
    generator = torch.Generator().manual_seed(0)
    return {
        "attentions": torch.rand(3, 5, 5, generator=generator),
        "ids": torch.arange(7),
    }, {"tokens": ["a", "b"], "offsets": [[0, 1], [2, 3]], "is_causal": True}


def test_key_is_canonical_and_sensitive():
    key = TensorStore.key(model="m", text="t", settings={"a": 1, "b": [1, 2]})
    assert key == TensorStore.key(settings={"b": [1, 2], "a": 1}, text="t", model="m")
    assert len(key) == 64 and int(key, 16) >= 0
    assert key != TensorStore.key(model="m", text="t ", settings={"a": 1, "b": [1, 2]})
    assert key != TensorStore.key(model="m2", text="t", settings={"a": 1, "b": [1, 2]})
    assert key != TensorStore.key(model="m", text="t", settings={"a": 2, "b": [1, 2]})
    with pytest.raises(TypeError):
        TensorStore.key(model=object())
    with pytest.raises(ValueError):  # NaN has no canonical JSON: it cannot key anything
        TensorStore.key(value=float("nan"))


def test_tensor_digest_follows_values_dtype_and_shape():
    a = torch.arange(6, dtype=torch.float32)
    assert tensor_digest(a) == tensor_digest(a.clone())
    assert tensor_digest(a) == tensor_digest(a.numpy())  # numpy arrays read as torch.from_numpy makes them
    assert tensor_digest(a) != tensor_digest(a.double())
    assert tensor_digest(a) != tensor_digest(a.view(2, 3))
    b = a.clone()
    b[3] += 1e-6
    assert tensor_digest(a) != tensor_digest(b)
    assert tensor_digest(a.view(2, 3).t()) == tensor_digest(np.ascontiguousarray(a.view(2, 3).t().numpy()))


def test_round_trip_and_no_temporary_files(tmp_path):
    store = TensorStore(tmp_path)
    tensors, meta = _entry()
    key = store.key(test="round trip")
    assert store.get(key) is None and key not in store
    path = store.put(key, tensors, meta)
    assert path == store.path(key) and path.is_file() and key in store
    got, got_meta = store.get(key)
    assert got_meta == meta
    assert set(got) == set(tensors)
    for name in tensors:
        assert torch.equal(got[name], tensors[name]) and got[name].dtype == tensors[name].dtype
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and p != path]
    path.unlink()
    assert store.get(key) is None


def test_default_root_follows_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("OLACORE_CACHE", str(tmp_path / "somewhere"))
    assert TensorStore().root == tmp_path / "somewhere" / "tensors"


def _corrupt_truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _corrupt_flip_data(path):
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # inside the tensor bytes: only the checksum can tell
    path.write_bytes(bytes(data))


def _corrupt_header(path):
    data = bytearray(path.read_bytes())
    data[8:20] = b"not json!!!!"
    path.write_bytes(bytes(data))


def _corrupt_empty(path):
    path.write_bytes(b"")


def _corrupt_huge_header(path):
    data = bytearray(path.read_bytes())
    data[:8] = (10**12).to_bytes(8, "little")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "corrupt", [_corrupt_truncate, _corrupt_flip_data, _corrupt_header, _corrupt_empty, _corrupt_huge_header]
)
def test_corrupt_entry_is_detected_and_deleted(tmp_path, corrupt):
    store = TensorStore(tmp_path)
    tensors, meta = _entry()
    key = store.key(test="corrupt")
    path = store.put(key, tensors, meta)
    corrupt(path)
    with pytest.warns(CacheCorruptionWarning, match="corrupt or partial"):
        assert store.get(key) is None
    assert not path.exists()
    store.put(key, tensors, meta)  # and it can be written again
    assert torch.equal(store.get(key)[0]["attentions"], tensors["attentions"])


def test_entry_without_checksum_is_not_trusted(tmp_path):
    from safetensors.torch import save_file

    store = TensorStore(tmp_path)
    key = store.key(test="foreign")
    store.path(key).parent.mkdir(parents=True)
    save_file({"x": torch.zeros(2)}, store.path(key))  # valid safetensors, but not ours
    with pytest.warns(CacheCorruptionWarning):
        assert store.get(key) is None


def test_failed_write_names_the_setting_and_leaves_nothing(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")  # root ignores permission bits
    store = TensorStore(blocker / "tensors")
    tensors, meta = _entry()
    key = store.key(test="unwritable")
    with pytest.raises(CacheWriteError, match="OLACORE_CACHE"):
        store.put(key, tensors, meta)
    with pytest.warns(UserWarning, match="not kept"):
        assert store.put_or_warn(key, tensors, meta) is False
    assert [p.name for p in tmp_path.iterdir()] == ["not-a-folder"]
    assert TensorStore(tmp_path / "ok").put_or_warn(key, tensors, meta) is True
