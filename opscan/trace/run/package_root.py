"""The project root on the import path of a script inside the project's own package.

NOTE [a script inside its package]
`python gae/train.py` puts `gae/` first on sys.path, so the script's `from gae.model import ...`
finds no package `gae` unless the project is installed (`pip install -e .`) or run with the root on
PYTHONPATH, which research READMEs often leave unsaid. When the script's folder is a package folder
inside the project (it holds `__init__.py`) and the script, or a module beside it (imported by
bare name: `from models import Net` whose models.py has `from gae.layers import ...`), imports that
package by name, the run puts the project root at the end of sys.path, as an editable install
would, and its notes say so: the command as written would stop at that import.
"""

from __future__ import annotations

import os
import re

MAX_SIBLINGS = 40   # modules beside the script read for an import of the package
# NOTE [an absolute import path of the author's machine]
# Research scripts put a folder of the author's machine on the import path, then import from it by
# bare name: `sys.path.insert(1, '/home/xuanyu/acl_2022/src/')`, `from trainer import *`. On any
# other machine that folder does not exist and the import stops the run. When such a literal
# absolute path (in the script or a module beside it that it imports) does not exist and its tail
# names a folder of the project (`src`, `acl_2022/src`: the longest tail that exists under the
# project root), that project folder is put at the end of sys.path, as the author's own folder was
# on theirs, and the notes say so. A path that exists is left alone; nothing outside the project is
# added.
_INSERTED = re.compile(r"sys\.path\.(?:insert|append)\(\s*(?:[\w.+-]+\s*,\s*)?[rRuU]?['\"](/[^'\"\n]+)['\"]\s*\)")


def package_root(script: str, project_root: str | None) -> tuple[str, str]:
    """(the folder to append to sys.path, the note) for `script`, or ("", "") when it needs none."""
    if not project_root:
        return "", ""
    root = os.path.realpath(project_root)
    folder = os.path.dirname(os.path.realpath(script))
    if folder == root or not folder.startswith(root + os.sep):
        return "", ""
    top = os.path.relpath(folder, root).split(os.sep)[0]
    if not os.path.isfile(os.path.join(root, top, "__init__.py")):
        return _package_elsewhere(script, folder, root)
    imports = re.compile(rf"^\s*(from\s+{re.escape(top)}(\.|\s)|import\s+{re.escape(top)}(\.|\s|,|$))", re.MULTILINE)
    if not any(imports.search(_source(name)) for name in _beside(script, folder)):
        return "", ""
    return root, (f"the project root put on the import path: the script (or a module beside it) imports its own "
                  f"package `{top}` (as an installed package gives it; `python SCRIPT` alone stops at that import)")


# NOTE [a script beside the project's package]
# The other common layout: the scripts in a folder of their own (`scripts/train.py`, not a package)
# and the project's package at the root or under `src/` (`gppinlib/`, `src/layout_diffusion/`),
# which the README installs first (`pip install -e .`). `python scripts/train.py` puts `scripts/`
# first on sys.path, so `from gppinlib.model import Net` stops there. When the script (or a module
# beside it) imports a top-level name that its own folder does not hold and that is a package of the
# project (`NAME/__init__.py` at the root, else under `src/`), that folder is put at the end of
# sys.path, as the editable install would, and the notes say so.
_TOP_IMPORT = re.compile(r"^\s*(?:from\s+([A-Za-z_]\w*)[\w.]*\s+import|import\s+([A-Za-z_]\w*))", re.MULTILINE)


def _package_elsewhere(script: str, folder: str, root: str) -> tuple[str, str]:
    """(the root or its src/, the note) for a script importing the project's package from outside it."""
    for name in _beside(script, folder):
        for found in _TOP_IMPORT.finditer(_source(name)):
            top = found.group(1) or found.group(2)
            if os.path.exists(os.path.join(folder, top)) or os.path.exists(os.path.join(folder, top + ".py")):
                continue
            for base in (root, os.path.join(root, "src")):
                if os.path.isfile(os.path.join(base, top, "__init__.py")):
                    where = os.path.relpath(base, root).replace(os.sep, "/")
                    shown = "the project root" if where == "." else f"the project's {where}/"
                    return base, (f"{shown} put on the import path: the script imports the project's package "
                                  f"`{top}` from outside it (as `pip install -e .` gives it; `python SCRIPT` alone "
                                  "stops at that import)")
    return "", ""


def absolute_inserts(script: str, project_root: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(project folders to append to sys.path, their notes) for the absolute import paths of the
    author's machine the script inserts (NOTE [an absolute import path of the author's machine])."""
    if not project_root:
        return (), ()
    root = os.path.realpath(project_root)
    folders: list[str] = []
    notes: list[str] = []
    for name in _beside(script, os.path.dirname(os.path.realpath(script))):
        for written in _INSERTED.findall(_source(name)):
            if os.path.exists(written):
                continue
            parts = [p for p in written.split("/") if p]
            for start in range(len(parts)):
                tail = os.path.join(root, *parts[start:])
                if os.path.isdir(tail) and os.path.realpath(tail).startswith(root + os.sep):
                    if tail not in folders:
                        folders.append(tail)
                        notes.append(f"the import path {written!r} of {os.path.basename(name)} (a folder of the "
                                     f"author's machine) read as the project's {os.path.relpath(tail, root)}/")
                    break
    return tuple(folders), tuple(notes)


def _beside(script: str, folder: str) -> list[str]:
    """The script, then the modules of its folder it imports by bare name (`from models import Net`)."""
    try:
        with os.scandir(folder) as entries:
            siblings = sorted(e.path for e in entries if e.name.endswith(".py") and e.is_file())
    except OSError:
        siblings = []
    source = _source(script)
    return [script, *(name for name in siblings[:MAX_SIBLINGS] if os.path.realpath(name) != os.path.realpath(script)
                      and _imported(os.path.basename(name)[:-3], source))]


def _imported(module: str, source: str) -> bool:
    return bool(re.search(rf"^\s*(from\s+{re.escape(module)}\s+import|import\s+([\w.]+\s*,\s*)*{re.escape(module)}"
                          r"(\s|,|$))", source, re.MULTILINE))


def _source(name: str) -> str:
    try:
        with open(name, encoding="utf-8", errors="replace") as handle:
            return handle.read(1 << 20)
    except OSError:
        return ""
