"""The folder a training script is written to run from, read from its relative paths (never run).

NOTE [a script run from its own folder]
Research code often reads its data by paths relative to the script's own folder (pygcn's
`np.genfromtxt("../data/cora/cora.content")` in `pygcn/utils.py`, for `cd pygcn && python
train.py`), while the command opscan found runs it from the project root (`python pygcn/train.py`,
a `__main__` script, or a README that skips the `cd`). The run's `open()` stand-in reads such a path
beside the script (file_stand_ins.py), but numpy's loaders, pandas, PIL and h5py check and open files
by their own means, so the general answer is the working directory: the command is run from the
script's folder when the string literals of the script and of the modules beside it hold relative
paths (with a `/`, or `..`) that exist inside the project from that folder, and none that exist only
from the command's own folder. A path that exists from both says nothing. The report says so in a
note naming one such path. The files are parsed, never executed; a file that does not parse counts
for nothing.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

MAX_FILES = 40   # modules beside the script read for their paths (a flat folder of scripts)
MAX_BYTES = 1 << 20


def own_folder(script: str, cwd: str, root: str) -> tuple[str, str]:
    """(the script's folder, one path that resolves only from there) when the command should run
    from the script's folder (NOTE [a script run from its own folder]), else ("", "")."""
    folder = os.path.dirname(os.path.realpath(script))
    here, real_root = os.path.realpath(cwd), os.path.realpath(root)
    if folder == here or not _inside(folder, real_root):
        return "", ""
    there_only, here_only = "", False
    for path in _relative_paths(folder, script):
        from_there, from_here = _resolves(folder, path, real_root), _resolves(here, path, real_root)
        if from_here and not from_there:
            here_only = True
        elif from_there and not from_here and not there_only:
            there_only = path
    return (folder, there_only) if there_only and not here_only else ("", "")


def _relative_paths(folder: str, script: str) -> list[str]:
    files = [os.path.realpath(script)]
    with os.scandir(folder) as entries:
        siblings = sorted(e.path for e in entries if e.name.endswith(".py") and e.is_file())
    siblings = [f for f in siblings if os.path.realpath(f) != files[0]][:MAX_FILES]
    script_tree = _parsed(files[0])
    if script_tree is not None:   # the script first, then the modules it imports (the note names one)
        imported = _imports(script_tree)
        siblings.sort(key=lambda f: os.path.basename(f)[:-3] not in imported)
    found: list[str] = []
    for tree in [script_tree, *(_parsed(name) for name in siblings)]:
        if tree is not None:
            found += [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
                      and isinstance(node.value, str) and _path_like(node.value)]
    return list(dict.fromkeys(found))


def _parsed(name: str) -> ast.Module | None:
    try:
        return ast.parse(Path(name).read_bytes()[:MAX_BYTES].decode("utf-8", "replace"))
    except (OSError, SyntaxError, ValueError):
        return None


def _imports(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(part for alias in node.names for part in alias.name.split("."))
        elif isinstance(node, ast.ImportFrom):
            names.update((node.module or "").split("."))
            names.update(alias.name for alias in node.names)
    return names


def _path_like(text: str) -> bool:
    if not text or len(text) > 200 or "://" in text or os.path.isabs(text) or text.startswith(("~", "-")):
        return False
    if any(c.isspace() for c in text) or any(c in text for c in "{}%*?<>|\"'"):
        return False
    return "/" in text or text == ".."


def _resolves(base: str, path: str, root: str) -> bool:
    full = os.path.realpath(os.path.join(base, path))
    return full != root and _inside(full, root) and os.path.exists(full)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root + os.sep)


__all__ = ["own_folder"]
