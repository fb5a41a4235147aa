"""opscan installs under its own distribution name, with its data, and the install and CI
snippets of the README, docs/install.md and docs/ci.md say so and work as written."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DIST = "opscan-neuron"
PAGES = ("README.md", "docs/install.md", "docs/ci.md", "docs/trace.md", "docs/zoo.md", "docs/workflow.md")


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _blocks(page: str) -> list[str]:
    text = (ROOT / page).read_text(encoding="utf-8")
    return re.findall(r"```(?:sh|bash|yaml|console)\n(.*?)```", text, flags=re.S)


def test_distribution_name_is_our_own():
    project = _project()
    assert project["name"] == DIST          # "opscan" on the package index is a port scanner
    assert project["scripts"] == {"opscan": "opscan.cli:main"}
    assert f"{DIST}[test]" in project["optional-dependencies"]["dev"]
    assert (ROOT / "opscan" / "__main__.py").is_file()   # python -m opscan


def test_every_install_line_names_the_distribution():
    wrong = []
    for page in PAGES:
        for block in _blocks(page):
            for line in block.splitlines():
                if "pip install" not in line:
                    continue
                # `opscan` or `opscan[extra]` as a requirement (not opscan-neuron, not a path or URL)
                if re.search(r"(?<![\w./-])opscan(\[[\w,]+\])?(?=['\"\s]|$)", line.split("#")[0]):
                    wrong.append(f"{page}: {line.strip()}")
    assert wrong == []
    code = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "opscan").rglob("*.py"))
    assert re.findall(r"pip install '?opscan\[", code) == []


def test_pre_commit_rev_is_a_commit_not_a_tag():
    revs = [m for page in ("README.md", "docs/ci.md") for block in _blocks(page)
            for m in re.findall(r"^\s*rev:\s*(\S+)", block, flags=re.M)]
    assert revs   # docs/ci.md shows the `repo: local` form (no rev) and the remote one
    for rev in revs:
        assert rev == "<commit>" or re.fullmatch(r"[0-9a-f]{40}", rev), rev


def _ci_commands(page: str) -> list[str]:
    out = []
    for block in _blocks(page):
        if "pip install" not in block:      # the CI snippets are the blocks that install opscan
            continue
        for line in block.splitlines():
            line = re.sub(r"^\s*(-\s*)?(run:\s*)?", "", line.split(" #")[0]).strip()
            if line.startswith("opscan "):
                out.append(line)
    return out


# the CI snippets (GitHub Actions, GitLab CI) are in docs/ci.md; the README links to it (issue 45)
@pytest.mark.parametrize("page", ["docs/ci.md"])
def test_report_only_ci_steps_never_stop_the_job(page):
    commands = _ci_commands(page)
    assert len(commands) >= 4
    gates = [c for c in commands if "--fail-on" in c]
    reports = [c for c in commands if "--fail-on" not in c]
    assert gates and reports
    assert [c for c in reports if "--exit-zero" not in c] == []
    assert [c for c in gates if "--exit-zero" in c] == []


def test_ci_builds_and_runs_the_wheel_then_ends_with_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "-m build" in ci and "opscan_neuron-*.whl" in ci
    assert re.search(r"venv \.venv-wheel && \.venv-wheel/bin/pip install -q dist/opscan_neuron-\*\.whl", ci)
    assert '.venv-wheel/bin/opscan" "$repo/examples/nanogpt" --no-trace' in ci
    assert '"$rc" -ne 1' in ci   # blocked example: exit 1 expected, 2 fails CI
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = re.findall(r"```sh\n(.*?)```", readme, flags=re.S)[0]
    test_command = [line for line in quick_start.splitlines() if line and not line.startswith("#")][1]
    assert ci.rstrip("\n").splitlines()[-1] == test_command


@pytest.mark.slow
def test_wheel_carries_the_command_and_the_data(tmp_path):
    pytest.importorskip("hatchling")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("opscan_neuron-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(meta).decode()
    assert re.search(r"^Name: opscan-neuron$", text, flags=re.M)
    entry = zipfile.ZipFile(wheel).read(meta.replace("METADATA", "entry_points.txt")).decode()
    assert "opscan = opscan.cli:main" in entry
    rules = sorted(p.name for p in (ROOT / "rules").glob("*.yaml"))
    dbs = sorted(p.name for p in (ROOT / "coverage_db").glob("*.yaml"))
    assert sorted(Path(n).name for n in names if n.startswith("opscan/_data/rules/") and n.endswith(".yaml")
                  and n.count("/") == 3) == rules
    shipped = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "rules").glob("*/*.yaml"))   # rule data (tables)
    assert shipped and all(f"opscan/_data/{n}" in names for n in shipped)
    releases = "opscan/_data/coverage_db/"   # the release files; sources/ holds the generator's inputs
    assert sorted(n[len(releases):] for n in names if n.startswith(releases) and n.endswith(".yaml")
                  and "/" not in n[len(releases):]) == dbs
    assert "opscan/__main__.py" in names and "opscan/containment/process.py" in names
    assert "opscan/plan/libraries.yaml" in names          # the library catalog ships with the code
