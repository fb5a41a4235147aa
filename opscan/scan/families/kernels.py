"""Kernel matchers: kernel decorators and launches, custom-op library objects, calls into compiled
extensions and native libraries, and thin wrappers of kernel-registration APIs (also across files)."""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from opscan.records import TaskKind, Category
from opscan.scan.context import IDENT, FileContext, kernel_name
from opscan.scan.families import natives
from opscan.scan.matchers import NamePatterns
from opscan.scan.tokens import pattern_token
from opscan.index.resolver import dotted
from opscan.scan.rules import Rule


# -- module-level bindings --------------------------------------------------------------------
def bind(ctx: FileContext, stmt: ast.stmt, guarded: bool) -> None:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for decorator in stmt.decorator_list:
            name = ctx.resolve(decorator.func if isinstance(decorator, ast.Call) else decorator)
            for pats, launch, rule in ctx.c.decorators:
                if launch and name and pats.matches(name):
                    ctx.kernels[stmt.name] = rule
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None \
            and isinstance(stmt.value, ast.Call):
        name = ctx.resolve(stmt.value.func)
        for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
            if isinstance(target, ast.Name):
                for pats, rule, methods in ctx.c.names:
                    if methods and name and pats.matches(name):
                        ctx.instances[target.id] = (rule, methods)


def prepare(ctx: FileContext) -> None:
    ctx.wrapper_rules = _project_wrappers(ctx)
    if ctx.wrapper_rules:
        for local, full in list(ctx.imports.alias.items()):
            _bind_wrapper(ctx, local, full)
    _find_wrappers(ctx)
    ctx.own_ops = _registered_ops(ctx)
    ctx.extra_words |= set(ctx.kernels) | set(ctx.instances) | set(ctx.wrappers)
    ctx.full = any(pats is not None and any(t and t in ctx.text for t in _pattern_tokens(pats))
                   for _, _, pats, _ in ctx.c.ext_calls) \
        or bool(ctx.c.ext_calls and (_BUILD.search(ctx.text) or _MADE_BUILDER.search(ctx.text)))


# NOTE [op builders]
# JIT op builders (DeepSpeed's `FusedAdamBuilder().load()`, `InferenceBuilder().load()` and the like)
# compile a CUDA extension at run time and return it as a module: the `.load()` is a call into a
# native module (it builds one), and the name it is bound to (`ops`, `self.ds_opt_adam`) is a native
# module whose calls are sites, as for `cpp_extension.load(...)` (NOTE [native modules bound by calls]).
# A builder made by a factory (`builder = get_accelerator().create_op_builder("ShareMemCommBuilder")`,
# then `builder.load()`) is one too: a name bound to a call of a function named `*op_builder*`, or
# to a call naming a `...Builder` class by string.
_BUILD = re.compile(r"Builder\([^()]*\)\.(?:jit_)?load\(")
_MADE_BUILDER = re.compile(r"op_builder\(|Builder[\"']\s*\)")


def _made_builder(value: ast.AST) -> str | None:
    """`create_op_builder("XBuilder")` / `get_builder("XBuilder")`: the builder's name, else None."""
    if not isinstance(value, ast.Call):
        return None
    leaf = value.func.attr if isinstance(value.func, ast.Attribute) else getattr(value.func, "id", "")
    named = [a.value for a in value.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if named and named[0].endswith("Builder") and len(named[0]) > len("Builder"):
        return named[0]
    if "op_builder" in (leaf or ""):
        return leaf
    return None


def _builder(func: ast.AST) -> str | None:
    """`XBuilder().load`: the builder's name, else None."""
    if isinstance(func, ast.Attribute) and func.attr in ("load", "jit_load") and isinstance(func.value, ast.Call):
        inner = func.value.func
        leaf = inner.attr if isinstance(inner, ast.Attribute) else getattr(inner, "id", "")
        if leaf.endswith("Builder") and len(leaf) > len("Builder"):
            return leaf
    return None


# NOTE [own custom ops]
# An op the file registers itself (`@torch.library.custom_op("ns::op")`, `register_fake("ns::op")`,
# `lib.define("op(Tensor x) -> Tensor")` on `lib = Library("ns", ...)`) is reported where it is
# registered and where its kernel is (the decorators, the `.cu` source); its calls through
# `torch.ops.ns.op(...)` are not: once the op has a kernel for the new device they need no change.
# Ops of the same namespace that the file does not register (a compiled library's) stay call sites.
_OP_STRING = re.compile(r"^([A-Za-z_]\w*)::([A-Za-z_]\w*)")
def _registers(text: str) -> bool:
    """Whether the text has a quoted "ns::op" or a `.define(` ("Example::" in a docstring is no op)."""
    if ".define(" in text:
        return True
    i = text.find("::")
    while i != -1:
        j = i
        while j > 0 and (text[j - 1].isalnum() or text[j - 1] == "_"):
            j -= 1
        if j < i and j > 0 and text[j - 1] in "\"'":
            return True
        i = text.find("::", i + 2)
    return False


_SCHEMA = re.compile(r"^([A-Za-z_]\w*)(?:\.\w+)?\(")


def _registered_ops(ctx: FileContext) -> set[tuple[str, str]]:
    if not _registers(ctx.text):
        return set()
    ops: set[tuple[str, str]] = set()
    namespaces: set[str] = set()
    schemas: list[str] = []
    for node in ast.walk(ctx.tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        first = node.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            continue
        match = _OP_STRING.match(first.value)
        if match:
            ops.add((match[1], match[2]))
        name = ctx.resolve(node.func) or ""
        if name == "torch.library.Library":
            namespaces.add(first.value)
        elif isinstance(node.func, ast.Attribute) and node.func.attr == "define":
            schema = _SCHEMA.match(first.value)
            if schema:
                schemas.append(schema[1])
    ops |= {(ns, op) for ns in namespaces for op in schemas}
    return ops


def finish(ctx: FileContext) -> None:
    """An import of the package a kernel in this file is written with (`import triton` next to
    `@triton.jit`) is part of that kernel's port: its hit gets task `kernel` and the kernel's
    name. Other libraries (flash_attn next to a Triton kernel) stay library tasks."""
    languages: dict[str, str] = {}
    for hit in ctx.hits:
        if hit.rule.task == TaskKind.KERNEL:
            for symbol in (hit.value, hit.name):
                if "." in symbol:
                    languages.setdefault(symbol.split(".", 1)[0], hit.subject)
    if languages:
        ctx.hits = [replace(h, task=TaskKind.KERNEL.value, subject=languages[h.subject])
                    if h.rule.task == TaskKind.LIBRARY and h.subject in languages else h for h in ctx.hits]


def exports(ctx: FileContext) -> tuple[str, ...]:
    """The kernel wrappers this file defines, for the other files of the tree."""
    module = ctx.imports.module
    return tuple(sorted([f"{module}.{name}={rule.id}" if module else f"{name}={rule.id}"
                         for name, rule in ctx.wrappers.items() if name not in ctx.imported_wrappers]
                        + list(natives.exports(ctx))))


# -- checks -----------------------------------------------------------------------------------
def check_def(ctx: FileContext, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, g: bool) -> None:
    seen_rules: set[str] = set()
    for decorator in node.decorator_list:
        name = ctx.resolve(decorator.func if isinstance(decorator, ast.Call) else decorator)
        for pats, launch, rule in ctx.c.decorators:
            if name and rule.id not in seen_rules and pats.matches(name):
                seen_rules.add(rule.id)
                ctx.hit(rule, decorator, g, value=name, name=node.name, subject=node.name)
                if launch and ctx.depth:
                    ctx.kernels[node.name] = rule


def check_call(ctx: FileContext, node: ast.Call, g: bool) -> None:
    func = node.func
    receiver = dotted(func.value) if isinstance(func, ast.Attribute) else None
    if isinstance(func, ast.Attribute) and receiver is not None and receiver in ctx.ext_locals:   # ext.fwd(...)
        ctx.hit(ctx.ext_locals[receiver], node, g, name=f"{receiver}.{func.attr}", subject=receiver)
    builder = _builder(func)
    if builder is None and isinstance(func, ast.Attribute) and func.attr in ("load", "jit_load"):
        builder = ctx.builders.get(dotted(func.value) or "")   # builder = create_op_builder(...); builder.load()
    if builder and ctx.c.ext_calls:   # NOTE [op builders]
        ctx.hit(ctx.c.ext_calls[0][3], node, g, name=f"{builder}().load", subject=builder)
    if isinstance(func, ast.Name) and func.id in ctx.wrappers and (
            func.id not in ctx.imports.alias or func.id in ctx.imported_wrappers) \
            and _wrapper_reaches_kernel(ctx, ctx.wrappers[func.id], node):
        ctx.hit(ctx.wrappers[func.id], node, g, name=func.id, subject=kernel_name(node, ""))
    if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name) and func.value.id in ctx.kernels:
        ctx.hit(ctx.kernels[func.value.id], node, g, name=func.value.id, subject=func.value.id)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ctx.instances:
        rule, methods = ctx.instances[func.value.id]
        if func.attr in methods:
            ctx.hit(rule, node, g, name=f"{func.value.id}.{func.attr}", subject=kernel_name(node, ""))


def check_assign(ctx: FileContext, node: ast.Assign | ast.AnnAssign, g: bool) -> None:
    """NOTE [native modules bound by calls]: `ext = cpp_extension.load(...)` / `lib =
    ctypes.CDLL(...)` bind a native module like an import of a compiled extension does; taking a
    function from one (`f = ext.forward if ... else ext.forward_bf16`) is a call site too."""
    if node.value is None:
        return
    value = ctx.field_default(node.value)
    if value is None:
        return
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    made = _made_builder(value)
    if made:
        for target in targets:
            local = dotted(target)
            if local:
                ctx.builders[local] = made
    if isinstance(value, ast.Call) and ctx.c.ext_calls and (_builder(value.func) or (
            isinstance(value.func, ast.Attribute) and value.func.attr in ("load", "jit_load")
            and (dotted(value.func.value) or "") in ctx.builders)):
        for target in targets:   # NOTE [op builders]: ops = FusedAdamBuilder().load()
            local = dotted(target)
            if local:
                ctx.ext_locals[local] = ctx.c.ext_calls[0][3]
    if isinstance(value, ast.Call):
        name = ctx.resolve(value.func)
        if name:
            for _, _, sources, rule in ctx.c.ext_calls:
                if sources is not None and sources.matches(name):
                    for target in targets:
                        if isinstance(target, ast.Name):
                            ctx.ext_locals[target.id] = rule
    for branch in (value.body, value.orelse) if isinstance(value, ast.IfExp) else (value,):
        if isinstance(branch, ast.Attribute) and isinstance(branch.value, ast.Name) \
                and branch.value.id in ctx.ext_locals:
            ctx.hit(ctx.ext_locals[branch.value.id], branch, g, name=f"{branch.value.id}.{branch.attr}",
                    subject=branch.value.id)


def check_import_from(ctx: FileContext, node: ast.ImportFrom, g: bool) -> None:
    """Own-package imports may name another file's wrapper (NOTE [wrappers across files])."""
    local = node.level > 0
    for name, full in ctx.bound:
        if local or full.split(".", 1)[0] in ctx.packages:
            ctx.own_imports.append(full)
            _bind_wrapper(ctx, name, full)


CHECKS = {
    ast.FunctionDef: check_def, ast.AsyncFunctionDef: check_def, ast.ClassDef: check_def,
    ast.Call: check_call, ast.Assign: check_assign, ast.AnnAssign: check_assign,
    ast.ImportFrom: check_import_from,
}


# -- wrappers ---------------------------------------------------------------------------------
def _find_wrappers(ctx: FileContext) -> None:
    """NOTE [kernel-registration wrappers]: a module-level function of at most three statements
    whose body uses a custom-kernel name rule (`torch.library.register_fake(...)`,
    `getattr(torch.ops, ns)`), or calls such a wrapper, is a thin wrapper: each call of it
    (`@register_custom_op("ns::op")`) is a registration site too."""
    if not any(word in ctx.text for word in ("torch.library", "torch.ops", "cpp_extension")) and not any(
            full.startswith(("torch.library", "torch.ops", "torch.utils.cpp_extension"))
            for full in ctx.imports.alias.values()):
        return
    functions = [n for n in ctx.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and len([b for b in n.body if not _is_docstring(b)]) <= 3]
    for _ in range(3):   # wrappers of wrappers
        found = False
        for fn in functions:
            if fn.name in ctx.wrappers:
                continue
            rule = _wraps(ctx, fn)
            if rule is not None:
                ctx.wrappers[fn.name] = rule
                found = True
        if not found:
            break


def _wraps(ctx: FileContext, fn: ast.AST) -> Rule | None:
    for node in ast.walk(fn):
        name = None
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id in ctx.wrappers:
                return ctx.wrappers[node.func.id]
            name = ctx.getattr_name(node)
        elif isinstance(node, (ast.Attribute, ast.Name)):
            name = ctx.resolve(node)
        if name:
            for pats, rule, _ in ctx.c.names:
                if rule.category is Category.CUSTOM_KERNEL and pats.matches(name):
                    return rule
    return None


def _project_wrappers(ctx: FileContext) -> dict[str, Rule]:
    """Project.wrappers ("dotted.name=RULEID") as dotted name -> the rule (if it runs)."""
    if not ctx.project_wrappers:
        return {}
    by_id = {rule.id: rule for _, rule, _ in ctx.c.names}
    out = {}
    for entry in sorted(ctx.project_wrappers):
        name, _, rule_id = entry.rpartition("=")
        if rule_id in by_id:
            out[name] = by_id[rule_id]
    return out


def _bind_wrapper(ctx: FileContext, local: str, full: str) -> None:
    """An imported wrapper of another file of the tree (NOTE [wrappers across files])."""
    for name, rule in ctx.wrapper_rules.items():
        if full == name or name.endswith("." + full):
            ctx.wrappers[local] = rule
            ctx.imported_wrappers.add(local)
            return


def _wrapper_reaches_kernel(ctx: FileContext, rule: Rule, call: ast.Call) -> bool:
    """A wrapper of `torch.ops` lookups called with a literal namespace the rule excepts
    (`get_operator("aten", "mm")`) reaches no custom kernel."""
    args = call.args
    if not (args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str)
            and IDENT.match(args[0].value)):
        return True
    op = args[1].value if len(args) > 1 and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str) \
        else "op"
    for pats, named, _ in ctx.c.names:
        if named is rule and any(p.startswith("torch.ops.") for p in pats.patterns):
            return pats.matches(f"torch.ops.{args[0].value}.{op}")
    return True


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _pattern_tokens(pats: NamePatterns) -> list[str]:
    return [t for t in (pattern_token(p) for p in pats.patterns) if t]
