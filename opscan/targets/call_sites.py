"""How the repository itself uses a model class, read from its call sites (stdlib ast; nothing is
imported or run): the setup calls it makes on an instance before calling it, and the call.

`usage(root, rel, name)` finds, in the repository's Python files that mention the class, variables
bound to an instance of it: built by the class (`Transformer(args)`), by one of its class methods
(`Transformer.from_name(...)`, `from_pretrained`, ...), by a function of the same file returning one,
or a parameter annotated with the class (`def generate(model: Transformer, ...)`). On such a
variable it reads the methods of the class that set state (their body assigns an attribute:
`setup_caches`, `init_cache`, ...) called as statements before the variable is called, and the call
itself (`model(x, input_pos)`: its arguments' names). Used by opscan/targets/discovery.py (the candidate's
note) and, identically, by opscan/targets/repository.py in the contained child (NOTE [setup calls]).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from opscan.index import ProjectIndex

MAX_BYTES = 2 << 20       # larger files are not read
# The files read are the project index's (opscan/index: its one walk and skip list, each file read
# and parsed once for the run, NOTE [one project index]).
_NOT_SETUP = {"forward", "__init__", "__call__", "extra_repr", "reset_parameters"}


@dataclass(frozen=True)
class Setup:
    """`var.method(...)` as the repository calls it: the keyword names and positional count it passes."""

    method: str
    keywords: tuple[str, ...]
    positional: int
    where: str            # FILE:LINE


@dataclass(frozen=True)
class Call:
    """`var(...)`: the names of the arguments it passes ("" where an argument is no plain name)."""

    args: tuple[str, ...]
    keywords: tuple[str, ...]
    where: str


@dataclass(frozen=True)
class Usage:
    setups: tuple[Setup, ...]
    call: Call | None
    kinds: tuple[tuple[str, str], ...] = ()   # (argument name, how the repository makes it: "arange", "arange2d")

    def words(self) -> str:
        """How the report says it, e.g. `setup call .setup_caches(max_batch_size, max_seq_length) from
        generate.py:168; inputs as model(x, input_pos) at generate.py:61`."""
        parts = [f"setup call .{s.method}({', '.join(s.keywords)}) from {s.where}" for s in self.setups]
        if self.call is not None:
            shown = ", ".join([a or "..." for a in self.call.args] + [f"{k}=" for k in self.call.keywords])
            parts.append(f"inputs as ({shown}) at {self.call.where}")
        return "; ".join(parts)


def usage(project: ProjectIndex | Path, rel: str, name: str, setups_only: bool = False) -> Usage | None:
    """The repository's use of the class `name` defined in `rel` (module docstring), else None;
    with `setups_only`, None at once when the class has no setup method (nothing else is read).
    `project`: the run's project index, or the repository's root (then read through a new index)."""
    index = project if isinstance(project, ProjectIndex) else ProjectIndex(project)
    root = index.root
    own = index.tree(rel, MAX_BYTES)
    cls = next((n for n in own.body if isinstance(n, ast.ClassDef) and n.name == name), None) if own else None
    if cls is None:
        return None
    setters = setup_methods(cls)
    if setups_only and not setters:
        return None
    setups: list[Setup] = []
    calls: list[tuple[Call, bool]] = []       # (call, in the scope of the setups taken)
    assigned: dict[str, str] = {}
    for path in _files(index, name):
        file_rel = index.rel(path)
        tree = own if file_rel == rel else index.tree(file_rel, MAX_BYTES)
        if tree is None:
            continue
        aliases = {name} if file_rel == rel else _imported(tree, name, path, root, root / rel)
        if not aliases:
            continue
        factories = _factories(tree, aliases)
        for scope in _scopes(tree, aliases | factories):
            found_setups, found_calls = _read_scope(scope, aliases, factories, setters, file_rel)
            take = not setups and bool(found_setups)
            if take:
                setups = found_setups
            calls.extend((c, take) for c in found_calls)
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                kind = _kind(node.value)
                if kind:
                    assigned.setdefault(node.targets[0].id, kind)
    call = next((c for c, near in calls if near), None) or (calls[0][0] if calls else None)
    if not setups and (call is None or setups_only):
        return None
    names = set(call.args + call.keywords) if call is not None else set()
    return Usage(tuple(setups), call, tuple(sorted((k, v) for k, v in assigned.items() if k in names)))


# NOTE [setup calls]
# Some models cannot be called as built: an inference model with a KV cache asserts "Caches must
# be initialized first" until `model.setup_caches(max_batch_size=..., max_seq_length=...)` ran
# (gpt-fast), and its forward then needs positions (`model(x, input_pos)`). The repository's own
# scripts say what to call: a method of the class called as a statement on an instance before
# that instance is called, when the method sets an attribute its constructor leaves None and its
# forward reads (`self.freqs_cis`; `setup_methods`). Instances are recognised by how they are
# bound (the class, a class method, a factory of the same file returning one, a parameter
# annotated with the class); the class name is followed through `from X import Name [as Alias]`
# when X is the class's file (a sibling module first, as a script imports it, then from the root
# or `src/`), or a package above it. The first scope (files breadth first, then by line) with a
# setup call gives the setups; the call in that scope, else the first call found, gives the
# inputs' names. The child uses them only when the model's forward fails without them (litgpt's
# training forward needs no cache: it is traced as before).


def _files(index: ProjectIndex, name: str):
    """The repository's .py files whose text mentions `name` (the index's one walk)."""
    wanted = name.encode()
    for path in index.paths(lambda p: p.suffix == ".py"):
        if index.mentions(index.rel(path), wanted, MAX_BYTES):
            yield path


def setup_methods(cls: ast.ClassDef) -> set[str]:
    """Methods of the class that set what its forward reads and its constructor leaves None
    (`setup_caches` sets `self.freqs_cis`, `None` in `__init__`, read by `forward`)."""
    methods = {m.name: m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if "forward" not in methods or "__init__" not in methods:
        return set()
    unset = {ast.unparse(t) for node in ast.walk(methods["__init__"]) if isinstance(node, (ast.Assign, ast.AnnAssign))
             and isinstance(node.value, ast.Constant) and node.value.value is None
             for t in (node.targets if isinstance(node, ast.Assign) else [node.target])}
    read = {ast.unparse(n) for n in ast.walk(methods["forward"]) if isinstance(n, ast.Attribute)
            and isinstance(n.ctx, ast.Load)} & unset
    return {name for name, m in methods.items() if name not in _NOT_SETUP and not name.startswith("__")
            and read & _assigned(m)}


def _assigned(method: ast.AST) -> set[str]:
    return {ast.unparse(t) for node in ast.walk(method) if isinstance(node, (ast.Assign, ast.AnnAssign))
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])}


def _imported(tree: ast.Module, name: str, path: Path, root: Path, home: Path) -> set[str]:
    """The names this file gives the class (`from model import Transformer [as T]`) when the import
    is of the class's own file `home` (or a package above it); empty otherwise."""
    out = set()
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom):
            continue
        for alias in node.names:
            if alias.name == name and _resolves_to(node, path, root, home):
                out.add(alias.asname or alias.name)
    return out


def _resolves_to(node: ast.ImportFrom, path: Path, root: Path, home: Path) -> bool:
    parts = (node.module or "").split(".") if node.module else []
    if node.level:
        base = path.parent
        for _ in range(node.level - 1):
            base = base.parent
        bases = [base]
    else:
        bases = [path.parent, root, root / "src"]
    for base in bases:
        module = base.joinpath(*parts) if parts else base
        if module.with_suffix(".py") == home or module / "__init__.py" == home:
            return True
        if (module / "__init__.py").is_file() and module in home.parents:
            return True
    return False


def _mentions(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names or isinstance(n, ast.Attribute) and n.attr in names
               for n in ast.walk(node))


def _factories(tree: ast.Module, aliases: set[str]) -> set[str]:
    """Functions of the file that return an instance of the class (built in them)."""
    out = set()
    for fn in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and _mentions(n, aliases)):
        bound = _bindings(fn, aliases, set())
        for ret in (r for r in ast.walk(fn) if isinstance(r, ast.Return) and r.value is not None):
            if _constructs(ret.value, aliases, set()) or ast.unparse(ret.value) in bound:
                out.add(fn.name)
    return out


def _constructs(value: ast.AST, aliases: set[str], factories: set[str]) -> bool:
    """`Cls(...)`, `Cls.from_name(...)` (any class method), `factory(...)`; through `.to(...)`-style chains."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
            and value.func.attr in ("to", "cuda", "eval", "train", "float", "half", "bfloat16", "requires_grad_"):
        value = value.func.value
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    if isinstance(func, ast.Name):
        return func.id in aliases or func.id in factories
    if isinstance(func, ast.Attribute):
        return func.attr in aliases or isinstance(func.value, ast.Name) and func.value.id in aliases
    return False


def _scopes(tree: ast.Module, names: set[str]):
    """The module body (without its functions and classes), then each function, in line order; only
    those that mention one of `names` (the class's names and its factories)."""
    yield [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    for fn in sorted((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and _mentions(n, names)), key=lambda n: n.lineno):
        yield [fn]


def _bindings(scope_node: ast.AST, aliases: set[str], factories: set[str]) -> set[str]:
    bound = set()
    if isinstance(scope_node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = scope_node.args
        for arg in args.posonlyargs + args.args + args.kwonlyargs:
            if arg.annotation is not None and ast.unparse(arg.annotation).split(".")[-1].strip("'\"") in aliases:
                bound.add(arg.arg)
    for node in ast.walk(scope_node):
        if isinstance(node, ast.Assign) and _constructs(node.value, aliases, factories):
            bound.update(ast.unparse(t) for t in node.targets)
        elif isinstance(node, ast.AnnAssign) and (
                ast.unparse(node.annotation).split(".")[-1].strip("'\"") in aliases
                or node.value is not None and _constructs(node.value, aliases, factories)):
            bound.add(ast.unparse(node.target))
    return bound


def _read_scope(scope: list, aliases, factories, setters, rel) -> tuple[list[Setup], list[Call]]:
    bound: set[str] = set()
    for node in scope:
        bound |= _bindings(node, aliases, factories)
    if not bound:
        return [], []
    events = []
    for node in (n for top in scope for n in ast.walk(top)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Attribute) and node.value.func.attr in setters \
                and ast.unparse(node.value.func.value) in bound:
            call = node.value
            events.append((node.lineno, "setup", ast.unparse(call.func.value), Setup(
                call.func.attr, tuple(k.arg for k in call.keywords if k.arg), len(call.args), f"{rel}:{node.lineno}")))
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in bound:
            events.append((node.lineno, "call", ast.unparse(node.func), Call(
                tuple(_arg_name(a) for a in node.args), tuple(k.arg for k in node.keywords if k.arg),
                f"{rel}:{node.lineno}")))
    events.sort(key=lambda e: e[0])
    setups, calls, called = [], [], set()
    for _line, what, var, item in events:
        if what == "call":
            called.add(var)
            calls.append(item)
        elif var not in called and item.method not in {s.method for s in setups}:
            setups.append(item)
    return setups, calls


def _arg_name(node: ast.AST) -> str:
    """`x` -> x, `batch.input_ids` -> input_ids, `prompt.view(b, -1)` -> prompt, `x[:, :1]` -> x; else ""."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            return node.attr
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        else:
            return ""


def _kind(value: ast.AST) -> str:
    """How a repository makes a value: `torch.arange(...)` -> "arange"; with `.unsqueeze(0)`, `[None]`,
    `.expand`/`.repeat`/`.view(1, -1)` after it -> "arange2d"; else ""."""
    text = ast.unparse(value)
    if "arange(" not in text:
        return ""
    if any(word in text for word in (".unsqueeze(0)", "[None", ".expand(", ".repeat(", ".view(1", ".reshape(1")):
        return "arange2d"
    return "arange" if isinstance(value, ast.Call) else ""
