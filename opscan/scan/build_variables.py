"""Dockerfile variables judged by the rules cuda-build-variable (OPS511) and cuda-selector-default
(OPS512): NOTE [build variables]. The entries come from scan/docker_manifests.py; scan/dependencies.py
calls `judge` for the two matcher kinds.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import urlsplit

from opscan.scan.manifests import Entry

# NOTE [build variables]
# Dockerfile variables (scan/docker_manifests.py) are judged two ways. cuda-build-variable: a
# variable whose owner documents that setting it builds CUDA code at install (`DS_BUILD_OPS=1`,
# `DS_BUILD_FUSED_ADAM=1`: DeepSpeed compiles those ops with nvcc; `TORCH_CUDA_ARCH_LIST`: the CUDA
# architectures torch.utils.cpp_extension builds for; `FORCE_CUDA=1`: PyTorch3D's and
# similar extension builds include CUDA with no GPU visible) set in ARG, ENV or a RUN line to anything
# but an off value (``, `0`, `false`, `no`, `off`). cuda-selector-default, at lower confidence (a
# note): an ARG / ENV default that names a CUDA build (`cuda`, `cu121`, `cuda12.1`: the rule's
# `labels`) under a name that says torch or CUDA (`CODEX_TORCH_MODE=cuda`), read by a later RUN
# (by `$NAME`, or by a script or build that RUN runs), or a default that is the URL of a CUDA
# build's wheel index (`ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/nightly/cu132`, a
# path segment that is one of the labels) handed to such a script. What the script does with it is not read:
# the finding says the default probably selects the CUDA build; runtime settings
# (`PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync`, `CUDA_VISIBLE_DEVICES=0`) name no build and
# are not judged. A CUDA version used in an index URL (`ARG CUDA=cu121` ... `--index-url
# .../whl/${CUDA}`) is OPS504 at the ARG line, and that default is an OPS512 note as well.
_OFF = ("", "0", "false", "no", "off")


def judge(what: str, options: dict[str, Any], entry: Entry) -> tuple[str, str] | None:
    """(value, subject) when a `variable` entry is a finding of the matcher `what` with its compiled
    `options` (`names`: variable-name patterns; `labels`: the CUDA selector values), else None."""
    if entry.kind != "variable" or "$" in entry.spec:
        return None
    name = entry.name.upper()
    if not any(fnmatchcase(name, p.upper()) for p in options.get("names", ())):
        return None
    if what == "cuda-build-variable":
        return (entry.text, entry.name) if entry.spec.strip("'\"").lower() not in _OFF else None
    labels = options.get("labels")
    value = entry.spec.strip("'\"")
    if not entry.read or labels is None:
        return None
    if labels.fullmatch(value):
        return entry.text, entry.name
    if "://" in value and any(labels.fullmatch(part) for part in urlsplit(value).path.split("/")):
        return entry.text, entry.name   # a wheel index of a CUDA build (`.../whl/nightly/cu132`) for a script
    return None
