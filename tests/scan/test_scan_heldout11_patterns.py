"""Patterns the eleventh held-out part showed (issue #43, docs/dependencies.md "After the eleventh
part"): `nvidia`-named CUDA alternatives, other platforms' install paths beside a CPU one, and
OpenMMLab's build tags and find-links folders. Each fixture reproduces the pattern, not a corpus file."""

from __future__ import annotations

from pathlib import Path

import pytest

from opscan.config import Config
from opscan.pipeline.phases import dependency_context
from opscan.scan.alternatives import cpu_named, cuda_named
from opscan.scan.build_tags import build_tag
from opscan.scan.rules import load_rules
from opscan.scan.tree import scan_memory

RULES = load_rules()
DEPS = dependency_context(Config(Path(__file__).resolve().parent))


def _seen(files: dict[str, str]) -> dict[tuple[str, int, str], tuple[str, bool]]:
    """(path, line, rule) -> (severity, names a CPU install path), dependency and input findings."""
    return {(f.location.path, f.location.line, f.rule): (f.severity.value, "CPU install path" in f.message)
            for f in scan_memory(files, RULES, deps=DEPS).findings if f.category in ("dependency", "input")}


NVIDIA = "torch==2.9.0\npynvml\n"
CPU = "--extra-index-url https://download.pytorch.org/whl/cpu\ntorch==2.9.0\n"


@pytest.mark.parametrize(("name", "cuda"), [
    ("requirements_nvidia", True), ("requirements_nvidia_12", True), ("_requirements_nvidia_13", True),
    ("nvidia", True), ("requirements_rocm", False), ("requirements_apple-silicon", False),
    ("nvidia-cpu", False), ("nvidiaish", False), ("requirements_12", False),
])
def test_nvidia_is_a_cuda_name_and_a_trailing_major_is_its_version(name, cuda):
    assert cuda_named(name) is cuda
    assert not cpu_named(name)   # `nvidia-cpu` is both, so neither


def test_nvidia_files_beside_the_cpu_file_are_warnings_naming_it():
    files = {"requirements/requirements_nvidia.txt": NVIDIA, "requirements/requirements_nvidia_11.txt": NVIDIA,
             "requirements/requirements_nvidia_12.txt": NVIDIA, "requirements/requirements_cpu.txt": CPU}
    got = _seen(files)
    for name in ("requirements_nvidia", "requirements_nvidia_11", "requirements_nvidia_12"):
        assert got[(f"requirements/{name}.txt", 1, "OPS501")] == ("warning", True), name
        assert got[(f"requirements/{name}.txt", 2, "OPS506")] == ("warning", True), name
    # the CPU path is the one the port changes: its pin stays an error
    assert got[("requirements/requirements_cpu.txt", 2, "OPS501")] == ("error", False)


@pytest.mark.parametrize("files", [
    {"requirements_nvidia.txt": NVIDIA},                                         # no sibling at all
    {"requirements_nvidia.txt": NVIDIA, "requirements.txt": "torch==2.9.0\n"},   # a default that is no CPU path
    {"requirements_nvidia.txt": NVIDIA, "requirements_rocm.txt": CPU},           # another platform, not the CPU path
    {"gpu/requirements_nvidia.txt": NVIDIA, "cpu/requirements_cpu.txt": CPU},    # another folder
])
def test_an_nvidia_file_without_a_cpu_path_beside_it_stays_an_error(files):
    (path,) = [p for p in files if "nvidia" in p]
    got = _seen(files)
    assert got[(path, 1, "OPS501")] == ("error", False)
    assert got[(path, 2, "OPS506")] == ("error", False)


def test_other_platforms_install_paths_are_not_judged_cpu_sibling_or_not():
    pin = "torch==2.9.0\nflash-attn==2.7.3\n"
    files = {"requirements/requirements_cpu.txt": CPU, "requirements/requirements_rocm_72.txt": pin,
             "requirements/requirements_apple-silicon.txt": "torch<2.13.0\n", "requirements/requirements_mps.txt": pin,
             "requirements/requirements_macos.txt": pin, "requirements_apple.txt": pin,
             "apple/requirements.txt": pin}
    found = {path for path, _line, _rule in _seen(files)}
    # `apple` counts in a file's own name only, like `mac` (a folder named apple is no Mac)
    assert found == {"requirements/requirements_cpu.txt", "apple/requirements.txt"}


def _rules_at(files: dict[str, str], path: str, line: int) -> set[str]:
    return {rule for (p, n, rule) in _seen(files) if (p, n) == (path, line)}


DOCKER = "FROM python:3.10-slim\nRUN pip install {} -f https://download.openmmlab.com/mmcv/dist/index.html\n"


@pytest.mark.parametrize(("pin", "rules"), [
    ("mmcv-full==latest+torch1.6.0+cu101", {"OPS501", "OPS504"}),   # a CUDA build for torch 1.6
    ("mmcv-full==1.7.0+torch1.13.0+cu117", {"OPS501", "OPS504"}),
    ("mmcv-full==latest+torch2.13.0+cu121", {"OPS504"}),            # built for a paired torch: CUDA only
    ("mmcv-full==latest+torch1.6.0+cpu", {"OPS501"}),               # a CPU build for an old torch
    ("mmcv-full==latest+torch2.13.0+cpu", set()),
    ("mmcv-full==latest+cpu", set()),                               # says neither
    ("k2==1.24.4.dev20240223+cuda11.8.torch2.1.0", {"OPS504"}),     # valid PEP 440: read as before
])
def test_a_build_tag_pip_no_longer_parses_is_read_for_its_cuda_and_torch(pin, rules):
    assert _rules_at({"Dockerfile": DOCKER.format(pin)}, "Dockerfile", 2) == rules


def test_a_build_tag_in_a_requirements_file_is_also_an_unreadable_line():
    got = _rules_at({"requirements.txt": "mmcv-full==latest+torch1.6.0+cu101\n"}, "requirements.txt", 1)
    assert got == {"OPS000", "OPS501", "OPS504"}   # pip rejects it today; what it asked for is still said


def test_build_tag_reads_only_a_non_pep440_pin_with_a_cuda_or_torch_part():
    (mmcv, torch) = build_tag("'mmcv-full==latest+torch1.6.0+cu101'")
    assert (mmcv.name, mmcv.spec, mmcv.version) == ("mmcv-full", "", "latest+torch1.6.0+cu101")
    assert (torch.name, torch.spec) == ("torch", "==1.6.0")
    assert build_tag("mmcv-full==1.7.0+cu117") == []          # valid: packaging's
    assert build_tag("mmcv-full>=latest+cu101") == []          # only an exact pin
    assert build_tag("mmcv-full==latest+build7") == []         # no CUDA nor torch part
    assert build_tag("mmcv-full==latest+torchvision0.7") == []  # torchvision is not torch


@pytest.mark.parametrize(("page", "rules"), [
    ("https://download.openmmlab.com/mmcv/dist/cu101/torch1.6.0/index.html", {"OPS501", "OPS504"}),
    ("https://download.openmmlab.com/mmcv/dist/cu121/torch2.13/index.html", {"OPS504"}),
    ("https://download.openmmlab.com/mmcv/dist/cpu/torch1.10.0/index.html", {"OPS501"}),
    ("https://download.openmmlab.com/mmcv/dist/cpu/torch2.13.0/index.html", set()),
    ("https://download.openmmlab.com/mmcv/dist/index.html", set()),
])
def test_openmmlab_find_links_folders_name_the_cuda_build_and_the_torch(page, rules):
    files = {"requirements.txt": f"--find-links {page}\nmmcv-full==1.6.0\n",
             "Dockerfile": f"FROM python:3.10-slim\nRUN pip install mmcv-full==1.6.0 -f {page}\n"}
    assert _rules_at(files, "requirements.txt", 1) == rules
    assert _rules_at(files, "Dockerfile", 2) == rules


def test_a_find_links_folder_from_variables_reports_each_part_at_its_own_arg():
    docker = ("FROM python:3.10-slim\nARG CUDA_VERSION=cu118\nARG TORCH_VERSION=torch2.0\n"
              "RUN pip install detectron2 -f https://example.org/wheels/${CUDA_VERSION}/${TORCH_VERSION}/index.html\n")
    got = {(line, rule) for (_path, line, rule) in _seen({"Dockerfile": docker})}
    # the CUDA build at the ARG that writes `cu118`, the torch 2.0 pin at the one that writes `torch2.0`
    assert {(2, "OPS504"), (3, "OPS501")} <= got
    assert (2, "OPS501") not in got
