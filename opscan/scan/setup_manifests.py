"""setup.py and setup.cfg read as manifests, never run: setup.py through `ast` and a small evaluator.

The evaluator follows what a setup.py builds its requirement lists from (NOTE [setup.py values]);
setup.cfg is `configparser` plus its lines. Entries and problems are scan/manifests.py's.
"""

from __future__ import annotations

import ast
import configparser
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import cast

from opscan.scan.manifests import Entry, Problem, requirement

_SETUP_KEYWORDS = ("install_requires", "extras_require", "setup_requires", "tests_require")
_OPTIONAL = ("extras_require", "tests_require")
_PASS_THROUGH = ("list", "sorted", "set", "tuple", "frozenset")   # calls that keep their argument's strings

# NOTE [setup.py values]
# A setup.py is read, never run. Its requirement lists are followed through the statements that
# build them, in source order, as one namespace (module level, and the bodies of `if`, `try`,
# `with`, `for` and of functions, where `setup()` is often called):
#   NAME = [...] / (...) / {...}; NAME = {"gpu": [...]} and dict(gpu=[...]); NAME = A + B; [*A, "x"];
#   "torch==" + VERSION (one string when VERSION is a known string; else unknown, never "torch==");
#   NAME += [...]; NAME.append("x") / .extend([...]) / .update({...}); NAME["gpu"] = [...];
#   list(...), sorted(...), set(...) of one of these; `[x for x in A]` and
#   `[r for rs in D.values() for r in rs]` (comprehensions whose element is a loop variable over
#   known values); `D.values()`, `D["gpu"]`; `setup(**kwargs)` with a known dict.
# Every string reached keeps its own line. A name bound twice holds its last value; what is not
# one of the above (a function reading requirements.txt, an f-string) is unknown and skipped: the
# file it reads is a manifest of its own.
Strings = list[ast.Constant]
Value = Strings | dict[str, Strings] | None


class _Values:
    """The requirement strings and dicts a setup.py builds (NOTE [setup.py values])."""

    def __init__(self) -> None:
        self.names: dict[str, Value] = {}

    def strings(self, value: Value) -> Strings:
        if isinstance(value, dict):
            return [c for part in value.values() for c in part]
        return list(value or [])

    def of(self, node: ast.expr | None, depth: int = 0) -> Value:
        if node is None or depth > 12:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node]
        if isinstance(node, ast.Name):
            value = self.names.get(node.id)
            return dict(value) if isinstance(value, dict) else list(value) if value is not None else None
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            out: Strings = []
            for item in node.elts:
                out += self.strings(self.of(item.value if isinstance(item, ast.Starred) else item, depth + 1))
            return out
        if isinstance(node, ast.Dict):
            table: dict[str, Strings] = {}
            for key, item in zip(node.keys, node.values):
                if key is None:   # {**other}
                    other = self.of(item, depth + 1)
                    table.update(other if isinstance(other, dict) else {})
                else:
                    table[_key(key)] = self.strings(self.of(item, depth + 1))
            return table
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and \
                (_is_text(node.left) or _is_text(node.right)):
            return self._joined(node, depth)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.BitOr)):
            left, right = self.of(node.left, depth + 1), self.of(node.right, depth + 1)
            if isinstance(left, dict) and isinstance(right, dict):
                return {**left, **right}
            return self.strings(left) + self.strings(right)
        if isinstance(node, ast.Subscript):
            base = self.of(node.value, depth + 1)
            if isinstance(base, dict):
                return list(base.get(_key(node.slice), []))
            return None
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self._comprehension(node, depth)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        return None

    def _joined(self, node: ast.BinOp, depth: int) -> Value:
        """`"torch==" + VERSION`: one string when both sides are known strings, else unknown (None),
        never the list of its parts (`"x=="` alone is no requirement the file writes)."""
        parts = [self.of(side, depth + 1) for side in (node.left, node.right)]
        if not all(isinstance(p, list) and len(p) == 1 for p in parts):
            return None
        left, right = cast(Strings, parts[0])[0], cast(Strings, parts[1])[0]
        joined = ast.Constant(value=str(left.value) + str(right.value))
        return [ast.copy_location(joined, left)]

    def _call(self, node: ast.Call, depth: int) -> Value:
        func = node.func
        if isinstance(func, ast.Name) and func.id in _PASS_THROUGH and len(node.args) == 1:
            return self.strings(self.of(node.args[0], depth + 1))
        if isinstance(func, ast.Name) and func.id == "dict" and not node.args:
            return {k.arg: self.strings(self.of(k.value, depth + 1)) for k in node.keywords if k.arg}
        if isinstance(func, ast.Attribute) and func.attr == "values" and not node.args:
            return self.strings(self.of(func.value, depth + 1))
        return None

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp, depth: int) -> Value:
        """`[x for x in A]`, `[r for rs in D.values() for r in rs]`: the element is a loop variable."""
        bound: dict[str, Strings] = {}
        groups: dict[str, list[Strings]] = {}
        for gen in node.generators:
            if not isinstance(gen.target, ast.Name):
                return None
            if isinstance(gen.iter, ast.Name) and gen.iter.id in groups:   # `for r in rs` over groups
                bound[gen.target.id] = [c for group in groups[gen.iter.id] for c in group]
                continue
            source = gen.iter
            if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) and \
                    source.func.attr == "values" and not source.args:
                table = self.of(source.func.value, depth + 1)
                if isinstance(table, dict):
                    groups[gen.target.id] = list(table.values())
                    continue
            bound[gen.target.id] = self.strings(self.of(source, depth + 1))
        element = node.elt
        if isinstance(element, ast.Name) and element.id in bound:
            return list(bound[element.id])
        return None

    def run(self, statement: ast.stmt) -> None:
        """Apply one simple statement to the names."""
        if isinstance(statement, ast.Assign):
            value = self.of(statement.value)
            for target in statement.targets:
                self._assign(target, value)
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            self._assign(statement.target, self.of(statement.value))
        elif isinstance(statement, ast.AugAssign) and isinstance(statement.op, (ast.Add, ast.BitOr)):
            current = self.of(statement.target)
            added = self.of(statement.value)
            if isinstance(current, dict) and isinstance(added, dict):
                self._assign(statement.target, {**current, **added})
            elif current is not None or added is not None:
                self._assign(statement.target, self.strings(current) + self.strings(added))
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            call = statement.value
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr in ("append", "extend", "update", "add") and call.args:
                current = self.of(func.value)
                added = self.of(call.args[0])
                if func.attr == "update" and isinstance(current, dict) and isinstance(added, dict):
                    self._assign(func.value, {**current, **added})
                elif func.attr != "update" and current is not None and not isinstance(current, dict):
                    self._assign(func.value, current + self.strings(added))

    def _assign(self, target: ast.expr, value: Value) -> None:
        if isinstance(target, ast.Name):
            self.names[target.id] = value
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            table = self.names.get(target.value.id)
            if isinstance(table, dict):
                table[_key(target.slice)] = self.strings(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for item in target.elts:
                self._assign(item, None)


def _is_text(node: ast.expr) -> bool:
    """A string expression: a str literal, an f-string, or a `+` of one."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) \
        and (_is_text(node.left) or _is_text(node.right))


def _key(node: ast.expr) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ast.dump(node)


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement in source order, compound statements' bodies included (NOTE [setup.py values])."""
    for statement in body:
        yield statement
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and not isinstance(statement, ast.ClassDef):
                yield from _statements(inner)
        for handler in getattr(statement, "handlers", ()) or ():
            yield from _statements(handler.body)


def _is_setup(node: ast.expr) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name == "setup"


def read_setup_py(text: str) -> tuple[list[Entry], list[Problem]]:
    """`install_requires`, `extras_require`, `setup_requires`, `tests_require` of setup() calls, read
    with `ast` and followed through the names that build them (NOTE [setup.py values])."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [], []   # the Python scan reports it (OPS000)
    values = _Values()
    entries: list[Entry] = []
    problems: list[Problem] = []
    seen: set[tuple[int, int, str]] = set()
    for statement in _statements(tree.body):
        calls = [n for n in ast.walk(statement) if isinstance(n, ast.Call) and _is_setup(n)] \
            if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.If, ast.For, ast.While,
                                          ast.With, ast.Try)) else []
        for call in calls:
            keywords: list[tuple[str, Strings]] = [(str(k.arg), values.strings(values.of(k.value)))
                                                   for k in call.keywords if k.arg in _SETUP_KEYWORDS]
            for spread in (k.value for k in call.keywords if k.arg is None):   # setup(**kwargs)
                table = values.of(spread)
                if isinstance(table, dict):
                    keywords += [(key, strings) for key, strings in table.items() if key in _SETUP_KEYWORDS]
            for keyword, strings in keywords:
                for const in strings:
                    key = (const.lineno, const.col_offset, keyword)
                    if key not in seen:
                        seen.add(key)
                        _add(const, keyword in _OPTIONAL, entries, problems)
        values.run(statement)
    return entries, problems


def _add(const: ast.Constant, optional: bool, entries: list[Entry], problems: list[Problem]) -> None:
    if not isinstance(const.value, str):
        return
    for offset, part in enumerate(const.value.splitlines()):
        part = re.sub(r"\s+#.*$", "", part).strip()
        if part and not part.startswith(("#", "-")):
            got = requirement(part, const.lineno + offset)
            if isinstance(got, Entry):
                entries.append(replace(got, optional=optional))
            elif isinstance(got, Problem):
                problems.append(got)


def setup_cfg_extras(text: str) -> tuple[str, ...]:
    """The names of `[options.extras_require]` in a setup.cfg, empty ones included (NOTE [CUDA
    alternatives] in scan/alternatives.py)."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return ()
    return tuple(parser["options.extras_require"]) if parser.has_section("options.extras_require") else ()


def read_setup_cfg(text: str) -> tuple[list[Entry], list[Problem]]:
    """setup.cfg: `[options] install_requires` / `setup_requires` and `[options.extras_require]`."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        line = getattr(exc, "lineno", None) or 1
        return [], [Problem(line, f"not a readable setup.cfg: {str(exc).splitlines()[0]}")]
    entries: list[Entry] = []
    problems: list[Problem] = []
    section, key = "", ""
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            section, key = stripped[1:-1].strip(), ""
            continue
        if not stripped or stripped.startswith(("#", ";")):
            continue
        value = ""
        if not raw[:1].isspace() and ("=" in raw or ":" in raw):
            key, _, value = re.split(r"([=:])", raw, maxsplit=1)
            key = key.strip()
            value = value.strip()
        else:
            value = stripped
        wanted = (section == "options" and key in _SETUP_KEYWORDS) or section == "options.extras_require"
        if wanted and value and not value.startswith(("file:", "attr:")):
            value = re.sub(r"\s+#.*$", "", value)
            got = requirement(value, number)
            if isinstance(got, Entry):
                extra = key if section == "options.extras_require" else ""
                entries.append(replace(got, optional=bool(extra) or key == "tests_require", extra=extra))
            elif isinstance(got, Problem):
                problems.append(got)
    return entries, problems


