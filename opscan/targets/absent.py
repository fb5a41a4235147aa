"""Stand-ins for GPU-only kernel libraries a repository imports but its model's default path never calls (child side).

Used by opscan/targets/repository.py when importing a repository's model module fails on a
missing GPU-only library (NOTE [GPU-only kernel libraries]).
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import sys
import types

from opscan.errors import MissingModulesError

# NOTE [GPU-only kernel libraries]
# A CUDA repository often imports a GPU-only kernel library at module level (torchtitan's MoE
# dispatcher imports triton; nanotron's layers import flash_attn) although the model's default
# path never calls it. Such a library (it cannot be installed on a Trainium host) that is missing
# is stood in by a module whose every attribute is an inert placeholder (a decorator returns its
# function; a call returns a placeholder), so the model's module imports. Using a placeholder as a
# tensor during the trace fails, and the candidate says so in its one line. Which libraries are
# GPU-only is the catalog's answer (the packages of opscan/plan/libraries.yaml, one source of
# truth): targets never import the plan, so the parent passes them in the child's options
# (`gpu_only`, opscan/pipeline/phases.py `tracer_options`) and a build holds them while it runs (`gpu_only`).
_GPU_ONLY: tuple[str, ...] = ()


@contextlib.contextmanager
def gpu_only(packages):
    """The GPU-only libraries that may be stood in while a `repo:` target builds (NOTE [GPU-only kernel libraries])."""
    global _GPU_ONLY
    saved, _GPU_ONLY = _GPU_ONLY, tuple(packages)
    try:
        yield
    finally:
        _GPU_ONLY = saved


def packages() -> tuple[str, ...]:
    """The GPU-only libraries of the build running now (empty outside `gpu_only`)."""
    return _GPU_ONLY


class _Placeholder:
    """An inert stand-in for anything of a GPU-only library (NOTE [GPU-only kernel libraries])."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Placeholder(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]            # used as a decorator: the function stays as it is
        return _Placeholder(f"{self._name}(...)")

    def __getitem__(self, key):
        return _Placeholder(f"{self._name}[...]")

    def __mro_entries__(self, bases):
        return (object,)

    def __repr__(self) -> str:
        return f"<{self._name}: a GPU-only library absent here>"


class _Absent(types.ModuleType):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__path__ = []            # a package: `import triton.language` finds the stand-in below
        self.__opscan_absent__ = True

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        full = f"{self.__name__}.{attr}"
        if full in sys.modules:
            return sys.modules[full]
        return _Placeholder(full)


class _AbsentFinder:
    """Finds `triton.language` and the like under a stood-in library (NOTE [GPU-only kernel libraries])."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        top = name.split(".")[0]
        if "." not in name or not getattr(sys.modules.get(top), "__opscan_absent__", False):
            return None
        return importlib.machinery.ModuleSpec(name, _AbsentFinder, is_package=True)

    @staticmethod
    def create_module(spec):
        return _Absent(spec.name)

    @staticmethod
    def exec_module(module):
        return None


# NOTE [every missing module at once]
# A model module that needs packages this environment lacks used to name the first one per run:
# install it, run again, meet the second. When the import fails on a module that is not installed
# (and not a GPU-only library, which is stood in for the trace), the import is tried again with an
# inert stand-in for it, and again, until it succeeds or fails otherwise, so one run names every
# missing module the import reaches. The candidate is still not traced (a model built on stand-ins
# of ordinary packages would give wrong ops): its one-line reason lists them all (the cause), and
# the report adds ONE remedy line for every such cause (`remedy`: the project's manifest found, and
# `--allow-unchecked`; `Verdict.remedy`), printed after the causes, never repeated in each.
MANIFESTS = ("requirements.txt", "requirements-dev.txt", "requirements/base.txt", "pyproject.toml", "setup.py",
             "setup.cfg", "environment.yml", "environment.yaml")


MissingModules = MissingModulesError   # the import of a candidate's module misses `modules`, all of them

def _install(top: str, package: str) -> None:
    """Put the stand-in of `top` in sys.modules, forgetting the partly imported `package` so that it
    is imported again against it."""
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]
    if _AbsentFinder not in sys.meta_path:
        sys.meta_path.insert(0, _AbsentFinder)
    sys.modules[top] = _Absent(top)


def stand_in_missing(missing: str, package: str, stood: list[str]) -> bool:
    """Stand in for any missing top-level module (NOTE [every missing module at once]), recording it
    in `stood`; False when it is not missing from this environment or already stood in."""
    top = missing.split(".")[0]
    if not top or top in sys.modules or top in stood:
        return False
    stood.append(top)
    _install(top, package)
    return True


def forget(stood: list[str]) -> None:
    """Remove the stand-ins of `stood` (and what was imported under them) from sys.modules."""
    for top in stood:
        for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
            if getattr(sys.modules[name], "__opscan_absent__", False):
                del sys.modules[name]


def remedy(root) -> str:
    """The one remedy for missing packages: the project's manifest found under `root`, and --allow-unchecked."""
    from pathlib import Path

    found = [name for name in MANIFESTS if (Path(root) / name).is_file()]
    what = f"the project's requirements ({found[0]} found)" if found else "the packages the project needs"
    return f"install {what} into this environment, or pass --allow-unchecked to judge what was checked"


def stand_in(missing: str, package: str) -> bool:
    """Stand in for the missing module's library when it is GPU-only (`gpu_only`; True), forgetting the partly
    imported `package` so it is imported again; False for any other missing module."""
    top = missing.split(".")[0]
    if top not in _GPU_ONLY or top in sys.modules:
        return False
    _install(top, package)
    return True
