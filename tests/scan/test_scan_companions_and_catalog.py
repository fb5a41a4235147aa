"""The tables the third held-out part's misses extended (issue #43): torchaudio's pairing up to its
newest release (2.11 and later support every later torch), packages whose metadata pins torch
(finetuner-commons), and CUDA-only packages of the catalog (tokenspeed-mla, cuda-tile, CuTe DSL)."""

from __future__ import annotations

from pathlib import Path

from opscan.config import Config
from opscan.pipeline.phases import dependency_context
from opscan.plan.libraries import shipped
from opscan.scan import scan_memory
from opscan.scan.rules import load_rules

HERE = Path(__file__).resolve().parent
RULES = load_rules()
DEPS = dependency_context(Config(HERE))


def _by_line(files: dict[str, str]) -> dict[int, list]:
    out: dict[int, list] = {}
    for finding in scan_memory(files, RULES, deps=DEPS).findings:
        out.setdefault(finding.location.line, []).append(finding)
    return out


def test_torchaudio_is_judged_up_to_its_newest_release():
    found = _by_line({"requirements.txt": "torchaudio==2.10.0\ntorchaudio>=2.9,<2.11\n"
                                          "torchaudio>=2.11,<2.12\ntorchaudio==2.11.0\ntorchaudio>=2.10\n"})
    assert {f.rule for f in found[1]} == {"OPS502"} and {f.rule for f in found[2]} == {"OPS502"}
    # 2.11 is built against PyTorch's stable ABI: it works with torch 2.13/2.14, nothing to change
    assert 3 not in found and 4 not in found and 5 not in found
    # the message points at the release that works, not at "no version pairs"
    assert "2.11 or later" in found[1][0].message


def test_a_locked_torchaudio_is_judged_by_the_same_table():
    lock = ('version = 1\n\n[[package]]\nname = "torchaudio"\nversion = "2.9.1"\n\n'
            '[[package]]\nname = "torchaudio"\nversion = "2.11.1"\n')
    found = _by_line({"uv.lock": lock})
    assert [f.rule for f in found.get(5, [])] == ["OPS502"] and 9 not in found


def test_a_package_whose_metadata_pins_an_old_torch_holds_torch_back():
    found = _by_line({"requirements.txt": "finetuner-commons==0.13.10\nfinetuner-commons>=0.13.8,<0.14\n"
                                          "finetuner-commons>=0.13\ntensordict>=0.15.2,<0.16\n"})
    assert [f.rule for f in found[1]] == ["OPS509"] and [f.rule for f in found[2]] == ["OPS509"]
    assert found[1][0].subject == "finetuner-commons"
    assert 3 not in found   # admits releases newer than the table knows: unknown, not judged
    assert 4 not in found   # tensordict 0.15.3 requires torch>=2.11.0a0: admits 2.13/2.14


def test_cuda_only_packages_of_the_sweep_are_catalog_libraries():
    text = "tokenspeed-mla>=0.1.2\ncuda-tile>=1.5.0\nnvidia-cutlass-dsl>=4.4\nquack-kernels\ncuda-cccl[cu12]\n"
    found = _by_line({"requirements.txt": text})
    subjects = {line: {(f.rule, f.subject) for f in fs} for line, fs in found.items()}
    assert subjects == {1: {("OPS506", "tokenspeed_mla")}, 2: {("OPS506", "cuda")}, 3: {("OPS506", "cutlass")},
                        4: {("OPS506", "quack")}, 5: {("OPS506", "cuda")}}
    book = shipped()
    assert book.library("cutlass").id == "cute_dsl" and book.library("quack").id == "quack"
    assert book.library("tokenspeed_mla").sources


def test_imports_of_the_swept_packages_are_cuda_only_library_imports():
    found = _by_line({"model.py": "import cuda.tile as ct\nfrom tokenspeed_mla import mla_decode\n"
                                  "import cutlass.cute as cute\n"})
    assert {line: {f.rule for f in fs} for line, fs in found.items()} == {1: {"OPS401"}, 2: {"OPS401"}, 3: {"OPS401"}}
    assert found[2][0].subject == "tokenspeed_mla" and found[3][0].subject == "cutlass"
