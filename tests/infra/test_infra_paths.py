"""No file of the repository names an absolute path of the machine it was written on.

Tests find what they need inside the repository (the SARIF schema is vendored under
tests/reporters/), docs and data cite public URLs or `../shared/...`, and benchmark recipes use
relative paths. The forbidden prefixes are computed here: the folder that holds the checkout and
the user's home folder, wherever the repository is checked out.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _repository_files() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                            cwd=ROOT, capture_output=True, check=True).stdout
    return sorted({name for name in listed.decode().split("\0") if name and (ROOT / name).is_file()})


def _prefixes() -> list[str]:
    prefixes = {ROOT.parent.as_posix()}
    home = Path.home().as_posix()
    if home not in ("/", ""):
        prefixes.add(home)
    # a checkout in a shared scratch folder (a CI clone in /tmp) makes that folder no machine path
    shared = {"/tmp", "/var/tmp", "/dev/shm"}
    return sorted(p for p in prefixes if p.count("/") >= 1 and p != "/" and p not in shared)


def _pattern(prefix: str) -> re.Pattern:
    # the prefix as the start of a path: not preceded by a path or URL character, followed by "/"
    return re.compile(rf"(?<![\w.:/~-]){re.escape(prefix)}/")


def test_no_tracked_file_names_an_absolute_path_of_this_machine():
    patterns = [_pattern(prefix) for prefix in _prefixes()]
    problems = []
    for name in _repository_files():
        text = (ROOT / name).read_text(encoding="utf-8", errors="ignore")
        for pattern in patterns:
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                problems.append(f"{name}:{line}: {match.group(0)}")
    assert problems == []


def test_the_check_sees_a_planted_path(tmp_path):
    prefix = _prefixes()[0]
    assert _pattern(prefix).search(f'SCHEMA = Path("{prefix}/shared/schemas/x.json")\n')
    assert not _pattern(prefix).search(f"see https://example.org{prefix}/x and ../shared/x\n")
