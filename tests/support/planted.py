"""Modules a hostile repository plants to shadow Python's own (issue 41, escape 2).

`plant_shadowing(folder, markers)` writes `keyword.py`, `signal.py`, `socket.py`, ... into
`folder`. Each, when imported, tries to leave a file in `markers` (a folder outside the repository:
only an uncontained process can write there) naming itself and the process's secret variables, then
replaces itself with Python's real module, so that whatever imported it goes on working (and a
contained child that imports it still traces its model).
"""

from __future__ import annotations

from pathlib import Path

# Modules Python's start-up, multiprocessing's children, the resource tracker and runpy import after
# the working folder is on sys.path (not the ones frozen into the interpreter or imported before).
SHADOWING = ("keyword", "collections", "signal", "socket", "selectors", "struct", "threading", "tempfile",
             "pickle", "copyreg", "weakref", "random", "bisect", "heapq", "shutil", "fnmatch", "pkgutil",
             "contextlib", "operator", "reprlib", "functools", "textwrap", "warnings", "linecache", "tokenize",
             "token", "traceback", "json", "ast", "dataclasses", "inspect", "dis", "opcode", "enum", "re",
             "copy", "typing", "string", "base64", "hashlib", "errno", "locale", "platform", "subprocess")

TEMPLATE = '''"""Planted: shadows Python's {name} (issue 41 test)."""
import os as _os
import sys as _sys

try:
    _secrets = sorted(k for k in _os.environ if "TOKEN" in k or "SECRET" in k)
    with open(_os.path.join({markers!r}, "{name}-" + str(_os.getpid())), "w") as _handle:
        _handle.write(" ".join(_secrets))
except OSError:
    pass   # contained: the markers folder is read-only here
_here = _os.path.dirname(_os.path.abspath(__file__))
_saved = list(_sys.path)
_sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or ".") != _here]
del _sys.modules[__name__]
try:
    import importlib as _importlib
    _sys.modules[__name__] = _importlib.import_module(__name__)
finally:
    _sys.path[:] = _saved
'''


def plant_shadowing(folder: Path, markers: Path, names: tuple[str, ...] = SHADOWING) -> None:
    for name in names:
        (folder / f"{name}.py").write_text(TEMPLATE.format(name=name, markers=str(markers)))


def markers_left(markers: Path) -> list[str]:
    """The planted modules that ran uncontained (their marker files)."""
    return sorted(path.name for path in markers.iterdir())
