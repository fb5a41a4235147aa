"""Where a repository file is imported from (opscan/targets/repository.py's `load`): namespace
packages and the packages of the file's own folder.

NOTE [namespace packages and own folders]
Research code often has folders of modules with no `__init__.py` (`src/models/transformer.py`
doing `from .attention import ...`, imported by the training script as `src.models.transformer`):
Python imports them as namespace packages from the folder the script runs in. A file with relative
imports whose folder holds no `__init__.py` is imported as its dotted name from the root, so its
relative imports resolve. And a file imported from the folder its script runs in (`from
optimizers.sophia import SophiaG` in language_tasks/modeling/model.py, whose `optimizers/` has no
`__init__.py`) finds its own folder's modules first, as that run does: a regular package of the
same name at the root (`optimizers/__init__.py`) would otherwise win over the folder (regular
packages come before namespace portions whatever the order of sys.path). So each top-level name
the file imports that its own folder holds as a folder without `__init__.py`, while another of
that name is found elsewhere, is put in sys.modules as a namespace of the file's folder first, then
the other.
"""

from __future__ import annotations

import ast
import sys
import types
from pathlib import Path


def relative_imports(tree: ast.Module) -> bool:
    return any(isinstance(node, ast.ImportFrom) and node.level for node in ast.walk(tree))


def namespace_root(path: Path, root: Path) -> Path:
    """The folder a file of namespace packages is imported from: the root, when the file is below it."""
    return root if root in path.parents else path.parent


def own_folders_first(tree: ast.Module, folder: Path, root: Path) -> None:
    """The namespaces of NOTE [namespace packages and own folders], for the top-level names `tree` imports."""
    if folder == root:
        return
    names = {a.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    names |= {node.module.split(".")[0] for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and not node.level and node.module}
    for name in sorted(names):
        own = folder / name
        if not own.is_dir() or (own / "__init__.py").is_file():
            continue
        other = root / name
        found = sys.modules.get(name)
        elsewhere = list(getattr(found, "__path__", None) or ([str(other)] if other.is_dir() else []))
        paths = [str(own)] + [p for p in elsewhere if p != str(own)]
        if len(paths) == 1:
            continue   # nothing else of that name: the import finds the folder as it is
        stub = types.ModuleType(name)
        stub.__path__ = paths
        for loaded in [n for n in sys.modules if n == name or n.startswith(name + ".")]:
            del sys.modules[loaded]
        sys.modules[name] = stub
