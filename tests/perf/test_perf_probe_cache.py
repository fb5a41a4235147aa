"""The fix-check answers are remembered per torch install, so a warm scan does not import torch."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from opscan.scan import probe_cache
from opscan.scan.fixes import TorchProbe
from opscan.scan.probe_cache import CachedProbe

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")


def _no_import(self, path):
    raise AssertionError(f"torch looked up for {path}")


def test_second_probe_answers_without_torch(tmp_path: Path, monkeypatch) -> None:
    first = CachedProbe(tmp_path)
    assert first.has("torch.accelerator.current_accelerator") is True
    assert first.has("torch.no_such_thing_here") is False
    assert first.imported
    first.save()
    monkeypatch.setattr(TorchProbe, "_lookup", _no_import)
    second = CachedProbe(tmp_path)
    assert second.has("torch.accelerator.current_accelerator") is True
    assert second.has("torch.no_such_thing_here") is False
    assert second.version == first.version and not second.imported


def test_damaged_or_foreign_file_is_ignored(tmp_path: Path, monkeypatch) -> None:
    first = CachedProbe(tmp_path)
    first.has("torch.no_such_thing_here")
    first.save()
    raw = first.path.read_bytes()
    first.path.write_bytes(raw.replace(b"false", b"true "))
    monkeypatch.setattr(TorchProbe, "_lookup", _no_import)
    with pytest.raises(AssertionError, match="torch looked up"):
        CachedProbe(tmp_path).has("torch.no_such_thing_here")
    first.path.write_bytes(raw)
    monkeypatch.setattr(probe_cache, "torch_identity", lambda: "another-torch-install" + "0" * 40)
    with pytest.raises(AssertionError, match="torch looked up"):
        CachedProbe(tmp_path).has("torch.no_such_thing_here")
