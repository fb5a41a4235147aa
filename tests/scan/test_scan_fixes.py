"""Suggested replacements are checked against the installed torch; missing ones are not suggested."""

from __future__ import annotations

from opscan.scan import load_rules, scan_memory
from opscan.scan.fixes import TorchProbe, check_fixes

RULES = load_rules()


class FakeProbe(TorchProbe):
    def __init__(self, missing=(), installed=True):
        self._known = {}
        self.missing = set(missing)
        self.installed = installed
        self.version = "9.9"

    def has(self, path):
        return path not in self.missing


def _scan(source: str):
    result = scan_memory({"m.py": source}, RULES)
    from opscan.scan.file_scan import scan_source
    from opscan.scan.project import EMPTY

    file_result = scan_source("m.py", source.encode(), RULES, EMPTY)
    return list(result.findings), list(file_result.requires)


def test_available_replacement_is_kept_and_missing_one_is_replaced():
    findings, requires = _scan("import torch\ntorch.cuda.synchronize()\ntorch.cuda.get_rng_state()\n")
    assert requires == [("torch.accelerator.synchronize",), ("torch.accelerator.random.get_rng_state",)]
    out, notes = check_fixes(findings, requires, FakeProbe(missing={"torch.accelerator.random.get_rng_state"}))
    assert out[0].fix == findings[0].fix and "torch.accelerator.synchronize()" in out[0].fix
    assert out[1].fix.startswith("No replacement available in your installed torch 9.9")
    assert "`torch.accelerator.random.get_rng_state`" in out[1].fix
    assert "not in the installed torch 9.9: torch.accelerator.random.get_rng_state" in notes


def test_leaf_placeholders_give_per_function_requirements():
    _, requires = _scan("import torch\ntorch.cuda.memory_reserved()\ntorch.cuda.empty_cache()\n")
    assert requires == [("torch.accelerator.memory_reserved",), ("torch.accelerator.empty_cache",)]


def test_without_torch_nothing_is_rewritten():
    findings, requires = _scan("import torch\ntorch.cuda.get_rng_state()\n")
    out, notes = check_fixes(findings, requires, FakeProbe(installed=False))
    assert out == findings and notes == ["suggested replacements were not checked: torch is not installed here"]


def test_real_installed_torch():
    """torch 2.13 (this venv) has torch.accelerator.synchronize but not torch.accelerator.random."""
    import pytest

    torch = pytest.importorskip("torch")
    probe = TorchProbe()
    assert probe.has("torch.accelerator.synchronize")
    assert probe.has("torch.profiler.ProfilerActivity.PrivateUse1")
    assert probe.has("torch.accelerator.random.get_rng_state") == hasattr(torch.accelerator, "random")
    assert not probe.has("torch.accelerator.no_such_function")
