"""`db probe --report` reads TorchNeuron's compilation cache counters where the install has them
(NOTE [cache counters]): a fake torch_neuronx stands in for one that has them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from opscan.db import cache_stats

HERE = Path(__file__).resolve().parent
FAKE = HERE / "fake_neuronx"


def test_counters_absent_are_none(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_neuronx", None)   # `import torch_neuronx` fails
    monkeypatch.setitem(sys.modules, "torch_neuronx._C", None)
    assert cache_stats.read_counters() is None
    assert cache_stats.lines(None, None, []) == [
        "compilation cache counters: not available on this install "
        "(torch_neuronx._C._get_compilation_cache_stats not found)"]


def test_counters_of_the_fake_install():
    # in a child process: the fake package never enters this test process's imports (later tests
    # look for torch_neuronx to decide their device)
    code = ("import json; from opscan.db import cache_stats; b, a = cache_stats.read_counters(), "
            "cache_stats.read_counters(); print(json.dumps([b, cache_stats.difference(b, a)]))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(FAKE), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    before, difference = json.loads(done.stdout)
    assert before == {"memory_hits": 0, "persistent_hits": 0, "persistent_misses": 0}   # "note" is no number
    assert difference == {"memory_hits": 0, "persistent_hits": 2, "persistent_misses": 7}


def test_forecast_reads_the_reports_compile_counts(tmp_path):
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"ops": [], "compile": {
        "steps": [{"signatures": ["aten::mm((2, 8):float32;(8, 16):float32)", "aten::relu((2, 16):float32)"]}],
        "estimate": {"counts": [{"what": "torch.compile graphs (first call of each region)", "compiles": 3}]}}}))
    # the estimate's counts are the forecast (the first step's signatures are among them when traced)
    assert cache_stats.forecast(report) == [("torch.compile graphs (first call of each region)", 3)]
    no_estimate = tmp_path / "steps.json"
    no_estimate.write_text(json.dumps({"ops": [], "compile": {
        "steps": [{"signatures": ["aten::mm((2, 8):float32;(8, 16):float32)", "aten::relu((2, 16):float32)"]}],
        "estimate": None}}))
    assert cache_stats.forecast(no_estimate) == [("eager signatures in the first step", 2)]
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"ops": []}))   # a report written before the compile section
    assert cache_stats.forecast(old) == []


MODEL = '''
import torch
from torch import nn


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.rand(8, 4))

    def forward(self, x):
        return torch.relu(torch.mm(x, self.w))


def build():
    return torch.compile(Tiny()), (torch.rand(2, 8),)
'''


def _opscan(*args: str, fake: bool) -> subprocess.CompletedProcess:
    extra = [str(HERE)] + ([str(FAKE)] if fake else [])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*extra, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "opscan", *args], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.mark.slow
def test_probe_report_prints_the_counters_and_the_forecast(tmp_path):
    pytest.importorskip("torch")
    project = tmp_path / "project"
    project.mkdir()
    (project / "model.py").write_text(MODEL)
    report = tmp_path / "report.json"
    done = _opscan(str(project), "--model", f"{project / 'model.py'}:build", "--mode", "inference",
                   "--in-process", "--format", "json", "--output", str(report), fake=False)
    assert report.exists(), done.stderr
    counts = {c["what"]: c["compiles"] for c in json.loads(report.read_text())["compile"]["estimate"]["counts"]}
    assert counts["torch.compile graphs (first call of each region)"] == 1
    first = counts["eager signatures in the first step"]
    assert first > 0
    with_counters = _opscan("db", "probe", "--import", "toy_backend", "--report", str(report),
                            "--out", str(tmp_path / "a.yaml"), fake=True)
    assert with_counters.returncode == 0, with_counters.stderr
    assert ("compilation cache counters during the replay (torch_neuronx._C._get_compilation_cache_stats): "
            "memory_hits +0, persistent_hits +2, persistent_misses +7") in with_counters.stdout
    assert (f"the report forecasts: {first} eager signatures in the first step, "
            "1 torch.compile graphs (first call of each region)") in with_counters.stdout
    without = _opscan("db", "probe", "--import", "toy_backend", "--report", str(report),
                      "--out", str(tmp_path / "b.yaml"), fake=False)
    assert without.returncode == 0, without.stderr
    assert "compilation cache counters: not available on this install" in without.stdout
