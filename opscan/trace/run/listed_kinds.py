"""The kind of file a project's code keeps from a listing, read from its source with `ast` (never run).

NOTE [the media kind a listing's code names]
A dataset that lists an absent folder with `os.walk`, `os.listdir`, `os.scandir` or a `pathlib`
listing keeps the names it wants by their suffix: `file.endswith(".jpg") or file.endswith(".png")`,
`os.path.splitext(f)[1] in ('.wav', '.flac')`, `any(name.endswith(e) for e in IMG_EXTENSIONS)`
over a module-level list. The listing's code names the kind, and when a stand-in reads that kind
(listings.MEDIA: PIL / cv2 images, audio clips, np.load arrays) the listing answers synthetic
names of it (NOTE [synthetic files of an absent media folder]). Read: the function around the line
that lists, else (it names none: `is_image_file(fname)` defined beside it) its module's own
statements (an extensions list) and the module's functions it calls by name; a string
constant that is a suffix (`.jpg`; a bare `jpg` only where it is compared: `ext in ['jpg', 'png']`)
where names are compared with it: an operand of a comparison, an argument of `endswith`, an element
of a list, tuple or set (an extensions list). The suffix chosen is the first, in source order, that
a stand-in reads. A suffix built into a name (`name + '.png'`, an output file) is not a comparison
and names nothing; code that names no suffix lists nothing (the empty listing, named when the run
stops on it: NOTE [an empty listing of absent data]).

NOTE [class folders of an absent dataset]
A dataset laid out one folder per class lists its root and keeps the folders: `classes = [d for d
in os.listdir(root) if os.path.isdir(os.path.join(root, d))]`, then lists each class folder for its
files (`glob.glob(folder + '/*.wav')`, `for f in os.listdir(new_dir): if f.endswith('.png')`). The
root's listing names no media kind, so it listed nothing and the run stopped there. When the
statement that lists (a comprehension, or a `for` with its body) asks `isdir` / `is_dir` of what it
lists, or lists again inside (a nested `os.listdir`, `glob`, `os.walk`, `scandir`), the listing of
the absent root answers CLASS_FOLDERS synthetic folder names, and `os.path.isdir` / `exists` of
those folders (and `Path.is_dir` / `exists`) answers True; each folder's own listing is then
answered by the rules above (its code names the media kind, or a glob names it) or fails at its
own line.
"""

from __future__ import annotations

import ast
import re

from opscan.trace.run import data_shapes

_SUFFIX = re.compile(r"\.?[A-Za-z0-9]{2,5}")
_COLLECTIONS = (ast.List, ast.Tuple, ast.Set)


def named_suffix(filename: str, line: int, readable: tuple[str, ...]) -> tuple[str, int] | None:
    """The first suffix of `readable` (lower case, with its dot) the code listing at `line` of
    `filename` compares names with, as written (with a dot), and the line it is written on."""
    parsed = data_shapes.tree(filename)
    if parsed is None:
        return None
    module, parents = parsed
    around = [n for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
              and n.lineno <= line <= (n.end_lineno or n.lineno)]
    function = max(around, key=lambda n: n.lineno) if around else None
    for scopes in ([function] if function else [], _beside(module, function)):
        found = sorted((node.lineno, node.col_offset, node.value) for scope in scopes for node in ast.walk(scope)
                       if isinstance(node, ast.Constant) and isinstance(node.value, str)
                       and _compared(node, parents))
        for at, _, text in found:
            suffix = text if text.startswith(".") else "." + text
            if suffix.lower() in readable:
                return suffix, at
    return None


_LISTINGS = ("listdir", "scandir", "walk", "glob", "iglob", "rglob", "iterdir")
_FOLDER_CHECKS = ("isdir", "is_dir")


def lists_folders(filename: str, line: int) -> bool:
    """Whether the statement listing at `line` of `filename` keeps folders: it asks `isdir` /
    `is_dir` of what it lists, or lists again inside (NOTE [class folders of an absent dataset])."""
    parsed = data_shapes.tree(filename)
    if parsed is None:
        return False
    module, _ = parsed
    around = [n for n in ast.walk(module) if isinstance(n, ast.stmt) and not isinstance(
        n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.lineno <= line <= (n.end_lineno or n.lineno)]
    if not around:
        return False
    statement = max(around, key=lambda n: n.lineno)
    calls = [data_shapes.called(n) for n in ast.walk(statement) if isinstance(n, ast.Call)]
    return any(c in _FOLDER_CHECKS for c in calls) or sum(c in _LISTINGS for c in calls) >= 2


def _beside(module: ast.Module, function: ast.AST | None) -> list[ast.AST]:
    """The module's own statements (an extensions list), and the module's functions the listing's
    function calls by name (`is_image_file(fname)`); never the module's other functions."""
    defined = {n.name: n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    called = {data_shapes.called(n) for n in ast.walk(function) if isinstance(n, ast.Call)} if function else set()
    return [n for n in module.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))] + \
        [defined[name] for name in sorted(called) if name in defined and defined[name] is not function]


def _compared(node: ast.Constant, parents: dict[int, ast.AST]) -> bool:
    """Whether a suffix constant is one names are compared with (NOTE [the media kind a listing's code names])."""
    if not _SUFFIX.fullmatch(node.value):
        return False
    dotted = node.value.startswith(".")
    parent = parents.get(id(node))
    if isinstance(parent, ast.Compare):
        return True
    if isinstance(parent, ast.Call) and node in parent.args:
        return dotted and data_shapes.called(parent) == "endswith"
    if isinstance(parent, _COLLECTIONS):
        outer = parents.get(id(parent))
        if isinstance(outer, ast.Compare) or isinstance(outer, ast.Call) and data_shapes.called(outer) == "endswith":
            return True
        return dotted
    return False
