"""Values a manifest builds or spells indirectly: setup.py lists built in code, wheel URLs, Dockerfile
ARG / ENV defaults and heredocs, undecodable lines (docs/dependencies.md, "What is read")."""

from __future__ import annotations

from pathlib import Path

import pytest

from opscan.config import Config
from opscan.pipeline.phases import dependency_context
from opscan.scan.tree import scan_memory
from opscan.scan.rules import load_rules

RULES = load_rules()
DEPS = dependency_context(Config(Path(__file__).resolve().parent))


def _found(files: dict[str, str | bytes]) -> set[str]:
    return {f"{f.location.path}:{f.location.line} {f.rule}" for f in scan_memory(files, RULES, deps=DEPS).findings
            if f.category in ("dependency", "input")}


def test_extras_and_requirements_built_in_setup_py_are_read():
    setup = '''from setuptools import setup

install_requires = ["numpy"]
install_requires += ["torch==2.0.1"]
extra_deps = {}
extra_deps["gpu"] = [
    "flash-attn>=2.4",
    "megablocks==0.5.1",
]
extra_deps["te"] = ["transformer-engine[pytorch]>=1.0"]
extra_deps["all"] = [dep for deps in extra_deps.values() for dep in deps]
dev = ["pytest"]
dev.append("torchvision==0.15.2")
kwargs = dict(install_requires=install_requires, extras_require=extra_deps)

setup(name="demo", tests_require=dev, **kwargs)
'''
    assert _found({"setup.py": setup}) == {
        "setup.py:4 OPS501",    # += onto the install list
        "setup.py:7 OPS506",    # flash-attn in extra_deps["gpu"], reached through extras_require=extra_deps
        "setup.py:8 OPS506",    # megablocks
        "setup.py:10 OPS506",   # transformer-engine
        "setup.py:13 OPS502",   # appended to the tests_require list
    }
    findings = scan_memory({"setup.py": setup}, RULES, deps=DEPS).findings
    assert {f.location.line for f in findings if f.guarded} == {7, 8, 10, 13}   # extras and tests stay guarded


def test_a_setup_call_inside_a_function_and_a_comprehension_over_a_list():
    setup = '''import setuptools
BASE = ["torch>=1.13,<2.1", "einops"]

def main():
    reqs = [r for r in BASE]
    setuptools.setup(name="x", install_requires=sorted(reqs))

if __name__ == "__main__":
    main()
'''
    assert _found({"setup.py": setup}) == {"setup.py:2 OPS501"}


def test_wheel_urls_are_decoded_and_judged_as_pins():
    requirements = (
        "torch @ https://download.pytorch.org/whl/cu121/torch-2.1.0%2Bcu121-cp310-cp310-linux_x86_64.whl\n"
        "https://download.pytorch.org/whl/cu118/torchvision-0.16.0%2Bcu118-cp310-cp310-linux_x86_64.whl\n"
        "torch @ https://download.pytorch.org/whl/cpu/torch-2.13.0%2Bcpu-cp312-cp312-linux_x86_64.whl\n"
        "mypkg @ https://example.org/mypkg-1.0.tar.gz\n"
    )
    assert _found({"requirements.txt": requirements}) == {
        "requirements.txt:1 OPS501", "requirements.txt:1 OPS504",   # torch 2.1.0, its CUDA build
        "requirements.txt:2 OPS502", "requirements.txt:2 OPS504",   # torchvision 0.16 is built for torch 2.1
    }
    dockerfile = ("FROM python:3.11-slim\n"
                  "RUN pip install https://download.pytorch.org/whl/cu121/torch-2.1.0%2Bcu121-cp311-cp311-linux_x86_64.whl\n")
    assert _found({"Dockerfile": dockerfile}) == {"Dockerfile:2 OPS501", "Dockerfile:2 OPS504"}


def test_dockerfile_arg_and_env_defaults_are_substituted_at_the_line_that_writes_them():
    dockerfile = '''ARG BASE=nvidia/cuda:12.1.0-devel-ubuntu22.04
FROM ${BASE}
ARG TORCH_VERSION=2.0.1
ENV CUDA_TAG cu118
ARG FROM_BUILD
RUN pip install torch==${TORCH_VERSION} \\
      --index-url https://download.pytorch.org/whl/${CUDA_TAG}
RUN pip install "xformers==${XFORMERS:-0.0.22}" flash-attn==${FROM_BUILD}
'''
    assert _found({"Dockerfile": dockerfile}) == {
        "Dockerfile:1 OPS508",   # FROM ${BASE}: the CUDA image ARG BASE names
        "Dockerfile:3 OPS501",   # torch==${TORCH_VERSION}: at the ARG that writes the version
        "Dockerfile:4 OPS504",   # the CUDA index whose tag ENV writes
        "Dockerfile:4 OPS512",   # ... a CUDA default a RUN reads (a note)
        "Dockerfile:8 OPS506",   # xformers with its in-place default; flash-attn's version comes only at build time
        "Dockerfile:8 OPS509",   # ... and xformers 0.0.22 requires torch 2.0.1 (the shipped table)
    }


def test_a_pinned_version_from_an_arg_default_is_reported_once_at_the_arg_line_naming_its_uses():
    dockerfile = '''FROM python:3.11-slim
ARG TORCH_VERSION=2.8.0+cpu
ARG TORCHAUDIO_VERSION=2.8.0+cpu
ARG XFORMERS_VERSION=0.0.22
ARG FLASH_VERSION=2.5.0
RUN pip install "torch==${TORCH_VERSION}" "torchaudio==${TORCHAUDIO_VERSION}" \\
      --index-url https://download.pytorch.org/whl/cpu
RUN if [ "$MODE" = "full" ]; then \\
      pip install "torch==${TORCH_VERSION}" xformers==${XFORMERS_VERSION}; fi
RUN pip install flash-attn==${FLASH_VERSION}
'''
    findings = [f for f in scan_memory({"Dockerfile": dockerfile}, RULES, deps=DEPS).findings
                if f.category == "dependency"]
    assert {f"{f.location.line} {f.rule}" for f in findings} == {
        "2 OPS501",   # one torch finding at its ARG, for both installs (no second error at lines 6 and 9)
        "3 OPS502",   # torchaudio's version: its ARG
        "4 OPS509",   # xformers 0.0.22 holds torch at 2.0.1: its version's ARG
        "9 OPS506",   # ... while xformers itself (CUDA-only, by name) stays on its install line
        "10 OPS506",  # flash-attn is judged by its name: the install line, which the port drops
    }
    torch = next(f for f in findings if f.rule == "OPS501")
    assert "used by lines 6, 9" in torch.message
    assert "used by line 6" in next(f for f in findings if f.rule == "OPS502").message


def test_a_version_written_on_the_install_line_stays_there():
    dockerfile = '''FROM python:3.11-slim
ARG TORCH_VERSION=2.14.0
ARG INDEX=https://download.pytorch.org/whl/cpu
RUN pip install torch==2.0.1 --index-url ${INDEX}
RUN pip install "torch==${OTHER:-2.1.0}"
RUN pip install torch==${TORCH_VERSION}
'''
    assert _found({"Dockerfile": dockerfile}) == {
        "Dockerfile:4 OPS501",   # written in place, though a variable gives the index
        "Dockerfile:5 OPS501",   # an in-place default
    }                            # (line 6: torch 2.14 from its ARG, paired: nothing at 2 nor 6)


def test_heredoc_run_blocks_are_read_as_shell_lines():
    dockerfile = '''FROM python:3.11-slim
RUN <<EOT
set -e
pip install torch==2.0.1 \\
    torchaudio==2.0.2
EOT
RUN python - <<PY
print("pip install torch==1.0")
PY
RUN <<-'EOT' bash
	pip install bitsandbytes
	EOT
'''
    assert _found({"Dockerfile": dockerfile}) == {
        "Dockerfile:4 OPS501", "Dockerfile:5 OPS502",   # inside the heredoc, each at its own line
        "Dockerfile:11 OPS513",   # a <<- heredoc, indented, with its shell named after it (bitsandbytes: CPU wheels)
    }


def test_an_undecodable_line_is_located_and_the_valid_lines_are_still_judged():
    data = b"numpy>=1.24\n# caf\xe9 latin-1 comment\ntorch==2.0.1\nflash-attn\n"
    assert _found({"requirements.txt": data}) == {
        "requirements.txt:2 OPS001", "requirements.txt:3 OPS501", "requirements.txt:4 OPS506"}


def test_a_missing_include_is_located_and_the_rest_is_judged(tmp_path):
    from opscan.scan.tree import scan_paths

    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "base.txt").write_text("-r common.txt\n-c ../constraints.txt\ntorch==2.0.1\n")
    (tmp_path / "requirements" / "common.txt").write_text("numpy\n")
    (tmp_path / "requirements.txt").write_text("-r requirements/base.txt\n-r dev.txt\nflash-attn\n")
    result = scan_paths(tmp_path, rules=RULES, check_fixes=False, deps=DEPS)
    found = {f"{f.location.path}:{f.location.line} {f.rule}" for f in result.findings}
    assert found == {"requirements/base.txt:2 OPS001",   # ../constraints.txt is not there
                     "requirements/base.txt:3 OPS501",
                     "requirements.txt:2 OPS001",        # dev.txt is not there
                     "requirements.txt:3 OPS506"}


def test_packages_that_hold_torch_back_name_the_first_release_that_fits():
    findings = scan_memory({"requirements.txt": "torch>=2.0\ntorchdata==0.6.1\nmosaicml<0.33\ntorchdata>=0.7.1\n"
                                                "torchvision==0.12.0\ntorchcodec<0.10\nxformers\n"},
                           RULES, deps=DEPS).findings
    held = {f.location.line: f for f in findings if f.rule == "OPS509"}
    assert sorted(held) == [2, 3, 5, 6]
    assert "0.7.1" in held[2].message                   # torchdata 0.6.1 requires torch 2.0.1; 0.7.1 on admits 2.x
    assert "no mosaicml release" in held[3].message     # every composer up to the newest gathered caps torch < 2.7.1
    assert "0.12.0" in held[6].message                  # torchcodec 0.9 is built for torch 2.9; 0.12 on for >= 2.11
    assert held[2].subject == "torchdata" and held[2].task == "torch-version"


def test_a_lock_is_judged_by_its_version_and_unknown_stays_unknown():
    lock = ('[[package]]\nname = "torchdata"\nversion = "0.6.1"\n\n'
            '[[package]]\nname = "torchcodec"\nversion = "0.17.0"\n')
    found = _found({"uv.lock": lock})
    assert found == {"uv.lock:3 OPS509"}   # torchcodec 0.17 declares no torch and no page read gives it: unknown


def test_a_package_cuda_only_by_its_metadata_is_a_warning():
    findings = scan_memory({"requirements.txt": "unsloth\ncut-cross-entropy>=24\nnumpy\n"}, RULES, deps=DEPS).findings
    cuda = [f for f in findings if f.rule == "OPS510"]
    assert [f.location.line for f in cuda] == [1, 2] and all(f.severity == "warning" for f in cuda)


def test_a_bare_wheel_url_keeps_its_marker_and_a_cuda_image_is_found_where_its_cuda_version_is_written():
    requirements = ("https://example.org/cpu/torch-2.1.2-cp310-cp310-manylinux2014_aarch64.whl ; "
                    "platform_machine == \"aarch64\"\n"
                    "https://example.org/cpu/torch-2.1.2%2Bcpu-cp310-cp310-linux_x86_64.whl ; "
                    "platform_machine == \"x86_64\"\n")
    assert _found({"requirements.txt": requirements}) == {"requirements.txt:2 OPS501"}
    dockerfile = "ARG CUDA_VERSION=12.8.1\nFROM nvidia/cuda:${CUDA_VERSION}-base-ubuntu24.04\n"
    assert _found({"Dockerfile": dockerfile}) == {"Dockerfile:1 OPS508"}   # NOTE [CUDA images from variables]
    written = "ARG TAG=12.8.1-base-ubuntu24.04\nFROM nvidia/cuda:12.8.1-base-ubuntu24.04\nFROM nvidia/cuda:${TAG}\n"
    assert _found({"Dockerfile": written}) == {"Dockerfile:2 OPS508", "Dockerfile:1 OPS508"}


def test_one_cuda_version_feeding_two_images_gives_one_finding_per_image_at_its_arg_line():
    dockerfile = ("ARG PYTORCH=\"1.9.0\"\nARG CUDA=\"11.1\"\nARG NVIDIA_CUDA_VERSION=11.8.0\n"
                  "FROM pytorch/pytorch:${PYTORCH}-cuda${CUDA}-cudnn8-devel\n"
                  "FROM nvidia/cuda:${NVIDIA_CUDA_VERSION}-devel-ubuntu22.04 AS build\n"
                  "FROM nvidia/cuda:${NVIDIA_CUDA_VERSION}-runtime-ubuntu22.04\n")
    images = [f for f in scan_memory({"Dockerfile": dockerfile}, RULES, deps=DEPS).findings if f.rule == "OPS508"]
    assert sorted(f.location.line for f in images) == [2, 3, 3]
    # each names the FROM line the port also edits, and the two images of line 3 stay apart
    assert sorted("line 4" in f.message for f in images) == [False, False, True]
    assert len({f.message for f in images if f.location.line == 3}) == 2
    assert all(f.severity == "warning" for f in images)
    assert "Dockerfile:1 OPS501" in _found({"Dockerfile": dockerfile})   # the image's torch, at its ARG


def test_uv_find_links_and_pip_settings_are_wheel_locations():
    pyproject = ('[project]\nname = "rl"\ndependencies = ["torch>=2.0"]\n\n[tool.uv]\n'
                 'find-links = ["https://download.pytorch.org/whl/cu118", "wheels/"]\n\n'
                 '[tool.uv.pip]\nindex-url = "https://download.pytorch.org/whl/cu121"\n'
                 'find-links = ["https://data.pyg.org/whl/torch-2.1.0+cu121.html"]\n')
    assert _found({"pyproject.toml": pyproject}) == {"pyproject.toml:6 OPS504", "pyproject.toml:9 OPS504",
                                                     "pyproject.toml:10 OPS504", "pyproject.toml:10 OPS501"}
    cpu = pyproject.replace("cu118", "cpu").replace("cu121", "cpu")
    assert _found({"pyproject.toml": cpu}) == {"pyproject.toml:10 OPS501"}   # torch-2.1.0 builds: a torch pin


def test_a_vcs_url_without_a_name_is_judged_by_its_inferred_name_and_repository():
    dockerfile = ("FROM python:3.10-slim\n"
                  "RUN pip install \"git+https://github.com/NVlabs/tiny-cuda-nn.git@b3473c8#subdirectory=bindings/torch\"\n"
                  "RUN V=\"$(cat v)\" && pip install git+https://github.com/nerfstudio-project/gsplat.git@v${V}\n")
    requirements = ("git+https://github.com/Dao-AILab/flash-attention@v2.6.3\n"
                    "-e git+https://example.org/fork.git@main#egg=gsplat\n"
                    "git+https://github.com/microsoft/DeepSpeed.git@v0.16.0\n"   # DeepSpeed runs without CUDA
                    "git+https://github.com/mattloper/chumpy@9b045ff\n"
                    "git+https://${HOST}/org/${REPO}.git\n"
                    "git+git@github.com:NVlabs/nvdiffrast.git@v0.3.3\n")
    findings = scan_memory({"Dockerfile": dockerfile, "requirements.txt": requirements}, RULES, deps=DEPS).findings
    libraries = sorted((f.location.path, f.location.line, f.subject) for f in findings if f.rule == "OPS506")
    assert libraries == [("Dockerfile", 2, "tinycudann"), ("Dockerfile", 3, "gsplat"),
                         ("requirements.txt", 1, "flash_attn"), ("requirements.txt", 2, "gsplat"),
                         ("requirements.txt", 6, "nvdiffrast")]
    assert all("inferred" in f.message for f in findings if f.rule == "OPS506")
    assert not [f for f in findings if f.location.path == "requirements.txt" and 2 < f.location.line < 6
                and f.severity == "error"]


def test_limits_stated_only_in_a_packages_docs_hold_torch_back():
    requirements = ("torchcodec>=0.3.0,<0.12.0\n"     # 0.11 is built for torch 2.11 (README), 0.12 on for >= 2.11
                    "torchao==0.16.0\n"               # built against torch 2.10.0 (torchao's own table)
                    "torchao>=0.17\n"                 # >= 2.11: admits the paired torch
                    "torchrec==1.0.0\n"               # compatible with torch 2.5 (torchrec's setup page)
                    "torchrec>=1.1\n")                # no page states 1.1 on: unknown
    findings = scan_memory({"requirements.txt": requirements}, RULES, deps=DEPS).findings
    held = {f.location.line: f.message for f in findings if f.rule == "OPS509"}
    assert sorted(held) == [1, 2, 4]
    assert "0.12.0" in held[1] and "0.17.0" in held[2]


def test_deepspeed_ops_built_at_install_and_build_variables_are_found():
    dockerfile = ("FROM python:3.11-slim\n"
                  "ENV DS_BUILD_OPS=0\n"
                  "RUN DS_BUILD_OPS=1 DS_BUILD_AIO=0 pip install deepspeed\n"
                  "RUN export DS_BUILD_FUSED_ADAM=1 && \\\n"
                  "    pip install deepspeed\n"
                  "ARG TORCH_CUDA_ARCH_LIST=\"8.0;9.0\"\n"
                  "ENV CUDA_VISIBLE_DEVICES=0\n")
    assert _found({"Dockerfile": dockerfile}) == {"Dockerfile:3 OPS511", "Dockerfile:4 OPS511", "Dockerfile:6 OPS511"}


def test_a_cuda_default_is_a_note_only_when_a_later_run_reads_it():
    read = ("FROM ubuntu:24.04\n"
            "ARG APP_TORCH_MODE=cuda\n"
            "ENV APP_TORCH_MODE=${APP_TORCH_MODE} APP_DEVICE=cuda PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync\n"
            "RUN ./install.sh --reinstall\n")
    findings = scan_memory({"Dockerfile": read}, RULES, deps=DEPS).findings
    notes = [f for f in findings if f.rule == "OPS512"]
    assert [(f.location.line, f.severity) for f in notes] == [(2, "note")]   # the ARG line that writes the value
    unread = "FROM ubuntu:24.04\nARG APP_TORCH_MODE=cuda\nRUN pip install numpy\n"
    assert _found({"Dockerfile": unread}) == set()
    after = "FROM ubuntu:24.04\nRUN bash install.sh\nARG APP_TORCH_MODE=cuda\n"   # defined after the only RUN
    assert _found({"Dockerfile": after}) == set()


def test_a_utf16_requirements_file_is_read_as_pip_reads_it():
    """NOTE [manifest lines]: a byte-order mark of UTF-16 or UTF-32 decodes the file (pip's own reading);
    one with NUL bytes and no mark is one OPS001 at line 1, never one finding per line."""
    text = "numpy>=1.24\r\ntorch==2.0.1\r\nflash-attn\r\n"
    for encoding in ("utf-16", "utf-16-be", "utf-32"):
        data = text.encode(encoding)
        if encoding == "utf-16-be":
            data = b"\xfe\xff" + data
        assert _found({"requirements.txt": data}) == {"requirements.txt:2 OPS501", "requirements.txt:3 OPS506"}
    assert _found({"requirements.txt": text.encode("utf-16-le")}) == {"requirements.txt:1 OPS001"}


def test_a_requirement_is_found_on_its_own_line_when_another_value_shares_the_line():
    """Held-out part 6: three extras, each one line of several requirements; the flash-attn of the
    middle one was reported on the next line (the line already handed out to its transformers pin)."""
    pyproject = ('[project]\nname = "x"\nversion = "0"\n[project.optional-dependencies]\n'
                 'a = ["transformers==4.49.0", "flash-attn>=2.6.3", "accelerate"]\n'
                 'b = ["transformers==4.49.0", "flash-attn>=2.6.3", "accelerate"]\n'
                 'c = ["flash-attn>=2.6.3"]\n')
    assert _found({"pyproject.toml": pyproject}) == {"pyproject.toml:5 OPS506", "pyproject.toml:6 OPS506",
                                                    "pyproject.toml:7 OPS506"}


def test_dynamic_dependencies_written_in_the_projects_own_tool_table_are_read():
    pyproject = '''[build-system]
requires = []
build-backend = "_backend"
backend-path = ["."]

[project]
name = "model-connect"
dynamic = ["version", "dependencies"]

[tool.model-connect.package]
base-version = "0.1.0"
dependencies = [
    "numpy>=1.24",
    "cuda-python>=13.0.3,<14",
]

[tool.other]
dependencies = ["flash-attn>=2"]
'''
    assert _found({"pyproject.toml": pyproject}) == {"pyproject.toml:14 OPS506"}   # cuda-python; not [tool.other]
    findings = scan_memory({"pyproject.toml": pyproject}, RULES, deps=DEPS).findings
    assert not any(f.guarded for f in findings if f.rule == "OPS506")   # base dependencies: not an extra


def test_the_own_tool_table_is_not_read_when_dependencies_are_not_dynamic():
    pyproject = '''[project]
name = "model-connect"
dependencies = ["numpy"]

[tool.model-connect]
dependencies = ["cuda-python"]
'''
    assert _found({"pyproject.toml": pyproject}) == set()


def test_a_cloned_repository_installed_from_source_is_judged_by_the_catalog():
    dockerfile = '''FROM python:3.11-slim
WORKDIR /workspace
RUN git clone https://github.com/NetEase-FuXi/EETQ.git
WORKDIR /workspace/EETQ
RUN git submodule update --init --recursive
RUN pip install .
RUN git clone --depth 1 https://github.com/NVlabs/tiny-cuda-nn /opt/tcnn && cd /opt/tcnn && pip install -e .
RUN git clone https://github.com/example/EETQ-notes.git notes && cd notes && pip install .
'''
    assert _found({"Dockerfile": dockerfile}) == {
        "Dockerfile:6 OPS506",   # EETQ: the catalog's by its name
        "Dockerfile:7 OPS506",   # cloned into /opt/tcnn: the catalog's tiny-cuda-nn by its repository
    }                            # line 8: a repository the catalog does not name: nothing


def test_an_install_from_source_of_no_clone_of_the_file_gives_nothing():
    dockerfile = '''FROM python:3.11-slim
RUN git clone https://github.com/NetEase-FuXi/EETQ.git
RUN pip install .
RUN cd EETQ && cd .. && pip install .
RUN git clone https://github.com/NetEase-FuXi/${REPO}.git && cd ${REPO} && pip install .
COPY . /EETQ-copy
WORKDIR /app
RUN pip install .
'''
    assert _found({"Dockerfile": dockerfile}) == set()   # line 3: the image's root is not the clone


@pytest.mark.slow
def test_sarif_locates_an_arg_written_version_at_its_arg_line(run_cli, tmp_path: Path):
    import json

    (tmp_path / "Dockerfile").write_text('FROM python:3.11-slim\nARG TORCH_VERSION=2.8.0+cpu\n'
                                         'RUN pip install "torch==${TORCH_VERSION}"\n', encoding="utf-8")
    (tmp_path / "main.py").write_text("import torch\n", encoding="utf-8")
    code, out, err = run_cli("scan", str(tmp_path), "--format", "sarif", "--exit-zero")
    assert code == 0, err
    results = [r for r in json.loads(out)["runs"][0]["results"] if r["ruleId"] == "OPS501"]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in results] == [2]
    assert "used by line 3" in results[0]["message"]["text"]
