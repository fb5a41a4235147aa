"""A `package.module:NAME` target's module, imported from the project's own files first.

NOTE [the project's module first]
`--model nets.m:build` means the project's `nets/m.py`. Python's import system does not guarantee
it: a regular package `nets` found anywhere on sys.path beats the project's `nets/` when that is a
namespace package (no `__init__.py`: a namespace portion is kept only while no regular package is
found), and a module already imported (the standard library's `signal`, `tokenize`, `io`, `logging`,
`random`, imported by torch before the model) is returned from sys.modules whatever the files say.
Nor may it depend on the order of the child's sys.path (the contained child may add the project's
path after it starts). So the module is found in the project's files explicitly
(`importlib.machinery.PathFinder` over the project root alone, package by package) and imported from
them:
  - under its own name when that name is free (not imported yet), or taken by the project's own
    module already, so its absolute imports of its package (`from nets import layers`) find it;
  - else (the name is taken by another module, the standard library's or a library's, which the
    rest of the process keeps using) under a private name, `opscan_project.<name>`, its package's
    relative imports working as written.
A module the project does not have is imported as Python would (an installed package).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

PRIVATE = "opscan_project"


def project_file(dotted: str, root: Path) -> Path | None:
    """The project's file (or package folder) of module `dotted`, or None when the project has none."""
    parts = dotted.split(".")
    here = root
    for part in parts[:-1]:
        here = here / part
        if not here.is_dir():
            return None
    last = here / parts[-1]
    for candidate in (last.with_suffix(".py"), last / "__init__.py", last):
        if candidate.exists():
            return candidate
    return None


def _is_projects(module: ModuleType | None, root: Path) -> bool:
    """Whether an imported module was loaded from the project's files."""
    if module is None:
        return False
    places = [getattr(module, "__file__", None) or "", *list(getattr(module, "__path__", None) or ())]
    resolved = root.resolve()
    for place in filter(None, places):
        try:
            Path(place).resolve().relative_to(resolved)
        except (ValueError, OSError):
            continue
        return True
    return False


def import_project_module(dotted: str, root: Path) -> ModuleType | None:
    """The project's module `dotted` imported from its files under `root` (NOTE [the project's module
    first]), or None when the project has no such module. Import errors propagate."""
    if project_file(dotted, root) is None:
        return None
    top, _, rest = dotted.partition(".")
    spec = importlib.machinery.PathFinder.find_spec(top, [str(root)])
    if spec is None:
        return None
    taken = sys.modules.get(top)
    name = top if taken is None or _is_projects(taken, root) else f"{PRIVATE}.{top}"
    if sys.modules.get(name) is None or not _is_projects(sys.modules[name], root):
        _load(name, spec)
    return importlib.import_module(f"{name}.{rest}" if rest else name)


def _load(name: str, found: importlib.machinery.ModuleSpec) -> ModuleType:
    """Import the project's top-level module or package `found` as `name`."""
    if name.startswith(PRIVATE + ".") and PRIVATE not in sys.modules:
        holder = importlib.util.module_from_spec(importlib.machinery.ModuleSpec(PRIVATE, None, is_package=True))
        holder.__path__ = []
        sys.modules[PRIVATE] = holder
    spec: importlib.machinery.ModuleSpec | None = None
    if found.origin and found.loader is not None:
        spec = importlib.util.spec_from_file_location(name, found.origin,
                                                      submodule_search_locations=found.submodule_search_locations)
    if spec is None:   # a namespace package: the project's folder (or folders) of that name
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = list(found.submodule_search_locations or ())
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module
