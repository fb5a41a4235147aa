"""What a codemod answers for one finding: a `Plan` (rewrite this node, this way) or a `Leave` (and why)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from opscan.fix.context import Context


@dataclass(frozen=True)
class Plan:
    """Replace `target` (a node of the original tree) by `build(target as already rewritten)`."""

    target: cst.CSTNode
    build: Callable[[cst.CSTNode], cst.CSTNode]
    safety: str          # "safe" | "unsafe"
    note: str = ""       # what the rewrite does / why it is unsafe


@dataclass(frozen=True)
class Leave:
    """Not rewritten, and why (shown by `opscan fix`): a sentence and its code in reasons.REASONS."""

    reason: str
    kind: str = "form"


def no_device(ctx: Context) -> Leave:
    """Why the module's device is not available at this site (Context.device answered None)."""
    return Leave(ctx.device_problem, "no-device")


def string_value(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:  # noqa: BLE001
            return None
        return value if isinstance(value, str) else None
    return None


def replace_with(new: cst.BaseExpression) -> Callable[[cst.CSTNode], cst.CSTNode]:
    def build(old: cst.CSTNode) -> cst.CSTNode:
        return new.with_changes(lpar=getattr(old, "lpar", ()), rpar=getattr(old, "rpar", ())) \
            if getattr(old, "lpar", ()) and hasattr(new, "lpar") else new
    return build
