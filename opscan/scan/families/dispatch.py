"""Device dispatch over other accelerators: one hit per function, class body or module-level statement
that chooses among accelerators by name (compares, returns or tabulates "npu", "xpu", ...)."""

from __future__ import annotations

import ast
import bisect
import functools
import re
from collections.abc import Callable, Iterator, Sequence

from opscan.scan.context import FileContext
from opscan.scan.tokens import literal_regex

# NOTE [device dispatch]
# Code that already supports another accelerator names it: `device.type == "npu"`, `return "xpu"`
# in a device detector, `if is_torch_npu_available(): ...`, `NPU = ("npu", ...)`, a framework's
# `accelerator="gpu"`. Such a place is where a port adds its `neuron` case, and its other
# branches are the template. On a Neuron device it is inert (it takes the CPU or CUDA branch),
# so it is a warning, and it is reported once per *unit*: a function body, a class body (its
# methods are their own units) or a module-level statement. A unit is a dispatch when it holds a
# choice: a comparison with one of the rule's names, `.startswith(name)`, an `if`/conditional test
# calling another accelerator's availability check (`is_*npu*_available()` / `is_hpu_installed()`,
# `torch.xpu.is_available()`, `torch.backends.mps.is_available()`), a returned name, a table
# (tuple/list/set/dict literal) holding one, or an `accelerator=` value. The hit sits on the unit's
# first site and lists the accelerators the unit handles ("cuda" included when it names it); a unit
# that already names "neuron" is done and not reported. Inside a dispatch, other accelerators' device
# strings are part of it (consumed, so OPS104 does not report them again); a unit that only pins a
# device (`x.to("mps")`, nothing chosen) stays OPS104's. `getattr`/`hasattr` attribute names
# (`hasattr(torch, "npu")`) are API probes, not sites. Dictionary keys are names, not devices: a
# string tested against a variable that holds a dict's key (`'gpu' not in key` in `for key, deps in
# extras.items()`, or over a dict literal bound at module level) chooses no device, and neither
# does a dict whose values are all lists of strings (`extras = {"gpu": ["cupy"]}`: requirements).

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_TABLES = (ast.Tuple, ast.List, ast.Set)


class _Unit:
    """The sites of one unit: (line, col, node, accelerator, is a choice)."""

    def __init__(self) -> None:
        self.sites: list[tuple[int, int, ast.expr, str, bool]] = []
        self.neuron = False
        self.cuda = False
        self.idioms: list[ast.IfExp] = []   # availability choices, reported by OPS104 otherwise
        self.keys: set[str] = set()         # names that hold a dict's key (NOTE [device dispatch])


def prepare(ctx: FileContext) -> None:
    for names, rule in ctx.c.dispatch:
        words, name_re, avail_re, line_re = _patterns(names)
        if words is None or not words.search(ctx.text):   # one pass of a literal trie over the text
            continue
        # only statements whose lines can hold a site (or the "neuron"/"cuda" of one) are walked
        text = ctx.text
        starts = [m.start() for m in _LINE.finditer(text)]
        lines = sorted({bisect.bisect_right(starts, m.start()) for m in line_re.finditer(text)})
        for unit in _units(ctx, ctx.tree, name_re, avail_re, lines):
            if unit.neuron or not any(choice for *_, choice in unit.sites):
                continue
            unit.sites.sort(key=lambda s: (s[0], s[1]))
            seen: list[str] = ["cuda"] if unit.cuda else []
            for _, _, node, acc, _ in unit.sites:
                if acc not in seen:
                    seen.append(acc)
                if isinstance(node, ast.Constant):
                    ctx.consumed.add(id(node))
            ctx.consumed.update(id(node) for node in unit.idioms)
            ctx.hit(rule, unit.sites[0][2], False, value=", ".join(seen))


@functools.lru_cache(maxsize=8)
def _patterns(names: tuple[str, ...]
              ) -> tuple[re.Pattern[str] | None, re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """For a rule's names: the words one of which a file needs (its pre-filter tokens), a site's
    name, an availability check's name, and the lines that can hold a site (or "neuron"/"cuda")."""
    alt = "|".join(map(re.escape, names))
    words = tuple(w for n in names
                  for w in (f'"{n}', f"'{n}", f"{n}_available", f"{n}_installed", f"{n}.is_available")) + (
        "accelerator",)
    lines = re.compile(r"""["'](?:%s|neuron|cuda)\b|(?:%s)(?:_available|_installed|\.is_available)|accelerator\s*="""
                       % (alt, alt))
    return (literal_regex(set(words)), re.compile(r"^(%s)(:\d+)?$" % alt),
            re.compile(r"^is_\w*?(%s)\w*_(?:available|installed)$" % alt), lines)


_LINE = re.compile(r"^", re.M)
Add = Callable[[ast.expr, str, bool], None]   # records a site: (node, accelerator, is a choice)


def _touches(node: ast.stmt, lines: list[int]) -> bool:
    """Whether one of `lines` falls within the node (decorators included)."""
    start = node.lineno
    decorators = getattr(node, "decorator_list", None)
    if decorators:
        start = min(start, decorators[0].lineno)
    i = bisect.bisect_left(lines, start)
    return i < len(lines) and lines[i] <= (node.end_lineno or start)


def _units(ctx: FileContext, tree: ast.Module, name_re: re.Pattern[str], avail_re: re.Pattern[str],
           lines: list[int]) -> Iterator[_Unit]:
    """Every unit of the file that can hold a site, with its sites (NOTE [device dispatch])."""
    ctx.dict_names = {t.id for stmt in tree.body if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Dict)
                      for t in stmt.targets if isinstance(t, ast.Name)}
    pending: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = []
    for stmt in tree.body:
        if not _touches(stmt, lines):
            continue
        if isinstance(stmt, _SCOPES):
            pending.append(stmt)
        else:
            unit = _Unit()
            _collect(ctx, [stmt], unit, pending, name_re, avail_re, lines)
            yield unit
    while pending:
        scope = pending.pop(0)
        unit = _Unit()
        if isinstance(scope, ast.ClassDef):
            _collect(ctx, scope.body, unit, pending, name_re, avail_re, lines)
        else:
            args = scope.args
            _collect(ctx, [*args.defaults, *[d for d in args.kw_defaults if d is not None], *scope.body],
                     unit, pending, name_re, avail_re, lines)
        yield unit


def _collect(ctx: FileContext, nodes: Sequence[ast.AST], unit: _Unit,
             pending: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef],
             name_re: re.Pattern[str], avail_re: re.Pattern[str], lines: list[int]) -> None:
    skip: set[int] = set()
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.stmt) and not _touches(node, lines):
            continue
        if isinstance(node, _SCOPES):
            pending.append(node)
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue   # a docstring
        _site(ctx, node, unit, skip, name_re, avail_re)
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _name(node: ast.AST, name_re: re.Pattern[str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        match = name_re.match(node.value)
        return match[1] if match else None
    return None


def _site(ctx: FileContext, node: ast.AST, unit: _Unit, skip: set[int], name_re: re.Pattern[str],
          avail_re: re.Pattern[str]) -> None:
    def add(sub: ast.expr, acc: str, choice: bool) -> None:
        skip.add(id(sub))
        unit.sites.append((sub.lineno, sub.col_offset, sub, acc, choice))

    def choices(expr: ast.AST | None) -> None:
        """A name, or a table of names, in a position that chooses."""
        if expr is None:
            return
        items = expr.elts if isinstance(expr, _TABLES) else [expr]
        for item in items:
            acc = _name(item, name_re)
            if acc and isinstance(item, ast.expr) and id(item) not in skip:
                add(item, acc, True)

    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            if node.value.startswith("neuron"):
                unit.neuron = True
            elif node.value.startswith("cuda") and node.value.split(":")[0] == "cuda":
                unit.cuda = True
            acc = _name(node, name_re)
            if acc and id(node) not in skip:
                add(node, acc, False)
        return
    if isinstance(node, (ast.For, ast.comprehension)):
        _dict_keys(ctx, node, unit)
    if isinstance(node, ast.Compare):
        if any(isinstance(p, ast.Name) and p.id in unit.keys for p in (node.left, *node.comparators)):
            for part in (node.left, *node.comparators):   # `'gpu' not in key`: a key, not a device
                skip.add(id(part))
            return
        for part in (node.left, *node.comparators):
            choices(part)
    elif isinstance(node, _TABLES):
        choices(node)
    elif isinstance(node, ast.Dict):
        if node.values and all(isinstance(v, _TABLES) and all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                                                               for e in v.elts) for v in node.values):
            for key in node.keys:    # {"gpu": ["cupy"], ...}: requirement lists by name, not a dispatch
                if key is not None:
                    skip.add(id(key))
            return
        for key in node.keys:
            choices(key)
    elif isinstance(node, ast.Return):
        choices(node.value)
    elif isinstance(node, ast.IfExp):
        if _availability(ctx, node.test, add, avail_re):
            unit.idioms.append(node)   # `"mps" if torch.backends.mps.is_available() else "cpu"`
    elif isinstance(node, (ast.If, ast.While)):
        _availability(ctx, node.test, add, avail_re)
    elif isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("getattr", "hasattr") and len(node.args) >= 2:
            skip.add(id(node.args[1]))
        elif isinstance(func, ast.Attribute) and func.attr == "startswith" and node.args:
            choices(node.args[0])
        for kw in node.keywords:
            if kw.arg == "accelerator":
                _accelerator(kw.value, add, name_re)
    elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any((isinstance(t, ast.Name) and t.id == "accelerator")
               or (isinstance(t, ast.Attribute) and t.attr == "accelerator") for t in targets):
            _accelerator(node.value, add, name_re)


def _dict_keys(ctx: FileContext, node: ast.For | ast.comprehension, unit: _Unit) -> None:
    """The loop variable that holds a dict's key: `for k, v in d.items()`, `for k in d.keys()`, or
    `for k in d` over a dict literal bound at module level."""
    source = node.iter
    if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) \
            and source.func.attr in ("items", "keys"):
        target = node.target.elts[0] if isinstance(node.target, ast.Tuple) and node.target.elts else node.target
    elif isinstance(source, ast.Name) and source.id in ctx.dict_names:
        target = node.target
    else:
        return
    if isinstance(target, ast.Name):
        unit.keys.add(target.id)


def _accelerator(value: ast.AST, add: Add, name_re: re.Pattern[str]) -> None:
    """`accelerator="cuda"` / `"gpu"`: a framework's accelerator picked by name."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        acc = _name(value, name_re) or ("cuda" if value.value == "cuda" else None)
        if acc:
            add(value, acc, True)


def _availability(ctx: FileContext, test: ast.AST, add: Add, avail_re: re.Pattern[str]) -> bool:
    """Calls in an `if` test that check another accelerator's availability (whether there is one)."""
    found = False
    for sub in ast.walk(test):
        if not isinstance(sub, ast.Call):
            continue
        func = sub.func
        leaf = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        match = avail_re.match(leaf)
        if match:
            add(sub, match[1], True)
            found = True
            continue
        if leaf == "is_available":
            full = ctx.resolve(func) or ""
            parts = full.split(".")
            if len(parts) >= 3 and parts[0] == "torch":
                acc = parts[-2]
                if avail_re.match(f"is_{acc}_available"):
                    add(sub, acc, True)
                    found = True
    return found
