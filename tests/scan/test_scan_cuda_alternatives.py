"""CUDA alternatives of a CPU install path (NOTE [CUDA alternatives] in opscan/scan/alternatives.py):
a CUDA-named extra, requirements / conda file or Dockerfile beside a CPU-named one (or an unnamed
default that selects CPU torch) reports warnings, guarded, that name the CPU path; without one
nothing changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from opscan.config import Config
from opscan.pipeline.phases import dependency_context
from opscan.records import Severity
from opscan.scan.alternatives import cpu_extra, cpu_named, cpu_sibling, cuda_named
from opscan.scan.rules import load_rules
from opscan.scan.tree import scan_memory, scan_paths

RULES = load_rules()
DEPS = dependency_context(Config(Path(__file__).resolve().parent))


def _findings(files: dict[str, str]):
    return [f for f in scan_memory(files, RULES, deps=DEPS).findings if f.category == "dependency"]


def _by_line(findings) -> dict[tuple[str, int], tuple[str, str, bool, bool]]:
    """(path, line) -> (rule, severity, guarded, names a CPU path)."""
    return {(f.location.path, f.location.line): (f.rule, f.severity.value, f.guarded, "CPU install path" in f.message)
            for f in findings}


PYPROJECT = """[project]
name = "demo"
dependencies = ["numpy"]

[project.optional-dependencies]
torch-cpu = ["torch>=2.0"]
torch-cu118 = [
  "torch>=2.0",
  "pycuda>=2025.0.0",
]
trt10 = ["tensorrt-cu12>=10"]
test = ["flash-attn>=2.5"]
"""


def test_a_cuda_extra_beside_a_cpu_extra_is_a_guarded_warning_naming_the_cpu_extra():
    findings = _findings({"pyproject.toml": PYPROJECT})
    got = _by_line(findings)
    assert got[("pyproject.toml", 9)] == ("OPS506", "warning", True, True)       # pycuda in torch-cu118
    assert got[("pyproject.toml", 11)][1:] == ("warning", True, True)           # tensorrt-cu12 in trt10
    # an extra that is not CUDA-named keeps its error (guarded as every extra is)
    assert got[("pyproject.toml", 12)] == ("OPS506", "error", True, False)
    (pycuda,) = [f for f in findings if f.location.line == 9]
    assert "`torch-cpu`" in pycuda.message   # the CPU extra of the same stem
    assert not any(f.blocking for f in findings)


def test_cuda_extras_without_a_cpu_named_extra_stay_errors():
    text = PYPROJECT.replace('torch-cpu = ["torch>=2.0"]\n', 'torch = ["torch>=2.0"]\n')
    got = _by_line(_findings({"pyproject.toml": text}))
    assert got[("pyproject.toml", 9)] == ("OPS506", "error", True, False)


def test_an_empty_cpu_extra_is_still_the_cpu_path():
    text = PYPROJECT.replace('torch-cpu = ["torch>=2.0"]\n', 'cpu = []\n')
    got = _by_line(_findings({"pyproject.toml": text}))
    assert got[("pyproject.toml", 9)] == ("OPS506", "warning", True, True)


def test_dependency_groups_and_setup_cfg_extras_count_too():
    groups = '[dependency-groups]\ncpu = ["torch>=2.0"]\ncu124 = ["flash-attn>=2.5"]\n'
    assert _by_line(_findings({"pyproject.toml": groups}))[("pyproject.toml", 3)] == ("OPS506", "warning", True, True)
    cfg = ("[options]\ninstall_requires =\n    numpy\n\n"
           "[options.extras_require]\ncpu =\n    torch\ngpu =\n    flash-attn\n")
    assert _by_line(_findings({"setup.cfg": cfg}))[("setup.cfg", 9)] == ("OPS506", "warning", True, True)


def test_a_cuda_requirements_file_beside_its_cpu_sibling_is_a_warning_naming_it():
    files = {"deps/requirements_torch_gpu_cuda12_9.txt": "torch==2.1.0+cu121\nflash-attn==2.5.8\n",
             "deps/requirements_torch_cpu.txt": "torch==2.1.0\n"}
    got = _by_line(_findings(files))
    assert got[("deps/requirements_torch_gpu_cuda12_9.txt", 1)][1:] == ("warning", True, True)
    assert got[("deps/requirements_torch_gpu_cuda12_9.txt", 2)] == ("OPS506", "warning", True, True)
    # the CPU path is the one to port: its own pin stays an error, a blocker
    assert got[("deps/requirements_torch_cpu.txt", 1)] == ("OPS501", "error", False, False)


def test_the_sibling_must_share_folder_stem_and_extension():
    gpu = "flash-attn==2.5.8\n"
    cases = [
        {"requirements/gpu.txt": gpu, "requirements/base.txt": "numpy\n"},          # no CPU-named file
        {"requirements-cu128.txt": gpu, "requirements.txt": "torch\n"},              # a default not named CPU
        {"gpu/requirements-gpu.txt": gpu, "cpu/requirements-cpu.txt": "torch\n"},    # another folder
        {"requirements-train-gpu.txt": gpu, "requirements-serve-cpu.txt": "torch\n"},  # another stem
        {"requirements-gpu.txt": gpu, "requirements-cpu.in": "torch\n"},             # another extension
    ]
    for files in cases:
        (path,) = [p for p in files if "gpu" in p or "cu128" in p]
        assert _by_line(_findings(files))[(path, 1)] == ("OPS506", "error", False, False), files


def test_conda_environment_files_follow_the_same_rule():
    files = {"environment-gpu.yml": "dependencies:\n  - pytorch-cuda=12.1\n  - pytorch=2.1.0\n",
             "environment-cpu.yml": "dependencies:\n  - cpuonly\n  - pytorch=2.1.0\n"}
    got = _by_line(_findings(files))
    assert got[("environment-gpu.yml", 3)] == ("OPS501", "warning", True, True)
    assert got[("environment-cpu.yml", 3)] == ("OPS501", "error", False, False)


@pytest.mark.parametrize(("name", "cuda", "cpu"), [
    ("torch-cu118", True, False), ("onnx-cu12", True, False), ("trt10", True, False), ("gpu", True, False),
    ("requirements_torch_gpu_cuda12_9", True, False), ("tensorrt", True, False), ("torch-cpu", False, True),
    ("cpuonly", False, True), ("cpu-gpu", False, False), ("cuda-python", True, False), ("cudf", False, False),
    ("gpustat", False, False), ("docs", False, False), ("cu118only", False, False),
])
def test_what_counts_as_cuda_named_and_cpu_named(name, cuda, cpu):
    assert (cuda_named(name), cpu_named(name)) == (cuda, cpu)


def test_the_cpu_extra_of_the_same_stem_is_preferred():
    assert cpu_extra("torch-cu118", ["onnx-cpu", "torch-cpu"]) == "torch-cpu"
    assert cpu_extra("trt10", ["onnx-cpu", "torch-cpu"]) == "onnx-cpu"
    assert cpu_extra("docs", ["torch-cpu"]) == ""
    assert cpu_sibling("requirements.gpu.txt", ["requirements.cpu.txt", "requirements.vino.txt"]) == \
        "requirements.cpu.txt"


def test_the_full_scan_finds_the_sibling_on_disk_and_the_gate_passes(tmp_path: Path):
    (tmp_path / "requirements.gpu.txt").write_text("flash-attn==2.5.8\n", encoding="utf-8")
    (tmp_path / "requirements.cpu.txt").write_text("numpy\n", encoding="utf-8")
    (tmp_path / "main.py").write_text("import numpy\n", encoding="utf-8")
    # only the CUDA file is scanned (a pre-commit hook's staged file): its sibling is found on disk
    result = scan_paths(tmp_path, paths=[tmp_path / "requirements.gpu.txt"], rules=RULES, deps=DEPS)
    (finding,) = [f for f in result.findings if f.rule == "OPS506"]
    assert finding.severity is Severity.WARNING and finding.guarded and not finding.blocking



GPU_DOCKERFILE = "FROM python:3.11-slim\nRUN pip install flash-attn==2.5.8\n"
CPU_DEFAULT = ("FROM python:3.11-slim\nARG TORCH_VERSION=2.8.0+cpu\n"
               "RUN pip install torch==${TORCH_VERSION} --index-url https://download.pytorch.org/whl/cpu\n")


def test_a_cuda_dockerfile_beside_a_cpu_named_one_is_a_warning_naming_it():
    for gpu, cpu in (("Dockerfile.gpu", "Dockerfile.cpu"), ("docker/gpu.Dockerfile", "docker/cpu.Dockerfile"),
                     ("Dockerfile.cuda", "Dockerfile.cpu")):
        got = _by_line(_findings({gpu: GPU_DOCKERFILE, cpu: "FROM python:3.11-slim\n"}))
        assert got[(gpu, 2)] == ("OPS506", "warning", True, True), gpu


def test_an_unnamed_default_that_selects_cpu_torch_is_the_cpu_path():
    for gpu, default, text in (("config/Dockerfile.gpu", "config/Dockerfile", CPU_DEFAULT),
                               ("requirements-gpu.txt", "requirements.txt",
                                "--index-url https://download.pytorch.org/whl/cpu\ntorch==2.13.0\n"),
                               ("requirements-gpu.txt", "requirements.txt", "torch==2.13.0+cpu\n")):
        got = _by_line(_findings({gpu: "flash-attn==2.5.8\n" if gpu.endswith(".txt") else GPU_DOCKERFILE,
                                  default: text}))
        line = 1 if gpu.endswith(".txt") else 2
        assert got[(gpu, line)] == ("OPS506", "warning", True, True), gpu
    # the default itself, the path to port, keeps its errors
    assert _by_line(_findings({"Dockerfile.gpu": GPU_DOCKERFILE, "Dockerfile": CPU_DEFAULT}))[("Dockerfile", 2)] \
        == ("OPS501", "error", False, False)


def test_an_unnamed_default_that_does_not_select_cpu_torch_is_no_cpu_path():
    cases = [
        {"Dockerfile.gpu": GPU_DOCKERFILE, "Dockerfile": "FROM python:3.11-slim\nRUN pip install numpy\n"},   # silent
        {"Dockerfile.gpu": GPU_DOCKERFILE,   # CPU and CUDA builds both: not a CPU path
         "Dockerfile": CPU_DEFAULT + "RUN pip install torch --index-url https://download.pytorch.org/whl/cu121\n"},
        {"Dockerfile.gpu": GPU_DOCKERFILE, "Dockerfile.api": CPU_DEFAULT},     # another stem (`api`)
        {"Dockerfile.gpu": GPU_DOCKERFILE, "Dockerfile.community-cpu": CPU_DEFAULT},   # another stem
        {"Dockerfile.dev.x86": GPU_DOCKERFILE, "Dockerfile": CPU_DEFAULT},    # not CUDA-named
        {"docker/Dockerfile.gpu": GPU_DOCKERFILE, "Dockerfile": CPU_DEFAULT},   # another folder
        {"requirements-gpu.txt": "flash-attn==2.5.8\n", "requirements.txt": "torch==2.13.0+cu121\n"},
        {"requirements-gpu.txt": "flash-attn==2.5.8\n", "requirements.in": "torch==2.13.0+cpu\n"},  # extension
    ]
    for files in cases:
        (path,) = [p for p in files if files[p] in (GPU_DOCKERFILE, "flash-attn==2.5.8\n")]
        line = 1 if path.endswith(".txt") else 2
        assert _by_line(_findings(files))[(path, line)] == ("OPS506", "error", False, False), files


def test_the_full_scan_reads_the_default_on_disk(tmp_path: Path):
    (tmp_path / "Dockerfile.gpu").write_text(GPU_DOCKERFILE, encoding="utf-8")
    (tmp_path / "Dockerfile").write_text(CPU_DEFAULT, encoding="utf-8")
    (tmp_path / "main.py").write_text("import numpy\n", encoding="utf-8")
    result = scan_paths(tmp_path, paths=[tmp_path / "Dockerfile.gpu"], rules=RULES, deps=DEPS)
    (finding,) = [f for f in result.findings if f.rule == "OPS506"]
    assert finding.severity is Severity.WARNING and finding.guarded
