"""Tracing runs the model's code in a child process: hangs, segfaults and memory blow-ups end there.

The parent reports one line (what happened, the limit, what to try) and exits 2; no traceback.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from opscan.errors import TargetError, TraceError, UsageError
from opscan.commands.flags import parse_size, parse_timeout
from opscan.containment.process import Limits, run
from opscan.containment.outcome import result_of

HERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def _targets_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))  # the spawned child gets the parent's sys.path


def run_isolated(func: str, kwargs: dict, limits: Limits, what: str = "the trace"):
    """What `opscan trace` does with a child's end: its value, or one raised line."""
    return result_of(run(func, kwargs, limits), what, limits)


def test_result_comes_back_and_model_prints_stay_off_stdout(capfd):
    assert run_isolated("reliability_targets:answer", {"value": 1}, Limits(60, None)) == 2
    out, err = capfd.readouterr()
    assert "noise on stdout" not in out and "noise on stdout" in err


def test_hang_is_killed_at_the_timeout():
    start = time.monotonic()
    with pytest.raises(TraceError) as info:
        run_isolated("reliability_targets:hang", {}, Limits(2, None), what="trace of hang.py:build")
    assert time.monotonic() - start < 30
    text = str(info.value)
    assert "timed out" in text and "--timeout 2" in text and "\n" not in text


@pytest.mark.parametrize("func,kwargs", [("segfault", {}), ("kill_self", {"signum": int(signal.SIGSEGV)})])
def test_segfault_ends_only_the_child(func, kwargs):
    with pytest.raises(TraceError) as info:
        run_isolated(f"reliability_targets:{func}", kwargs, Limits(60, None))
    assert "segmentation fault" in str(info.value) and "SIGSEGV" in str(info.value)


def test_allocation_past_the_memory_limit():
    with pytest.raises(TraceError) as info:
        run_isolated("reliability_targets:allocate", {"gib": 64}, Limits(60, parse_size("1G")))
    text = str(info.value)
    assert "out of memory" in text and "--max-memory 1G" in text and "\n" not in text


def test_killed_child_is_reported_as_likely_oom():
    with pytest.raises(TraceError) as info:
        run_isolated("reliability_targets:kill_self", {"signum": int(signal.SIGKILL)}, Limits(60, None))
    assert "SIGKILL" in str(info.value) and "out-of-memory" in str(info.value)


def test_opscan_errors_cross_the_process_boundary_unchanged():
    with pytest.raises(TargetError) as info:
        run_isolated("reliability_targets:raise_opscan_error", {}, Limits(60, None))
    assert str(info.value) == "model.py:3: cannot import 'nope'"


def test_other_exceptions_and_early_exit():
    with pytest.raises(TraceError, match="ValueError: model code failed"):
        run_isolated("reliability_targets:raise_other", {}, Limits(60, None))
    with pytest.raises(TraceError, match="exit code 3"):
        run_isolated("reliability_targets:exit_early", {}, Limits(60, None))


@pytest.mark.parametrize("text,value", [("8G", 8 << 30), ("512M", 512 << 20), ("1.5GiB", int(1.5 * (1 << 30))),
                                        ("0", None), ("none", None), ("2147483648", 2 << 30)])
def test_parse_size(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["lots", "-1G", "1X", "10"])
def test_parse_size_rejects(text):
    with pytest.raises(UsageError):
        parse_size(text)


def test_parse_timeout():
    assert parse_timeout("0") is None and parse_timeout("2.5") == 2.5
    with pytest.raises(UsageError):
        parse_timeout("-3")


# -- end to end through `opscan trace` ------------------------------------------------------------
MODELS = {
    "hang_model.py": "import time\nimport torch\n\ndef build():\n    time.sleep(3600)\n",
    "hang_forward.py": ("import time\nimport torch\n\nclass M(torch.nn.Module):\n"
                        "    def __init__(self):\n        super().__init__()\n        self.l = torch.nn.Linear(4, 4)\n"
                        "    def forward(self, x):\n        time.sleep(3600)\n        return self.l(x)\n\n"
                        "def build():\n    return M(), (torch.randn(2, 4),)\n"),
    "segv_model.py": "import ctypes\n\ndef build():\n    ctypes.string_at(0)\n",
    "oom_model.py": ("def build():\n    blocks = []\n    while True:\n"
                     "        blocks.append(bytearray(256 << 20))\n"),
    "ok_model.py": ("import torch\n\ndef build():\n    return torch.nn.Linear(4, 4), (torch.randn(2, 4),)\n"),
}


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("models")
    for name, text in MODELS.items():
        (root / name).write_text(text)
    return root


def _trace(models: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-m", "opscan", "trace", *args], cwd=models, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _one_line(proc) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("opscan: error:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.slow
@pytest.mark.parametrize("target", ["hang_model.py:build", "hang_forward.py:build"])
def test_trace_hang_times_out(models, target):
    start = time.monotonic()
    line = _one_line(_trace(models, target, "--mode", "inference", "--timeout", "6"))
    assert "timed out" in line and "--timeout 6" in line and target in line
    assert time.monotonic() - start < 120


@pytest.mark.slow
def test_trace_segfault(models):
    line = _one_line(_trace(models, "segv_model.py:build", "--timeout", "120"))
    assert "segmentation fault" in line and "segv_model.py:build" in line


@pytest.mark.slow
def test_trace_out_of_memory(models):
    line = _one_line(_trace(models, "oom_model.py:build", "--max-memory", "3G", "--timeout", "120"))
    assert ("out of memory" in line or "out-of-memory" in line) and "--max-memory 3G" in line


@pytest.mark.slow
def test_trace_still_works_isolated(models):
    proc = _trace(models, "ok_model.py:build", "--mode", "inference", "--format", "json",
                  "--timeout", "120", "--max-memory", "8G")
    assert proc.returncode == 0, proc.stderr
    assert '"aten::' in proc.stdout


@pytest.mark.parametrize("flag,value", [("--timeout", "soon"), ("--max-memory", "lots")])
def test_trace_limit_flags_validated(models, flag, value):
    line = _one_line(_trace(models, "ok_model.py:build", flag, value, timeout=60))
    assert flag in line


@pytest.mark.slow
def test_whole_answer_isolates_configured_models(tmp_path):
    """`opscan PATH` traces the models of [tool.opscan] the same way: a hanging model is one line,
    exit 2, and the rest of the report (the source scan) is still printed."""
    (tmp_path / "hang_model.py").write_text(MODELS["hang_model.py"])
    (tmp_path / "train.py").write_text('import torch\nx = x.to("cuda")\n')
    (tmp_path / "pyproject.toml").write_text(
        '[tool.opscan]\n\n[[tool.opscan.models]]\ntarget = "hang_model.py:build"\nmode = "inference"\n')
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-m", "opscan", str(tmp_path), "--timeout", "6", "--format", "json"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    line = _one_line(proc)
    assert "timed out" in line and "--timeout 6" in line and "hang_model.py:build" in line
    import json

    assert [f["path"] for f in json.loads(proc.stdout)["findings"]] == ["train.py"]
