"""Name matchers: resolved dotted names (`torch.cuda.synchronize`), `getattr(torch.ops, ...)`,
call arity and keyword values, and method names on objects opscan cannot resolve."""

from __future__ import annotations

import ast

from opscan.records import TaskKind
from opscan.scan import string_contexts as P
from opscan.scan.dependencies import library_namespace
from opscan.scan.context import FileContext, callee_matches, kernel_name


def check_name(ctx: FileContext, node: ast.Name | ast.Attribute, g: bool) -> None:
    name = ctx.resolved
    if name is None:
        if isinstance(node, ast.Attribute):
            flag = P.DEVICE_TYPE_FLAGS.get(node.attr)
            if flag is not None and id(node) not in ctx.consumed:   # `t.is_cuda`: a device-type test
                ctx.device_test([(node, flag)], g, False)
        return
    if id(node) in ctx.consumed or name.split(".", 1)[0] not in ctx.c.roots \
            or (isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del))):   # rebinding
        return
    if ctx.own_ops and name.startswith("torch.ops.") and tuple(name.split(".")[2:4]) in ctx.own_ops:
        return   # NOTE [own custom ops] (kernels.py): the registration is the site, not the call
    if ctx.requires_device and ctx.c.required:   # NOTE [checks that require CUDA] (string_contexts.py)
        for pats, rule in ctx.c.required:
            if pats.matches(name):
                ctx.hit(rule, node, g, name=name, value=ctx.test[1], subject=name)
                return   # the check is this site; the rule of the name in general does not add another
    matched = False
    for pats, rule, _ in ctx.c.names:
        if pats.matches(name):
            matched = True
            library = library_namespace(name) if rule.task == TaskKind.KERNEL else ""
            if library:   # NOTE [library ops] in opscan/assess/library_ops.py: that library's, not a kernel
                ctx.hit(rule, node, g, name=name, subject=library, task=TaskKind.LIBRARY.value)
                continue
            subject = kernel_name(ctx.calls.get(id(node)), name) if rule.task == TaskKind.KERNEL else name
            ctx.hit(rule, node, g, name=name, subject=subject)
            if ctx.guarding is not None:
                ctx.guards[id(node)] = ctx.guarding
    if not matched and ctx.c.exact_names:   # `torch.version.cuda.split(".")`: the exact name it starts with
        prefix = name
        while "." in prefix:
            prefix = prefix.rsplit(".", 1)[0]
            for rule in ctx.c.exact_names.get(prefix, ()):
                ctx.hit(rule, node, g, name=prefix)


def check_call(ctx: FileContext, node: ast.Call, g: bool) -> None:
    func = node.func
    qual, method = ctx.callee
    args = node.args
    if id(node) not in ctx.consumed:
        reached = ctx.getattr_name(node)   # getattr(torch.ops, "ns"): a use of torch.ops.ns
        if reached is not None and (isinstance(func, ast.Name) and func.id == "getattr"
                                    or reached.startswith("torch.ops.")):  # hasattr: a probe
            ctx.consumed.add(id(args[0]))   # `torch.ops.ns` in `hasattr(torch.ops.ns, "op")`: one site, this one
            if reached.count(".") == 2 and reached.startswith("torch.ops."):
                reached += ".{op}"   # a namespace reached, its ops unknown
            for pats, rule, _ in ctx.c.names:
                if pats.matches(reached):
                    library = library_namespace(reached) if rule.task == TaskKind.KERNEL else ""
                    if library:   # NOTE [library ops]
                        ctx.hit(rule, node, g, name=reached, subject=library, task=TaskKind.LIBRARY.value)
                    else:
                        ctx.hit(rule, node, g, name=reached, subject=kernel_name(None, reached))
    for calls, most, rule in ctx.c.arity:   # torch.is_autocast_enabled(): the CUDA form
        if callee_matches(calls, qual, method) and len(args) <= most and not any(
                kw.arg is None or P.DEVICE_NAME.match(kw.arg) for kw in node.keywords):
            ctx.hit(rule, node, g, name=qual or f".{method}")
    for calls, keyword, regex, rule in ctx.c.keywords:
        if callee_matches(calls, qual, method):
            value = P.keyword_value(node, keyword)
            if isinstance(value, ast.Constant):
                text = value.value if isinstance(value.value, str) else repr(value.value)
                if regex.search(text):
                    ctx.hit(rule, value, g, value=text, name=qual or f".{method}")
    if method:
        for rule in ctx.c.methods.get(method, ()):
            ctx.hit(rule, node, g, name=method)


CHECKS = {ast.Name: check_name, ast.Attribute: check_name, ast.Call: check_call}
