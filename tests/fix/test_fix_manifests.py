"""`opscan fix` on manifests: PyTorch's CUDA index becomes its CPU index; everything else is proposed, not edited."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "scan" / "manifests"


def test_uv_index_url_is_rewritten_line_precisely(tmp_path, run_cli):
    project = tmp_path / "p"
    shutil.copytree(FIXTURES / "uv-cuda", project)
    before = (project / "pyproject.toml").read_text()
    lock = (project / "uv.lock").read_bytes()
    code, out, _ = run_cli("fix", str(project))
    after = (project / "pyproject.toml").read_text()
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]
    assert changed == [('url = "https://download.pytorch.org/whl/cu124"', 'url = "https://download.pytorch.org/whl/cpu"')]
    assert len(before.splitlines()) == len(after.splitlines())
    assert (project / "uv.lock").read_bytes() == lock          # a lock is regenerated, never edited
    assert "torch==2.4.1" in after                               # the pin is proposed by the task, not rewritten


def test_a_nightly_index_on_a_continued_dockerfile_line(tmp_path, run_cli):
    project = tmp_path / "p"
    shutil.copytree(FIXTURES / "docker-nightly", project)
    run_cli("fix", str(project))
    lines = (project / "Dockerfile").read_text().splitlines()
    assert lines[6].strip() == "--index-url https://download.pytorch.org/whl/nightly/cpu"
    assert lines[0].startswith("FROM nvidia/cuda")                # the base image is a decision


def test_a_cuda_label_in_the_file_keeps_its_index(tmp_path, run_cli):
    (tmp_path / "requirements.txt").write_text("--extra-index-url https://download.pytorch.org/whl/cu121\n"
                                                "torch==2.13.0+cu121\n")
    before = (tmp_path / "requirements.txt").read_bytes()
    code, out, _ = run_cli("fix", str(tmp_path), "--diff")
    assert (tmp_path / "requirements.txt").read_bytes() == before
    assert "+cpu" not in out and "whl/cpu" not in out


def test_other_indexes_are_never_rewritten(tmp_path, run_cli):
    text = "--extra-index-url https://pypi.nvidia.com\ntorch>=2.13\n"
    (tmp_path / "requirements.txt").write_text(text)
    run_cli("fix", str(tmp_path))
    assert (tmp_path / "requirements.txt").read_text() == text


def test_a_cuda_alternative_of_a_cpu_path_keeps_its_index(tmp_path, run_cli):
    # NOTE [CUDA alternatives]: requirements.gpu.txt beside requirements.cpu.txt stays for CUDA hosts
    index = "--extra-index-url https://download.pytorch.org/whl/cu121\ntorch\n"
    (tmp_path / "requirements.gpu.txt").write_text(index)
    (tmp_path / "requirements.cpu.txt").write_text("numpy\n")
    (tmp_path / "requirements.txt").write_text(index)
    run_cli("fix", str(tmp_path))
    assert (tmp_path / "requirements.gpu.txt").read_text() == index
    assert (tmp_path / "requirements.txt").read_text().startswith("--extra-index-url https://download.pytorch.org/whl/cpu")
