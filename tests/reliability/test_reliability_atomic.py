"""Outputs are written atomically: an interrupted run leaves the old file (or none), never half a file."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.corpus import GOOD, write_tree
from opscan.fsutil import atomic_open, atomic_write

OLD = "OLD CONTENT, must survive\n"


def _leftovers(folder: Path, name: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != name)


def test_atomic_write_replaces(tmp_path):
    target = tmp_path / "report.json"
    atomic_write(target, "new\n")
    assert target.read_text() == "new\n"
    atomic_write(target, b"\x00bytes")
    assert target.read_bytes() == b"\x00bytes"
    assert _leftovers(tmp_path, "report.json") == []


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_atomic_open_interrupted_mid_write_keeps_old_file(tmp_path, error):
    target = tmp_path / "baseline.json"
    target.write_text(OLD)
    os.chmod(target, 0o640)
    with pytest.raises(type(error)):
        with atomic_open(target) as handle:
            handle.write("{\n  \"half\": ")
            handle.flush()
            raise error
    assert target.read_text() == OLD
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert _leftovers(tmp_path, "baseline.json") == []


def test_atomic_open_keeps_mode_of_replaced_file(tmp_path):
    target = tmp_path / "x.sarif"
    target.write_text(OLD)
    os.chmod(target, 0o600)
    atomic_write(target, "new")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and target.read_text() == "new"


# -- every command that writes a file, interrupted by a real failing write ------------------------
# RLIMIT_FSIZE makes any write past N bytes fail with EFBIG (SIGXFSZ ignored): a disk that fills
# up half-way through the report, whatever code does the writing.
DRIVER = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), int(sys.argv[1])))
from opscan.cli import main
sys.exit(main(sys.argv[2:]))
"""

OUTPUT_COMMANDS = {
    "scan-json": ["scan", "{tree}", "--format", "json", "--no-fix-check", "--output", "{out}"],
    "check-json": ["check", "{tree}", "--no-trace", "--format", "json", "--output", "{out}"],
    "check-sarif": ["check", "{tree}", "--no-trace", "--format", "sarif", "--output", "{out}"],
    "check-markdown": ["check", "{tree}", "--no-trace", "--format", "markdown", "--output", "{out}"],
    "baseline": ["baseline", "{tree}", "--output", "{out}"],
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    files = dict(GOOD)
    for i in range(30):  # enough findings that every report is well over the write limit
        files[f"pkg/m{i:02d}.py"] = b'import torch\nx = x.to("cuda")\nmodel.cuda()\ntorch.cuda.synchronize()\n'
    return write_tree(tmp_path_factory.mktemp("atomic"), files)


def _run(limit: int, args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", DRIVER, str(limit), *args], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(OUTPUT_COMMANDS))
def test_output_interrupted_by_full_disk_keeps_old_file(command, tree, tmp_path):
    out = tmp_path / "out" / "report.txt"
    out.parent.mkdir()
    out.write_text(OLD)
    args = [a.format(tree=tree, out=out) for a in OUTPUT_COMMANDS[command]]
    proc = _run(1000, args)
    assert out.read_text() == OLD, "a failed write left a truncated report"
    assert _leftovers(out.parent, "report.txt") == [], "temporary file left behind"
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("opscan: error:") and "report.txt" in lines[-1], proc.stderr
    assert "Traceback" not in proc.stderr
    # and with room to write, the same command replaces the file completely
    proc = _run(50_000_000, args)
    assert proc.returncode in (0, 1), proc.stderr
    assert out.read_text() != OLD and out.stat().st_size > 1000


def test_interrupted_render_keeps_old_report(tree, tmp_path, monkeypatch, run_cli):
    """Ctrl-C (or any exception) in the middle of rendering: the old --output file is untouched."""
    import opscan.reporters as reporters

    def half_render(fmt, report, out):
        out.write('{"findings": [')
        raise KeyboardInterrupt

    monkeypatch.setattr(reporters, "render", half_render)
    for command in (["scan", str(tree), "--format", "json"], ["check", str(tree), "--no-trace", "--format", "json"]):
        target = tmp_path / "r.json"
        target.write_text(OLD)
        code, _, _ = run_cli(*command, "--output", str(target))
        assert code == 130
        assert target.read_text() == OLD
        assert _leftovers(tmp_path, "r.json") == []
