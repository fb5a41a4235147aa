"""The hostile-input corpus: each odd file gets a clear, located diagnostic and the rest of the run is intact."""

from __future__ import annotations

import json
import builtins
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.corpus import CORPUS, CUDA_LINE, GOOD, big_file, by_path, noise, write_tree

DEVICE = "device-string"


@pytest.fixture(scope="module")
def corpus_run(corpus, scan_json):
    code, doc, err = scan_json(corpus)
    return code, doc, err, by_path(doc)


@pytest.fixture(scope="module")
def good_alone(tmp_path_factory, scan_json):
    root = write_tree(tmp_path_factory.mktemp("good"), GOOD)
    return by_path(scan_json(root)[1])


@pytest.mark.slow
def test_corpus_run_completes(corpus_run):
    code, doc, err, _ = corpus_run
    assert code == 1, err                       # findings of severity error, not a crash (2)
    assert noise(err) == [] and "fail-on error" in err
    assert doc["summary"]["files_scanned"] >= len(GOOD) + len(CORPUS) - 5


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_file(name, corpus_run):
    """Each hostile file: a diagnostic of category `input` at the right line, or its real findings."""
    expect = CORPUS[name][1]
    found = corpus_run[3].get(name, [])
    inputs = [f for f in found if f["category"] == "input"]
    if expect.get("input"):
        assert inputs, f"{name}: no diagnostic; got {found}"
        assert all(f["severity"] == "error" for f in inputs)
        assert all(f["message"].strip() and "\n" not in f["message"] for f in inputs)
        if "line" in expect:
            assert inputs[0]["line"] == expect["line"], inputs
    elif expect.get("empty"):
        assert [f["rule"] for f in found] == ["OPS004"] and found[0]["severity"] == "note"
    elif expect.get("clean"):
        assert found == []
    else:
        assert inputs == [], f"{name}: unexpected diagnostic {inputs}"
        lines = [f["line"] for f in found if f["category"] == DEVICE]
        assert lines == expect["findings"], found
        if "column" in expect:
            assert found[0]["column"] == expect["column"], found


def test_good_files_unaffected_by_neighbours(corpus_run, good_alone):
    """The good files give exactly what they give when scanned alone."""
    got = corpus_run[3]
    for name in GOOD:
        assert got[name] == good_alone[name]
    assert [f["rule"] for f in got["good_a.py"]] == ["OPS105", "OPS101"]


@pytest.mark.slow
def test_ten_megabyte_file(tmp_path, scan_json):
    data = big_file()
    assert len(data) > 10_000_000
    (tmp_path / "table.py").write_bytes(data)
    (tmp_path / "good_b.py").write_bytes(GOOD["good_b.py"])
    code, doc, err = scan_json(tmp_path)
    found = by_path(doc)
    assert [(f["line"], f["category"]) for f in found["table.py"]] == [(data.count(b"\n"), DEVICE)]
    assert found["good_b.py"] and code == 1


def test_line_separators_python_does_not_split_on(tmp_path):
    """Form feeds and U+2028 are not line breaks for Python: snippets (and baseline fingerprints,
    which hash the snippet) must be the real source line."""
    from opscan.scan import scan_memory

    src = 'import torch\n\x0c\ns = "a\u2028b"\nmodel.cuda()\n'
    result = scan_memory({"ff.py": src})
    assert [(f.location.line, f.snippet) for f in result.findings] == [(4, "model.cuda()")]


def test_file_vanishes_between_listing_and_reading(tmp_path, scan_json, monkeypatch):
    write_tree(tmp_path, GOOD)
    (tmp_path / "gone.py").write_bytes(CUDA_LINE.encode())
    import opscan.scan.tree as engine

    real = engine.discover

    def discover_then_delete(*args, **kwargs):
        found = real(*args, **kwargs)
        (tmp_path / "gone.py").unlink()
        return found

    monkeypatch.setattr(engine, "discover", discover_then_delete)
    code, doc, err = scan_json(tmp_path, "--no-cache")
    found = by_path(doc)
    assert [f["category"] for f in found["gone.py"]] == ["input"]
    assert found["good_a.py"] and found["good_b.py"] and code == 1


@pytest.mark.parametrize("error", [PermissionError(13, "Permission denied"), OSError(5, "Input/output error")])
def test_file_loses_read_permission(tmp_path, scan_json, monkeypatch, error):
    """As root chmod 000 does not stop reads, so the open itself is made to fail for one file."""
    write_tree(tmp_path, GOOD)
    secret = tmp_path / "locked.py"
    secret.write_bytes(CUDA_LINE.encode())
    real_open = builtins.open

    def guarded_open(file, *args, **kwargs):
        if os.fspath(file) == str(secret):
            raise error
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded_open)
    real_os_open = os.open
    monkeypatch.setattr(os, "open", lambda p, *a, **k: (_ for _ in ()).throw(error)
                        if os.fspath(p) == str(secret) else real_os_open(p, *a, **k))
    code, doc, err = scan_json(tmp_path, "--no-cache")
    found = by_path(doc)
    assert [(f["category"], f["rule"]) for f in found["locked.py"]] == [("input", "OPS001")]
    assert error.strerror.lower() in found["locked.py"][0]["message"].lower()
    assert found["good_a.py"] and found["good_b.py"]


def _run_cli_subprocess(args: list[str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-m", "opscan", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=env)


@pytest.mark.slow
def test_fifo_and_special_files_never_block(tmp_path):
    """A FIFO named x.py (opening it would block forever) and a dangling link are passed over."""
    write_tree(tmp_path, GOOD)
    os.mkfifo(tmp_path / "fifo.py")
    (tmp_path / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    proc = _run_cli_subprocess(["scan", str(tmp_path), "--format", "json", "--no-fix-check"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    import json

    found = by_path(json.loads(proc.stdout))
    assert found["good_a.py"] and found["good_b.py"]
    assert all(f["category"] == "input" for f in found.get("fifo.py", []) + found.get("dangling.py", []))


@pytest.mark.slow
def test_file_swapped_for_fifo_mid_scan_does_not_hang(tmp_path):
    """Between listing and reading a file becomes a FIFO: the read must not block the run."""
    write_tree(tmp_path, GOOD)
    (tmp_path / "swap.py").write_bytes(CUDA_LINE.encode())
    driver = tmp_path.parent / f"{tmp_path.name}_driver.py"
    driver.write_text(
        "import os, sys\n"
        "import opscan.scan.tree as engine\n"
        "real = engine.discover\n"
        "def swap(*a, **k):\n"
        "    found = real(*a, **k)\n"
        f"    os.unlink({str(tmp_path / 'swap.py')!r}); os.mkfifo({str(tmp_path / 'swap.py')!r})\n"
        "    return found\n"
        "engine.discover = swap\n"
        "from opscan.cli import main\n"
        f"sys.exit(main(['scan', {str(tmp_path)!r}, '--format', 'json', '--no-fix-check', '--no-cache']))\n")
    proc = subprocess.run([sys.executable, str(driver)], capture_output=True, text=True, timeout=30)
    import json

    found = by_path(json.loads(proc.stdout))
    assert [f["category"] for f in found["swap.py"]] == ["input"]
    assert found["good_a.py"] and proc.returncode == 1


@pytest.fixture
def outside_secret(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text('TOKEN = "SECRET-ghp_abc123"\nx = x.to("cuda")  # SECRET-ghp_abc123\n')
    tree = tmp_path / "tree"
    write_tree(tree, GOOD)
    (tree / "leak.py").symlink_to(outside / "secret.py")
    (tree / "linked_dir").symlink_to(outside, target_is_directory=True)
    (tree / "loop").symlink_to(tree, target_is_directory=True)
    (tree / "sub").mkdir()
    (tree / "sub" / "up").symlink_to(tree / "sub", target_is_directory=True)
    (tree / "self.py").symlink_to(tree / "self.py")
    return tree


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "terminal"])
def test_symlinks_loops_and_links_out_of_the_tree(outside_secret, fmt):
    """Loops terminate; files reached through links that leave the tree are not read, so their
    content (say `x.py -> ~/.ssh/id_rsa` in an untrusted pull request) never reaches a report."""
    proc = _run_cli_subprocess(["scan", str(outside_secret), "--format", fmt, "--no-fix-check"], outside_secret)
    assert proc.returncode == 1, proc.stderr
    assert "SECRET-ghp_abc123" not in proc.stdout + proc.stderr
    if fmt == "json":
        import json

        found = by_path(json.loads(proc.stdout))
        assert found["good_a.py"] and found["good_b.py"]
        for path, findings in found.items():
            if path.startswith(("leak.py", "linked_dir")):
                assert all(f["category"] == "input" for f in findings), findings
            assert not path.startswith("..")


def test_symlinks_out_of_the_tree_in_process(outside_secret, scan_json):
    """The quick loop's twin of the test above, the scan in this process."""
    code, doc, err = scan_json(outside_secret)
    assert code == 1 and "SECRET-ghp_abc123" not in json.dumps(doc) + err
    found = by_path(doc)
    assert found["good_a.py"] and found["good_b.py"]
    for path, findings in found.items():
        if path.startswith(("leak.py", "linked_dir")):
            assert all(f["category"] == "input" for f in findings), findings
        assert not path.startswith("..")


def test_file_over_the_size_limit_is_reported_not_read(tmp_path, scan_json, monkeypatch):
    """A huge generated file is reported (OPS001, naming the limit) and never parsed."""
    import opscan.fsutil as fsutil

    monkeypatch.setattr(fsutil, "MAX_SOURCE_BYTES", 1_000_000)
    monkeypatch.setattr(fsutil.read_source_bytes, "__defaults__", (None, 1_000_000))
    write_tree(tmp_path, GOOD)
    (tmp_path / "weights_table.py").write_bytes(b"W = [\n" + b"    1.0,\n" * 200_000 + b"]\n")
    code, doc, err = scan_json(tmp_path, "--no-cache")
    found = by_path(doc)
    assert [f["rule"] for f in found["weights_table.py"]] == ["OPS001"]
    assert "limit" in found["weights_table.py"][0]["message"]
    assert found["good_a.py"] and code == 1


def test_folder_that_cannot_be_listed_is_reported(tmp_path, scan_json, monkeypatch):
    """A sub-folder whose listing fails (permission lost mid-scan) is a located diagnostic, not a
    silent hole in the results."""
    write_tree(tmp_path, {**GOOD, "private/model.py": CUDA_LINE.encode()})
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("private"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    code, doc, err = scan_json(tmp_path, "--no-cache")
    found = by_path(doc)
    assert [(f["rule"], f["category"]) for f in found["private"]] == [("OPS001", "input")]
    assert "could not list" in found["private"][0]["message"]
    assert found["good_a.py"] and found["good_b.py"] and code == 1
