"""What a codemod may ask about the module it rewrites: names, parents, the module's device.

# NOTE [one device per module]
# A rewrite that needs a device asks `device()` / `device_type()`. The first ask decides, once per
# module, where the device comes from: a module-level variable already holding the accelerator
# (`dev = torch.accelerator.current_accelerator(...) or torch.device("cpu")`, assigned once) is
# reused; otherwise one `DEVICE = ...` (a fresh name) is added after the module's imports, with
# `import torch` when the module has none. Sites never get their own device expression, so a
# module has one place that says which device it runs on. Where a device *string* stood, the
# rewrite uses `DEVICE.type` (still a str: `== "cpu"`, `in`, f-strings keep working); where a
# torch API takes a device, `DEVICE` itself.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

import libcst as cst
from libcst.metadata import CodeRange

from opscan.fix.positions import Positions
from opscan.fix.scope import Probe
from opscan.records import ImportBinding

CANONICAL = 'current_accelerator(check_available=True) or {torch}.device("cpu")'
NAME_CHOICES = ("DEVICE", "ACCELERATOR_DEVICE", "_OPSCAN_DEVICE")
# Keywords and calls that take a device (a torch.device or a string): the value may be `DEVICE`.
DEVICE_KEYWORDS = frozenset({"device", "map_location", "device_map", "output_device"})
DEVICE_CALLS = frozenset({"to", "device", "set_default_device"})


class Context:
    """The module being fixed, as codemods see it (built once per module, before any rewrite)."""

    def __init__(self, module: cst.Module, positions: Positions, probe: Probe | None = None,
                 prior: dict[str, str] | None = None, source: str = "",
                 bindings: tuple[ImportBinding, ...] | None = None) -> None:
        """`positions`: where the module's nodes are (NOTE [positions per statement] in
        fix/positions.py). `bindings`: the scan's import bindings of this module (records.ImportBinding,
        from ScanResult.facts / FileResult.facts); the name torch is bound to is read from them.
        Without them (a module fixed from text alone) the module's top-level imports are read instead."""
        self.module = module
        self._parents: dict[int, cst.CSTNode | None] = {id(self.module): None}
        self.positions = positions
        self.probe = probe
        if bindings is None:
            self.torch_alias, self.torch_index = _torch_import(self.module)
        else:
            self.torch_alias, self.torch_index = _torch_binding(self.module, self.positions, bindings)
        # the whole file's text (the module may be planned elided: NOTE [planning on an elided module])
        self.source = source or self.module.code
        self._identifiers: set[str] | None = None
        self.asked: list[str] = []       # the torch names codemods asked about, in order
        self.insert_at = _insertion_index(self.module, self.torch_index)
        self.reused = _reusable_device(self.module, self.torch_alias, self.source)
        prior = prior or {}
        if self.torch_alias is None and prior.get("torch"):      # an earlier notebook cell imported it
            self.torch_alias, self.torch_index = prior["torch"], -1
        if not self.reused and prior.get("device"):             # ... or defined the device
            self.reused = (prior["device"], -1)
        self.device_name = ""            # chosen on the first ask
        self.device_problem = ""         # why the last ask got no device
        self.new_device = False          # True: the device is a new module-level variable
        self.device_asks = 0             # how many times a plan asked for the device / for torch:
        self.torch_asks = 0              # the planner keeps only what applied plans asked for

    @property
    def identifiers(self) -> set[str]:
        """The words of the source, less module paths of imports: a superset of its identifiers
        (read once, when a rewrite first needs a fresh name)."""
        if self._identifiers is None:
            self._identifiers = _words(self.source)
        return self._identifiers

    # -- names --------------------------------------------------------------------------------
    def is_torch(self, node: cst.CSTNode, name: str) -> bool:
        """Whether `node` spells torch's `name` (`torch.device`, `T.device` with `import torch as T`).

        Syntactic on purpose: what a finding's node refers to through imports is its subject, which
        the scan resolved already; libcst's qualified-name analysis would cost more than the fix.
        """
        spelled = _dotted_name(node) if isinstance(node, (cst.Name, cst.Attribute)) else ""
        return spelled == name or (self.torch_alias is not None and spelled == self.torch_alias + name[5:])

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The node containing `node`. Found by descending from the module through the children
        whose position contains it (only the path is visited: libcst's ParentNodeProvider would
        visit the whole module, which costs more than the rest of the fix on a large file)."""
        key = id(node)
        if key not in self._parents:
            self._descend(node)
        return self._parents.get(key)

    def contains(self, node: cst.CSTNode, children: Sequence[cst.CSTNode]) -> None:
        """Record that `node` is the parent of `children` (a codemod walking the module down)."""
        for child in children:
            self._parents[id(child)] = node

    def _descend(self, node: cst.CSTNode) -> None:
        target = self.positions.get(node)
        if target is None and not self.positions.complete:   # in a statement not placed yet
            self.positions.place_all()
            target = self.positions.get(node)
        current: cst.CSTNode = self.module
        while current is not node:
            following = unplaced = None
            for child in current.children:
                self._parents[id(child)] = current
                if child is node:
                    return
                where = self.positions.get(child)
                if where is None:
                    unplaced = unplaced or child
                elif following is None and _contains(where, target):
                    following = child
            following = following or unplaced
            if following is None:     # positions do not nest everywhere (a Param's range leaves out
                self._search(current, node)   # its default): search this subtree by identity
                return
            current = following

    def _search(self, top: cst.CSTNode, node: cst.CSTNode) -> None:
        stack = [top]
        while stack:
            current = stack.pop()
            for child in current.children:
                self._parents[id(child)] = current
                if child is node:
                    return
                stack.append(child)

    def line(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

    @property
    def torch(self) -> str:
        return self.torch_alias or "torch"

    def dotted(self, name: str) -> cst.BaseExpression:
        """`torch.accelerator.synchronize` as an expression, using the module's alias for torch."""
        parts = name.split(".")
        if parts[0] == "torch":
            parts[0] = self.torch
            if self.torch_alias is None:
                self.torch_asks += 1
        expr: cst.BaseExpression = cst.Name(parts[0])
        for part in parts[1:]:
            expr = cst.Attribute(expr, cst.Name(part))
        return expr

    def has(self, dotted: str) -> bool | None:
        """Whether the installed torch has `dotted` (None: no torch here to ask). Every name asked
        is remembered (`asked`): a rewrite planned without torch relies on them."""
        self.asked.append(dotted)
        if self.probe is None or not self.probe.installed:
            return None
        found = self.probe.has(dotted)
        return found if self.probe.installed else None

    # -- the module's device (NOTE [one device per module]) -----------------------------------
    def device(self, node: cst.CSTNode) -> cst.BaseExpression | None:
        """The module's device as an expression, or None when it cannot be defined before `node`."""
        if not self.device_name:
            if self.reused:
                self.device_name = self.reused[0]
            else:
                used = self.identifiers
                self.device_name = next((n for n in NAME_CHOICES if n not in used), "")
                if not self.device_name:
                    self.device_problem = f"no free name for the module's device ({', '.join(NAME_CHOICES)} are taken)"
                    return None
                if self.torch_alias is None and "torch" in used:
                    self.device_name = ""
                    self.device_problem = ("the module has no `import torch` and uses the name `torch` for "
                                           "something else, so opscan cannot add one for the device")
                    return None
                self.new_device = True
        if not self._defined_before(node):
            self.device_problem = "the module's device cannot be defined before this line " \
                                  "(it runs before the imports end)"
            return None
        self.device_asks += 1
        if self.new_device and self.torch_alias is None:
            self.torch_asks += 1
        return cst.Name(self.device_name)

    def device_type(self, node: cst.CSTNode) -> cst.BaseExpression | None:
        device = self.device(node)
        return cst.Attribute(device, cst.Name("type")) if device is not None else None

    def _defined_before(self, node: cst.CSTNode) -> bool:
        top = self.top_statement(node)
        if top is None:
            return False
        index = self.module.body.index(top)
        if self.reused:
            return index > self.reused[1] or not _is_module_level(self, node, top)
        return index >= self.insert_at or not _is_module_level(self, node, top)

    def top_statement(self, node: cst.CSTNode) -> cst.CSTNode | None:
        current: cst.CSTNode | None = node
        while current is not None and self.parent(current) is not self.module:
            current = self.parent(current)
        return current

    def defined(self, device: bool, torch: bool) -> dict[str, str]:
        """What this module binds for later notebook cells: the device name and torch's alias."""
        out: dict[str, str] = {}
        if self.torch_alias or torch:
            out["torch"] = self.torch
        if self.reused or (device and self.new_device):
            out["device"] = self.device_name or (self.reused[0] if self.reused else "")
        return {k: v for k, v in out.items() if v}

    def definition(self, device: bool, torch: bool) -> list[cst.BaseStatement]:
        """The statements to add after the imports: `import torch` and `DEVICE = ...`, as the
        applied rewrites need them."""
        out: list[cst.BaseStatement] = []
        if torch and self.torch_alias is None:
            out.append(cst.parse_statement("import torch\n"))
        if device and self.new_device:
            text = f"{self.device_name} = {self.torch}.accelerator.{CANONICAL.format(torch=self.torch)}\n"
            statement = cst.parse_statement(text)
            out.append(statement.with_changes(leading_lines=[cst.EmptyLine()]) if out or self.insert_at else statement)
        return out


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import\b|import[ \t]+([^#\n;]+))", re.MULTILINE)


def _words(source: str) -> set[str]:
    """Every word of `source` that may be a name: a superset of its identifiers (enough to pick a
    fresh one). The module paths of imports bind nothing (`import torch.distributed as dist` binds
    `dist`, `from torch import cuda` binds `cuda`), so a word seen only there is left out: such a
    module can still be given `import torch`."""
    counts: dict[str, int] = {}
    for word in _WORD.findall(source):
        counts[word] = counts.get(word, 0) + 1
    for match in _IMPORT.finditer(source):
        paths = [match.group(1)] if match.group(1) else [p.split(" as ")[0] for p in match.group(2).split(",")]
        for path in paths:
            for word in _WORD.findall(path):
                counts[word] -= 1
    return {word for word, n in counts.items() if n > 0}


def _is_module_level(ctx: Context, node: cst.CSTNode, top: cst.CSTNode) -> bool:
    """True when `node` runs at import time (not inside a def or lambda body)."""
    current = ctx.parent(node)
    while current is not None and current is not top:
        if isinstance(current, (cst.FunctionDef, cst.Lambda)):
            return False
        current = ctx.parent(current)
    return not isinstance(top, cst.FunctionDef)


def _contains(outer: CodeRange, inner: CodeRange | None) -> bool:
    if inner is None:
        return True
    return (outer.start.line, outer.start.column) <= (inner.start.line, inner.start.column) and \
        (outer.end.line, outer.end.column) >= (inner.end.line, inner.end.column)


def _torch_import(module: cst.Module) -> tuple[str | None, int]:
    """The name `import torch [as X]` binds at module level, and that statement's index."""
    for index, statement in enumerate(module.body):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if _dotted_name(alias.name) == "torch":
                        asname = alias.asname.name.value \
                            if alias.asname and isinstance(alias.asname.name, cst.Name) else "torch"
                        return asname, index
                    if _dotted_name(alias.name).startswith("torch.") and alias.asname is None:
                        return "torch", index      # `import torch.distributed` binds `torch` too
    return None, -1


def _torch_binding(module: cst.Module, positions: Positions, bindings: tuple[ImportBinding, ...]
                   ) -> tuple[str | None, int]:
    """As _torch_import, from the scan's bindings: the first module-level `import torch [as X]` (or
    `import torch.sub`, which binds `torch`) that is a top-level statement, and that statement's index."""
    wanted = sorted((b.line, b.local) for b in bindings
                    if b.target == "torch" and b.module_level and b.cell is None and b.local)
    if not wanted:
        return None, -1
    lines = []
    for index, statement in enumerate(module.body):
        if isinstance(statement, cst.SimpleStatementLine) and any(isinstance(s, cst.Import) for s in statement.body):
            where = positions.get(statement)
            if where is not None:
                lines.append((where.start.line, where.end.line, index))
    for line, local in wanted:
        for first, last, index in lines:
            if first <= line <= last:
                return local, index
    return None, -1


def _dotted_name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted_name(node.value)}.{node.attr.value}"
    return ""


def _is_import_line(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body)


def _insertion_index(module: cst.Module, torch_index: int) -> int:
    """Where the device goes: after the docstring, `__future__` imports and the first import block
    (and never before `import torch`)."""
    body = module.body
    index = 0
    if body and isinstance(body[0], cst.SimpleStatementLine) and len(body[0].body) == 1 and \
            isinstance(body[0].body[0], cst.Expr) and \
            isinstance(body[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
        index = 1
    while index < len(body) and _is_import_line(body[index]):
        index += 1
    if torch_index >= index:      # `import torch` in a later import block: after the end of that block
        index = torch_index + 1
        while index < len(body) and _is_import_line(body[index]):
            index += 1
    return index


def _reusable_device(module: cst.Module, torch: str | None, source: str) -> tuple[str, int] | None:
    """A module-level `NAME = <torch>.accelerator.current_accelerator(...) or ...` bound once."""
    if torch is None:
        return None
    for index, statement in enumerate(module.body):
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            continue
        small = statement.body[0]
        if not isinstance(small, cst.Assign) or len(small.targets) != 1 or \
                not isinstance(small.targets[0].target, cst.Name):
            continue
        if _is_accelerator_device(small.value, torch):
            name = small.targets[0].target.value
            if _bindings(source, name) == 1:
                return name, index
    return None


def _is_accelerator_device(value: cst.BaseExpression, torch: str) -> bool:
    """Whether `value` is the accelerator as a device: `<torch>.accelerator.current_accelerator(...)`,
    alone or followed by `or <fallback>`. A value built from it is not (`(...).type` is a string, and
    `current_accelerator().type if hasattr(torch, "accelerator") else "cuda"` a string or "cuda")."""
    if isinstance(value, cst.BooleanOperation) and isinstance(value.operator, cst.Or):
        value = value.left
    return isinstance(value, cst.Call) and _dotted_name(value.func) == f"{torch}.accelerator.current_accelerator"


def _bindings(source: str, name: str) -> int:
    """How many times `name` is bound anywhere in the module's source (stdlib ast: fast; 99 if unparsable)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return 99
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)) or \
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name or \
                isinstance(node, ast.arg) and node.arg == name or \
                isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == name or \
                isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            count += 1
    return count
