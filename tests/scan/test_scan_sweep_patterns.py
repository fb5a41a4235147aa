"""Patterns the precision sweep found (issue #43, docs/dependencies.md "Precision sweep"): each
fixture reproduces the pattern, not a corpus file."""

from __future__ import annotations

from pathlib import Path

from opscan.config import Config
from opscan.pipeline.phases import dependency_context
from opscan.scan.rules import load_rules
from opscan.scan.tree import scan_memory

RULES = load_rules()
DEPS = dependency_context(Config(Path(__file__).resolve().parent))


def _found(files: dict[str, str | bytes]) -> set[str]:
    return {f"{f.location.path}:{f.location.line} {f.rule}" for f in scan_memory(files, RULES, deps=DEPS).findings
            if f.category in ("dependency", "input")}


def test_a_lock_package_without_a_version_does_not_shift_the_next_packages_lines():
    lock = '''version = 1

[[package]]
name = "demo"
source = { editable = "." }
dependencies = [
    { name = "torch" },
]

[[package]]
name = "tomli"
version = "2.2.1"
source = { registry = "https://example.org/simple" }

[[package]]
name = "torch"
version = "2.5.1"
source = { registry = "https://example.org/simple" }

[[package]]
name = "torchaudio"
version = "2.5.1"
source = { registry = "https://example.org/simple" }
'''
    # torch 2.5.1 is on line 17 and torchaudio's version on line 22 (not tomli's 12 and torch's 17)
    assert _found({"uv.lock": lock}) == {"uv.lock:17 OPS501", "uv.lock:22 OPS502"}


def test_hashes_after_a_marker_are_options_not_part_of_the_requirement():
    text = ('av==16.1.0 ; platform_machine == "x86_64" \\\n'
            '    --hash=sha256:05ad70933ac3b8ef896a820ea64b33b6cca91a5fac5259cb9ba7fa010435be15\n'
            'torch==2.1.2 ; platform_machine == "x86_64" \\\n'
            '    --hash=sha256:0816143530624a5a93bc5494f8c6eeaf77549b9366709c2ac8566c1e9bff6df5\n'
            'numpy==1.26.4 ; platform_release >= "5.4-aws" --hash=sha256:00\n')
    assert _found({"requirements.txt": text}) == {"requirements.txt:3 OPS501"}   # no OPS000 on lines 1 and 5


def test_a_conda_environment_pip_entry_may_hold_spaces():
    env = '''name: demo
dependencies:
  - python=3.9
  - pip:
      - transformers == 4.21.1
      - torch == 1.7.1
'''
    assert _found({"environment.yml": env}) == {"environment.yml:6 OPS501"}


def test_a_setup_py_string_joined_with_an_unknown_version_is_unknown_not_a_parse_error():
    setup = '''from setuptools import setup
from version import CORE_VERSION
TORCH = "2.0.1"
setup(name="demo", install_requires=[
    "bigdl-core==" + CORE_VERSION,
    "torch==" + TORCH,
    "intel-extra==" + CORE_VERSION + ";platform_system=='Windows'",
])
'''
    assert _found({"setup.py": setup}) == {"setup.py:6 OPS501"}   # the known join is judged, the others skipped


def test_a_conda_export_saved_as_requirements_is_read_as_conda_specs():
    text = '''# This file may be used to create an environment using:
# $ conda create --name <env> --file <this file>
# platform: linux-64
_libgcc_mutex=0.1=main
absl-py=0.9.0=pypi_0
cudatoolkit=10.0.130=0
numpy=1.18.1=py37h4f9e942_0
pytorch=1.2.0=py3.7_cuda10.0.130_cudnn7.6.2_0
'''
    found = _found({"requirements.txt": text})
    assert not any(f.endswith("OPS000") for f in found)   # one OPS000 per line before
    assert {"requirements.txt:6 OPS507", "requirements.txt:8 OPS501"} <= found


def test_a_plain_requirements_file_with_an_odd_line_is_not_taken_for_a_conda_list():
    text = "torch==2.0.1\nnumpy=1.2=py\nscipy\nrequests\n"
    assert _found({"requirements.txt": text}) == {"requirements.txt:1 OPS501", "requirements.txt:2 OPS000"}


def test_the_cuda_toolkit_meta_package_is_a_cuda_build():
    assert _found({"requirements.txt": "cuda-toolkit[cudart]==13.0.3.0\nnumpy\n"}) == {"requirements.txt:1 OPS505"}


def test_force_cuda_in_arg_env_and_run_is_a_cuda_build_variable():
    docker = '''FROM python:3.11-slim
ARG FORCE_CUDA="1"
ENV FORCE_CUDA=0
RUN FORCE_CUDA=1 pip install "git+https://github.com/facebookresearch/pytorch3d.git@stable"
'''
    assert _found({"Dockerfile": docker}) == {"Dockerfile:2 OPS511", "Dockerfile:4 OPS511"}


def test_pip_called_by_its_path_and_a_downloaded_wheel_file_are_installs():
    docker = '''FROM python:3.11-slim
RUN curl -o /tmp/flash_attn-2.8.3+cu12torch2.8cxx11abiFALSE-cp311-cp311-linux_x86_64.whl https://example.org/w \\
    && pip install --no-cache-dir /tmp/flash_attn-2.8.3+cu12torch2.8cxx11abiFALSE-cp311-cp311-linux_x86_64.whl
RUN /opt/conda/bin/pip install /tmp/app.whl \\
    --extra-index-url=https://download.pytorch.org/whl/cu126
'''
    # the wheel file on the install's line (not the download's): flash-attn, a CUDA build; the CUDA
    # index of a pip called by its path
    assert _found({"Dockerfile": docker}) == {"Dockerfile:3 OPS504", "Dockerfile:3 OPS506", "Dockerfile:5 OPS504"}


def test_a_local_folder_installed_by_path_is_judged_against_the_catalog_by_its_name():
    docker = '''FROM python:3.11-slim
RUN pip install submodules/diff-gaussian-rasterization ./submodules/simple-knn -e third_party/apex
RUN pip install -e . ./mypkg ./dist/mypkg-1.0.tar.gz
'''
    requirements = "-e ./third_party/simple-knn\n./vendor/torch\nnumpy\n"
    findings = scan_memory({"Dockerfile": docker, "requirements.txt": requirements}, RULES, deps=DEPS).findings
    got = sorted((f.location.path, f.location.line, f.rule, f.subject) for f in findings if f.category == "dependency")
    # three catalog libraries on the first install line and one in the requirements file; `.`, an
    # unknown folder, an archive and a folder named torch (no version: never a pin) give nothing
    assert got == [("Dockerfile", 2, "OPS506", "apex"), ("Dockerfile", 2, "OPS506", "diff_gaussian_rasterization"),
                   ("Dockerfile", 2, "OPS506", "simple_knn"), ("requirements.txt", 1, "OPS506", "simple_knn")]


def test_a_manifest_named_for_other_hardware_is_not_judged():
    pin = "torch==2.9.0\nflash-attn==2.7.3\n"
    files = {"requirements.txt": pin, "requirements_rocm.txt": pin, "deps/requirements_cuda12_arm.txt": pin,
             "requirements/npu.txt": pin,
             "docker/docker-rocm/Dockerfile": "FROM rocm/pytorch:latest\nRUN pip install torch==2.9.0\n",
             "robot/arm/requirements.txt": pin}
    found = {key.split(" ")[0].rsplit(":", 1)[0] for key in _found(files)}
    # the x86_64 Linux files are judged (a robot's arm/ folder is no Arm host); ROCm, Arm and NPU ones are not
    assert found == {"requirements.txt", "robot/arm/requirements.txt"}
