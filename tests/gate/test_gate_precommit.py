"""The pre-commit hook, run by pre-commit itself on a temporary git repository (staged files only)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PRE_COMMIT = shutil.which("pre-commit", path=str(BIN)) or shutil.which("pre-commit")
OPSCAN = shutil.which("opscan", path=str(BIN))

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(PRE_COMMIT is None or shutil.which("git") is None or OPSCAN is None,
                                 reason="needs git, pre-commit and an installed opscan")]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


@pytest.fixture(scope="module")
def hook() -> dict:
    (spec,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    return spec


def test_hook_definition(hook):
    assert hook["id"] == "opscan"
    assert hook["entry"].split()[:2] == ["opscan", "scan"]      # the source scan: no torch, no trace
    assert hook["language"] == "python"
    assert set(hook["types_or"]) == {"python", "jupyter", "text"}
    import re

    files = re.compile(hook["files"])   # the manifests (docs/dependencies.md), and no other text file
    for name in ("a.py", "nb.ipynb", "requirements.txt", "requirements/dev.in", "ci/constraints.txt",
                 "pyproject.toml", "setup.cfg", "Pipfile", "Pipfile.lock", "uv.lock", "poetry.lock", "pdm.lock",
                 "environment.yml", "envs/conda-gpu.yaml", "Dockerfile", "docker/Dockerfile.train",
                 "train.dockerfile"):
        assert files.search(name), name
    for name in ("README.md", "notes.txt", "data.yaml", "Makefile", "setup.py.orig"):
        assert not files.search(name), name


def _repo(tmp_path: Path, hook: dict) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    # The shipped hook, run as a local hook with the installed opscan (pre-commit would otherwise
    # clone the hook repository and pip-install it into its own environment).
    local = {**hook, "language": "system", "entry": hook["entry"].replace("opscan", OPSCAN, 1)}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{"repo": "local", "hooks": [local]}]}))
    (repo / "clean.py").write_text("import torch\ndev = torch.accelerator.current_accelerator()\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "init")
    return repo


def _run(repo: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pc-home"), "PATH": f"{BIN}:{os.environ['PATH']}"}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run([PRE_COMMIT, "run"], cwd=repo, capture_output=True, text=True, env=env, timeout=300)


def test_hook_fails_on_staged_cuda_code_only(tmp_path, hook):
    repo = _repo(tmp_path, hook)
    (repo / "bad.py").write_text("import torch\nx = torch.zeros(2).cuda()\n")
    (repo / "unstaged.py").write_text("import torch\ny = torch.ones(2).to('cuda')\n")
    _git(repo, "add", "bad.py")
    result = _run(repo, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 CUDA-pinned site in 1 file" in result.stdout   # only the staged file was scanned
    assert "bad.py" in result.stdout
    assert "unstaged.py" not in result.stdout
    assert "clean.py" not in result.stdout
    # the hook's output: the staged file's finding and one summary line, not the whole report
    ours = [line for line in result.stdout.splitlines() if line.startswith(("bad.py:", "opscan:"))]
    assert [line.split(":")[0] for line in ours] == ["bad.py", "opscan"], result.stdout
    assert ours[0].startswith("bad.py:2:") and "OPS105" in ours[0]
    assert "Port tasks" not in result.stdout and "Summary" not in result.stdout
    assert len(result.stdout.strip().splitlines()) <= 8          # pre-commit's own lines included


def test_hook_reads_a_staged_manifest(tmp_path, hook):
    repo = _repo(tmp_path, hook)
    (repo / "requirements.txt").write_text("numpy\ntorch==2.0.1\n")
    (repo / "notes.txt").write_text("torch==2.0.1\n")
    _git(repo, "add", "requirements.txt", "notes.txt")
    result = _run(repo, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "requirements.txt:2:" in result.stdout and "OPS501" in result.stdout
    assert "notes.txt" not in result.stdout


def test_hook_passes_on_clean_staged_files(tmp_path, hook):
    repo = _repo(tmp_path, hook)
    (repo / "good.py").write_text("import torch\nx = torch.zeros(2)\n")
    (repo / "unstaged.py").write_text("y = 'cuda'\nimport torch\nz = torch.ones(2).cuda()\n")
    _git(repo, "add", "good.py")
    result = _run(repo, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Passed" in result.stdout


@pytest.mark.skipif(os.environ.get("OPSCAN_TEST_TRY_REPO") != "1",
                    reason="pip-installs opscan into a fresh environment (needs the package index, ~40 s); "
                           "set OPSCAN_TEST_TRY_REPO=1")
def test_try_repo_installs_the_hook_without_torch(tmp_path):
    """`pre-commit try-repo` exactly as users get it: clone, pip-install the hook repo, run."""
    hook_repo = tmp_path / "hook-repo"
    ignore = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.pyc", ".opscan_cache", ".pytest_cache")
    shutil.copytree(ROOT, hook_repo, ignore=ignore)
    _git(hook_repo, "init", "-q")
    _git(hook_repo, "add", "-A")
    _git(hook_repo, "commit", "-qm", "snapshot")
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "bad.py").write_text("import torch\nx = torch.zeros(2).cuda()\n")
    _git(repo, "add", "bad.py")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pc-home")}
    result = subprocess.run([PRE_COMMIT, "try-repo", str(hook_repo), "opscan", "--verbose"], cwd=repo,
                            capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 CUDA-pinned site in 1 file" in result.stdout


def test_hook_honours_the_project_config(tmp_path, hook):
    """ignore, exclude and the baseline in [tool.opscan] apply to the hook as to `opscan PATH`."""
    repo = _repo(tmp_path, hook)
    (repo / "pyproject.toml").write_text('[tool.opscan]\nignore = ["OPS201"]\nexclude = ["bench.py"]\n'
                                         'baseline = "opscan-baseline.json"\n')
    (repo / "train.py").write_text('import torch\nmodel = torch.nn.Linear(2, 2).to("cuda")\n')
    subprocess.run([OPSCAN, "baseline", str(repo)], check=True, capture_output=True)
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "config and baseline")
    (repo / "train.py").write_text('import torch\nmodel = torch.nn.Linear(2, 2).to("cuda")\nsteps = 10\n')
    (repo / "sync.py").write_text("import torch\ntorch.cuda.synchronize()\n")          # OPS201: ignored
    (repo / "bench.py").write_text("import torch\nx = torch.zeros(2).cuda()\n")      # excluded
    _git(repo, "add", "train.py", "sync.py", "bench.py")
    result = _run(repo, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Passed" in result.stdout
    # the same staged files with a new pin: the hook blocks, naming only the new one
    (repo / "sync.py").write_text("import torch\ntorch.cuda.synchronize()\ny = torch.ones(2).to('cuda')\n")
    _git(repo, "add", "sync.py")
    result = _run(repo, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "blocked by 1 CUDA-pinned site in 1 file (new; 1 known hidden by the baseline)" in result.stdout


def test_concise_view_is_findings_and_one_summary_line(tmp_path, run_cli, monkeypatch):
    """What the hook runs (`opscan scan --concise FILES`), without pre-commit: fast, in-process."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text("import torch\nx = torch.zeros(2).cuda()\ny = x.to('cuda')\n")
    (tmp_path / "ok.py").write_text("x = 1\n")
    code, out, err = run_cli("scan", "--concise", "bad.py", "ok.py")
    lines = out.splitlines()
    assert code == 1 and err == ""
    assert [line.split(":")[:3] for line in lines[:-1]] == [["bad.py", "2", "5"], ["bad.py", "3", "10"]]
    assert [line.split()[1] for line in lines[:-1]] == ["OPS105", "OPS101"]
    assert lines[-1].startswith("opscan: 2 findings in 1 file (2 scanned") and "fail-on error: exit 1" in lines[-1]
    assert "`opscan .`" in lines[-1]                                 # where the whole report is
    code, out, err = run_cli("scan", "--concise", "ok.py")
    assert code == 0 and out.splitlines() == [
        "opscan: 0 findings in 1 file — the whole report and port plan: `opscan .`"]
    code, out, _ = run_cli("scan", "--concise", "bad.py", "--exit-zero")
    assert code == 0 and "exit 1" not in out
