"""benchmarks/speed/scan_bench.py measures what it says: wall time, exit code, peak RSS, samples."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("scan_bench", ROOT / "benchmarks" / "speed" / "scan_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_measure_reports_rss_and_exit_code(bench) -> None:
    code = "import time; b = bytearray(80 * 2**20); b[::4096] = b'x' * len(b[::4096]); " \
           "time.sleep(0.2); raise SystemExit(3)"
    result = bench.measure([sys.executable, "-c", code])
    assert result["rc"] == 3
    assert result["maxrss_mb"] >= 80
    assert result["tree_rss_mb"] >= 80  # the sampler saw it too
    assert 0.2 <= result["seconds"] < 30


def test_measure_counts_child_processes(bench) -> None:
    code = ("import subprocess, sys; subprocess.run([sys.executable, '-c', "
            "\"import time; b = bytearray(60 * 2**20); b[::4096] = b'x' * len(b[::4096]); "
            "time.sleep(0.3)\"])")
    result = bench.measure([sys.executable, "-c", code])
    assert result["rc"] == 0 and result["maxrss_mb"] >= 60 and result["tree_rss_mb"] >= 60


def test_timeout_kills(bench) -> None:
    result = bench.measure([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert result["timed_out"] and result["seconds"] < 10


def test_sample_files_and_table(bench, tmp_path: Path) -> None:
    for n in range(20):
        (tmp_path / f"f{n:02d}.py").write_text("x = 1\n" * 10)
    files = bench.py_files(tmp_path)
    assert len(files) == 20 and bench.count_lines(files) == 200
    chosen, lines = bench.sample_files(files, 50)
    assert chosen == files[::4] and lines == 50
    row = {"tree": "t", "files": 20, "lines": 200, "tool": "ruff-all", "runs": 3, "median": 1.0,
           "min": 0.9, "max": 1.2, "maxrss_mb": 10, "tree_rss_mb": 12, "rc": [0], "note": "",
           "load_1min": [1.0]}
    fast = dict(row, tool="opscan-cold", median=2.5)
    text = bench.table([row, fast])
    assert text.splitlines()[2].startswith("| t | 20 | 200 | ruff-all | 3 | 1.00 |")
    assert "cold / ruff --select ALL (goal <= 3): 2.50" in bench.ratios([row, fast])


def test_the_speed_gate_fails_on_gross_regressions_only(bench) -> None:
    assert bench.regressions(2.5, 0.2) == ["cold"]          # issue 40's cold scan
    assert bench.regressions(0.9, 6.6) == ["warm"]          # ... and its warm scan
    assert bench.regressions(1.3, 0.4) == []                # goals missed, no gross regression
    assert bench.regressions(0.9, 0.3, 1.2) == ["warm"]     # the terminal report slow, JSON fast
    assert bench.regressions(0.9, 0.3, 0.5) == []
    assert bench.regressions(0.9, 0.05, 0.04, 6.6) == ["warm"]  # replayed fast, the per-file path slow
    assert bench.regressions(0.9, 0.05, 0.04, 0.3) == []
    assert bench.GOALS["cold"] < bench.LIMITS["cold"] and bench.GOALS["warm"] < bench.LIMITS["warm"]
