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
        return "", ""
    imports = re.compile(rf"^\s*(from\s+{re.escape(top)}(\.|\s)|import\s+{re.escape(top)}(\.|\s|,|$))", re.MULTILINE)
    if not any(imports.search(_source(name)) for name in _beside(script, folder)):
        return "", ""
    return root, (f"the project root put on the import path: the script (or a module beside it) imports its own "
                  f"package `{top}` (as an installed package gives it; `python SCRIPT` alone stops at that import)")


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
