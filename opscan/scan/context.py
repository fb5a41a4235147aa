"""The shared state of one file's analysis: its bindings, the hits so far, and how a hit is recorded.

Every matcher family (opscan/scan/families/) reads and extends this one context; the walk
(visitor.py) owns it. See NOTE [matcher families] in families/__init__.py.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from opscan.records import TaskKind
from opscan.scan import string_contexts as P
from opscan.scan.matchers import Compiled
from opscan.index.resolver import Imports, dotted
from opscan.scan.rules import Rule
from opscan.scan.trainium import on_trainium


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
class Constant:
    """A module-level string constant (`DEVICE = "cuda"`), reported where it is used as a device."""

    name: str
    values: list[tuple[ast.AST, str]]   # (node, string) as string_contexts.string_values gives them
    guarded: bool
    used: bool = False


class FileContext:
    """What the analysis of one file knows and has found so far."""

    def __init__(self, relpath: str, text: str, tree: ast.Module, compiled: Compiled,
                 extensions: frozenset[str] = frozenset(), packages: frozenset[str] = frozenset(),
                 wrappers: frozenset[str] = frozenset()) -> None:
        self.relpath = relpath
        self.text = text
        self.tree = tree
        self.c = compiled
        self.extensions = extensions            # the tree's declared compiled extensions
        self.packages = packages                # the tree's own top-level packages
        self.project_wrappers = wrappers        # kernel wrappers of other files ("dotted.name=RULEID")
        self.imports = Imports(relpath)
        self.resolve = self.imports.resolve
        self.hits: list[Hit] = []
        self._seen: set[tuple[object, ...]] = set()
        self.consumed: set[int] = set()         # nodes a matcher has reported as part of a larger one
        self.constants: dict[str, list[Constant]] = {}
        self.kernels: dict[str, Rule] = {}      # launchable kernel functions of the file
        self.instances: dict[str, tuple[Rule, tuple[str, ...]]] = {}
        self.ext_locals: dict[str, Rule] = {}   # names bound to a compiled extension or native library
        self.wrappers: dict[str, Rule] = {}     # this file's thin wrappers of kernel-registration APIs
        self.imported_wrappers: set[str] = set()
        self.wrapper_rules: dict[str, Rule] = {}   # project_wrappers by dotted name (the rules that run)
        self.own_imports: list[str] = []        # dotted names imported from the tree's own packages
        self.own_ops: set[tuple[str, str]] = set()   # (namespace, op) this file registers (NOTE [own custom ops])
        self.bindings: list[tuple[int, int, str, str, bool]] = []   # (line, end, local, target, module level)
        self.extra_words: set[str] = set()      # names whose lines the walk must visit (pre-filter)
        self.full = False                       # visit every statement (NOTE [native modules bound by calls])
        self.depth = 0                          # nesting in defs, classes and lambdas
        self.functions: list[str] = []          # names of the enclosing functions
        self.calls: dict[int, ast.Call] = {}    # id(func node) -> its call, for kernel names
        self.resolved: str | None = None        # the dotted name of the Name/Attribute being visited
        self.callee: tuple[str | None, str | None] = (None, None)   # the Call being visited: (dotted
        # name of its callee, or None; the method name when the callee is an unresolved attribute)
        self.hot: list[int] = []                # the lines the walk visits (visitor.py `_hot_lines`)
        self.bound: list[tuple[str, str]] = []  # the (local, dotted) pairs of the import being visited
        # the test being visited: (when it raises: "" never / "true" / "false", what it guards)
        self.test: tuple[str, str] = ("", "computes a value")
        self.negated = False                    # inside `not (...)` of that test
        self.requires_device = False            # that test raises when the device it checks is missing
        self.guards: dict[int, tuple[int, int]] = {}   # id(availability-check node) -> lines it guards
        self.guarding: tuple[int, int] | None = None   # while visiting an `if` test: the lines of its block
        self.failures: list[tuple[int, Rule | None, BaseException]] = []  # NOTE [one rule, one file]
        self._idiom: dict[int, bool] = {}
        self.paths: list[set[str]] = []         # other accelerators tested by the enclosing `if`s
        self.env_copies: set[str] = set()       # names bound to a copy of os.environ (strings.py)
        self.collections: dict[str, list[tuple[ast.AST, str]]] = {}  # module-level device-string tables (strings.py)
        self.builders: dict[str, str] = {}      # names bound to a JIT op builder (NOTE [op builders])
        self.dict_names: set[str] = set()       # module-level names bound to a dict literal (dispatch.py)
        self.member_sources: list[tuple[str, str, int, str]] = []   # (module, name, line, local name) of
        # `_C`-style member imports (NOTE [members of Python modules] in members.py)
        self.native_classes: dict[str, str] = {}   # imported classes -> their native-library attribute
        self.native_objects: dict[str, str] = {}   # instances of those -> the same (NOTE [native libraries])

    # -- recording ------------------------------------------------------------------------------
    def hit(self, rule: Rule, node: ast.AST, guarded: bool, value: str = "", name: str = "",
            subject: str | None = None, fix_name: str = "", unit: str = "", task: str = "") -> None:
        """Record a hit once per (rule, node[, unit]); `subject` defaults to the matched string value,
        else the matched name. `unit` tells apart hits of one rule on one statement (an import's
        aliases: `import cupy, flash_attn`); `task` overrides the rule's task kind (NOTE [library ops])."""
        key = (rule.id, id(node), unit)
        if key in self._seen:
            return
        self._seen.add(key)
        if subject is None:   # NOTE [another accelerator's own path]
# `elif is_xla_installed(): torch.autocast("xla")` and `def gather_hpu(): torch.device("hpu")` pin
# another accelerator on that accelerator's own branch: the code runs only where that accelerator
# is, so it is no pin of the code that runs on Neuron (OPS104 is for pins that a Neuron run
# reaches). The choice that leads there is the port point (OPS108, NOTE [device dispatch]). A
# device string of the same accelerator in a device position on such a branch is not reported;
# "cuda" never is dropped this way.


# NOTE [subjects]: a kernel rule's subject is a kernel name, never a symbol
            subject = kernel_name(None, name) if rule.task == TaskKind.KERNEL else (value or name)
        self.hits.append(Hit(rule, node, value, name, guarded, subject, task=str(task), fix_name=fix_name))

    def strings(self, context: str, values: Sequence[tuple[ast.AST, str]], guarded: bool, name: str = "") -> None:
        """Apply the string matchers of `context` to (node, value) pairs."""
        for regex, rule in self.c.strings.get(context, ()):
            for node, value in values:
                if id(node) not in self.consumed and regex.search(value):
                    self.hit(rule, node, guarded, value=self.display(node, value), name=name)

    def display(self, node: ast.AST, value: str) -> str:
        if isinstance(node, ast.Constant) or (isinstance(node, ast.Attribute) and node.attr in P.DEVICE_TYPE_FLAGS):
            return value
        segment = ast.get_source_segment(self.text, node)
        return segment if segment and len(segment) <= 80 else value

    def is_idiom(self, node: ast.IfExp) -> bool:
        """`"cuda" if torch.cuda.is_available() else "cpu"`: the availability idiom (a test whose
        Trainium answer rests on no CUDA check is not one: NOTE [the branch Trainium takes])."""
        key = id(node)
        if key not in self._idiom:
            found = False
            if P.is_availability_test(node.test, self.resolve) and \
                    getattr(on_trainium(node.test, self.resolve), "cuda", True):
                values = P.string_values(node.body, self.is_idiom) + P.string_values(node.orelse, self.is_idiom)
                found = any(regex.search(v) for regex, _ in self.c.strings.get("availability-idiom", ())
                            for _, v in values)
            self._idiom[key] = found
        return self._idiom[key]

    def branches(self, expr: ast.AST, guarded: bool) -> list[tuple[ast.AST, bool]]:
        """The parts of `expr` that run on Trainium, each with whether it is guarded: a conditional
        whose test has a Trainium answer gives its taken branch (and its CUDA branch, guarded, when
        the answer rests on a CUDA check); NOTE [the branch Trainium takes] (scan/trainium.py)."""
        if isinstance(expr, ast.IfExp) and not self.is_idiom(expr):
            branch = on_trainium(expr.test, self.resolve)
            if branch is not None:
                taken, dead = (expr.body, expr.orelse) if branch.value else (expr.orelse, expr.body)
                return self.branches(taken, guarded) + (self.branches(dead, True) if branch.cuda else [])
        return [(expr, guarded)]

    def device(self, context: str, expr: ast.AST | None, guarded: bool, name: str = "") -> None:
        """Apply the device-string matchers of `context` to an expression in a device position."""
        if expr is None:
            return
        if isinstance(expr, ast.Name) and expr.id in self.constants and self.imports.alias.get(expr.id) is None:
            for const in self.constants[expr.id]:
                const.used = True
        own = self.own_paths()
        for part, g in self.branches(expr, guarded):
            values = P.string_values(part, self.is_idiom)
            if own:   # NOTE [another accelerator's own path]
                values = [(node, value) for node, value in values if value.split(":", 1)[0] not in own]
            if isinstance(part, ast.IfExp) and not g and P.is_guard(part.test, self.resolve):
                # `"cuda" if is_cuda_available() else "cpu"`-like choices: the strings are guarded
                self.strings(context, values, True, name)
            else:
                self.strings(context, values, g, name)

    def own_paths(self) -> set[str]:
        """The other accelerators whose own code path is being visited: tested by an enclosing `if`
        (`if is_xla_installed():`) or named by an enclosing function (`def gather_hpu(...)`)."""
        out: set[str] = set()
        for tested in self.paths:
            out |= tested
        for function in self.functions:
            out |= P.function_accelerators(function)
        return out

    def device_test(self, values: Sequence[tuple[ast.AST, str]], g: bool, true_on_neuron: bool) -> None:
        """A device-type test against `values`; `true_on_neuron`: what it gives for a Neuron device
        (`== "cuda"` False, `!= "cuda"` True). It fails on Neuron (OPS107) when that answer is the
        one that raises (NOTE [device-type tests])."""
        raises, what = self.test
        answer = true_on_neuron != self.negated
        fails = (raises == "true" and answer) or (raises == "false" and not answer)
        self.strings("device-assert" if fails else "device-compare", values, g, name=what)

    # -- names ----------------------------------------------------------------------------------
    def getattr_name(self, node: ast.AST) -> str | None:
        """`getattr(torch.ops, "ns")` / `hasattr(...)` as the dotted name it reaches; a computed
        attribute shows as `{expr}` (`getattr(getattr(torch.ops, lib), name)` -> torch.ops.{lib}.{name})."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2 and node.func.id not in self.imports.alias):
            return None
        base_node, attr = node.args[0], node.args[1]
        base = self.getattr_name(base_node) if isinstance(base_node, ast.Call) else self.resolve(base_node)
        if base is None:
            return None
        if isinstance(attr, ast.Constant) and isinstance(attr.value, str):
            leaf = attr.value
        else:
            leaf = "{" + (dotted(attr) or "?") + "}"
        return f"{base}.{leaf}"

    def extension_module(self, full: str, relative: bool = False) -> Rule | None:
        """The extension-call rule for an imported dotted name that is a compiled extension module."""
        leaf = full.rsplit(".", 1)[-1]
        if "." in full and full.split(".", 1)[0] != "torch":   # `member`: `from pkg import _C`
            for regex, rule in self.c.ext_member_calls:
                if regex.search(leaf):
                    return rule
        if not self.c.ext_calls:
            return None
        if any(full == d or full.endswith("." + d) for d in self.extensions):
            return self.c.ext_calls[0][3]
        own = full.split(".", 1)[0] in self.packages
        for says_compiled, rel, _, rule in self.c.ext_calls:
            if says_compiled is not None and not own and says_compiled.search(full):
                return rule   # a name that says compiled, outside the project's own (Python) packages
            if relative and rel is not None and rel.search(leaf):
                return rule
        return None

    def field_default(self, value: ast.AST) -> ast.AST | None:
        """The default of a `field(default=...)` value, else the value itself."""
        if isinstance(value, ast.Call):
            name = self.resolve(value.func) or (value.func.id if isinstance(value.func, ast.Name) else "")
            if name in P.FIELD_CALLS:
                return P.keyword_value(value, "default")
        return value


def callee_matches(calls: tuple[str, ...], qual: str | None, method: str | None) -> bool:
    """Whether a call (resolved `qual`, or `.method` on an unresolved object) matches `calls`."""
    for pattern in calls:
        if pattern.startswith("."):
            if method and fnmatchcase(method, pattern[1:]):
                return True
        elif qual and fnmatchcase(qual, pattern):
            return True
    return False


def lines_text(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


# NOTE [another accelerator's own path]
# `elif is_xla_installed(): torch.autocast("xla")` and `def gather_hpu(): torch.device("hpu")` pin
# another accelerator on that accelerator's own branch: the code runs only where that accelerator
# is, so it is no pin of the code that runs on Neuron (OPS104 is for pins that a Neuron run
# reaches). The choice that leads there is the port point (OPS108, NOTE [device dispatch]). A
# device string of the same accelerator in a device position on such a branch is not reported;
# "cuda" never is dropped this way.


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
IDENT = re.compile(r"^[A-Za-z_]\w*$")


def kernel_name(call: ast.Call | None, symbol: str) -> str:
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
