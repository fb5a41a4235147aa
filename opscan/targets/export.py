"""`pt2:PATH` targets: find and load an exported program (`torch.export.save`) without running it.

Loading runs none of the user's Python (NOTE [no pickle from a .pt2]); the ops are read by the
engine (opscan/trace/export.py, which names the levels: docs/check.md, "Exported programs").
"""

from __future__ import annotations

import contextlib
import os
import pickle
import time
import warnings
import zipfile
from pathlib import Path

import torch

from opscan.errors import TargetError
from opscan.records import DeviceProfile, ModelTrace, Target, TargetKind
from opscan.trace.export import trace_program


def resolve(path_text: str, project_root: str | None) -> Path:
    """The .pt2 file a `pt2:` target names: as given, else relative to the project root."""
    path = Path(path_text)
    if not path.is_absolute() and project_root and not path.exists():
        path = Path(project_root) / path
    if not path.is_file():
        raise TargetError("no such exported program (pt2: takes a file saved with torch.export.save)",
                          path=str(path))
    return path


# NOTE [no pickle from a .pt2]
# torch.export.load reads JSON and tensors, but two paths of torch 2.13 unpickle Python objects: an
# "opaque object" constant (pickle.loads) and the fallback of torch.load(weights_only=True) to
# weights_only=False for a stored artifact (sample inputs, ...). A crafted file could run code
# through either. So a file holding opaque objects is refused, and the load runs with
# TORCH_FORCE_WEIGHTS_ONLY_LOAD=1, which keeps every torch.load weights-only.
def _refuse_pickled_objects(path: Path) -> None:
    try:
        from torch.export.pt2_archive.constants import OPAQUE_OBJ_FILENAME_PREFIX as prefix
    except ImportError:   # a torch without them
        prefix = None
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise TargetError(f"not an exported program (a .pt2 is a zip archive): {exc}", path=str(path)) from None
    if prefix and any(os.path.basename(name).startswith(prefix) for name in names):
        raise TargetError("holds pickled Python objects (opaque constants) that loading would unpickle, "
                          "running code: refused", path=str(path))


@contextlib.contextmanager
def _weights_only():
    saved = {k: os.environ.pop(k, None) for k in ("TORCH_FORCE_WEIGHTS_ONLY_LOAD",
                                                   "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")}
    os.environ["TORCH_FORCE_WEIGHTS_ONLY_LOAD"] = "1"
    try:
        yield
    finally:
        os.environ.pop("TORCH_FORCE_WEIGHTS_ONLY_LOAD", None)
        os.environ.update({k: v for k, v in saved.items() if v is not None})


def load(path: Path):
    """torch.export.load with one-line errors (a file from another torch, an unknown custom op, ...),
    never unpickling Python objects (NOTE [no pickle from a .pt2])."""
    _refuse_pickled_objects(path)
    try:
        with warnings.catch_warnings(), _weights_only():   # + deprecation chatter of tree specs
            warnings.simplefilter("ignore")
            return torch.export.load(str(path))
    except pickle.UnpicklingError:
        raise TargetError("holds pickled Python objects that only an unsafe (not weights-only) load "
                          "would read, running code: refused", path=str(path)) from None
    except Exception as exc:  # noqa: BLE001 - any failure to read the file is one line
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        raise TargetError(f"torch {torch.__version__} cannot load this exported program: "
                          f"{type(exc).__name__}: {first}", path=str(path)) from None


def _exported_file(target: str) -> str:
    """The file of a `pt2:FILE` target; a bare path (`opscan trace model.pt2`) is the file itself."""
    parsed = Target.of(target)
    return parsed.spec if parsed is not None and parsed.kind is TargetKind.EXPORT else target


def trace_export(target: str, *, profile: DeviceProfile | None = None, project_root: str | None = None,
                 level: str = "dispatch", device: str = "neuron") -> ModelTrace:
    """The ops of the exported program `pt2:PATH` at `level`, as an inference ModelTrace."""
    started = time.perf_counter()
    path = resolve(_exported_file(target), project_root)
    return trace_program(target, load(path), profile=profile, project_root=project_root or str(path.parent),
                         level=level, device=device, started=started)
