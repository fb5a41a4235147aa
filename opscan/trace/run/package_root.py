"""The project root on the import path of a script inside the project's own package.

NOTE [a script inside its package]
`python gae/train.py` puts `gae/` first on sys.path, so the script's `from gae.model import ...`
finds no package `gae` unless the project is installed (`pip install -e .`) or run with the root on
PYTHONPATH, which research READMEs often leave unsaid. When the script's folder is a package folder
inside the project (it holds `__init__.py`) and the script imports that package by name, the run
puts the project root at the end of sys.path, as an editable install would, and its notes say so:
the command as written would stop at that import.
"""

from __future__ import annotations

import os
import re


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
    try:
        with open(script, encoding="utf-8", errors="replace") as handle:
            source = handle.read()
    except OSError:
        return "", ""
    if not re.search(rf"^\s*(from\s+{re.escape(top)}(\.|\s)|import\s+{re.escape(top)}(\.|\s|,|$))", source,
                     re.MULTILINE):
        return "", ""
    return root, (f"the project root put on the import path: the script imports its own package `{top}` "
                  "(as an installed package gives it; `python SCRIPT` alone stops at that import)")
