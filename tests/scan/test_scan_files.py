"""Which files a scan reads: default skips, --exclude, explicit files, symlink loops, unreadable files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from opscan.errors import InputError
from opscan.scan import scan_paths
from opscan.scan.files import discover

CUDA = "import torch\nx = torch.zeros(1).to('cuda')\n"


def make(root: Path, rel: str, text: str = CUDA) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_default_skips_and_suffixes(tmp_path):
    for rel in ["src/a.py", ".git/hooks/x.py", "venv/lib/b.py", "node_modules/m/c.py", "build/lib/d.py",
                "dist/e.py", "pkg.egg-info/f.py", "lib/site-packages/g.py", "myenv/h.py", "k/kernel.cu",
                "k/ops.cpp", "notes.txt", "nb.ipynb", "src/__pycache__/i.py"]:
        make(tmp_path, rel)
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr\n")
    assert discover(tmp_path) == ["k/kernel.cu", "k/ops.cpp", "nb.ipynb", "src/a.py"]


def test_exclude_globs_and_explicit_files(tmp_path):
    for rel in ["src/a.py", "src/gen/b.py", "tests/test_c.py", "build/d.py"]:
        make(tmp_path, rel)
    assert discover(tmp_path, exclude=["gen", "tests/*"]) == ["src/a.py"]
    assert discover(tmp_path, exclude=["*.py"]) == []
    assert discover(tmp_path, paths=[tmp_path / "build" / "d.py"]) == ["build/d.py"]   # explicit wins
    with pytest.raises(InputError):
        discover(tmp_path, paths=[tmp_path / "nope.py"])


def test_symlink_loops_do_not_hang(tmp_path):
    make(tmp_path, "a/b/c.py")
    os.symlink(tmp_path / "a", tmp_path / "a" / "b" / "loop")
    os.symlink(tmp_path, tmp_path / "a" / "up")
    found = discover(tmp_path)
    assert "a/b/c.py" in found and len(found) <= 3


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads everything")
def test_unreadable_file_is_a_finding_and_the_scan_goes_on(tmp_path):
    make(tmp_path, "a.py")
    make(tmp_path, "b.py")
    (tmp_path / "a.py").chmod(0)
    result = scan_paths(tmp_path, check_fixes=False)
    assert [(f.rule, f.location.path) for f in result.findings] == [("OPS001", "a.py"), ("OPS101", "b.py")]


def test_scan_paths_counts_and_sorts(tmp_path):
    make(tmp_path, "z.py")
    make(tmp_path, "a/y.py")
    make(tmp_path, "a/clean.py", "x = 1\n")
    result = scan_paths(tmp_path, check_fixes=False)
    assert result.files_scanned == 3
    assert [f.location.path for f in result.findings] == ["a/y.py", "z.py"]
    assert scan_paths(tmp_path, jobs=2, check_fixes=False) == result


def test_broken_explicit_file_and_scanner_crash_become_findings(tmp_path, monkeypatch):
    make(tmp_path, "b.py")
    os.symlink(tmp_path / "gone.py", tmp_path / "a.py")
    result = scan_paths(tmp_path, paths=[tmp_path / "a.py", tmp_path / "b.py"], check_fixes=False)
    assert [(f.rule, f.location.path) for f in result.findings] == [("OPS001", "a.py"), ("OPS101", "b.py")]

    from opscan.scan import visitor

    def boom(self):
        raise KeyError("bug")

    monkeypatch.setattr(visitor.Visitor, "run", boom)
    (crash,) = scan_paths(tmp_path, paths=[tmp_path / "b.py"], check_fixes=False).findings
    assert crash.rule == "OPS002" and "KeyError" in crash.message


def test_the_projects_own_packages_are_not_cuda_only_libraries(tmp_path):
    """Scanning liger_kernel's own source must not flag `import liger_kernel...` (a real false alarm)."""
    pkg = tmp_path / "liger_kernel"
    make(pkg, "__init__.py", "")
    make(pkg, "ops/__init__.py", "")
    make(pkg, "ops/rms.py", "import triton\nfrom liger_kernel.ops.utils import ensure_contiguous\nfrom .utils import x\n")
    for root in (pkg, tmp_path):                       # the package itself, or the repo holding it
        result = scan_paths(root, check_fixes=False)
        assert [(f.rule, f.location.line) for f in result.findings] == [("OPS401", 1)]
    result = scan_paths(tmp_path, paths=[pkg / "ops" / "rms.py"], check_fixes=False)   # one changed file
    assert [(f.rule, f.location.line) for f in result.findings] == [("OPS401", 1)]
