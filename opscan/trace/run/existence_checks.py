"""A script's assertion that its absent data exists, answered as the stand-ins answer the read.

NOTE [an asserted existence of absent data]
Research scripts check their data before reading it: `assert os.path.exists(args.train_path),
f'{args.train_path} does not exist!'`, `if not os.path.isfile(p): raise FileNotFoundError(p)`,
`assert os.path.isdir(dir)` before a listing (NOTE [the media kind a listing's code names]).
With the data absent, the run stopped at that check, before the read the stand-ins answer. While
a command runs with stand-ins (`opscan run` keeps them off), `os.path.exists` / `isfile` / `isdir`
of a path the stand-ins answer (absent, or outside the project: StandIns.answers) answers True
when the project's line that asks is such a check: the call is in the test of an `assert`, or in
the test of an `if` whose body only raises or exits. Every other check answers as it is (`if not
os.path.exists(out): os.makedirs(out)` makes its folder; `if os.path.exists(ckpt): resume` does
not resume), read from the project's own source with `ast`, never run. The read after the check
is answered by its stand-in, or fails at its own line naming the file; the report names each
check so answered (kind `data`).
"""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Callable

from opscan.trace.run import data_shapes
from opscan.trace.run.stand_ins import Patches, StandIns, library_roots

_CHECKS = ("exists", "isfile", "isdir")
_EXITS = ("exit", "_exit", "abort")


def install(stand_ins: StandIns, patches: Patches) -> dict[str, Callable]:
    """os.path.exists, os.path.isfile and os.path.isdir patched now; Path.is_dir and Path.exists for
    synthetic class folders (listings.py)."""
    import pathlib

    for name in _CHECKS:
        patches.set(os.path, name, _check(getattr(os.path, name), name, stand_ins))
    for name in ("is_dir", "exists"):
        patches.set(pathlib.Path, name, _path_check(getattr(pathlib.Path, name), stand_ins))
    return {}


def _check(original: Callable, name: str, stand_ins: StandIns) -> Callable:
    busy: list[bool] = []   # StandIns.answers checks existence itself

    def check(path):
        found = original(path)
        if found or busy or not stand_ins.root:
            return found
        if stand_ins.folders and name != "isfile" and _synthetic_folder(path, stand_ins):
            return True   # NOTE [class folders of an absent dataset] in listed_kinds.py
        busy.append(True)
        try:
            answered = stand_ins.answers(path)
        finally:
            busy.pop()
        if not answered:
            return found
        frame = sys._getframe(1)
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(stand_ins.root + os.sep) or \
                os.path.realpath(filename).startswith(library_roots()):
            return found
        if not asserted(filename, frame.f_lineno, name):
            return found
        stand_ins.record("data", os.fspath(path), f"its existence check ({name}) answered True: the script "
                         "asserts it before reading it, and the read is stood in for (NOTE [an asserted "
                         "existence of absent data])")
        return True
    return check


def _synthetic_folder(path, stand_ins: StandIns) -> bool:
    try:
        text = os.fspath(path)
    except TypeError:
        return False
    return isinstance(text, str) and bool(text) and os.path.normpath(os.path.abspath(text)) in stand_ins.folders


def _path_check(original: Callable, stand_ins: StandIns) -> Callable:
    """`Path.is_dir` / `Path.exists` of a synthetic class folder: True (else as it is)."""
    def check(self, *args, **kwargs):
        return bool(stand_ins.folders) and _synthetic_folder(self, stand_ins) or original(self, *args, **kwargs)
    return check


def asserted(filename: str, line: int, name: str) -> bool:
    """Whether a call of `name` spanning `line` is in an `assert`'s test or an `if` test whose body
    only raises or exits."""
    parsed = data_shapes.tree(filename)
    if parsed is None:
        return False
    module, parents = parsed
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and data_shapes.called(node) == name and \
                node.lineno <= line <= (node.end_lineno or node.lineno) and _guards(node, parents):
            return True
    return False


def _guards(call: ast.Call, parents: dict[int, ast.AST]) -> bool:
    child: ast.AST = call
    parent = parents.get(id(child))
    while isinstance(parent, (ast.UnaryOp, ast.BoolOp)):   # `not exists(p)`, `exists(a) and exists(b)`
        child, parent = parent, parents.get(id(parent))
    if isinstance(parent, ast.Assert):
        return parent.test is child
    if isinstance(parent, ast.If) and parent.test is child and not parent.orelse:
        return any(_stops(s) for s in parent.body) and all(_stops(s) or _said(s) for s in parent.body)
    return False


def _stops(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Raise):
        return True
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) and \
        data_shapes.called(statement.value) in _EXITS


def _said(statement: ast.stmt) -> bool:
    """A message before the stop: `print(...)`, `logger.error(...)`, a string."""
    return isinstance(statement, ast.Expr) and (isinstance(statement.value, ast.Constant) or isinstance(
        statement.value, ast.Call) and data_shapes.called(statement.value) in ("print", "error", "critical", "warning"))
