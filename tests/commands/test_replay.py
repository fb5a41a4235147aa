"""Report replay (opscan/commands/replay.py, NOTE [report replay]): a warm `opscan scan` of an
unchanged tree gives the last run's bytes and exit code without running the scan, and any change
to what the run read (a file, a folder, a config file, the environment) runs the scan again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from opscan.commands import replay

PINNED = "import torch\n\nx = torch.zeros(2).cuda()\n"
CLEAN = "import torch\n\nx = torch.zeros(2).cpu()\n"   # one byte shorter: the size changes too


def _age(root: Path, seconds: float = 30) -> None:
    """Files and folders last changed `seconds` ago (older than the racy window)."""
    then = time.time() - seconds
    for path in [root, *root.rglob("*")]:
        os.utime(path, (then, then))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "model.py").write_text(PINNED)
    (root / "pkg" / "util.py").write_text("def f():\n    return 1\n")
    _age(tmp_path)
    return root


@pytest.fixture
def no_scan(monkeypatch):
    """Make any scan that really runs fail loudly: what still succeeds was replayed."""
    def install():
        import opscan.pipeline.analyse as analyse

        def refuse(*args, **kwargs):
            raise AssertionError("the scan ran")
        monkeypatch.setattr(analyse, "analyse", refuse)
    return install


def _records() -> list[Path]:
    return sorted((Path(os.environ["OPSCAN_CACHE_DIR"]) / "replay").glob("*.json"))


def test_an_unchanged_tree_replays_the_same_bytes_and_exit_code(run_cli, project, no_scan):
    first = run_cli("scan", str(project), "--format", "json")
    assert first[0] == 1 and "OPS" in first[1]
    assert len(_records()) == 1
    no_scan()
    assert run_cli("scan", str(project), "--format", "json") == first
    with pytest.raises(AssertionError, match="the scan ran"):   # another invocation, its own record
        run_cli("scan", str(project))


def test_the_terminal_report_and_its_stderr_lines_replay(run_cli, project, no_scan):
    first = run_cli("scan", str(project))
    assert first[0] == 1 and "fail-on" in first[2]
    no_scan()
    assert run_cli("scan", str(project)) == first


def test_an_edit_that_puts_size_and_mtime_back_is_seen(run_cli, project):
    model = project / "pkg" / "model.py"
    code, out, _ = run_cli("scan", str(project), "--format", "json")
    assert code == 1
    st = model.stat()
    model.write_text(PINNED.replace("cuda()", "cpu()\n"))           # same size, no CUDA pin
    assert model.stat().st_size == st.st_size
    os.utime(model, ns=(st.st_atime_ns, st.st_mtime_ns))             # mtime put back; ctime moves
    code2, out2, _ = run_cli("scan", str(project), "--format", "json")
    assert code2 == 0 and out2 != out


def test_a_new_file_and_a_removed_file_are_seen(run_cli, project):
    run_cli("scan", str(project), "--format", "json")
    (project / "pkg" / "extra.py").write_text(PINNED)
    _age(project)
    _, out, _ = run_cli("scan", str(project), "--format", "json")
    assert "pkg/extra.py" in out
    (project / "pkg" / "extra.py").unlink()
    (project / "pkg" / "model.py").unlink()
    _age(project)
    code, out, _ = run_cli("scan", str(project), "--format", "json")
    assert code == 0 and "pkg/extra.py" not in out and "pkg/model.py" not in out


def test_a_config_file_created_later_is_seen(run_cli, project):
    assert run_cli("scan", str(project), "--format", "json")[0] == 1
    (project / "pyproject.toml").write_text('[tool.opscan]\nfail-on = ["custom-kernel"]\n')
    _age(project)
    assert run_cli("scan", str(project), "--format", "json")[0] == 0


def test_another_environment_or_flag_runs_the_scan(run_cli, project, no_scan, monkeypatch):
    run_cli("scan", str(project), "--format", "json")
    no_scan()
    monkeypatch.setenv("NO_COLOR", "1")
    with pytest.raises(AssertionError, match="the scan ran"):
        run_cli("scan", str(project), "--format", "json")
    monkeypatch.delenv("NO_COLOR")
    with pytest.raises(AssertionError, match="the scan ran"):
        run_cli("scan", str(project), "--format", "json", "--exit-zero")


def test_no_cache_neither_records_nor_replays(run_cli, project, no_scan):
    run_cli("scan", str(project), "--format", "json", "--no-cache")
    assert _records() == []
    no_scan()
    with pytest.raises(AssertionError, match="the scan ran"):
        run_cli("scan", str(project), "--format", "json", "--no-cache")


def test_output_to_a_file_is_not_recorded(run_cli, project, tmp_path):
    run_cli("scan", str(project), "--format", "json", "-o", str(tmp_path / "r.json"))
    assert _records() == []


def test_a_tree_changed_within_the_racy_window_is_scanned_again(run_cli, tmp_path, no_scan):
    root = tmp_path / "fresh"
    root.mkdir()
    (root / "m.py").write_text(PINNED)   # written now: a same-tick edit could keep its signature
    run_cli("scan", str(root), "--format", "json")
    no_scan()
    with pytest.raises(AssertionError, match="the scan ran"):
        run_cli("scan", str(root), "--format", "json")


def test_a_corrupt_or_foreign_record_is_ignored(run_cli, project):
    first = run_cli("scan", str(project), "--format", "json")
    [record] = _records()
    record.write_text("{not json")
    assert run_cli("scan", str(project), "--format", "json") == first
    data = json.loads(record.read_text())
    data["output"] = [[0, "forged\n"]]
    data["key"] = "0" * 64
    record.write_text(json.dumps(data))
    assert run_cli("scan", str(project), "--format", "json") == first


def test_a_run_that_starts_a_child_process_is_not_recorded(tmp_path):
    with replay.Recorder(tmp_path / "cache", "k" * 64) as recorder:
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert recorder.save(0) is False
    with replay.Recorder(tmp_path / "cache", "k" * 64) as recorder:
        (tmp_path / "seen.txt").write_text("x")
        (tmp_path / "seen.txt").read_text()
        (tmp_path / "absent.txt").exists()
    assert recorder.save(0) is True
    inputs = dict(json.loads(replay.record_path(tmp_path / "cache", "k" * 64).read_text())["inputs"])
    assert inputs[str(tmp_path / "seen.txt")] is not None
    assert inputs[str(tmp_path / "absent.txt")] is None            # a missing file is an input too
    assert not any(p.startswith(str(tmp_path / "cache")) for p in inputs)


def test_a_binary_write_to_stdout_is_not_recorded(tmp_path, capsysbinary):
    with replay.Recorder(tmp_path / "cache", "b" * 64) as recorder:
        sys.stdout.buffer.write(b"raw\n")
    assert recorder.save(0) is False
