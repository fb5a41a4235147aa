"""What the seventh held-out part's conda export showed (issue #43, docs/dependencies.md "After the
seventh part"): the CUDA Toolkit's libraries under their conda names, PyTorch's own Triton builds,
and monai's releases in the table of packages that hold torch back. Fixtures reproduce the
patterns, not the corpus file."""

from __future__ import annotations

from pathlib import Path

from opscan.config import Config
from opscan.pipeline.phases import dependency_context
from opscan.scan.rules import load_rules
from opscan.scan.tree import scan_memory

RULES = load_rules()
DEPS = dependency_context(Config(Path(__file__).resolve().parent))


def _found(files: dict[str, str]) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for f in scan_memory(files, RULES, deps=DEPS).findings:
        if f.category == "dependency":
            out.setdefault(f.location.line, set()).add(f.rule)
    return out


def _env(*lines: str) -> dict[str, str]:
    head = "name: demo\nchannels:\n  - conda-forge\ndependencies:\n"
    # a line starting with "- " is an entry of the `pip:` list above it
    return {"environment.yml": head + "".join(f"    {line}\n" if line.startswith("- ") else f"  - {line}\n"
                                              for line in lines)}


def test_every_cuda_toolkit_library_under_its_conda_name_is_a_conda_cuda_package():
    names = ["libcublas=12.4.5.8", "libcufft=11.2.1.3", "libcufile=1.13.1.3", "libcurand=10.3.9.90",
             "libcusolver=11.6.1.9", "libcusparse=12.3.1.170", "libnpp=12.2.5.30", "libnvfatbin=12.8.90",
             "libnvjitlink=12.4.127", "libnvjpeg=12.3.1.117", "libnvptxcompiler-dev=13.1.115",
             "libnvvm=13.0.88", "libnpp-dev=12.2.5.30", "libcufile-static=1.13.1.3"]
    found = _found(_env(*names))
    assert found == {5 + i: {"OPS507"} for i in range(len(names))}


def test_libraries_that_only_start_like_cuda_ones_are_not_reported():
    # libcups (printing), libnsl, libcurl, libnuma: conda packages of an ordinary environment export
    assert _found(_env("libcups=2.3.3", "libnsl=2.0.1", "libcurl=8.9.1", "libnuma=2.0.18", "numpy=1.26.4")) == {}


def test_pytorchs_own_triton_builds_are_the_cuda_only_triton():
    found = _found(_env("torchtriton=3.1.0", "pip:", "- pytorch-triton==3.0.0", "- pytorch-triton-rocm==3.0.0"))
    assert found == {5: {"OPS506"}, 7: {"OPS506"}}   # the ROCm build is another name: not judged


def test_a_monai_release_that_requires_an_old_torch_holds_torch_back():
    # monai 1.5.0's wheel: torch<2.7.0,>=2.4.1; 1.5.1 and later: >=2.4.1 (rules/data/torch-constraints.yaml)
    found = _found(_env("monai=1.5.0", "pip:", "- monai==1.5.1", "- monai<1.5.1", "- monai>=1.4"))
    assert found == {5: {"OPS509"}, 8: {"OPS509"}}


def test_the_held_back_finding_names_the_first_monai_release_that_admits_the_paired_torch():
    result = scan_memory({"requirements.txt": "monai==1.5.0\n"}, RULES, deps=DEPS)
    (finding,) = [f for f in result.findings if f.rule == "OPS509"]
    assert finding.subject == "monai"
    assert "1.5.1" in finding.message
