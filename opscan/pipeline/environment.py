"""The torch requirements of the distributions installed in a Python environment, read from their metadata.

`opscan scan --environment PYTHON` (and `opscan PATH --environment PYTHON`) asks that interpreter
for its installed distributions' `Requires-Dist` through `importlib.metadata`: metadata files
only, no package of the environment is imported, nothing is written. `--environment current`
reads the interpreter running opscan, in process. The dependency rules then judge a manifest's
torchvision, xformers or any build tied to one torch by what its installed version declares
(docs/dependencies.md, "Installed metadata") instead of the shipped tables, and a package outside
the CUDA-only catalog by the NVIDIA wheels or triton its installed version requires (OPS510).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from opscan.errors import UsageError

# The probe runs in the environment's interpreter with -I (isolated: no user site, no PYTHON*
# variables, the working directory not on the path): it imports only the standard library.
PROBE = Path(__file__).with_name("metadata_probe.py")
TIMEOUT = 60


def _parse(rows) -> tuple[tuple[tuple[str, str, str], ...], tuple[tuple[str, str, str], ...]]:
    """((distribution, version, its torch specifier), ...) and ((distribution, version, the NVIDIA
    wheels / triton it requires, comma-separated or ""), ...) from the probe's rows."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    from opscan.scan.manifests import installs_on_linux

    out = {}
    cuda = {}
    for name, version, reqs in rows:
        specs = []
        needs = []
        for text in reqs:
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            if req.marker is not None and "extra" in str(req.marker):
                continue   # an optional extra's torch is not what the package is built for
            if not installs_on_linux(req.marker):
                continue
            required = canonicalize_name(req.name)
            if required == "torch":
                if str(req.specifier):
                    specs.append(str(req.specifier))
            else:
                needs.append(required)
        if specs:
            out[canonicalize_name(str(name))] = (str(version), ",".join(specs))
        cuda[canonicalize_name(str(name))] = (str(version), ", ".join(sorted(set(needs))))
    return (tuple((name, version, spec) for name, (version, spec) in sorted(out.items())),
            tuple((name, version, needs) for name, (version, needs) in sorted(cuda.items())))


def _rows(python: str) -> tuple[list, str]:
    if python == "current":
        from opscan.pipeline.metadata_probe import rows

        return rows(), sys.executable
    try:
        done = subprocess.run([python, "-I", str(PROBE)], capture_output=True, text=True, timeout=TIMEOUT,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise UsageError(f"--environment {python}: cannot run it: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"--environment {python}: not a Python interpreter opscan can read ({last})")
    try:
        return json.loads(done.stdout), python
    except json.JSONDecodeError:
        raise UsageError(f"--environment {python}: its answer is not the expected JSON") from None


def installed_metadata(python: str) -> tuple[tuple[tuple[str, str, str], ...], tuple[tuple[str, str, str], ...], str]:
    """The environment's torch requirements and CUDA requirements (as `_parse` gives them), and its
    interpreter; one run of the probe.

    Args:
        python: a Python interpreter (path or command), or "current" for the running one.
    Raises:
        UsageError: the interpreter cannot be run or gives no answer.
    """
    rows, where = _rows(python)
    torch, cuda = _parse(rows)
    return torch, cuda, where


def torch_requirements(python: str) -> tuple[tuple[tuple[str, str, str], ...], str]:
    """((distribution, version, its torch specifier), ...) of the environment, and its interpreter
    (installed_metadata without the CUDA requirements).

    Raises:
        UsageError: the interpreter cannot be run or gives no answer.
    """
    torch, _cuda, where = installed_metadata(python)
    return torch, where
