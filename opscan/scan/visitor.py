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
from opscan.scan.matchers import Compiled, NamePatterns, pattern_token
from opscan.scan.resolver import Imports, dotted
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
    fix_name: str = ""  # looks up the fix and severity instead of `name` (NOTE [guards that protect CUDA-only code])


@dataclass
class _Constant:
    name: str
    values: list
    guarded: bool
    used: bool = False


class Visitor:
    """Walks one parsed file and collects Hits."""

    def __init__(self, relpath: str, text: str, tree: ast.Module, compiled: Compiled,
                 extensions: frozenset[str] = frozenset(), packages: frozenset[str] = frozenset(),
                 wrappers: frozenset[str] = frozenset()) -> None:
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
        self.ext_locals: dict[str, Rule] = {}   # names bound to a compiled extension or native library
        self.wrappers: dict[str, Rule] = {}     # this file's thin wrappers of kernel-registration APIs
        self._project_wrappers = _parse_wrappers(wrappers, compiled)   # the tree's, by dotted name
        self._imported_wrappers: set[str] = set()
        self.own_imports: list[str] = []        # dotted names imported from the tree's own packages
        self.full = False                       # visit every statement (NOTE [native modules bound by calls])
        self._functions: list[str] = []         # names of the enclosing functions
        # the test being visited: (when it raises: "" never / "true" / "false", what it guards)
        self._test: tuple[str, str] = ("", "computes a value")
        self._negated = False   # inside `not (...)` of that test
        self._guards: dict[int, tuple[int, int]] = {}   # id(availability-check node) -> lines it guards
        self._guarding: tuple[int, int] | None = None   # while visiting an `if` test: the lines of its block

    # -- driver ------------------------------------------------------------------------------
    def run(self) -> list[Hit]:
        self._prepass(self.tree.body, False)
        self._attribute_aliases()
        for local, full in list(self.imports.alias.items()):
            self._bind_wrapper(local, full)
        self._find_wrappers()
        regex = self.c.token_regex()
        extra = {local for local, full in self.imports.alias.items()
                 if (regex is not None and regex.search(full)) or self._extension_module(full, relative=True)}
        extra |= set(self.constants) | set(self.kernels) | set(self.instances) | set(self.wrappers)
        self.full = any(pats is not None and any(t and t in self.text for t in _pattern_tokens(pats))
                        for _, _, pats, _ in self.c.ext_calls)
        self._hot_lines(frozenset(extra))
        self._body(self.tree, False)
        self._guard_fixes()
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
        if self.c.always or self.full:
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
                        full = self.resolve(stmt.value) if isinstance(stmt.value, (ast.Name, ast.Attribute)) else None
                        if full:   # `register_fake = torch.library.register_fake`: an alias like an import
                            self.imports.alias[target.id] = full
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

    def _attribute_aliases(self) -> None:
        """`self.torch = torch` (a module kept on an object): `self.torch.cuda.x` resolves like `torch.cuda.x`."""
        if "self." not in self.text:
            return
        for match in _SELF_ALIAS.finditer(self.text):
            full = self.imports.alias.get(match[2])
            if full is not None:
                self.imports.alias["self." + match[1]] = full

    def _find_wrappers(self) -> None:
        """NOTE [kernel-registration wrappers]: a module-level function of at most three statements
        whose body uses a custom-kernel name rule (`torch.library.register_fake(...)`,
        `getattr(torch.ops, ns)`), or calls such a wrapper, is a thin wrapper: each call of it
        (`@register_custom_op("ns::op")`) is a registration site too."""
        if not any(word in self.text for word in ("torch.library", "torch.ops", "cpp_extension")) and not any(
                full.startswith(("torch.library", "torch.ops", "torch.utils.cpp_extension"))
                for full in self.imports.alias.values()):
            return
        functions = [n for n in self.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and len([b for b in n.body if not _is_docstring(b)]) <= 3]
        for _ in range(3):   # wrappers of wrappers
            found = False
            for fn in functions:
                if fn.name in self.wrappers:
                    continue
                rule = self._wraps(fn)
                if rule is not None:
                    self.wrappers[fn.name] = rule
                    found = True
            if not found:
                break

    def _wraps(self, fn: ast.AST) -> Rule | None:
        for node in ast.walk(fn):
            name = None
            if isinstance(node, ast.Call):
                if isinstance(node.func, ast.Name) and node.func.id in self.wrappers:
                    return self.wrappers[node.func.id]
                name = self._getattr_name(node)
            elif isinstance(node, (ast.Attribute, ast.Name)):
                name = self.resolve(node)
            if name:
                for pats, rule, _ in self.c.names:
                    if rule.category == "custom-kernel" and pats.matches(name):
                        return rule
        return None

    def _bind_wrapper(self, local: str, full: str) -> None:
        """An imported wrapper of another file of the tree (NOTE [wrappers across files])."""
        if self._project_wrappers:
            for name, rule in self._project_wrappers.items():
                if full == name or name.endswith("." + full):
                    self.wrappers[local] = rule
                    self._imported_wrappers.add(local)
                    return

    def _wrapper_reaches_kernel(self, rule: Rule, call: ast.Call) -> bool:
        """A wrapper of `torch.ops` lookups called with a literal namespace the rule excepts
        (`get_operator("aten", "mm")`) reaches no custom kernel."""
        args = call.args
        if not (args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str)
                and _IDENT.match(args[0].value)):
            return True
        op = args[1].value if len(args) > 1 and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str) else "op"
        for pats, named, _ in self.c.names:
            if named is rule and any(p.startswith("torch.ops.") for p in pats.patterns):
                return pats.matches(f"torch.ops.{args[0].value}.{op}")
        return True

    def exports(self) -> tuple[str, ...]:
        """The kernel wrappers this file defines, for the other files of the tree."""
        module = self.imports.module
        return tuple(sorted(f"{module}.{name}={rule.id}" if module else f"{name}={rule.id}"
                            for name, rule in self.wrappers.items() if name not in self._imported_wrappers))

    def _getattr_name(self, node: ast.AST) -> str | None:
        """`getattr(torch.ops, "ns")` / `hasattr(...)` as the dotted name it reaches; a computed
        attribute shows as `{expr}` (`getattr(getattr(torch.ops, lib), name)` -> torch.ops.{lib}.{name})."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2 and node.func.id not in self.imports.alias):
            return None
        base_node, attr = node.args[0], node.args[1]
        base = self._getattr_name(base_node) if isinstance(base_node, ast.Call) else self.resolve(base_node)
        if base is None:
            return None
        if isinstance(attr, ast.Constant) and isinstance(attr.value, str):
            leaf = attr.value
        else:
            leaf = "{" + (dotted(attr) or "?") + "}"
        return f"{base}.{leaf}"

    def _extension_module(self, full: str, relative: bool = False) -> Rule | None:
        """The extension-call rule for an imported dotted name that is a compiled extension module."""
        leaf = full.rsplit(".", 1)[-1]
        for regex, rel, _, rule in self.c.ext_calls:
            if any(full == d or full.endswith("." + d) for d in self.extensions):
                return rule
            if regex is not None and regex.search(full):
                return rule
            if relative and rel is not None and rel.search(leaf):
                return rule
        return None

    # -- reporting ---------------------------------------------------------------------------
    def _hit(self, rule: Rule, node: ast.AST, guarded: bool, value: str = "", name: str = "",
             subject: str | None = None, fix_name: str = "") -> None:
        """Record a hit; `subject` defaults to the matched string value, else the matched name."""
        key = (rule.id, id(node))
        if key in self._seen:
            return
        self._seen.add(key)
        if subject is None:   # NOTE [subjects]: a kernel rule's subject is a kernel name, never a symbol
            subject = _kernel_name(None, name) if rule.task == "kernel" else (value or name)
        self.hits.append(Hit(rule, node, value, name, guarded, subject, fix_name=fix_name))

    def _strings(self, context: str, values, guarded: bool, name: str = "") -> None:
        for regex, rule in self.c.strings.get(context, ()):
            for node, value in values:
                if id(node) not in self.consumed and regex.search(value):
                    self._hit(rule, node, guarded, value=self._display(node, value), name=name)

    def _display(self, node: ast.AST, value: str) -> str:
        if isinstance(node, ast.Constant) or (isinstance(node, ast.Attribute) and node.attr in P.DEVICE_TYPE_FLAGS):
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

    def _body(self, node: ast.AST, g: bool, skip: set[int] | frozenset = frozenset()) -> None:
        for child in ast.iter_child_nodes(node):
            if id(child) in skip:
                continue
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
        bound = self.imports.add(node)
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
        for pats, rule in self.c.import_names:   # `import torch.cuda`, `from torch.cuda.amp import X`
            for candidate in (members if isinstance(node, ast.ImportFrom) else modules):
                if candidate.split(".", 1)[0] in self.c.roots and pats.matches(candidate):
                    self._hit(rule, node, g, name=candidate, fix_name=candidate + IMPORT_SUFFIX)
                    break
        for regex, relative, rule in self.c.extensions:
            for candidate in modules + members:
                declared = any(candidate == d or candidate.endswith("." + d) for d in self.extensions)
                own = local and relative is not None and candidate in members and relative.search(
                    candidate.rsplit(".", 1)[-1])
                if declared or own or (regex is not None and candidate in modules and regex.search(candidate)):
                    self._hit(rule, node, g, name=candidate, subject=candidate.rsplit(".", 1)[-1])
                    break
        for name, full in bound:   # NOTE [native modules bound by calls]: later calls into them are sites
            rule = self._extension_module(full, relative=local)
            if rule is not None:
                self.ext_locals[name] = rule
            if isinstance(node, ast.ImportFrom) and (local or full.split(".", 1)[0] in self.packages):
                self.own_imports.append(full)
                self._bind_wrapper(name, full)

    def v_name(self, node, g: bool) -> None:
        name = self.resolve(node)
        if name is None:
            if isinstance(node, ast.Attribute):
                flag = P.DEVICE_TYPE_FLAGS.get(node.attr)
                if flag is not None and id(node) not in self.consumed:   # `t.is_cuda`: a device-type test
                    self._device_test([(node, flag)], g, False)
                self.visit(node.value, g)
            return
        if id(node) in self.consumed or name.split(".", 1)[0] not in self.c.roots \
                or (isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del))):   # rebinding
            return
        matched = False
        for pats, rule, _ in self.c.names:
            if pats.matches(name):
                matched = True
                subject = _kernel_name(self._calls.get(id(node)), name) if rule.task == "kernel" else name
                self._hit(rule, node, g, name=name, subject=subject)
                if self._guarding is not None:
                    self._guards[id(node)] = self._guarding
        if not matched and self.c.exact_names:   # `torch.version.cuda.split(".")`: the exact name it starts with
            prefix = name
            while "." in prefix:
                prefix = prefix.rsplit(".", 1)[0]
                for rule in self.c.exact_names.get(prefix, ()):
                    self._hit(rule, node, g, name=prefix)

    def _device_test(self, values, g: bool, true_on_neuron: bool) -> None:
        """A device-type test against `values`; `true_on_neuron`: what it gives for a Neuron device
        (`== "cuda"` False, `!= "cuda"` True). It fails on Neuron (OPS107) when that answer is the
        one that raises (NOTE [device-type tests])."""
        raises, what = self._test
        answer = true_on_neuron != self._negated
        fails = (raises == "true" and answer) or (raises == "false" and not answer)
        self._strings("device-assert" if fails else "device-compare", values, g, name=what)

    def _guard_fixes(self) -> None:
        """NOTE [guards that protect CUDA-only code]: `if torch.cuda.is_available():` whose block
        holds CUDA-only work (an API without a device-agnostic equivalent, a CUDA setting, a kernel,
        a CUDA-only library) must stay a CUDA check; replacing it by `torch.accelerator.is_available()`
        would run that work on a Neuron device. Such a check gets the fix (and severity) of the
        `<name>#guards-cuda-only` entry of its rule's `fixes`, naming what it protects."""
        if not self._guards:
            return
        out = []
        for hit in self.hits:
            span = self._guards.get(id(hit.node))
            key = f"{hit.name}{GUARD_SUFFIX}"
            if span is not None and hit.rule.fix_for(key)[0] != hit.rule.fix_for(hit.name)[0]:
                inside = sorted({h.name or h.value for h in self.hits
                                 if h is not hit and span[0] <= getattr(h.node, "lineno", 0) <= span[1]
                                 and _cuda_only(h)})
                if inside:
                    shown = ", ".join(f"`{n}`" for n in inside[:3]) + (", ..." if len(inside) > 3 else "")
                    hit = replace(hit, fix_name=key, value=f"{shown} ({_lines(*span)})")
            out.append(hit)
        self.hits = out

    def v_call(self, node: ast.Call, g: bool) -> None:
        func = node.func
        qual = self.resolve(func)
        method = func.attr if isinstance(func, ast.Attribute) and qual is None else None
        args = node.args
        skip: set[int] = set()
        if id(node) not in self.consumed:
            reached = self._getattr_name(node)   # getattr(torch.ops, "ns"): a use of torch.ops.ns
            if reached is not None and (func.id == "getattr" or reached.startswith("torch.ops.")):  # hasattr: a probe
                if isinstance(args[0], ast.Call):
                    self.consumed.add(id(args[0]))
                if reached.count(".") == 2 and reached.startswith("torch.ops."):
                    reached += ".{op}"   # a namespace reached, its ops unknown
                for pats, rule, _ in self.c.names:
                    if pats.matches(reached):
                        self._hit(rule, node, g, name=reached, subject=_kernel_name(None, reached))
        if qual in P.CHECK_CALLS and args:   # torch._check(x.is_cuda): a failing device test raises
            saved, self._test = self._test, ("false", f"a `{qual}`")
            try:
                self.visit(args[0], g)
            finally:
                self._test = saved
            skip.add(id(args[0]))
        if method == "startswith" and args:   # str(dev).startswith("cuda"): a device-type test
            self._device_test(P.compared_strings(args[0]), g, False)
        if qual in P.COMMAND_CALLS and args:
            command = args[0].elts[0] if isinstance(args[0], (ast.List, ast.Tuple)) and args[0].elts else args[0]
            self._strings("command", P.string_values(command), g)
        for calls, most, rule in self.c.arity:   # torch.is_autocast_enabled(): the CUDA form
            if self._callee_matches(calls, qual, method) and len(args) <= most and not any(
                    kw.arg is None or P.DEVICE_NAME.match(kw.arg) for kw in node.keywords):
                self._hit(rule, node, g, name=qual or f".{method}")
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in self.ext_locals:
            self._hit(self.ext_locals[func.value.id], node, g, name=f"{func.value.id}.{func.attr}",
                      subject=func.value.id)
        if isinstance(func, ast.Name) and func.id in self.wrappers and (
                func.id not in self.imports.alias or func.id in self._imported_wrappers) \
                and self._wrapper_reaches_kernel(self.wrappers[func.id], node):
            self._hit(self.wrappers[func.id], node, g, name=func.id, subject=_kernel_name(node, ""))
        pos = P.DEVICE_ARG_CALLS.get(qual) if qual else P.DEVICE_ARG_METHODS.get(method or "")
        if pos is not None and 0 <= pos < len(args) and not any(isinstance(a, ast.Starred) for a in args[:pos + 1]):
            self._device("device-arg", args[pos], g)
        if qual == "torch.device":
            self._device("device-arg", P.keyword_value(node, "type"), g)
        elif qual and args and P.ACCELERATOR_CALL.match(qual):   # torch.cuda.get_device_capability("cuda")
            self._device("device-arg", args[0], g)
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
            self._hit(self.kernels[func.value.id], node, g, name=func.value.id, subject=func.value.id)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in self.instances:
            rule, methods = self.instances[func.value.id]
            if func.attr in methods:
                self._hit(rule, node, g, name=f"{func.value.id}.{func.attr}", subject=_kernel_name(node, ""))
        self._calls[id(func)] = node
        self._body(node, g, skip)

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
        self._visit_test(node.test, g, ("", "chooses between two values"))
        self.visit(node.body, guard)
        self.visit(node.orelse, guard)

    def v_if(self, node, g: bool) -> None:
        guard = g or P.is_guard(node.test, self.resolve)
        body = (node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno)
        if isinstance(node.body[0], ast.Raise):
            test = ("true", f"raises at line {body[0]}")
        else:
            what = "guards the loop at" if isinstance(node, ast.While) else "guards"
            test = ("", f"{what} {_lines(*body)}" + (
                f", else {_lines(node.orelse[0].lineno, node.orelse[-1].end_lineno or node.orelse[-1].lineno)}"
                if node.orelse and not isinstance(node, ast.While) else ""))
        self._visit_test(node.test, g, test, body)
        self._stmts(node.body, guard)
        self._stmts(node.orelse, guard)

    def _visit_test(self, test: ast.AST, g: bool, what: tuple[str, str],
                    guarding: tuple[int, int] | None = None) -> None:
        saved = self._test, self._guarding, self._negated
        self._test, self._guarding, self._negated = what, guarding, False
        try:
            self.visit(test, g)
        finally:
            self._test, self._guarding, self._negated = saved

    def v_not(self, node: ast.UnaryOp, g: bool) -> None:
        if not isinstance(node.op, ast.Not):
            self._body(node, g)
            return
        self._negated = not self._negated
        try:
            self._body(node, g)
        finally:
            self._negated = not self._negated

    def v_assert(self, node: ast.Assert, g: bool) -> None:
        self._visit_test(node.test, g, ("false", "an assert"))
        if node.msg is not None:
            self.visit(node.msg, g)

    def v_return(self, node: ast.Return, g: bool) -> None:
        """`return "cuda"` in a function named for a device (`infer_device`), `return "nccl"` in one
        named for a backend."""
        if node.value is not None and self._functions:
            function = self._functions[-1].lower()
            if "device" in function:
                self._device("device-return", node.value, g)
            if "backend" in function:
                self._strings("backend-arg", P.string_values(node.value), g)
        self._body(node, g)

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
            self._functions.append(node.name)
        self.depth += 1
        try:   # annotations are types, not code that runs on a device: not visited
            self._body(node, g, {id(node.returns)} if getattr(node, "returns", None) is not None else frozenset())
        finally:
            self.depth -= 1
            if not isinstance(node, ast.ClassDef):
                self._functions.pop()

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
            self._bind_native(targets, value, g)
        self._body(node, g, {id(node.annotation)} if isinstance(node, ast.AnnAssign) else frozenset())

    def _bind_native(self, targets, value: ast.AST, g: bool) -> None:
        """NOTE [native modules bound by calls]: `ext = cpp_extension.load(...)` / `lib =
        ctypes.CDLL(...)` bind a native module like an import of a compiled extension does; taking a
        function from one (`f = ext.forward if ... else ext.forward_bf16`) is a call site too."""
        if isinstance(value, ast.Call):
            name = self.resolve(value.func)
            if name:
                for _, _, sources, rule in self.c.ext_calls:
                    if sources is not None and sources.matches(name):
                        for target in targets:
                            if isinstance(target, ast.Name):
                                self.ext_locals[target.id] = rule
        for branch in (value.body, value.orelse) if isinstance(value, ast.IfExp) else (value,):
            if isinstance(branch, ast.Attribute) and isinstance(branch.value, ast.Name) \
                    and branch.value.id in self.ext_locals:
                self._hit(self.ext_locals[branch.value.id], branch, g, name=f"{branch.value.id}.{branch.attr}",
                          subject=branch.value.id)

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
        if any(P.is_deviceish(p) for p in parts):   # x.device.type == "cuda", dev in ("cuda", "npu")
            self._device_test([v for p in parts if not P.is_deviceish(p) for v in P.compared_strings(p)], g,
                              isinstance(node.ops[0], (ast.NotEq, ast.NotIn, ast.IsNot)))
        self._body(node, g)

    @staticmethod
    def _backendish(expr: ast.AST) -> bool:
        if isinstance(expr, ast.Call):
            expr = expr.func
            leaf = expr.attr if isinstance(expr, ast.Attribute) else getattr(expr, "id", "")
            return leaf in P.BACKEND_CALL_NAMES
        leaf = P.target_name(expr)
        return bool(leaf and P.BACKEND_NAME.match(leaf))


# NOTE [device-type tests]
# A comparison of a device or device type with "cuda" (or `t.is_cuda`, `str(d).startswith("cuda")`)
# is a device-type test: on a Neuron device it gives False for `==`/`in`/`is_cuda` and True for
# `!=`/`not in` (flipped under `not`). Where the test sits decides what that does: in an `assert`
# or `torch._check` a False answer raises; as the test of an `if` whose block raises, a True
# answer does. A test whose Neuron answer raises is OPS107 (error); every other device-type test
# (branches, conditional expressions, values computed for later) is OPS106 (warning), naming
# the lines it guards.

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
_IDENT = re.compile(r"^[A-Za-z_]\w*$")


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
_SELF_ALIAS = re.compile(r"^[ \t]*self\.(\w+)[ \t]*=[ \t]*(\w+)[ \t]*(?:#.*)?$", re.M)
GUARD_SUFFIX = "#guards-cuda-only"
# An import of a matched name (`from torch.cuda import Event`) looks up its fix and severity as
# `<name>#import` (a rule's `fixes` entry for "*#import"), else the rule's default fix.
IMPORT_SUFFIX = "#import"


def own_imports(tree: ast.Module, relpath: str, packages: frozenset[str]) -> tuple[str, ...]:
    """The dotted names a file's module-level `from` imports take from the scanned tree's own
    packages (for a file the pre-filter does not walk; Visitor.own_imports for the others)."""
    imports = Imports(relpath)
    out: set[str] = set()
    stack = list(tree.body)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.ImportFrom):
            for _, full in imports.add(stmt):
                if stmt.level or full.split(".", 1)[0] in packages:
                    out.add(full)
        elif isinstance(stmt, (ast.If, ast.Try)):
            stack += [*stmt.body, *stmt.orelse, *getattr(stmt, "finalbody", ()),
                      *(s for h in getattr(stmt, "handlers", ()) for s in h.body)]
    return tuple(sorted(out))


def _parse_wrappers(wrappers: frozenset[str], compiled: Compiled) -> dict[str, Rule]:
    """Project.wrappers ("dotted.name=RULEID") as dotted name -> the rule (if it runs)."""
    if not wrappers:
        return {}
    by_id = {rule.id: rule for _, rule, _ in compiled.names}
    out = {}
    for entry in sorted(wrappers):
        name, _, rule_id = entry.rpartition("=")
        if rule_id in by_id:
            out[name] = by_id[rule_id]
    return out


def _lines(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _pattern_tokens(pats: NamePatterns) -> list[str]:
    return [t for t in (pattern_token(p) for p in pats.patterns) if t]


def _cuda_only(hit: Hit) -> bool:
    """Whether a hit is work that only CUDA can do: a kernel, a CUDA-only library, a CUDA setting, or
    a CUDA API that has no device-agnostic replacement opscan can apply (its rule's `autofix`)."""
    rule = hit.rule
    if rule.category in ("custom-kernel", "cuda-only-lib"):
        return True
    if rule.category != "cuda-api" or hit.name.endswith((".is_available", ".is_initialized", ".device_count")):
        return False
    # a CUDA API is device-agnostic work when its rule's automatic fix rewrites it to an equivalent
    return rule.autofix is None or rule.autofix.safety != "safe" or not rule.autofix.covers(hit.name)
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
    ast.Assert: Visitor.v_assert,
    ast.UnaryOp: Visitor.v_not,
    ast.Return: Visitor.v_return,
    ast.arg: lambda self, node, g: None,   # a parameter's annotation: a type, not code that runs
}
if hasattr(ast, "TryStar"):
    _HANDLERS[ast.TryStar] = Visitor.v_try
