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

NOTE [the folder the README runs from]
A README that runs its training from a sub-project (`cd generative_pt && python ./network.py`, or
`PYTHONPATH=generative_pt`) makes that folder the import root of every module below it: its
`source/models/seq2seq.py` imports `from source.modules.embedder import Embedder`, a top-level
`source` that exists only in `generative_pt/`. Imported from the repository root, the model stopped at
"No module named 'source'". So a file whose absolute imports name a top-level module that neither
the root, `src/`, its package root nor its own folder holds, but a folder between its own and the
root does (as a folder or a `.py`), is imported with that nearest folder first on sys.path: where
the README's `cd` or PYTHONPATH puts it. Nothing outside the project is added.
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


def imported_tops(tree: ast.Module) -> set[str]:
    """The top-level names of a file's absolute imports."""
    names = {a.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    return names | {node.module.split(".")[0] for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and not node.level and node.module}


def _holds(folder: Path, name: str) -> bool:
    return (folder / name).is_dir() or (folder / f"{name}.py").is_file()


def run_roots(tree: ast.Module, path: Path, root: Path, searched: tuple[Path, ...]) -> list[Path]:
    """The folders between `path`'s own and `root` that hold a top-level module `tree` imports and no
    folder of `searched` holds, nearest first (NOTE [the folder the README runs from])."""
    if root not in path.parents:
        return []
    found: list[Path] = []
    for name in sorted(imported_tops(tree)):
        if any(_holds(folder, name) for folder in searched):
            continue
        for folder in path.parents:
            if folder == root:
                break
            if folder != path.parent and _holds(folder, name):
                if folder not in found:
                    found.append(folder)
                break
    return sorted(found, key=lambda f: -len(f.parts))


def own_folders_first(tree: ast.Module, folder: Path, root: Path) -> None:
    """The namespaces of NOTE [namespace packages and own folders], for the top-level names `tree` imports."""
    if folder == root:
        return
    for name in sorted(imported_tops(tree)):
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
