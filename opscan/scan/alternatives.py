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
# - a **Dockerfile** likewise, its whole name split into tokens (`Dockerfile.gpu` and
#   `Dockerfile.cpu`; `gpu.Dockerfile` and `cpu.Dockerfile`: the stem is `dockerfile`).
# - an **unnamed default** (a sibling of the same kind and stem named neither CUDA nor CPU:
#   `requirements.txt` for `requirements-gpu.txt`, `Dockerfile` for `Dockerfile.gpu`) is the CPU
#   path only when its own text selects CPU torch: it names PyTorch's CPU wheel index
#   (`download.pytorch.org/whl/cpu`) or a `+cpu` build, and names no CUDA wheel index (`/whl/cuNNN`)
#   nor a `+cuNNN` build. The text is the file's own (its ARG defaults included), read as bytes,
#   never run.
# A CUDA-named file or extra with no CPU path beside it stays as it was (NVTabular's
# `requirements/gpu.txt` beside `base.txt`; `requirements-cu128.txt` beside a plain
# `requirements.txt` that says nothing of CPU torch; `Dockerfile.gpu` beside a `Dockerfile` with a
# CUDA index; `Dockerfile.dev.x86` is named neither). Not covered: setup.py extras (read through
# values that lose their keys), Poetry extras; a file whose sibling is not on disk (or, in
# `scan_memory`, not among the files given).
_CUDA = re.compile(r"gpu|cuda\d*|cu\d{2,3}|tensorrt|trt\d*")
_CPU = re.compile(r"cpu|cpuonly")
_SPLIT = re.compile(r"[-_.]+")
_FILE_KINDS = ("requirements", "conda", "dockerfile")
_CPU_TORCH = re.compile(rb"download\.pytorch\.org/whl/cpu\b|\+cpu\b")
_CUDA_TORCH = re.compile(rb"download\.pytorch\.org/whl/cu\d|\+cu\d{2,3}\b")
_MAX_READ = 1 << 20   # a default larger than this is not read (it is not taken for the CPU path)


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


def _split_name(base: str, kind: str = "") -> tuple[str, str]:
    if kind == "dockerfile":   # `Dockerfile.gpu`: the suffix is the name's, not an extension
        return base, ""
    stem, dot, ext = base.rpartition(".")
    return (stem, dot + ext) if dot and stem else (base, "")


def cpu_selected(text: bytes | None) -> bool:
    """Whether an unnamed default's text selects CPU torch and no CUDA build (NOTE [CUDA alternatives])."""
    return text is not None and len(text) <= _MAX_READ and _CPU_TORCH.search(text) is not None \
        and _CUDA_TORCH.search(text) is None


def cpu_sibling(relpath: str, names_in_folder: Iterable[str],
                read: Callable[[str], bytes | None] | None = None) -> str:
    """The CPU path beside a CUDA-named requirements, conda or Dockerfile (same folder, kind, stem and
    extension): a CPU-named sibling, else an unnamed default whose text selects CPU torch (when
    `read` is given), as a path like `relpath`, else ""."""
    folder, _, base = relpath.rpartition("/")
    kind = manifest_kind(relpath)
    stem, ext = _split_name(base, kind)
    if kind not in _FILE_KINDS or not cuda_named(stem):
        return ""
    defaults = []
    for other in sorted(names_in_folder):
        other_stem, other_ext = _split_name(other, kind)
        path = f"{folder}/{other}" if folder else other
        if other_ext != ext or _stem(other_stem) != _stem(stem) or manifest_kind(path) != kind:
            continue
        if cpu_named(other_stem):
            return path
        if not cuda_named(other_stem) and not any(_CPU.fullmatch(t) for t in _tokens(other_stem)):
            defaults.append(path)
    return next((path for path in defaults if read is not None and cpu_selected(read(path))), "")


def demote(finding: Finding, cpu_path: str) -> Finding:
    """A finding on a CUDA alternative: a warning (an error no longer), guarded, naming the CPU path."""
    if finding.category is Category.INPUT:
        return finding   # a line opscan cannot read is reported as it is
    severity = Severity.WARNING if finding.severity is Severity.ERROR else finding.severity
    message = f"{finding.message} (CUDA alternative of the CPU install path `{cpu_path}`: take that path on Trainium)"
    return replace(finding, severity=severity, guarded=True, message=message)


def apply_files(results: list[FileResult], names_in_folder: Callable[[str], Iterable[str]],
                read: Callable[[str], bytes | None] | None = None) -> list[FileResult]:
    """Findings of CUDA-named requirements / conda files and Dockerfiles with a CPU path beside them,
    demoted (NOTE [CUDA alternatives]). `names_in_folder(folder)`: the file names in that folder;
    `read(relpath)`: a sibling's bytes (None when unreadable), for an unnamed default."""
    out = []
    for result in results:
        kind = manifest_kind(result.path)
        if result.findings and kind in _FILE_KINDS and cuda_named(
                _split_name(result.path.rpartition("/")[2], kind)[0]):
            sibling = cpu_sibling(result.path, names_in_folder(result.path.rpartition("/")[0]), read)
            if sibling:
                result = replace(result, findings=tuple(demote(f, sibling) for f in result.findings))
        out.append(result)
    return out
