"""The mixed-precision codemods: `torch.cuda.amp.*` -> `torch.amp.*` on the script's device, and the bfloat16 choice."""

from __future__ import annotations

from typing import cast

import libcst as cst

from opscan.fix.context import Context
from opscan.fix.plans import Leave, Plan, no_device, string_value

# -- torch-amp ------------------------------------------------------------------------------------

AUTOCAST_POSITIONAL = ("enabled", "dtype", "cache_enabled")


def torch_amp(node: cst.CSTNode, ctx: Context, replacement: str) -> Plan | Leave | None:
    """`torch.cuda.amp.autocast(...)` / `GradScaler(...)` -> `torch.amp.*(DEVICE.type, ...)`."""
    call = ctx.parent(node)
    if not isinstance(call, cst.Call) or call.func is not node:
        return Leave("not called here (a reference to the class): rewrite by hand")
    if any(a.star for a in call.args):
        return Leave("called with *args/**kwargs: rewrite by hand")
    if any(a.keyword is not None and a.keyword.value in ("device", "device_type") for a in call.args):
        return Leave("already names a device: nothing to add", "form")
    own = script_device_type(call, ctx)
    device_type = own or ctx.device_type(call)
    if device_type is None:
        return no_device(ctx)
    func = ctx.dotted(replacement)
    autocast = replacement.endswith("autocast")

    def build(target: cst.CSTNode) -> cst.CSTNode:
        old = cast(cst.Call, target)
        args = list(old.args)
        if autocast:   # torch.amp.autocast(device_type, dtype, enabled, ...): positions differ
            args = [a.with_changes(keyword=cst.Name(AUTOCAST_POSITIONAL[i]), equal=cst.AssignEqual(
                        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
                    if a.keyword is None and i < len(AUTOCAST_POSITIONAL) else a for i, a in enumerate(args)]
        first = cst.Arg(device_type, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if args
                        else cst.MaybeSentinel.DEFAULT)
        return old.with_changes(func=func, args=[first, *args])
    which = f"the script's `{own.value}`" if own is not None else "the module's device type"
    return Plan(call, build, "safe", f"-> `{replacement}` on {which}")


# NOTE [the script's own device type]
# A training script that picks its device (`device = "cuda"` as a config value, then
# `device_type = "cuda" if "cuda" in device else "cpu"`) runs autocast on that variable; its
# GradScaler must follow the same device, or a run configured for the CPU gets a scaler of the
# import-time accelerator. So torch.amp calls use, when there is one in scope before the call: a
# name the module passes as autocast's device type, else a name `device_type` bound to a device
# type (a string, a conditional of strings, `<x>.type`). Only an unconditional binding counts: a
# parameter or a statement of the enclosing function, or a module-level statement before the call.
AUTOCAST_CALLS = ("autocast",)


def script_device_type(call: cst.Call, ctx: Context) -> cst.Name | None:
    """The script's own device-type variable usable at `call`, or None (NOTE [the script's own device type])."""
    names = _autocast_device_names(ctx)
    for name in [*names, *(["device_type"] if "device_type" not in names else [])]:
        value = _bound_before(call, name, ctx)
        if value is False:
            continue
        if name in names or value is True or _is_device_type_value(value):
            return cst.Name(name)
    return None


def _autocast_device_names(ctx: Context) -> list[str]:
    """Names passed as the device type of an autocast call, in order: `device_type=dt` of any
    `autocast`, or the first argument of `torch.autocast` / `torch.amp.autocast` (a bare
    `autocast(x)` may be torch.cuda.amp's, whose first argument is `enabled`)."""
    out: list[str] = []
    stack: list[cst.CSTNode] = [ctx.module]
    while stack:
        node = stack.pop()
        stack.extend(reversed(node.children))
        if not isinstance(node, cst.Call):
            continue
        func = node.func.attr.value if isinstance(node.func, cst.Attribute) else \
            node.func.value if isinstance(node.func, cst.Name) else ""
        if func not in AUTOCAST_CALLS:
            continue
        chosen = [a.value for a in node.args if a.keyword is not None and a.keyword.value == "device_type"]
        if not chosen and (ctx.is_torch(node.func, "torch.autocast") or ctx.is_torch(node.func, "torch.amp.autocast")):
            chosen = [a.value for a in node.args if a.keyword is None and not a.star][:1]
        if chosen and isinstance(chosen[0], cst.Name) and chosen[0].value not in out:
            out.append(chosen[0].value)
    return out


def _bound_before(call: cst.Call, name: str, ctx: Context) -> cst.BaseExpression | bool:
    """How `name` is bound where `call` runs: the value it was assigned (an expression), True for a
    function parameter, False when it has no unconditional binding in scope before the call."""
    functions: list[cst.FunctionDef] = []
    current = ctx.parent(call)
    while current is not None:
        if isinstance(current, cst.FunctionDef):
            functions.append(current)
        current = ctx.parent(current)
    if any(_binds_anywhere(outer, name) for outer in functions[1:]):
        return False          # a closure's name: not followed
    function = functions[0] if functions else None
    if function is not None:
        params = function.params
        if any(p.name.value == name for p in (*params.posonly_params, *params.params, *params.kwonly_params)):
            return True
        line = ctx.line(call)
        body = function.body.body if isinstance(function.body, cst.IndentedBlock) else ()
        local = [v for s in body if ctx.line(s) < line for v in _assigned(s, name)]
        if local:
            return local[-1]
        if _binds_anywhere(function, name):
            return False      # a local bound later or conditionally: the global is not what the call sees
    top = ctx.top_statement(functions[-1] if functions else call)
    index = ctx.module.body.index(top) if top in ctx.module.body else 0
    found = [v for s in ctx.module.body[:index] for v in _assigned(s, name)]
    return found[-1] if found else False


def _binds_anywhere(function: cst.FunctionDef, name: str) -> bool:
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)) and \
                isinstance(node.target, cst.Name) and node.target.value == name:
            return True
        if isinstance(node, (cst.For, cst.CompFor)) and isinstance(node.target, cst.Name) and node.target.value == name:
            return True
        stack.extend(node.children)
    return False


def _assigned(statement: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    """The values `statement` (a simple statement line) assigns to `name`."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return []
    out = []
    for small in statement.body:
        if isinstance(small, cst.Assign):
            hit = any(isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets)
        else:
            hit = isinstance(small, cst.AnnAssign) and small.value is not None and \
                isinstance(small.target, cst.Name) and small.target.value == name
        if hit and isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None:
            out.append(small.value)
    return out


def _is_device_type_value(value: cst.BaseExpression) -> bool:
    """A string, a conditional choosing between strings, or `<x>.type`: the value of a device type."""
    if isinstance(value, cst.IfExp):
        return _is_device_type_value(value.body) and _is_device_type_value(value.orelse)
    if isinstance(value, cst.Attribute):
        return value.attr.value == "type"
    return string_value(value) is not None


# NOTE [the bfloat16 choice]
# `dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"`
# asks the CUDA runtime whether it may use bfloat16. Off CUDA the test is false, so once the rest
# of the script is ported a Neuron (or CPU) run silently gets the float16 branch, and with it the
# GradScaler the float16 recipe enables. The float16 branch exists for CUDA GPUs without bfloat16,
# so the rewrite keeps that case and gives every other device the bfloat16 branch:
# `"float16" if torch.cuda.is_available() and not torch.cuda.is_bf16_supported() else "bfloat16"`
# (the same value on any CUDA host; the CUDA-only query stays behind its CUDA test). The same for
# `X if torch.cuda.is_bf16_supported() else Y`. Other uses of the query (an `if` statement, a value
# passed on) are left, saying what they now do off CUDA. (BF16_QUERIES and handles_guarded are in
# fix/scope.py, which the scan reads without loading libcst.)
def bf16_choice(node: cst.CSTNode, ctx: Context) -> Plan | Leave:
    """`A if [cuda available and] cuda bf16 else B` -> `B if cuda available and not cuda bf16 else A`."""
    call = ctx.parent(node)
    off_cuda = ("`torch.cuda.is_bf16_supported()` is False off CUDA, so on a Neuron device this takes the "
                "non-bfloat16 path (float16, and a GradScaler where the code enables one on it): decide by hand")
    if not isinstance(call, cst.Call) or call.func is not node:
        return Leave(off_cuda, "decision")
    test = ctx.parent(call)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        boolean = ctx.parent(test)
        ifexp = ctx.parent(boolean) if boolean is not None else None
        if isinstance(boolean, cst.BooleanOperation) and isinstance(ifexp, cst.IfExp) and ifexp.test is boolean:
            return Leave("the bfloat16 choice, already rewritten: its other branch only on a CUDA GPU without "
                         "bfloat16; the CUDA query stays behind its CUDA test", "guard")
        return Leave(off_cuda, "decision")
    parent, available = test, None
    if isinstance(parent, cst.BooleanOperation) and isinstance(parent.operator, cst.And) and parent.right is call \
            and _is_cuda_available_call(parent.left, ctx):
        available, test = parent.left, parent
    else:
        test = call
    ifexp = ctx.parent(test)
    if not isinstance(ifexp, cst.IfExp) or ifexp.test is not test:
        return Leave(off_cuda, "decision")
    new_available = available if available is not None else cst.Call(ctx.dotted("torch.cuda.is_available"), [])

    def build(target: cst.CSTNode) -> cst.CSTNode:
        old = cast(cst.IfExp, target)
        query = old.test.right if isinstance(old.test, cst.BooleanOperation) else old.test
        keep = old.test.left if isinstance(old.test, cst.BooleanOperation) else new_available
        negated = cst.UnaryOperation(cst.Not(), query.with_changes(lpar=[], rpar=[]))
        operator = old.test.operator if isinstance(old.test, cst.BooleanOperation) else cst.And()
        new_test = cst.BooleanOperation(keep, operator, negated, lpar=old.test.lpar, rpar=old.test.rpar)
        return old.with_changes(body=old.orelse, test=new_test, orelse=old.body)
    code = cst.Module([]).code_for_node
    bf16, other = code(ifexp.body), code(ifexp.orelse)
    return Plan(ifexp, build, "safe", f"the bfloat16 choice: {other} only on a CUDA GPU without bfloat16, so a Neuron "
                                      f"device now gets {bf16} (before the fix: {other}, and the GradScaler the code "
                                      "enables for it)")


def bf16_test(node: cst.CSTNode, ctx: Context) -> Leave | None:
    """Why `torch.cuda.is_available()` stays when it is the CUDA test of a bfloat16 choice (None otherwise)."""
    call = ctx.parent(node)
    boolean = ctx.parent(call) if isinstance(call, cst.Call) else None
    if not isinstance(boolean, cst.BooleanOperation) or boolean.left is not call or \
            not isinstance(ctx.parent(boolean), cst.IfExp):
        return None
    query = boolean.right.expression if isinstance(boolean.right, cst.UnaryOperation) else boolean.right
    if not isinstance(query, cst.Call) or not ctx.is_torch(query.func, "torch.cuda.is_bf16_supported"):
        return None
    return Leave("the CUDA test of the bfloat16 choice: it keeps the CUDA-only query off other devices", "guard")


def _is_cuda_available_call(node: cst.CSTNode, ctx: Context) -> bool:
    return isinstance(node, cst.Call) and not node.args and ctx.is_torch(node.func, "torch.cuda.is_available")
