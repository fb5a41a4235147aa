"""The per-file analysis: one pruned walk of a stdlib `ast` tree that applies every compiled rule.

# NOTE [ast, not libcst]
The scan uses the stdlib `ast` (C parser, ~175k lines/s here) plus its own import resolver
(resolver.py) instead of libcst + QualifiedNameProvider (~650 lines/s measured on real files):
the findings are the same, because every rule needs only names, literals, positions (ast gives
1-based lines and 0-based UTF-8 byte columns with end positions; engine.py converts them to
characters) and enclosing `if` tests. Statements whose lines hold no pre-filter token (NOTE
[pre-filter tokens]) are not visited at all.
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase

from opscan.scan import positions as P
from opscan.scan.matchers import Compiled
from opscan.scan.resolver import Imports
from opscan.scan.rules import Rule


@dataclass(frozen=True)
class Hit:
    """A rule firing on a node, before it becomes a Finding."""

    rule: Rule
    node: ast.AST
    value: str = ""
    name: str = ""
    guarded: bool = False
    subject: str = ""   # Finding.subject (see NOTE [subjects])
    task: str = ""      # overrides the rule's task kind (an import of a kernel's own language)


@dataclass
class _Constant:
    name: str
    values: list
    guarded: bool
    used: bool = False


class Visitor:
    """Walks one parsed file and collects Hits."""

    def __init__(self, relpath: str, text: str, tree: ast.Module, compiled: Compiled,
                 extensions: frozenset[str] = frozenset(), packages: frozenset[str] = frozenset()) -> None:
        self.text = text
        self.tree = tree
        self.c = compiled
        self.extensions = extensions
        self.packages = packages
        self.imports = Imports(relpath)
        self.resolve = self.imports.resolve
        self.hits: list[Hit] = []
        self._seen: set[tuple[str, int]] = set()
        self.consumed: set[int] = set()
        self.constants: dict[str, list[_Constant]] = {}
        self.kernels: dict[str, Rule] = {}
        self.instances: dict[str, tuple[Rule, tuple[str, ...]]] = {}
        self.depth = 0
        self._idiom: dict[int, bool] = {}
        self._calls: dict[int, ast.Call] = {}   # id(func node) -> its call, for kernel names
        self.hot: list[int] = []
        self.failures: list[tuple[int, Rule | None, BaseException]] = []  # NOTE [one rule, one file]

    # -- driver ------------------------------------------------------------------------------
    def run(self) -> list[Hit]:
        self._prepass(self.tree.body, False)
        regex = self.c.token_regex()
        extra = {local for local, full in self.imports.alias.items() if regex is not None and regex.search(full)}
        extra |= set(self.constants) | set(self.kernels) | set(self.instances)
        self._hot_lines(frozenset(extra))
        self._body(self.tree, False)
        for consts in self.constants.values():
            for const in consts:
                if const.used or P.DEVICE_NAME.match(const.name):
                    for node, value in const.values:
                        self._strings("device-constant", [(node, value)], const.guarded)
        self._kernel_languages()
        return self.hits

    def _kernel_languages(self) -> None:
        """An import of the package a kernel in this file is written with (`import triton` next to
        `@triton.jit`) is part of that kernel's port: its hit gets task `kernel` and the kernel's
        name. Other libraries (flash_attn next to a Triton kernel) stay library tasks."""
        languages: dict[str, str] = {}
        for hit in self.hits:
            if hit.rule.task == "kernel":
                for symbol in (hit.value, hit.name):
                    if "." in symbol:
                        languages.setdefault(symbol.split(".", 1)[0], hit.subject)
        if languages:
            self.hits = [replace(h, task="kernel", subject=languages[h.subject])
                         if h.rule.task == "library" and h.subject in languages else h for h in self.hits]

    def _hot_lines(self, extra: frozenset[str]) -> None:
        """The lines holding a token, an import, or one of the file's `extra` names (whole words)."""
        text = self.text
        newlines = [m.start() for m in _NEWLINE.finditer(text)]
        starts = [m.start() for m in _IMPORT_LINE.finditer(text)]
        regex = self.c.token_regex()
        if regex is not None:
            starts += [m.start() for m in regex.finditer(text)]
        for word in extra:
            i = text.find(word)
            while i != -1:
                end = i + len(word)
                if (i == 0 or not _WORD(text[i - 1])) and (end >= len(text) or not _WORD(text[end])):
                    starts.append(i)
                i = text.find(word, end)
        self.hot = sorted({bisect.bisect_left(newlines, pos) + 1 for pos in starts})

    def _is_hot(self, node: ast.stmt) -> bool:
        if self.c.always:
            return True
        start = node.lineno
        decorators = getattr(node, "decorator_list", None)
        if decorators:
            start = min(start, decorators[0].lineno)
        i = bisect.bisect_left(self.hot, start)
        return i < len(self.hot) and self.hot[i] <= (node.end_lineno or start)

    def _prepass(self, body: list[ast.stmt], guarded: bool) -> None:
        """Module-level bindings: imports, string constants, kernels, custom-op library objects."""
        for stmt in body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self.imports.add(stmt)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                value = self._field_default(stmt.value)
                for target in targets:
                    if isinstance(target, ast.Name):
                        vals = P.string_values(value, self._is_idiom) if value is not None else []
                        if vals:
                            self.constants.setdefault(target.id, []).append(_Constant(target.id, vals, guarded))
                        self._bind_instance(target.id, stmt.value)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._bind_kernel(stmt)
            elif isinstance(stmt, ast.If):
                g = guarded or P.is_guard(stmt.test, self.resolve)
                self._prepass(stmt.body, g)
                self._prepass(stmt.orelse, g)
            elif isinstance(stmt, ast.Try):
                self._prepass(stmt.body, guarded or P.catches_import_error(stmt))
                for handler in stmt.handlers:
                    self._prepass(handler.body, guarded)
                self._prepass(stmt.orelse, guarded)
                self._prepass(stmt.finalbody, guarded)
            elif isinstance(stmt, ast.With):
                self._prepass(stmt.body, guarded)

    def _bind_kernel(self, node) -> None:
        for decorator in node.decorator_list:
            name = self.resolve(decorator.func if isinstance(decorator, ast.Call) else decorator)
            for pats, launch, rule in self.c.decorators:
                if launch and name and pats.matches(name):
                    self.kernels[node.name] = rule

    def _bind_instance(self, local: str, value: ast.AST) -> None:
        if isinstance(value, ast.Call):
            name = self.resolve(value.func)
            for pats, rule, methods in self.c.names:
                if methods and name and pats.matches(name):
                    self.instances[local] = (rule, methods)

    # -- reporting ---------------------------------------------------------------------------
    def _hit(self, rule: Rule, node: ast.AST, guarded: bool, value: str = "", name: str = "",
             subject: str | None = None) -> None:
        """Record a hit; `subject` defaults to the matched string value, else the matched name."""
        key = (rule.id, id(node))
        if key in self._seen:
            return
        self._seen.add(key)
        if subject is None:
            subject = value or name
        self.hits.append(Hit(rule, node, value, name, guarded, subject))

    def _strings(self, context: str, values, guarded: bool) -> None:
        for regex, rule in self.c.strings.get(context, ()):
            for node, value in values:
                if id(node) not in self.consumed and regex.search(value):
                    self._hit(rule, node, guarded, value=self._display(node, value))

    def _display(self, node: ast.AST, value: str) -> str:
        if isinstance(node, ast.Constant):
            return value
        segment = ast.get_source_segment(self.text, node)
        return segment if segment and len(segment) <= 80 else value

    def _is_idiom(self, node: ast.IfExp) -> bool:
        key = id(node)
        if key not in self._idiom:
            found = False
            if P.is_availability_test(node.test, self.resolve):
                values = P.string_values(node.body, self._is_idiom) + P.string_values(node.orelse, self._is_idiom)
                found = any(regex.search(v) for regex, _ in self.c.strings.get("availability-idiom", ())
                            for _, v in values)
            self._idiom[key] = found
        return self._idiom[key]

    def _use(self, expr: ast.AST | None) -> None:
        """Mark a module constant as used in a device position."""
        if isinstance(expr, ast.Name) and expr.id in self.constants and self.imports.alias.get(expr.id) is None:
            for const in self.constants[expr.id]:
                const.used = True

    def _device(self, context: str, expr: ast.AST | None, guarded: bool) -> None:
        if expr is None:
            return
        self._use(expr)
        values = P.string_values(expr, self._is_idiom)
        if isinstance(expr, ast.IfExp) and not guarded and P.is_guard(expr.test, self.resolve):
            # `"cuda" if is_cuda_available() else "cpu"`-like choices: the strings are guarded
            self._strings(context, values, True)
        else:
            self._strings(context, values, guarded)

    # -- walk --------------------------------------------------------------------------------
    def visit(self, node: ast.AST, g: bool) -> None:
        handler = _HANDLERS.get(type(node))
        if handler is not None:
            handler(self, node, g)
        else:
            self._body(node, g)

    def _body(self, node: ast.AST, g: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                if self._is_hot(child):
                    self._statement(child, g)
                continue
            self.visit(child, g)

    def _stmts(self, stmts: list[ast.stmt], g: bool) -> None:
        for child in stmts:
            if self._is_hot(child):
                self._statement(child, g)

    def _statement(self, node: ast.stmt, g: bool) -> None:
        """Visit one statement; if a rule fails on it, record that and go on with the next one."""
        try:
            self.visit(node, g)
        except (Exception, RecursionError) as exc:  # noqa: BLE001 - NOTE [one rule, one file]
            self.failures.append((node.lineno, _failing_rule(exc), exc))

    def v_import(self, node, g: bool) -> None:
        self.imports.add(node)
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
            members: list[str] = []
        else:
            module = self.imports.absolute(node)
            modules = [module] if module else []
            members = [f"{module}.{a.name}" if module else a.name for a in node.names]
        local = isinstance(node, ast.ImportFrom) and node.level > 0
        for pats, rule in self.c.imports:
            for candidate in modules + members:
                if local or candidate.split(".", 1)[0] in self.packages:
                    continue   # the scanned project's own code (`import mypkg, cupy` still checks cupy)
                if pats.matches(candidate):
                    self._hit(rule, node, g, name=candidate, subject=candidate.split(".", 1)[0])
                    break
        for regex, rule in self.c.extensions:
            for candidate in modules + members:
                declared = any(candidate == d or candidate.endswith("." + d) for d in self.extensions)
                if declared or (regex is not None and candidate in modules and regex.search(candidate)):
                    self._hit(rule, node, g, name=candidate, subject=candidate.rsplit(".", 1)[-1])
                    break

    def v_name(self, node, g: bool) -> None:
        name = self.resolve(node)
        if name is None:
            if isinstance(node, ast.Attribute):
                self.visit(node.value, g)
            return
        if id(node) in self.consumed or name.split(".", 1)[0] not in self.c.roots:
            return
        for pats, rule, _ in self.c.names:
            if pats.matches(name):
                subject = _kernel_name(self._calls.get(id(node)), name) if rule.task == "kernel" else name
                self._hit(rule, node, g, name=name, subject=subject)

    def v_call(self, node: ast.Call, g: bool) -> None:
        func = node.func
        qual = self.resolve(func)
        method = func.attr if isinstance(func, ast.Attribute) and qual is None else None
        args = node.args
        pos = P.DEVICE_ARG_CALLS.get(qual) if qual else P.DEVICE_ARG_METHODS.get(method or "")
        if pos is not None and 0 <= pos < len(args) and not any(isinstance(a, ast.Starred) for a in args[:pos + 1]):
            self._device("device-arg", args[pos], g)
        if qual == "torch.device":
            self._device("device-arg", P.keyword_value(node, "type"), g)
        for kw in node.keywords:
            if kw.arg and P.DEVICE_NAME.match(kw.arg):
                self._device("device-keyword", kw.value, g)
            elif kw.arg and P.BACKEND_NAME.match(kw.arg):
                self._strings("backend-arg", P.string_values(kw.value), g)
            elif kw.arg == "env" and isinstance(kw.value, ast.Dict):
                self._env_keys(kw.value, g)
        if method == "add_argument" or (qual or "").endswith(".add_argument"):
            self._argparse(node, g)
        bpos = P.BACKEND_ARG_CALLS.get(qual or "")
        if bpos is not None and bpos < len(args):
            self._strings("backend-arg", P.string_values(args[bpos]), g)
        if (qual in P.ENV_ARG_CALLS or method in P.ENV_ARG_METHODS) and args:
            self._strings("env-var", P.string_values(args[0]), g)
        if qual in P.ENV_DICT_CALLS:
            for arg in args:
                if isinstance(arg, ast.Dict):
                    self._env_keys(arg, g)
            self._strings("env-var", [(kw, kw.arg) for kw in node.keywords if kw.arg], g)
        for calls, keyword, regex, rule in self.c.keywords:
            if self._callee_matches(calls, qual, method):
                value = P.keyword_value(node, keyword)
                if isinstance(value, ast.Constant):
                    text = value.value if isinstance(value.value, str) else repr(value.value)
                    if regex.search(text):
                        self._hit(rule, value, g, value=text, name=qual or f".{method}")
        if method:
            for rule in self.c.methods.get(method, ()):
                self._hit(rule, node, g, name=method)
        if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name) and func.value.id in self.kernels:
            self._hit(self.kernels[func.value.id], node, g, name=func.value.id)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in self.instances:
            rule, methods = self.instances[func.value.id]
            if func.attr in methods:
                self._hit(rule, node, g, name=f"{func.value.id}.{func.attr}", subject=_kernel_name(node, ""))
        self._calls[id(func)] = node
        self._body(node, g)

    @staticmethod
    def _callee_matches(calls: tuple[str, ...], qual: str | None, method: str | None) -> bool:
        for pattern in calls:
            if pattern.startswith("."):
                if method and fnmatchcase(method, pattern[1:]):
                    return True
            elif qual and fnmatchcase(qual, pattern):
                return True
        return False

    def _argparse(self, node: ast.Call, g: bool) -> None:
        flags = [a.value.lstrip("-").replace("-", "_") for a in node.args
                 if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        default = P.keyword_value(node, "default")
        if default is None:
            return
        if any(P.DEVICE_NAME.match(f) for f in flags):
            self._device("device-keyword", default, g)
        if any(P.BACKEND_NAME.match(f) for f in flags):
            self._strings("backend-arg", P.string_values(default), g)

    def _env_keys(self, node: ast.Dict, g: bool) -> None:
        self._strings("env-var", [(k, k.value) for k in node.keys
                                  if isinstance(k, ast.Constant) and isinstance(k.value, str)], g)

    def v_ifexp(self, node: ast.IfExp, g: bool) -> None:
        if self._is_idiom(node):
            values = P.string_values(node.body, self._is_idiom) + P.string_values(node.orelse, self._is_idiom)
            for regex, rule in self.c.strings.get("availability-idiom", ()):
                matched = [v for _, v in values if regex.search(v)]
                if matched:
                    self._hit(rule, node, g, value=matched[0])
            for sub in ast.walk(node.test):
                self.consumed.add(id(sub))
            for sub, _ in values:
                self.consumed.add(id(sub))
        guard = g or P.is_guard(node.test, self.resolve)
        self.visit(node.test, g)
        self.visit(node.body, guard)
        self.visit(node.orelse, guard)

    def v_if(self, node, g: bool) -> None:
        guard = g or P.is_guard(node.test, self.resolve)
        self.visit(node.test, g)
        self._stmts(node.body, guard)
        self._stmts(node.orelse, guard)

    def v_try(self, node, g: bool) -> None:
        self._stmts(node.body, g or P.catches_import_error(node))
        for handler in node.handlers:
            self._body(handler, g)
        self._stmts(node.orelse, g)
        self._stmts(node.finalbody, g)

    def v_def(self, node, g: bool) -> None:
        seen_rules: set[str] = set()
        for decorator in node.decorator_list:
            name = self.resolve(decorator.func if isinstance(decorator, ast.Call) else decorator)
            for pats, launch, rule in self.c.decorators:
                if name and rule.id not in seen_rules and pats.matches(name):
                    seen_rules.add(rule.id)
                    self._hit(rule, decorator, g, value=name, name=node.name, subject=node.name)
                    if launch and self.depth:
                        self.kernels[node.name] = rule
        if not isinstance(node, ast.ClassDef):
            self._params(node.args, g)
        self.depth += 1
        try:
            self._body(node, g)
        finally:
            self.depth -= 1

    def _params(self, args: ast.arguments, g: bool) -> None:
        positional = [*args.posonlyargs, *args.args]
        pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
        pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
        for arg, default in pairs:
            if P.DEVICE_NAME.match(arg.arg):
                self._device("device-keyword", default, g)
            elif P.BACKEND_NAME.match(arg.arg):
                self._strings("backend-arg", P.string_values(default), g)

    def v_lambda(self, node, g: bool) -> None:
        self.depth += 1
        try:
            self._body(node, g)
        finally:
            self.depth -= 1

    def _field_default(self, value: ast.AST) -> ast.AST | None:
        if isinstance(value, ast.Call):
            name = self.resolve(value.func) or (value.func.id if isinstance(value.func, ast.Name) else "")
            if name in P.FIELD_CALLS:
                return P.keyword_value(value, "default")
        return value

    def v_assign(self, node, g: bool) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = self._field_default(node.value) if node.value is not None else None
        if value is not None:
            for target in targets:
                name = P.target_name(target)
                if not name:
                    continue
                if P.DEVICE_NAME.match(name) and not (self.depth == 0 and isinstance(target, ast.Name)):
                    self._device("device-variable", value, g)
                elif P.BACKEND_NAME.match(name):
                    self._strings("backend-arg", P.string_values(value), g)
        self._body(node, g)

    def v_dict(self, node: ast.Dict, g: bool) -> None:
        for key, value in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                if P.DEVICE_NAME.match(key.value):
                    self._device("device-keyword", value, g)
                elif P.BACKEND_NAME.match(key.value):
                    self._strings("backend-arg", P.string_values(value), g)
        self._body(node, g)

    def v_subscript(self, node: ast.Subscript, g: bool) -> None:
        if self.resolve(node.value) == P.ENV_MAPPING:
            self._strings("env-var", P.string_values(node.slice), g)
        self._body(node, g)

    def v_compare(self, node: ast.Compare, g: bool) -> None:
        parts = [node.left, *node.comparators]
        if any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and \
                any(self.resolve(p) == P.ENV_MAPPING for p in node.comparators):
            self._strings("env-var", P.string_values(node.left), g)
        if any(self._backendish(p) for p in parts):
            self._strings("backend-compare", [v for p in parts if isinstance(p, ast.Constant)
                                              for v in P.string_values(p)], g)
        self._body(node, g)

    @staticmethod
    def _backendish(expr: ast.AST) -> bool:
        if isinstance(expr, ast.Call):
            expr = expr.func
            leaf = expr.attr if isinstance(expr, ast.Attribute) else getattr(expr, "id", "")
            return leaf in P.BACKEND_CALL_NAMES
        leaf = P.target_name(expr)
        return bool(leaf and P.BACKEND_NAME.match(leaf))


# NOTE [subjects]
# A hit's subject is what matched, as structured data for the planner and the reports: the string
# for string and keyword-value matchers ("cuda:0", "nccl", "CUDA_VISIBLE_DEVICES"), the resolved
# symbol for name matchers (torch.cuda.synchronize), the method for method matchers (cuda), the top-level
# package for import matchers (flash_attn). For rules of task `kernel` it is the kernel's own name
# where the code states it (decorated function, `name=` or the first identifier string argument
# of the build/registration call, the op of an "ns::op" string, the op of `torch.ops.ns.op`, the
# extension module), else "" (the planner then groups the kernel by file).
_OP_STRING = re.compile(r"^[A-Za-z_]\w*::([A-Za-z_]\w*)(?:\.\w+)?$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][\w.]*$")


def _kernel_name(call: ast.Call | None, symbol: str) -> str:
    """The kernel name a call states (see NOTE [subjects]); "" when it states none."""
    if call is not None:
        strings = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        for text in strings:
            match = _OP_STRING.match(text)
            if match:
                return match[1]
        named = P.keyword_value(call, "name")
        if isinstance(named, ast.Constant) and isinstance(named.value, str) and _IDENTIFIER.match(named.value):
            return named.value.rsplit(".", 1)[-1]
        for text in strings:
            if _IDENTIFIER.match(text):
                return text.rsplit(".", 1)[-1]
    parts = symbol.split(".")
    if len(parts) == 4 and parts[:2] == ["torch", "ops"]:
        return parts[3]
    return ""


_IMPORT_LINE = re.compile(r"^[ \t]*(?:import|from)[ \t]", re.M)
_NEWLINE = re.compile("\n")


def _failing_rule(exc: BaseException) -> Rule | None:
    """The rule being applied where `exc` was raised: the innermost frame with a Rule in `rule`."""
    tb, found = exc.__traceback__, None
    while tb is not None:
        candidate = tb.tb_frame.f_locals.get("rule")
        if isinstance(candidate, Rule):
            found = candidate
        tb = tb.tb_next
    return found


def _WORD(ch: str) -> bool:
    return ch.isalnum() or ch == "_"

_HANDLERS = {
    ast.Import: Visitor.v_import,
    ast.ImportFrom: Visitor.v_import,
    ast.Name: Visitor.v_name,
    ast.Attribute: Visitor.v_name,
    ast.Call: Visitor.v_call,
    ast.IfExp: Visitor.v_ifexp,
    ast.If: Visitor.v_if,
    ast.While: Visitor.v_if,
    ast.Try: Visitor.v_try,
    ast.FunctionDef: Visitor.v_def,
    ast.AsyncFunctionDef: Visitor.v_def,
    ast.ClassDef: Visitor.v_def,
    ast.Lambda: Visitor.v_lambda,
    ast.Assign: Visitor.v_assign,
    ast.AnnAssign: Visitor.v_assign,
    ast.Dict: Visitor.v_dict,
    ast.Subscript: Visitor.v_subscript,
    ast.Compare: Visitor.v_compare,
}
if hasattr(ast, "TryStar"):
    _HANDLERS[ast.TryStar] = Visitor.v_try
