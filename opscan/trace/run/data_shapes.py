"""The shape of an absent data file, read from how the project's code uses what it loads (NOTE [data
shaped by its use] in table_stand_ins.py): the project's own source, read with `ast`, never run.

A `Shape` is what one value must be for the code around its load site to run: a dict with the string
keys it is subscripted with, a list of records when it is iterated, indexed by an integer or sized, a
text line split into columns, an int, a float, a text or a file name.
"""

from __future__ import annotations

import ast
import io
import os
from dataclasses import dataclass, field

from opscan.trace.run.data_stand_ins import VOCABULARY

DEPTH = 32   # steps of uses followed through names, keys and calls, at most (cycles stop on their own)
_STRING_METHODS = {"strip", "lower", "upper", "rstrip", "lstrip", "replace", "encode", "decode", "casefold"}
_PASS_THROUGH = {"enumerate", "tqdm", "list", "sorted", "reversed", "tuple", "iter", "trange", "asarray", "array",
                 "ascontiguousarray"}
_PATH_JOINS = {"join", "Path", "PurePath"}
# NOTE [numbers handed to a tensor]
# A value the code hands to a tensor constructor (`torch.tensor(seq[:5])`, `torch.FloatTensor(mat1)`,
# `torch.LongTensor(x)`) holds numbers: int for `tensor`, `as_tensor` and the integer constructors
# (indices, the common case of a preprocessed corpus: an assumption the note states), float for the
# floating ones. A slice of the value so handed (`seq[:5]`) is a list of them, as long as the slice's
# end at least (`seq[5:10]`: 10; at most 64); the constructors
# of a type (`FloatTensor`, `LongTensor`) take a sequence, so a value handed whole to one is a list
# of numbers, while `torch.tensor(x)` of a value used nowhere else is one number. Before this a
# value used only so was a short text, and the constructor stopped the run (`new(): invalid data
# type 'str'`).
TENSORS = {"tensor": "int", "as_tensor": "int", "LongTensor": "int", "IntTensor": "int",
           "FloatTensor": "float", "DoubleTensor": "float", "HalfTensor": "float"}
SEQUENCE_TENSORS = ("LongTensor", "IntTensor", "FloatTensor", "DoubleTensor", "HalfTensor")


@dataclass
class Shape:
    """What a value must be for the code that uses it (see the module's docstring)."""

    kind: str = ""   # "" unknown | dict | list | int | float | str | sized (str or list) | path | row | json
    keys: dict[str, Shape] = field(default_factory=dict)     # dict: constant keys
    templates: dict[str, Shape] = field(default_factory=dict)  # dict: keys made by formatting an int ('video%i')
    item: Shape | None = None                        # list: each element; json: the decoded line
    columns: list[Shape] = field(default_factory=list)         # row (a split line) or a list unpacked into names
    sep: str | None = None                           # row: the separator split on (None: whitespace)
    vocabulary: bool = False                         # a dict indexed by words (named word_to_ix, vocab, ...)
    rest: bool = False                               # sliced open-ended past a column (`line[1:]`): width not known
    lines: list[tuple[str, int]] = field(default_factory=list)   # (file, line) of the code that used it
    tensor: str = ""   # int/float handed to this tensor constructor (NOTE [numbers handed to a tensor])

    def merge(self, other: Shape) -> Shape:
        if other.kind and (not self.kind or _RANK[other.kind] > _RANK[self.kind]):
            self.kind = other.kind
        for name, sub in other.keys.items():
            self.keys[name] = self.keys[name].merge(sub) if name in self.keys else sub
        for name, sub in other.templates.items():
            self.templates[name] = self.templates[name].merge(sub) if name in self.templates else sub
        if other.item is not None:
            self.item = self.item.merge(other.item) if self.item is not None else other.item
        for i, sub in enumerate(other.columns):
            if i < len(self.columns):
                self.columns[i] = self.columns[i].merge(sub)
            else:
                self.columns.append(sub)
        self.sep = self.sep if self.sep is not None else other.sep
        self.vocabulary = self.vocabulary or other.vocabulary
        self.rest = self.rest or other.rest
        self.tensor = self.tensor or other.tensor
        if self.kind == "list" and self.tensor and self.item is None and not self.columns:
            self.item = Shape(TENSORS[self.tensor])   # a list handed to a tensor: NOTE [numbers handed to a tensor]
        self.lines = sorted(set(self.lines) | set(other.lines))
        return self

    def known(self) -> bool:
        """Whether the uses say something of the value's content: a key, a column, a leaf's kind (a list
        only iterated, or unpacked into names used nowhere readable, says nothing)."""
        if self.kind == "dict":
            return bool(self.keys or self.templates or self.vocabulary)
        if self.kind == "list":
            return any(c.known() for c in self.columns) or (self.item is not None and self.item.known())
        if self.kind == "json":
            return self.item is not None and self.item.known()
        if self.kind == "row":   # a line whose columns past k are taken as a rest: its width is the file's
            return not self.rest
        return bool(self.kind)

    def describe(self, depth: int = 0) -> str:
        """One line: "a list of {'image_id': int, 'caption': str} records"."""
        if depth > 3:
            return "..."
        if self.kind == "dict" and self.vocabulary and not self.keys:
            return "a vocabulary (word -> index)"
        if self.kind == "dict":
            parts = [f"{k!r}: {v.describe(depth + 1)}" for k, v in self.keys.items()]
            parts += [f"{k!r} % i: {v.describe(depth + 1)}" for k, v in self.templates.items()]
            return "{" + ", ".join(parts) + "}"
        if self.kind == "list" and self.columns and self.item is None:
            return "(" + ", ".join(c.describe(depth + 1) for c in self.columns) + ")"
        if self.kind == "list":
            return "[" + (self.item.describe(depth + 1) if self.item else "str") + ", ...]"
        if self.kind == "row":
            sep = "whitespace" if self.sep is None else repr(self.sep)
            return f"{len(self.columns) or 1} column(s) split on {sep}: " + \
                ", ".join(c.describe(depth + 1) for c in self.columns)
        if self.kind == "json":
            return "a JSON record " + (self.item.describe(depth + 1) if self.item else "{}")
        if self.tensor in SEQUENCE_TENSORS and self.kind in ("int", "float"):
            return f"[{self.kind}, ...]"
        return "str" if self.kind in ("", "sized") else self.kind


_RANK = {"": 0, "sized": 1, "str": 2, "word": 2, "path": 2, "int": 3, "float": 4, "list": 5, "row": 6, "json": 6,
         "dict": 7}


# --- the project's source -----------------------------------------------------------------------

_TREES: dict[str, tuple[ast.Module, dict[int, ast.AST]] | None] = {}


def tree(filename: str) -> tuple[ast.Module, dict[int, ast.AST]] | None:
    """The parsed file and its parent map (by id), or None when it cannot be read."""
    if filename not in _TREES:
        try:
            with io.open(filename, encoding="utf-8") as handle:   # io.open: the run's open() is patched
                module = ast.parse(handle.read())
        except (OSError, SyntaxError, ValueError):
            _TREES[filename] = None
            return None
        parents: dict[int, ast.AST] = {}
        for node in ast.walk(module):
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
        _TREES[filename] = (module, parents)
    return _TREES[filename]


def call_at(filename: str, line: int, names: tuple[str, ...], root: str = "",
            stack: tuple[tuple[str, int], ...] = ()) -> tuple[ast.Call, Reader] | None:
    """The call of one of `names` (a function or method name; "<with>": any call a `with` enters)
    spanning `line` of `filename`."""
    parsed = tree(filename)
    if parsed is None:
        return None
    module, parents = parsed
    found = [node for node in ast.walk(module) if isinstance(node, ast.Call) and node.lineno <= line <=
             (node.end_lineno or node.lineno) and (called(node) in names or "<with>" in names and
                                                   isinstance(parents.get(id(node)), ast.withitem))]
    if not found:
        return None
    call = min(found, key=lambda node: (node.end_lineno or node.lineno) - node.lineno)
    return call, Reader(parents, _shown(filename, root), root, stack=stack)


def _shown(filename: str, root: str) -> str:
    inside = root and filename.startswith(root + os.sep)
    return os.path.relpath(filename, root) if inside else os.path.basename(filename)


def called(call: ast.Call) -> str:
    """The name a call calls: `f` of `f(...)`, `load` of `json.load(...)`."""
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


# --- reading the uses --------------------------------------------------------------------------

class Reader:
    """Follows one value's uses through the function (and class) around its load site."""

    def __init__(self, parents: dict[int, ast.AST], filename: str, root: str = "",
                 seen: set[tuple[int, str]] | None = None, stack: tuple[tuple[str, int], ...] = ()) -> None:
        self.parents = parents
        self.filename = filename
        self.root = root
        self.stack = stack   # the run's callers of the load site: (file, line), innermost first
        self._seen: set[tuple[int, str]] = seen if seen is not None else set()

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.parents.get(id(node))

    def scope(self, node: ast.AST) -> ast.AST:
        """The function around `node` (or the module)."""
        current = self.parent(node)
        while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            current = self.parent(current)
        return current if current is not None else node

    def bound(self, target: ast.AST, at: ast.AST, depth: int) -> Shape:
        """The shape of what is bound to `target` (a name, `self.x`, or a tuple of them) at `at`."""
        if isinstance(target, (ast.Tuple, ast.List)):
            return Shape("list", columns=[self.bound(t, at, depth) for t in target.elts])
        scope = self.scope(at)
        if isinstance(target, ast.Name):
            key = (id(scope), target.id)
            uses = [n for n in _own(scope) if isinstance(n, ast.Name) and n.id == target.id
                    and isinstance(n.ctx, ast.Load)]
            vocabulary = _vocabulary_name(target.id)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            cls = scope
            while cls is not None and not isinstance(cls, ast.ClassDef):
                cls = self.parent(cls)
            scope = cls if cls is not None else scope
            key = (id(scope), "self." + target.attr)
            uses = [n for n in ast.walk(scope) if isinstance(n, ast.Attribute) and n.attr == target.attr
                    and isinstance(n.value, ast.Name) and n.value.id == "self" and isinstance(n.ctx, ast.Load)]
            vocabulary = _vocabulary_name(target.attr)
        else:
            return Shape()
        if key in self._seen or depth > DEPTH:
            return Shape()
        self._seen.add(key)
        shape = Shape()
        for use in uses:
            shape.merge(self.used(use, depth + 1))
        self._seen.discard(key)
        if vocabulary and shape.kind in ("", "list", "dict") and not shape.keys:
            shape = Shape("dict", vocabulary=True, lines=shape.lines)
        return shape

    def _callee(self, call: ast.Call) -> ast.FunctionDef | None:
        """The function of this file that `call` calls: `f(...)` or `self.f(...)`, by its name."""
        func = call.func
        if isinstance(func, ast.Name):
            name = func.id
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            name = func.attr
        else:
            return None
        module = call
        while self.parent(module) is not None:
            module = self.parent(module)   # type: ignore[assignment]
        found = [n for n in ast.walk(module) if isinstance(n, ast.FunctionDef) and n.name == name]
        if not found and isinstance(func, ast.Name):   # a class of this file: its __init__
            found = [m for n in ast.walk(module) if isinstance(n, ast.ClassDef) and n.name == name
                     for m in n.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"]
        return found[0] if len(found) == 1 else None

    def bound_in(self, function: ast.FunctionDef, name: str, depth: int) -> Shape:
        """The shape of parameter `name` of `function`, from its uses there."""
        key = (id(function), name)
        if key in self._seen or depth > DEPTH:
            return Shape()
        self._seen.add(key)
        shape = Shape()
        for use in _own(function):
            if isinstance(use, ast.Name) and use.id == name and isinstance(use.ctx, ast.Load):
                shape.merge(self.used(use, depth + 1))
        self._seen.discard(key)
        return shape

    def _returned(self, node: ast.Return, depth: int) -> Shape:
        """The shape the caller of the function around `node` needs of what it returns: the run's own
        caller (`self.stack`), else every call of its name in the project's own files (a name defined
        once in the project)."""
        function = self.scope(node)
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or function.name.startswith("__"):
            return Shape()
        key = (id(function), "<return>")
        if key in self._seen or depth > DEPTH:
            return Shape()
        self._seen.add(key)
        shape = Shape()
        for i, (filename, line) in enumerate(self.stack):   # the caller this run came from: its use alone
            found = call_at(filename, line, (function.name,), self.root, self.stack[i + 1:])
            if found is not None:
                call, reader = found
                reader._seen = self._seen
                shape = reader.used(call, depth + 1)
                self._seen.discard(key)
                return shape
        for filename, call in _calls(self.root, function.name):   # no run's caller known: every call
            parsed = tree(filename)
            if parsed is not None:
                shape.merge(Reader(parsed[1], _shown(filename, self.root), self.root, self._seen).used(call, depth + 1))
        self._seen.discard(key)
        return shape

    def used(self, node: ast.AST, depth: int = 0) -> Shape:
        """The shape the value of expression `node` must have, from its parent in the code."""
        parent = self.parent(node)
        line = [(self.filename, getattr(node, "lineno", 0))]
        if parent is None or depth > DEPTH:
            return Shape()
        if isinstance(parent, ast.Subscript) and parent.value is node:
            return self._subscript(parent, depth, line)
        if isinstance(parent, ast.Subscript) and parent.slice is node and _vocabulary_name(_name(parent.value)):
            return Shape("word", lines=line)
        if isinstance(parent, ast.Call) and node in parent.args:
            return self._argument(parent, node, depth, line)
        if isinstance(parent, ast.keyword) and parent.arg:   # f(data=x): the parameter of that name
            call = self.parent(parent)
            callee = self._callee(call) if isinstance(call, ast.Call) else None
            if callee is not None:
                return self.bound_in(callee, parent.arg, depth + 1)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return self._method(parent, depth, line)
        if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node:
            return Shape("list", item=self.bound(parent.target, parent, depth), lines=line)
        if isinstance(parent, ast.Assign) and parent.value is node:
            shape = Shape(lines=line)
            for target in parent.targets:
                shape.merge(self.bound(target, parent, depth))
            return shape
        if isinstance(parent, (ast.AnnAssign, ast.NamedExpr)) and parent.value is node and parent.target is not None:
            return self.bound(parent.target, parent, depth)
        if isinstance(parent, ast.withitem) and parent.optional_vars is not None:
            return self.bound(parent.optional_vars, parent, depth)
        if isinstance(parent, (ast.ListComp, ast.GeneratorExp, ast.SetComp)) and parent.elt is node:
            outer = self.used(parent, depth + 1)   # [f(x) for x in xs]: each element of what it makes
            return outer.item or Shape()
        if isinstance(parent, ast.Return) and self.root:   # `def load_json(p): return json.load(...)`
            return self._returned(parent, depth)
        if isinstance(parent, ast.BinOp) and not isinstance(parent.op, ast.Mod):   # x + 1.0, x / 2
            other = parent.right if parent.left is node else parent.left
            if isinstance(other, ast.Constant) and isinstance(other.value, (int, float)) \
                    and not isinstance(other.value, bool):
                return Shape("float" if isinstance(other.value, float) or isinstance(parent.op, ast.Div) else "int",
                             lines=line)
        if isinstance(parent, ast.Compare) and any(isinstance(c, ast.Constant) and isinstance(c.value, (int, float))
                                                  and not isinstance(c.value, bool) for c in parent.comparators):
            number = next(c.value for c in parent.comparators if isinstance(c, ast.Constant))
            return Shape("float" if isinstance(number, float) else "int", lines=line)
        return Shape()

    def _subscript(self, parent: ast.Subscript, depth: int, line: list[int]) -> Shape:
        index = parent.slice
        inner = self.used(parent, depth + 1)
        if isinstance(index, ast.Constant) and isinstance(index.value, str):
            return Shape("dict", keys={index.value: inner}, lines=line)
        template = _template(index)
        if template:
            return Shape("dict", templates={template: inner}, lines=line)
        if isinstance(index, ast.Slice):   # `vec = line[1:]`: as many more columns as the file has
            rest = index.upper is None and isinstance(index.lower, ast.Constant) and bool(index.lower.value)
            if rest and inner.kind == "str" and isinstance(index.lower.value, int) and index.lower.value <= 64:
                # `' '.join(parts[1:])`: the rest of the line joined into a text, of any width; one
                # word stands for it (not a vector whose width only the file knows)
                return Shape("list", columns=[Shape()] * (index.lower.value + 1), lines=line)
            if inner.tensor:   # `torch.tensor(seq[:5])`: NOTE [numbers handed to a tensor]
                upper = index.upper.value if isinstance(index.upper, ast.Constant) else 0
                least = [Shape(inner.kind)] * upper if isinstance(upper, int) and 0 < upper <= 64 else []
                return Shape("list", item=Shape(inner.kind, lines=inner.lines), columns=least, lines=line)
            return Shape("list", rest=rest, lines=line).merge(inner if inner.kind == "list" else Shape())
        if isinstance(index, ast.Tuple):   # numpy: data[:, 3] (a column), map[y0:y1, x0:x1] (2-D)
            width = max((e.value for e in index.elts if isinstance(e, ast.Constant) and isinstance(e.value, int)),
                        default=-1)
            inner = Shape("list", columns=[Shape("float")] * (width + 1)) if width >= 0 else Shape("list")
            for _ in range(len(index.elts) - 2):
                inner = Shape("list", item=inner)
            return Shape("list", item=inner, lines=line)
        if isinstance(index, ast.Constant) and isinstance(index.value, int) and index.value >= 0:
            return Shape("list", columns=[Shape()] * index.value + [inner], lines=line)
        return Shape("list", item=inner, lines=line)

    def _argument(self, parent: ast.Call, node: ast.AST, depth: int, line: list[int]) -> Shape:
        name = called(parent)
        if name == "len":   # a text or a list: a text unless another use says list
            return Shape("sized", lines=line)
        if name in ("int", "float"):
            return Shape(name, lines=line)
        if name in TENSORS and parent.args and parent.args[0] is node:   # NOTE [numbers handed to a tensor]
            return Shape(TENSORS[name], lines=line, tensor=name)
        if name == "join" and isinstance(parent.func, ast.Attribute) and isinstance(parent.func.value, ast.Constant) \
                and isinstance(parent.func.value.value, str):   # `' '.join(words)`: a text, not a path
            return Shape("str", lines=line)
        if name in _PATH_JOINS or name in ("imread", "open", "load", "exists", "isfile"):
            return Shape("path", lines=line)
        if name in ("loads",):   # json.loads(line)
            return Shape("json", item=self.used(parent, depth + 1), lines=line)
        callee = self._callee(parent)
        if callee is not None:
            params = [a.arg for a in callee.args.posonlyargs + callee.args.args]
            if params and params[0] in ("self", "cls") and (isinstance(parent.func, ast.Attribute)
                                                            or callee.name == "__init__"):
                params = params[1:]
            position = parent.args.index(node)   # type: ignore[arg-type]
            if position < len(params):
                return self.bound_in(callee, params[position], depth + 1)
        if name in _PASS_THROUGH and parent.args and parent.args[0] is node:
            outer = self.used(parent, depth + 1)
            if name == "enumerate" and outer.item is not None and len(outer.item.columns) == 2:
                return Shape("list", item=outer.item.columns[1], lines=line)
            return outer
        return Shape()

    def _method(self, parent: ast.Attribute, depth: int, line: list[int]) -> Shape:
        call = self.parent(parent)
        called = isinstance(call, ast.Call) and call.func is parent
        if parent.attr in _STRING_METHODS and called:
            outer = self.used(call, depth + 1)
            return outer if outer.kind in ("row", "json") else Shape("str", lines=line)
        if parent.attr == "split" and called:
            assert isinstance(call, ast.Call)
            value = call.args[0].value if call.args and isinstance(call.args[0], ast.Constant) else None
            sep = value.decode("utf-8", "replace") if isinstance(value, bytes) else value if isinstance(value, str) \
                else None
            outer = self.used(call, depth + 1)
            return Shape("row", sep=sep, columns=list(outer.columns), rest=outer.rest, lines=line)
        if parent.attr in ("items", "values") and called:
            assert isinstance(call, ast.Call)
            outer = self.used(call, depth + 1)
            value = outer.item
            if value is not None and parent.attr == "items":
                value = value.columns[1] if len(value.columns) == 2 else None
            return Shape("dict", templates={"key%d": value or Shape()}, lines=line)
        if parent.attr == "keys" and called:
            return Shape("dict", lines=line)
        if parent.attr == "get" and called:
            assert isinstance(call, ast.Call)
            if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
                return Shape("dict", keys={call.args[0].value: self.used(call, depth + 1)}, lines=line)
            return Shape("dict", lines=line)
        return Shape()


PROJECT_FILES = 3000   # project files read for the callers of a loading function, at most
_SKIP = {".git", "site-packages", "dist-packages", "node_modules", "__pycache__", "venv", ".venv", "_venv", ".tox"}
_INDEX: dict[str, tuple[dict[str, int], dict[str, list[tuple[str, ast.Call]]]]] = {}


def _calls(root: str, name: str) -> list[tuple[str, ast.Call]]:
    """The calls of `name` in the project's Python files, when exactly one of them defines `name`."""
    if root not in _INDEX:
        defined: dict[str, int] = {}
        calls: dict[str, list[tuple[str, ast.Call]]] = {}
        count = 0
        for folder, folders, files in os.walk(root):
            folders[:] = sorted(f for f in folders if f not in _SKIP and not f.startswith("."))
            for file in sorted(files):
                if not file.endswith(".py") or count >= PROJECT_FILES:
                    continue
                count += 1
                path = os.path.join(folder, file)
                parsed = tree(path)
                if parsed is None:
                    continue
                for node in ast.walk(parsed[0]):
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        defined[node.name] = defined.get(node.name, 0) + 1
                    elif isinstance(node, ast.Call) and called(node):
                        calls.setdefault(called(node), []).append((path, node))
        _INDEX[root] = (defined, calls)
    defined, calls = _INDEX[root]
    return calls.get(name, []) if defined.get(name) == 1 else []


def _own(scope: ast.AST):
    """The nodes of `scope` outside the functions and classes defined in it."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _template(index: ast.AST) -> str:
    """A key made from an int: `'video%i' % ix`, `f'video{ix}'`, `'video{}'.format(ix)` -> 'video%d'."""
    if isinstance(index, ast.BinOp) and isinstance(index.op, ast.Mod) and isinstance(index.left, ast.Constant) \
            and isinstance(index.left.value, str) and index.left.value.count("%") == 1:
        text = index.left.value
        for spec in ("%i", "%d", "%s"):
            if spec in text:
                return text.replace(spec, "%d")
    if isinstance(index, ast.JoinedStr) and sum(isinstance(v, ast.FormattedValue) for v in index.values) == 1:
        return "".join("%d" if isinstance(v, ast.FormattedValue) else str(getattr(v, "value", "")).replace("%", "%%")
                       for v in index.values)
    if isinstance(index, ast.Call) and isinstance(index.func, ast.Attribute) and index.func.attr == "format" \
            and isinstance(index.func.value, ast.Constant) and isinstance(index.func.value.value, str) \
            and index.func.value.value.count("{}") == 1 and len(index.args) == 1:
        return index.func.value.value.replace("%", "%%").replace("{}", "%d")
    return ""


def _name(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _vocabulary_name(name: str) -> bool:
    return bool(VOCABULARY.search(name)) or name.lower() in ("word_to_ix", "word2ix", "stoi", "w2idx")
