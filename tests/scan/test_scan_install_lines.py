"""Install lines a port changes (issue #43, the fourth held-out part's misses): Dockerfile installs
whose version or wheel comes from an ARG, find-links pages of one torch's CUDA builds, catalog
distributions named by a direct reference, extras that are a CUDA install, and libraries whose later
releases run on CPU (docs/dependencies.md, "What is read" and "What is judged")."""

from __future__ import annotations

from pathlib import Path

import pytest

from opscan.config import Config
from opscan.errors import CatalogError
from opscan.pipeline.phases import dependency_context
from opscan.plan.libraries import CATALOG_PATH, load_catalog, shipped
from opscan.scan.rules import load_rules
from opscan.scan.tree import scan_memory

RULES = load_rules()
DEPS = dependency_context(Config(Path(__file__).resolve().parent))


def _found(files: dict[str, str]) -> set[str]:
    return {f"{f.location.path}:{f.location.line} {f.rule}" for f in scan_memory(files, RULES, deps=DEPS).findings
            if f.category == "dependency"}


@pytest.mark.parametrize("command", ["pip install", "pip3 install", "uv pip install", "python -m pip install",
                                     "python3.11 -m pip install -U"])
def test_an_install_whose_version_comes_from_an_arg_is_found_on_the_install_line(command):
    dockerfile = f'''FROM python:3.11-slim
ARG FLASH_ATTN_VERSION=2.8.3
RUN apt-get update && \\
    {command} flash-attn==${{FLASH_ATTN_VERSION}} --no-build-isolation
'''
    assert _found({"Dockerfile": dockerfile}) == {"Dockerfile:4 OPS506"}


def test_a_wheel_url_built_from_variables_is_judged_by_its_file_name_on_its_install_line():
    dockerfile = '''FROM python:3.12-slim
ARG FLASH_ATTN_VERSION=2.8.3
ARG FLASH_ATTN_WHEEL_TAG=cu130torch2.12
RUN PYTAG=cp312 && RELEASE=https://example.org/releases && \\
    uv pip install \\
      "${RELEASE}/flash_attn-${FLASH_ATTN_VERSION}+${FLASH_ATTN_WHEEL_TAG}-${PYTAG}-${PYTAG}-linux_x86_64.whl"
RUN <<EOT bash
uv pip install "${RELEASE}/torch-${TORCH}-cp312-cp312-linux_x86_64.whl"
EOT
'''
    # the wheel's name and version are resolved (a CUDA build: OPS504, a CUDA-only library: OPS506);
    # a wheel whose version is an unresolved variable stays unknown (no torch pin invented)
    assert _found({"Dockerfile": dockerfile}) == {"Dockerfile:6 OPS504", "Dockerfile:6 OPS506"}


def test_a_package_named_through_a_variable_stays_on_the_arg_line():
    dockerfile = '''FROM python:3.11-slim
ARG EXTRA_PACKAGES="flash-attn==2.5.8"
RUN pip install ${EXTRA_PACKAGES}
'''
    assert _found({"Dockerfile": dockerfile}) == {"Dockerfile:2 OPS506"}


def test_a_find_links_page_of_one_torchs_cuda_builds_is_an_index_and_a_torch_pin():
    dockerfile = '''FROM python:3.8-slim
RUN pip3 install -U pytest \\
    && pip3 install torch-scatter -f https://pytorch-geometric.com/whl/torch-1.8.1+cu111.html
'''
    assert _found({"Dockerfile": dockerfile}) == {"Dockerfile:3 OPS504", "Dockerfile:3 OPS501"}
    requirements = ("--find-links https://data.pyg.org/whl/torch-2.0.1+cu118.html\n"
                    "-fhttps://data.pyg.org/whl/torch-2.13.0+cpu.html\n"
                    "torch-scatter\n")
    assert _found({"requirements.txt": requirements}) == {"requirements.txt:1 OPS504", "requirements.txt:1 OPS501"}


def test_flash_attention_4_is_judged_by_its_name_also_as_a_direct_reference():
    pyproject = '''[project]
name = "video"
dependencies = ["torch>=2.13"]

[project.optional-dependencies]
fa4 = [
    "flash-attn-4 @ git+https://github.com/Dao-AILab/flash-attention.git#subdirectory=flash_attn/cute",
]
dreamverse = ["flash-attn-4"]
'''
    assert _found({"pyproject.toml": pyproject}) == {"pyproject.toml:7 OPS506", "pyproject.toml:9 OPS506"}


def test_an_extra_that_is_the_cuda_install_is_a_cuda_library_and_the_bare_package_is_not():
    requirements = "aqlm[gpu]>=1.1.0\naqlm[cpu]\nsglang[srt]>=0.4.5\nsglang\naqlm\neetq\n"
    assert _found({"requirements.txt": requirements}) == {
        "requirements.txt:1 OPS506", "requirements.txt:3 OPS506", "requirements.txt:6 OPS506"}


@pytest.mark.parametrize(("spec", "rule"), [
    ("==0.41.1", "OPS506"), ("<0.46", "OPS506"), (">=0.39,<0.46", "OPS506"), ("~=0.45.0", "OPS506"),
    ("==0.45.5", "OPS506"),
    ("", "OPS513"), (">=0.39.0", "OPS513"), ("==0.46.0", "OPS513"), ("==0.47.0", "OPS513"),
    ("~=0.41", "OPS513"), ("!=0.46.0,>=0.45.5", "OPS513"), ("==0.48.*", "OPS513"),
])
def test_bitsandbytes_is_an_error_only_when_no_admitted_release_runs_on_cpu(spec, rule):
    assert _found({"requirements.txt": f"bitsandbytes{spec}\n"}) == {f"requirements.txt:1 {rule}"}


@pytest.mark.parametrize(("line", "rule"), [
    ("autoawq>=0.2.8", "OPS513"), ("autoawq", "OPS513"), ("autoawq==0.2.9", "OPS513"),
    ("autoawq==0.2.5", "OPS506"), ("autoawq<0.2.9", "OPS506"),
    ("autoawq-kernels", "OPS506"), ("autoawq-kernels==0.0.9", "OPS506"),   # the CUDA extension itself
])
def test_autoawq_has_a_cpu_path_from_0_2_9_and_its_kernels_none(line, rule):
    """autoawq's README from 0.2.9 lists Intel CPUs (`autoawq[cpu]`); autoawq-kernels, its CUDA
    extension, is a catalog library of its own with no CPU release (found by the ninth held-out part)."""
    assert _found({"requirements.txt": f"{line}\n"}) == {f"requirements.txt:1 {rule}"}


def test_bitsandbytes_imports_stay_a_port_task_whatever_the_requirement():
    files = {"requirements.txt": "bitsandbytes>=0.46\n",
             "train.py": "import bitsandbytes as bnb\nopt = bnb.optim.AdamW8bit([])\n"}
    findings = scan_memory(files, RULES, deps=DEPS).findings
    assert {(f.location.path, f.rule) for f in findings if f.location.path == "train.py"} >= {("train.py", "OPS401")}
    warning = [f for f in findings if f.rule == "OPS513"]
    assert [(f.severity, f.subject) for f in warning] == [("warning", "bitsandbytes")]


def test_the_shipped_catalog_gives_cpu_since_and_cuda_extras_with_sources():
    catalog = shipped()
    since = {lib.id: lib.cpu_since for lib in catalog.libraries if lib.cpu_since}
    assert set(since) == {"bitsandbytes", "nvtx", "awq"} and since["bitsandbytes"].version == "0.46.0"
    assert since["awq"].version == "0.2.9"  # autoawq's CPU path (its 0.2.9 README); autoawq-kernels stays CUDA-only
    assert since["nvtx"].version == "0"     # its calls do nothing without a profiler: every release
    assert all(url.startswith("https://") for value in since.values() for url in value.sources)
    extras = {extra.distribution: extra.extras for extra in catalog.cuda_extras}
    assert extras["aqlm"] == ("gpu",) and "srt" in extras["sglang"]
    assert dict(DEPS.cpu_since) == {"bitsandbytes": "0.46.0", "nvtx": "0", "awq": "0.2.9"}


@pytest.mark.parametrize(("text", "cause"), [
    ("    cpu_since: {version: soon, why: x, sources: [https://x.org]}\n", "not a version"),
    ("    cpu_since: {version: '1.0', why: x}\n", "sources"),
])
def test_a_bad_cpu_since_is_a_located_catalog_error(tmp_path, text, cause):
    base = CATALOG_PATH.read_text(encoding="utf-8")
    marker = "  - id: eetq\n    packages: [eetq]\n"
    path = tmp_path / "libraries.yaml"
    path.write_text(base.replace(marker, marker + text), encoding="utf-8")
    with pytest.raises(CatalogError, match=cause):
        load_catalog(path)


def test_a_duplicate_cuda_extras_distribution_is_a_catalog_error(tmp_path):
    base = CATALOG_PATH.read_text(encoding="utf-8")
    extra = "  - distribution: aqlm\n    extras: [gpu]\n    why: again\n    sources: [https://x.org]\n"
    path = tmp_path / "libraries.yaml"
    path.write_text(base.replace("cuda_extras:\n", "cuda_extras:\n" + extra), encoding="utf-8")
    with pytest.raises(CatalogError, match="duplicate cuda_extras"):
        load_catalog(path)


def test_a_projects_own_extra_named_in_its_extras_is_not_judged_again():
    pyproject = '''[project]
name = "sglang"
dependencies = ["requests"]

[project.optional-dependencies]
srt = ["sglang[runtime_common]", "vllm>=0.6.3"]
all = ["sglang[srt]", "sglang[openai]"]
'''
    assert not {f for f in _found({"pyproject.toml": pyproject}) if f.startswith("pyproject.toml:7")}


def test_uv_options_that_take_a_package_are_not_read_as_requirements():
    dockerfile = '''FROM python:3.12-slim
RUN uv pip install "${WHEEL}" --reinstall-package fastvideo-kernel --no-deps
RUN uv pip install --excludes docker/uv-excludes ".[dev]" --upgrade-package flash-attn
'''
    assert _found({"Dockerfile": dockerfile}) == set()


def test_apt_installs_of_nvidia_packages_are_found_on_each_package_line():
    """OPS514: a continued `apt-get install` whose versions come from an ARG (the tenth held-out
    part's Dockerfile): each NVIDIA package on its own line, other system packages left alone."""
    dockerfile = ('ARG TRT=10.0.1.6-1+cuda12.4\n'
                  'FROM ubuntu:22.04\n'
                  'RUN apt-get update && \\\n'
                  '    apt-get install -y --no-install-recommends \\\n'
                  '      build-essential \\\n'
                  '      cuda-nvcc-12-4 \\\n'
                  '      "libnvinfer-dev=${TRT}" \\\n'
                  '      libcups2 && \\\n'
                  '    rm -rf /var/lib/apt/lists/*\n')
    assert _found({"Dockerfile": dockerfile}) == {"Dockerfile:6 OPS514", "Dockerfile:7 OPS514"}
