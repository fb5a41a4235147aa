"""CUDA alternatives of a CPU install path: a CUDA-named extra or manifest file beside a CPU-named
one reports its findings as warnings that say which path to take (NOTE [CUDA alternatives])."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import replace

from opscan.records import Category, Finding, Severity
from opscan.scan.files import manifest_kind
from opscan.scan.results import FileResult

# NOTE [CUDA alternatives]
# A project that keeps a CPU install path beside its CUDA ones (extras `torch-cpu` beside
# `torch-cu118` / `onnx-cu12` / `trt10`; `requirements.cpu.txt` beside `requirements.gpu.txt`) is
# ported by taking the CPU path: the CUDA alternatives stay for CUDA hosts and need no change
# (the label rule of the held-out parts, HELDOUT2.md; the precision sweep's "outside" errors). So a
# finding on such an alternative is a warning, guarded (never a blocker), whose message names the
# CPU path to take. What counts, conservatively:
# - a name is split into tokens at `-`, `_` and `.` (a file: its name without the extension);
#   it is **CUDA-named** when a token is `gpu`, `cuda`, `cudaNN`, `cuNN` / `cuNNN` (`cu118`,
#   `cu12`), `tensorrt` or `trt` / `trtNN` (TensorRT runs on NVIDIA GPUs only), and **CPU-named**
#   when a token is `cpu` or `cpuonly`; a name that is both is neither.
# - an **extra** (or dependency group) is an alternative when it is CUDA-named and the same
#   manifest (pyproject.toml `[project.optional-dependencies]` / `[dependency-groups]`, setup.cfg
#   `[options.extras_require]`) has a CPU-named extra, empty or not (the message names the one of
#   the same stem, `torch-cpu` for `torch-cu118`, else the first by name);
# - a **requirements or conda environment file** is an alternative when its name is CUDA-named and
#   a CPU-named file of the same kind sits in the same folder with the same stem: the tokens left
#   once the CUDA ones (and the version numbers right after them: `cuda12_9`) and the CPU ones are
#   taken out, with the same extension (`deps/requirements_torch_gpu_cuda12_9.txt` and
#   `deps/requirements_torch_cpu.txt`; `requirements/gpu.txt` and `requirements/cpu.txt`).
# A CUDA-named file or extra with no CPU-named sibling stays as it was (NVTabular's
# `requirements/gpu.txt` beside `base.txt`; `requirements-cu128.txt` beside a plain
# `requirements.txt`: a default that is not named CPU is not taken for one). Not covered: setup.py
# extras (read through values that lose their keys), Dockerfiles, Poetry extras; a file whose
# sibling is not on disk (or, in `scan_memory`, not among the files given).
_CUDA = re.compile(r"gpu|cuda\d*|cu\d{2,3}|tensorrt|trt\d*")
_CPU = re.compile(r"cpu|cpuonly")
_SPLIT = re.compile(r"[-_.]+")
_FILE_KINDS = ("requirements", "conda")


def _tokens(name: str) -> list[str]:
    return [t for t in _SPLIT.split(name.lower()) if t]


def cuda_named(name: str) -> bool:
    tokens = _tokens(name)
    return any(_CUDA.fullmatch(t) for t in tokens) and not any(_CPU.fullmatch(t) for t in tokens)


def cpu_named(name: str) -> bool:
    tokens = _tokens(name)
    return any(_CPU.fullmatch(t) for t in tokens) and not any(_CUDA.fullmatch(t) for t in tokens)


def _stem(name: str) -> tuple[str, ...]:
    """The tokens left once CUDA and CPU tokens, and the version numbers right after a CUDA token, are out."""
    out: list[str] = []
    after_cuda = False
    for token in _tokens(name):
        if _CUDA.fullmatch(token) or _CPU.fullmatch(token):
            after_cuda = bool(_CUDA.fullmatch(token))
            continue
        if after_cuda and token.isdigit():
            continue
        after_cuda = False
        out.append(token)
    return tuple(out)


def cpu_extra(extra: str, extras: Iterable[str]) -> str:
    """The CPU-named extra of the same manifest when `extra` is CUDA-named, else "": the one of the
    same stem first (`torch-cpu` for `torch-cu118`), else the first by name."""
    if not extra or not cuda_named(extra):
        return ""
    cpu = sorted((_stem(e) != _stem(extra), e) for e in extras if cpu_named(e))
    return cpu[0][1] if cpu else ""


def _split_name(base: str) -> tuple[str, str]:
    stem, dot, ext = base.rpartition(".")
    return (stem, dot + ext) if dot and stem else (base, "")


def cpu_sibling(relpath: str, names_in_folder: Iterable[str]) -> str:
    """The CPU-named sibling (same folder, kind, stem and extension) of a CUDA-named requirements or
    conda file, as a path like `relpath`, else ""."""
    folder, _, base = relpath.rpartition("/")
    kind = manifest_kind(relpath)
    stem, ext = _split_name(base)
    if kind not in _FILE_KINDS or not cuda_named(stem):
        return ""
    for other in sorted(names_in_folder):
        other_stem, other_ext = _split_name(other)
        path = f"{folder}/{other}" if folder else other
        if other_ext == ext and cpu_named(other_stem) and _stem(other_stem) == _stem(stem) \
                and manifest_kind(path) == kind:
            return path
    return ""


def demote(finding: Finding, cpu_path: str) -> Finding:
    """A finding on a CUDA alternative: a warning (an error no longer), guarded, naming the CPU path."""
    if finding.category is Category.INPUT:
        return finding   # a line opscan cannot read is reported as it is
    severity = Severity.WARNING if finding.severity is Severity.ERROR else finding.severity
    message = f"{finding.message} (CUDA alternative of the CPU install path `{cpu_path}`: take that path on Trainium)"
    return replace(finding, severity=severity, guarded=True, message=message)


def apply_files(results: list[FileResult], names_in_folder: Callable[[str], Iterable[str]]) -> list[FileResult]:
    """Findings of CUDA-named requirements / conda files with a CPU-named sibling, demoted
    (NOTE [CUDA alternatives]). `names_in_folder(folder)`: the file names in that folder."""
    out = []
    for result in results:
        if result.findings and manifest_kind(result.path) in _FILE_KINDS and cuda_named(
                _split_name(result.path.rpartition("/")[2])[0]):
            sibling = cpu_sibling(result.path, names_in_folder(result.path.rpartition("/")[0]))
            if sibling:
                result = replace(result, findings=tuple(demote(f, sibling) for f in result.findings))
        out.append(result)
    return out
