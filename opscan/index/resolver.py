"""Import-aware names: maps a file's local names to the dotted names they were imported as.
The scan's import resolver, and the project index's module-level bindings (opscan/index).

`import torch as T; T.cuda.synchronize()`, `from torch import cuda; cuda.synchronize()` and
`from torch.cuda import amp; amp.autocast()` all resolve to `torch.cuda....`. Resolution is
flow-insensitive (the last import of a name wins) and only names bound by imports resolve: a
local variable called `cuda` is never mistaken for `torch.cuda`. Two bindings that are not
imports resolve the same way: a module-level `alias = torch.library.register_fake`, and a module
kept on an object (`self.torch = torch`, keyed `self.torch`; visitor.py adds both).
"""

from __future__ import annotations

import ast


def module_of(relpath: str) -> tuple[str, bool]:
    """The dotted module name of a file path (relative to the scanned root) and whether it is a package."""
    parts = relpath.replace("\\", "/").split("/")
    stem = parts[-1].rsplit(".", 1)[0]
    is_package = stem == "__init__"
    parts = parts[:-1] if is_package else parts[:-1] + [stem]
    return ".".join(p for p in parts if p), is_package


class Imports:
    """The import bindings of one file."""

    def __init__(self, relpath: str = "") -> None:
        self.alias: dict[str, str] = {}
        self.star = False   # a `from X import *` (NOTE [torch through a star import])
        self.module, self.is_package = module_of(relpath)

    def absolute(self, node: ast.ImportFrom) -> str:
        """The absolute module of a `from X import ...` statement (relative imports resolved)."""
        if not node.level:
            return node.module or ""
        base = self.module.split(".") if self.module else []
        drop = node.level - (1 if self.is_package else 0)
        if drop > 0:
            base = base[:-drop] if drop <= len(base) else []
        return ".".join([*base, *([node.module] if node.module else [])])

    def add(self, node: ast.Import | ast.ImportFrom) -> list[tuple[str, str]]:
        """Record the bindings of an import statement; returns (local name, dotted name) pairs."""
        bound: list[tuple[str, str]] = []
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound.append((alias.asname, alias.name))
                else:
                    top = alias.name.split(".")[0]
                    bound.append((top, top))
        else:
            module = self.absolute(node)
            for alias in node.names:
                if alias.name == "*":
                    self.star = True
                    continue
                full = f"{module}.{alias.name}" if module else alias.name
                bound.append((alias.asname or alias.name, full))
        for local, full in bound:
            self.alias[local] = full
        return bound

    def resolve(self, expr: ast.AST) -> str | None:
        """The dotted name of a Name/Attribute chain rooted in an imported name, else None."""
        text = dotted(expr)
        if text is None:
            return None
        head, dot, rest = text.partition(".")
        base = self.alias.get(head)
        if base is None and head == "torch" and self.star:
            base = "torch"   # NOTE [torch through a star import]
        if base is None:
            if head == "self" and rest:   # `self.torch = torch` kept a module on the object
                attr, dot, rest = rest.partition(".")
                base = self.alias.get("self." + attr)
                if base is not None:
                    return base + dot + rest
            return None
        return base + dot + rest


# NOTE [torch through a star import]
# `from .backend import *` where backend.py does `import torch` binds `torch` in this file too
# (a star import takes every public module-level name that has no `__all__` to stop it). Which names
# a star import brings is unknown without the other file, so only `torch` is assumed: in a file with
# a star import, a `torch` that no import binds is the torch module (`torch.ops.deepspeed.op(...)`).
# A file without a star import never resolves an unbound `torch`.


def dotted(expr: ast.AST) -> str | None:
    """The literal dotted text of a Name/Attribute chain (`self.args.device`), else None."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    return ".".join(reversed(parts))
