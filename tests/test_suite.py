"""The test suite's own shape: folders that mirror the package, no sys.path edits, slow tests opt-in."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
# test folders that are a topic across the package rather than one of its subpackages
TOPICS = {"gate", "infra", "perf", "reliability", "run", "support"}


def _test_folders() -> set[Path]:
    data = TESTS / "targets" / "repos"   # fixture repositories: data for opscan, not our tests
    return {p.parent for p in TESTS.rglob("test_*.py") if data not in p.parents}


def test_every_test_folder_is_a_package():
    missing = sorted(str(d.relative_to(ROOT)) for d in _test_folders() | {TESTS / "support"}
                     if not (d / "__init__.py").is_file())
    assert missing == []


def test_test_folders_mirror_the_package_or_name_a_topic():
    subpackages = {p.parent.relative_to(ROOT / "opscan") for p in (ROOT / "opscan").rglob("__init__.py")}
    strays = sorted(str(d.relative_to(TESTS)) for d in _test_folders()
                    if d != TESTS and d.relative_to(TESTS) not in subpackages
                    and d.relative_to(TESTS).parts[0] not in TOPICS)
    assert strays == []


def test_no_test_edits_sys_path_by_hand():
    # helpers are imported as tests.support.*; a folder a test must import from is prepended with
    # monkeypatch.syspath_prepend, which pytest undoes after the test
    data = TESTS / "targets" / "repos"
    edits = sorted(f"{p.relative_to(ROOT)}:{n}" for p in TESTS.rglob("*.py") if data not in p.parents
                   for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                   if re.search(r"sys\.path\.(insert|append)\(", line))
    assert edits == []


def test_the_readme_test_command_lints_then_runs_every_test():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = re.findall(r"```sh\n(.*?)```", readme, flags=re.S)[0]
    command = [line for line in quick_start.splitlines() if line and not line.startswith("#")][1]
    assert re.search(r"&& scripts/check && scripts/test --slow$", command), command
    check = (ROOT / "scripts" / "check").read_text(encoding="utf-8")
    assert "-m ruff check ." in check and "-m mypy" in check
    test = (ROOT / "scripts" / "test").read_text(encoding="utf-8")
    assert re.search(r'-m pytest -q -n auto --dist loadgroup "\$@"', test)


def test_the_scripts_are_executable():
    for name in ("test", "check"):
        assert os.access(ROOT / "scripts" / name, os.X_OK), f"scripts/{name} is not executable"


def _collected(*args: str) -> str:
    """The last line of `pytest --collect-only -q ARGS` on a file with slow and quick tests."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "tests/infra/test_infra_package.py", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_a_plain_run_leaves_out_the_slow_tests_and_slow_runs_them():
    every = _collected("--slow")
    quick = _collected()
    by_marker = _collected("-m", "slow or not slow")
    total = int(re.fullmatch(r"(\d+) tests collected in .*", every).group(1))
    kept, _, left_out = (int(n) for n in re.fullmatch(r"(\d+)/(\d+) tests collected \((\d+) deselected\) in .*",
                                                       quick).groups())
    assert left_out >= 1 and kept + left_out == total
    assert by_marker.startswith(f"{total} tests collected")   # a marker expression decides for itself
