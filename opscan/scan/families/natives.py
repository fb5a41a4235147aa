"""Native libraries loaded with ctypes, followed beyond the load: functions given a ctypes signature,
attribute probes of the library, and a library another file of the tree loads."""

from __future__ import annotations

import ast
import re

from opscan.scan.context import FileContext
from opscan.index.resolver import dotted
from opscan.scan.rules import Rule

# NOTE [native libraries]
# `lib = ctypes.CDLL(path)` binds a native module (kernels.py, NOTE [native modules bound by calls]);
# its calls are sites. Three more spellings name the same library:
#   - a ctypes signature (`lib.get_context.restype = ct.c_void_p`, `.argtypes`, `.errcheck`) is only
#     ever given to a function of a loaded library: the receiver (`lib`) is one, wherever it came
#     from, and each declaration and each bare probe (`lib.cadam32bit_grad_fp32`, a statement that
#     raises when the library lacks it) is a site (not for Windows' own DLLs: `ctypes.WinDLL(...)`);
#   - across files (as the wrappers, wrappers.py NOTE [wrappers across files]): a file exports its
#     module-level names bound to a native library (`lib`, "pkg.mod.lib=OPS310@") and the attributes
#     its classes set to one (`self.lib = ct.cdll.LoadLibrary(...)` in `class CUDASetup`,
#     "pkg.mod.CUDASetup=OPS310@lib"); a file importing them binds the name, or follows the class
#     to its instances (`setup = CUDASetup.get_instance()`; `lib = setup.lib`) and their attribute.
#     The second pass runs once: a library re-exported by a file that itself imports it is not
#     followed further.
_SIGNATURE = re.compile(r"([A-Za-z_][\w.]*)\.\w+\.(?:restype|argtypes|errcheck)\s*=")
_SIGNATURE_ATTRS = ("restype", "argtypes", "errcheck")
# Windows' own DLLs (`kernel32 = ctypes.WinDLL("kernel32.dll")`) get signatures too; they are the OS's.
_SYSTEM = re.compile(r"(\w+)\s*=\s*(?:\w+\.)?(?:WinDLL|OleDLL|windll|oledll)\b")
_LOADS = ("LoadLibrary", "CDLL", "PyDLL", "load_library")


def _rule(ctx: FileContext) -> Rule | None:
    """The rule of calls into a ctypes-loaded library (the extension-call rule listing ctypes.CDLL)."""
    for _, _, sources, rule in ctx.c.ext_calls:
        if sources is not None and sources.matches("ctypes.CDLL"):
            return rule
    return None


def prepare(ctx: FileContext) -> None:
    rule = _rule(ctx)
    if rule is None:
        return
    if "restype" in ctx.text or "argtypes" in ctx.text or "errcheck" in ctx.text:
        system = {m[1] for m in _SYSTEM.finditer(ctx.text)}
        for match in _SIGNATURE.finditer(ctx.text):
            if match[1] in system:
                continue
            ctx.ext_locals.setdefault(match[1], rule)
            ctx.extra_words.add(match[1].rsplit(".", 1)[-1])
    for entry in ctx.project_wrappers:
        name, _, tail = entry.rpartition("=")
        rule_id, at, attr = tail.partition("@")
        if not at or rule_id != rule.id:
            continue
        for local, full in ctx.imports.alias.items():
            if full == name:
                if attr:
                    ctx.native_classes[local] = attr
                else:
                    ctx.ext_locals[local] = rule
                ctx.full = True   # the instances and aliases are bound on lines without a token


def exports(ctx: FileContext) -> tuple[str, ...]:
    """This file's native libraries for the other files: module-level names, class attributes."""
    rule = _rule(ctx)
    if rule is None:
        return ()
    module = ctx.imports.module
    prefix = f"{module}." if module else ""
    out = set()
    module_names = {t.id for s in ctx.tree.body if isinstance(s, (ast.Assign, ast.AnnAssign))
                    for t in (s.targets if isinstance(s, ast.Assign) else [s.target]) if isinstance(t, ast.Name)}
    for local, bound in ctx.ext_locals.items():
        if bound is rule and local in module_names:
            out.add(f"{prefix}{local}={rule.id}@")
    if any(word in ctx.text for word in _LOADS):
        sources = [s for _, _, s, r in ctx.c.ext_calls if r is rule and s is not None]
        for cls in ctx.tree.body:
            if not isinstance(cls, ast.ClassDef):
                continue
            for node in ast.walk(cls):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                    name = ctx.resolve(node.value.func) or ""
                    if any(s.matches(name) for s in sources):
                        for target in node.targets:
                            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                                    and target.value.id in ("self", "cls"):
                                out.add(f"{prefix}{cls.name}={rule.id}@{target.attr}")
    return tuple(sorted(out))


def check_assign(ctx: FileContext, node: ast.Assign | ast.AnnAssign, g: bool) -> None:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:   # lib.get_context.restype = ct.c_void_p
        if isinstance(target, ast.Attribute) and target.attr in _SIGNATURE_ATTRS \
                and isinstance(target.value, ast.Attribute):
            receiver = dotted(target.value.value)
            if receiver in ctx.ext_locals:
                ctx.hit(ctx.ext_locals[receiver], target, g, name=f"{receiver}.{target.value.attr}", subject=receiver)
    value = node.value
    if not ctx.native_classes or value is None:
        return
    locals_ = [d for d in map(dotted, targets) if d]
    if isinstance(value, ast.Call):   # setup = CUDASetup.get_instance() / CUDASetup(...)
        root = (dotted(value.func) or "").split(".", 1)[0]
        if root in ctx.native_classes:
            for local in locals_:
                ctx.native_objects[local] = ctx.native_classes[root]
    elif isinstance(value, ast.Attribute):   # lib = setup.lib / CUDASetup.get_instance().lib
        base = value.value
        owner = dotted(base) if not isinstance(base, ast.Call) else (dotted(base.func) or "").split(".", 1)[0]
        attr = ctx.native_objects.get(owner or "") or ctx.native_classes.get(owner or "")
        rule = _rule(ctx) if attr == value.attr else None
        if rule is not None:
            for local in locals_:
                ctx.ext_locals[local] = rule


def check_expr(ctx: FileContext, node: ast.Expr, g: bool) -> None:
    """`lib.cadam32bit_grad_fp32`: a bare attribute of a native library probes it (raises if absent)."""
    value = node.value
    if isinstance(value, ast.Attribute):
        receiver = dotted(value.value)
        if receiver in ctx.ext_locals:
            ctx.hit(ctx.ext_locals[receiver], value, g, name=f"{receiver}.{value.attr}", subject=receiver)


CHECKS = {ast.Assign: check_assign, ast.AnnAssign: check_assign, ast.Expr: check_expr}
