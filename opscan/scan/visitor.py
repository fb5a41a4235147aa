"""The per-file walk: one pruned pass over a stdlib `ast` tree that runs every matcher family.

# NOTE [ast, not libcst]
The scan uses the stdlib `ast` (C parser, ~175k lines/s here) plus its own import resolver
(resolver.py) instead of libcst + QualifiedNameProvider (~650 lines/s measured on real files):
the findings are the same, because every rule needs only names, literals, positions (ast gives
1-based lines and 0-based UTF-8 byte columns with end positions; builder.py converts them to
characters) and enclosing `if` tests. Statements whose lines hold no pre-filter token (NOTE
[pre-filter tokens]) are not visited at all.

The walk owns traversal and the state it implies (guards, the test being visited, enclosing
functions, import bindings); what fires where is the matcher families' (NOTE [matcher families]).
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Callable
from typing import Any

from opscan.scan import string_contexts as P
from opscan.scan.context import FileContext, Hit, lines_text
from opscan.scan.families import FAMILIES
from opscan.scan.families.kernels import exports as _exports
from opscan.scan.matchers import IMPORT_STATEMENT
from opscan.index.resolver import Imports
from opscan.scan.rules import Rule
from opscan.scan.trainium import on_trainium

__all__ = ["Hit", "Visitor", "own_imports"]


class Visitor(FileContext):
    """Walks one parsed file and collects Hits."""

    # -- driver ------------------------------------------------------------------------------
    def run(self) -> list[Hit]:
        self._prepass(self.tree.body, False)
        self._attribute_aliases()
        for prepare in _PREPARE:
            prepare(self)
        regex = self.c.token_regex()
        extra = {local for local, full in [*self.imports.alias.items(), *self._nested_imports()]
                 if (regex is not None and regex.search(full)) or self.extension_module(full, relative=True)}
        self._hot_lines(frozenset(extra | self.extra_words))
        self._body(self.tree, False)
        for finish in _FINISH:
            finish(self)
        return self.hits

    def exports(self) -> tuple[str, ...]:
        """The kernel wrappers this file defines, for the other files of the tree."""
        return _exports(self)

    def _nested_imports(self) -> list[tuple[str, str]]:
        """(local, dotted) names bound by the indented import statements (`from torchao.ops import
        marlin_24_gemm` inside a function), which the prepass does not see: the calls through them
        are sites, so their lines are walked. Read from the text (parsing each such statement
        alone), not from a walk of the whole tree; one in a docstring only adds lines to walk."""
        out: list[tuple[str, str]] = []
        resolver = Imports(self.relpath)
        for match in _NESTED_IMPORT.finditer(self.text):
            statement = IMPORT_STATEMENT.match(self.text, match.end())
            try:
                body = ast.parse(statement[0]).body if statement else []
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            for node in body:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    out += resolver.add(node)
        return out

    def _hot_lines(self, extra: frozenset[str]) -> None:
        """The lines holding a token, an import, or one of the file's `extra` names (whole words)."""
        text = self.text
        newlines = [m.start() for m in _NEWLINE.finditer(text)]
        starts = [m.start() for m in _IMPORT_LINE.finditer(text)]
        regex = self.c.bounded_regex()   # tokens within their bounds, as the file pre-check
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
        """Module-level bindings: imports and aliases here, the rest by the families' `bind`."""
        for stmt in body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self.imports.add(stmt)
            elif isinstance(stmt, ast.If):
                g = guarded or P.is_guard(stmt.test, self.resolve)
                body_g, else_g = self._branch_guards(stmt.test, guarded, g)
                if body_g is not None:
                    self._prepass(stmt.body, body_g)
                if else_g is not None:
                    self._prepass(stmt.orelse, else_g)
                continue
            elif isinstance(stmt, ast.Try):
                self._prepass(stmt.body, guarded or P.catches_import_error(stmt))
                for handler in stmt.handlers:
                    self._prepass(handler.body, guarded)
                self._prepass(stmt.orelse, guarded)
                self._prepass(stmt.finalbody, guarded)
                continue
            elif isinstance(stmt, ast.With):
                self._prepass(stmt.body, guarded)
                continue
            for bind in _BIND:
                bind(self, stmt, guarded)
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, (ast.Name, ast.Attribute)):
                full = self.resolve(stmt.value)
                if full:   # `register_fake = torch.library.register_fake`: an alias like an import
                    for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                        if isinstance(target, ast.Name):
                            self.imports.alias[target.id] = full

    def _attribute_aliases(self) -> None:
        """`self.torch = torch` (a module kept on an object): `self.torch.cuda.x` resolves like `torch.cuda.x`."""
        if "self." not in self.text:
            return
        for match in _SELF_ALIAS.finditer(self.text):
            full = self.imports.alias.get(match[2])
            if full is not None:
                self.imports.alias["self." + match[1]] = full

    # -- walk --------------------------------------------------------------------------------
    def visit(self, node: ast.AST, g: bool) -> None:
        handler = _DISPATCH.get(type(node))
        if handler is not None:
            handler(self, node, g)
        else:
            self._body(node, g)

    def _body(self, node: ast.AST, g: bool, skip: set[int] | frozenset[int] = frozenset()) -> None:
        body = getattr(node, "body", None)
        if isinstance(body, list) and body:
            dead = self._dead_rest(body)
            if dead:
                skip = set(skip) | dead
        for child in ast.iter_child_nodes(node):
            if id(child) in skip:
                continue
            if isinstance(child, ast.stmt):
                if self._is_hot(child):
                    self._statement(child, g)
                    if not g and isinstance(child, ast.If) and P.guards_the_rest(child, self.resolve):
                        g = True   # NOTE [short-circuit guards] in string_contexts.py: an early return
                continue
            self.visit(child, g)

    def _stmts(self, stmts: list[ast.stmt], g: bool) -> None:
        dead = self._dead_rest(stmts)
        for child in stmts:
            if id(child) in dead:
                break
            if self._is_hot(child):
                self._statement(child, g)
                if not g and isinstance(child, ast.If) and P.guards_the_rest(child, self.resolve):
                    g = True

    def _statement(self, node: ast.stmt, g: bool) -> None:
        """Visit one statement; if a rule fails on it, record that and go on with the next one."""
        try:
            self.visit(node, g)
        except (Exception, RecursionError) as exc:  # noqa: BLE001 - NOTE [one rule, one file]
            self.failures.append((node.lineno, _failing_rule(exc), exc))

    def _branch_guards(self, test: ast.AST, g: bool, guard: bool) -> tuple[bool | None, bool | None]:
        """How the body and the else of an `if` on `test` are walked: guarded or not, or None when
        not at all (NOTE [the branch Trainium takes] in trainium.py); `guard`: today's judgement,
        kept when the test has no Trainium answer."""
        branch = on_trainium(test, self.resolve)
        if branch is None:
            return guard, guard
        dead = True if branch.cuda else None
        return (g, dead) if branch.value else (dead, g)

    def _dead_rest(self, stmts: list[ast.stmt]) -> set[int]:
        """The statements after `if hasattr(torch, "accelerator"): return ...` (a test Trainium
        answers True without a CUDA check, whose block ends in return / continue / break): they
        never run there (NOTE [the branch Trainium takes])."""
        for i, stmt in enumerate(stmts[:-1]):
            if isinstance(stmt, ast.If) and not stmt.orelse and stmt.body \
                    and isinstance(stmt.body[-1], (ast.Return, ast.Continue, ast.Break)):
                branch = on_trainium(stmt.test, self.resolve)
                if branch is not None and branch.value and not branch.cuda:
                    return {id(rest) for rest in stmts[i + 1:]}
        return set()

    def _checked(self, node: ast.AST, g: bool) -> None:
        """A node the walk has no special order for: its checks, then its children."""
        for check in _CHECKS.get(type(node), ()):   # the families' checks (inlined: the hot path)
            check(self, node, g)
        self._body(node, g)

    def v_import(self, node: ast.Import | ast.ImportFrom, g: bool) -> None:
        self.bound = self.imports.add(node)
        end = node.end_lineno or node.lineno
        module_level = not self.depth
        for local, full in self.bound:
            self.bindings.append((node.lineno, end, local, full, module_level))
        for check in _CHECKS.get(type(node), ()):
            check(self, node, g)

    def v_name(self, node: ast.Name | ast.Attribute, g: bool) -> None:
        self.resolved = name = self.resolve(node)
        for check in _CHECKS.get(type(node), ()):
            check(self, node, g)
        if name is None and isinstance(node, ast.Attribute):
            self.visit(node.value, g)

    def v_call(self, node: ast.Call, g: bool) -> None:
        func = node.func
        qual = self.resolve(func)
        self.callee = qual, (func.attr if isinstance(func, ast.Attribute) and qual is None else None)
        for check in _CHECKS.get(type(node), ()):
            check(self, node, g)
        skip: set[int] = set()
        args = node.args
        if args and qual in P.CHECK_CALLS:   # torch._check(x.is_cuda): a failing test raises
            saved, self.test = self.test, ("false", f"a `{qual}`")
            try:
                self.visit(args[0], g)
            finally:
                self.test = saved
            skip.add(id(args[0]))
        self.calls[id(func)] = node
        self._body(node, g, skip)

    def v_ifexp(self, node: ast.IfExp, g: bool) -> None:
        for check in _CHECKS.get(type(node), ()):
            check(self, node, g)
        guard = g or P.is_guard(node.test, self.resolve)
        # the conditional's branches are what its availability check guards (NOTE [guards that protect CUDA-only code])
        self._visit_test(node.test, g, ("", "chooses between two values"),
                         self._spanning(self.guarding, (node.lineno, node.end_lineno or node.lineno)))
        body_g, else_g = (guard, guard) if self.is_idiom(node) else self._branch_guards(node.test, g, guard)
        if body_g is not None:
            self.visit(node.body, body_g)
        if else_g is not None:
            self.visit(node.orelse, else_g)

    def v_boolop(self, node: ast.BoolOp, g: bool) -> None:
        """`torch.cuda.is_available() and torch.cuda.is_bf16_supported()`: what follows a device
        check in `and`/`or` is evaluated only as that check decides, so it is guarded (NOTE
        [short-circuit guards] in string_contexts.py)."""
        for check in _CHECKS.get(type(node), ()):
            check(self, node, g)
        saved = self.guarding
        try:
            for i, value in enumerate(node.values):
                rest = node.values[i + 1:]
                if rest:   # what follows a check is what it guards (NOTE [guards that protect CUDA-only code])
                    self.guarding = self._spanning(saved, (rest[0].lineno, rest[-1].end_lineno or rest[-1].lineno))
                else:
                    self.guarding = saved
                self.visit(value, g)
                if not g and P.is_guard(value, self.resolve):
                    g = True
        finally:
            self.guarding = saved

    def v_if(self, node: ast.If | ast.While, g: bool) -> None:
        guard = g or P.is_guard(node.test, self.resolve)
        body = (node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno)
        if P.exits(node.body, self.resolve):
            last = node.body[-1] if not isinstance(node.body[0], ast.Raise) else node.body[0]
            test = ("true",
                    f"raises at line {last.lineno}" if isinstance(last, ast.Raise) else f"exits at line {last.lineno}")
        else:
            what = "guards the loop at" if isinstance(node, ast.While) else "guards"
            test = ("", f"{what} {lines_text(*body)}" + (
                f", else {lines_text(node.orelse[0].lineno, node.orelse[-1].end_lineno or node.orelse[-1].lineno)}"
                if node.orelse and not isinstance(node, ast.While) else ""))
        for check in _CHECKS.get(type(node), ()):
            check(self, node, g)
        self._visit_test(node.test, g, test, body)
        body_g, else_g = self._branch_guards(node.test, g, guard) if isinstance(node, ast.If) else (guard, guard)
        self.paths.append(P.own_paths(node.test, self.resolve))   # NOTE [another accelerator's own path]
        try:
            if body_g is not None:
                self._stmts(node.body, body_g)
        finally:
            self.paths.pop()
        if else_g is not None:
            self._stmts(node.orelse, else_g)

    @staticmethod
    def _spanning(outer: tuple[int, int] | None, lines: tuple[int, int]) -> tuple[int, int]:
        """The lines a check guards: `lines`, widened to the enclosing test's block when there is one."""
        return lines if outer is None else (min(outer[0], lines[0]), max(outer[1], lines[1]))

    def _visit_test(self, test: ast.AST, g: bool, what: tuple[str, str],
                    guarding: tuple[int, int] | None = None) -> None:
        saved = self.test, self.guarding, self.negated, self.requires_device
        self.test, self.guarding, self.negated = what, guarding, False
        if what[0]:   # NOTE [checks that require CUDA] (string_contexts.py)
            answer = P.neuron_answer(test, self.resolve)
            self.requires_device = answer is not None and bool(answer) == (what[0] == "true")
        else:
            self.requires_device = False
        try:
            self.visit(test, g)
        finally:
            self.test, self.guarding, self.negated, self.requires_device = saved

    def v_not(self, node: ast.UnaryOp, g: bool) -> None:
        for check in _CHECKS.get(type(node), ()):
            check(self, node, g)
        if not isinstance(node.op, ast.Not):
            self._body(node, g)
            return
        self.negated = not self.negated
        try:
            self._body(node, g)
        finally:
            self.negated = not self.negated

    def v_assert(self, node: ast.Assert, g: bool) -> None:
        for check in _CHECKS.get(type(node), ()):
            check(self, node, g)
        self._visit_test(node.test, g, ("false", "an assert"))
        if node.msg is not None:
            self.visit(node.msg, g)

    def v_try(self, node: ast.Try | ast.TryStar, g: bool) -> None:
        for check in _CHECKS.get(type(node), ()):
            check(self, node, g)
        self._stmts(node.body, g or P.catches_import_error(node))
        for handler in node.handlers:
            self._body(handler, g)
        self._stmts(node.orelse, g)
        self._stmts(node.finalbody, g)

    def v_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, g: bool) -> None:
        for check in _CHECKS.get(type(node), ()):
            check(self, node, g)
        if not isinstance(node, ast.ClassDef):
            self.functions.append(node.name)
        self.depth += 1
        try:   # annotations are types, not code that runs on a device: not visited
            returns = None if isinstance(node, ast.ClassDef) else node.returns
            self._body(node, g, {id(returns)} if returns is not None else frozenset())
        finally:
            self.depth -= 1
            if not isinstance(node, ast.ClassDef):
                self.functions.pop()

    def v_lambda(self, node: ast.Lambda, g: bool) -> None:
        for check in _CHECKS.get(type(node), ()):
            check(self, node, g)
        self.depth += 1
        try:
            self._body(node, g)
        finally:
            self.depth -= 1

    def v_assign(self, node: ast.Assign | ast.AnnAssign, g: bool) -> None:
        for check in _CHECKS.get(type(node), ()):
            check(self, node, g)
        self._body(node, g, {id(node.annotation)} if isinstance(node, ast.AnnAssign) else frozenset())


_IMPORT_LINE = re.compile(r"^[ \t]*(?:import|from)[ \t]", re.M)
_NESTED_IMPORT = re.compile(r"^[ \t]+(?=(?:import|from)[ \t])", re.M)
_SELF_ALIAS = re.compile(r"^[ \t]*self\.(\w+)[ \t]*=[ \t]*(\w+)[ \t]*(?:#.*)?$", re.M)
_NEWLINE = re.compile("\n")


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


# The families' hooks, in FAMILIES order, and the walk's handler per node type: a type with its
# own order of visiting (below) runs its checks at the right point itself; any other type with
# checks runs them before its children (`_checked`); the rest are only walked through.
_BIND = tuple(f.bind for f in FAMILIES if hasattr(f, "bind"))
_PREPARE = tuple(f.prepare for f in FAMILIES if hasattr(f, "prepare"))
_FINISH = tuple(f.finish for f in FAMILIES if hasattr(f, "finish"))
_CHECKS: dict[type, tuple[Callable[..., None], ...]] = {}
for _family in FAMILIES:
    for _type, _fn in getattr(_family, "CHECKS", {}).items():
        _CHECKS[_type] = (*_CHECKS.get(_type, ()), _fn)
_DISPATCH: dict[type, Callable[[Visitor, Any, bool], None]] = {t: Visitor._checked for t in _CHECKS}
_DISPATCH.update({
    ast.Import: Visitor.v_import,
    ast.ImportFrom: Visitor.v_import,
    ast.Name: Visitor.v_name,
    ast.Attribute: Visitor.v_name,
    ast.Call: Visitor.v_call,
    ast.IfExp: Visitor.v_ifexp,
    ast.BoolOp: Visitor.v_boolop,
    ast.If: Visitor.v_if,
    ast.While: Visitor.v_if,
    ast.Try: Visitor.v_try,
    ast.FunctionDef: Visitor.v_def,
    ast.AsyncFunctionDef: Visitor.v_def,
    ast.ClassDef: Visitor.v_def,
    ast.Lambda: Visitor.v_lambda,
    ast.Assign: Visitor.v_assign,
    ast.AnnAssign: Visitor.v_assign,
    ast.Assert: Visitor.v_assert,
    ast.UnaryOp: Visitor.v_not,
    ast.arg: lambda self, node, g: None,   # a parameter's annotation: a type, not code that runs
})
if hasattr(ast, "TryStar"):
    _DISPATCH[ast.TryStar] = Visitor.v_try
