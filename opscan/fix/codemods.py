"""The codemods a rule's `autofix` can name: each plans the rewrite of the node a finding points at.

A codemod gets the libcst node at the finding's exact position and returns a `Plan` (which node to
replace, how to build its replacement from the already-rewritten node, and whether that is safe)
or a `Leave` with the reason it is not rewritten. Safety follows ruff: a *safe* fix keeps what the
code does on the CUDA machine it was written for; an *unsafe* one may change it (applied only
with `--unsafe-fixes`). See docs/fix.md for each codemod's cases.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import cast

import libcst as cst

from opscan.fix.context import DEVICE_CALLS, DEVICE_KEYWORDS, Context
from opscan.fix.plans import Leave, Plan, no_device, replace_with, string_value
from opscan.fix.precision import bf16_choice, bf16_test, torch_amp
from opscan.fix.scope import BF16_QUERIES, LOOKUPS, handles_guarded

__all__ = ["BF16_QUERIES", "CODEMODS", "LOOKUPS", "NAMED", "SIMPLE", "Leave", "Plan", "bf16_choice", "bf16_test",
           "handles_guarded"]

CUDA_TEXT = re.compile(r"^cuda(:\d+)?$")


def _call_name(call: cst.Call) -> str:
    """The attribute or function name of a call's function (`to` for `x.to(...)`)."""
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""


def _takes_device_object(ctx: Context, node: cst.CSTNode) -> bool:
    """True when `node` is an argument where a torch.device works as well as a string."""
    arg = ctx.parent(node)
    if not isinstance(arg, cst.Arg):
        return False
    call = ctx.parent(arg)
    if not isinstance(call, cst.Call):
        return False
    if arg.keyword is not None:
        return arg.keyword.value in DEVICE_KEYWORDS
    positional = [a for a in call.args if a.keyword is None]
    return bool(positional) and positional[0] is arg and (_call_name(call) in DEVICE_CALLS
                                                          or ctx.is_torch(call.func, "torch.device"))


def _fstring_escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


# -- device-string --------------------------------------------------------------------------------

def device_string(node: cst.CSTNode, ctx: Context) -> Plan | Leave | None:
    """A CUDA device string -> the module's device (NOTE [one device per module] in context.py)."""
    if isinstance(node, cst.SimpleString):
        value = string_value(node)
        if value is None or not CUDA_TEXT.match(value):
            return None
        parent = ctx.parent(node)
        if isinstance(parent, cst.IfExp) and parent.body is node:
            plan = _device_type_conditional(parent, ctx)
            if plan is not None:
                return plan
        if value == "cuda":
            call = _sole_argument_of_torch_device(node, ctx)
            if call is not None:
                device = ctx.device(call)
                return Plan(call, replace_with(device), "safe", "`torch.device(\"cuda\")` -> the module's device") \
                    if device is not None else no_device(ctx)
            if _takes_device_object(ctx, node):
                device = ctx.device(node)
                return Plan(node, replace_with(device), "safe", "\"cuda\" -> the module's device") \
                    if device is not None else no_device(ctx)
            device_type = ctx.device_type(node)
            return Plan(node, replace_with(device_type), "safe", "\"cuda\" -> the module's device type (a str)") \
                if device_type is not None else no_device(ctx)
        return _indexed(node, ctx, value)
    if isinstance(node, cst.FormattedString):
        return _fstring(node, ctx)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
        value = string_value(node.left)
        if value is None or not value.startswith("cuda:"):
            return None
        new_left = _type_fstring(ctx, node, value[4:],
                                 quote=node.left.quote if isinstance(node.left, cst.SimpleString) else '"')
        if new_left is None:
            return no_device(ctx)
        return Plan(node, lambda old: old.with_changes(left=new_left), "safe",
                    "\"cuda:%d\" % i -> the device type, same index")
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "format":
        value = string_value(node.func.value)
        if value is None or not value.startswith("cuda:") or re.search(r"\{[^}]", value):
            return Leave("a `.format` template with numbered or named fields: rewrite by hand") if value else None
        if any(a.keyword is not None or a.star for a in node.args):
            return Leave("`.format` with keyword or star arguments: rewrite by hand")
        device_type = ctx.device_type(node)
        if device_type is None:
            return no_device(ctx)
        quote = node.func.value.quote if isinstance(node.func.value, cst.SimpleString) else '"'

        def build(target: cst.CSTNode) -> cst.CSTNode:
            old = cast(cst.Call, target)
            template = cst.SimpleString(f"{quote}{{}}{value[4:]}{quote}")
            args = [cst.Arg(device_type, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))), *old.args]
            return old.with_changes(func=old.func.with_changes(value=template), args=args)
        return Plan(node, build, "safe", "\"cuda:{}\".format(i) -> the device type, same index")
    return None


def _sole_argument_of_torch_device(node: cst.CSTNode, ctx: Context) -> cst.Call | None:
    arg = ctx.parent(node)
    if not isinstance(arg, cst.Arg):
        return None
    call = ctx.parent(arg)
    if isinstance(call, cst.Call) and len(call.args) == 1 and arg.keyword is None and not arg.star \
            and ctx.is_torch(call.func, "torch.device"):
        return call
    return None


def _type_fstring(ctx: Context, node: cst.CSTNode, rest: str, quote: str) -> cst.BaseExpression | None:
    """f"{DEVICE.type}<rest>" (rest is literal text, escaped)."""
    device_type = ctx.device_type(node)
    if device_type is None:
        return None
    code = cst.Module([]).code_for_node(device_type)
    return cst.parse_expression(f"f{quote}{{{code}}}{_fstring_escape(rest)}{quote}")


def _indexed(node: cst.SimpleString, ctx: Context, value: str) -> Plan | Leave:
    """"cuda:1" -> f"{DEVICE.type}:1" (a str with the same index)."""
    prefix = node.prefix.lower()
    if "b" in prefix:
        return Leave("a bytes literal: rewrite by hand")
    new = _type_fstring(ctx, node, value[4:], node.quote if len(node.quote) == 1 else '"')
    if new is None:
        return no_device(ctx)
    return Plan(node, replace_with(new), "safe", "\"cuda:N\" -> the device type with the same index")


def _fstring(node: cst.FormattedString, ctx: Context) -> Plan | Leave | None:
    first = node.parts[0] if node.parts else None
    if not isinstance(first, cst.FormattedStringText) or not first.value.startswith("cuda:"):
        return Leave("an f-string that does not start with \"cuda:\": rewrite by hand") if node.parts else None
    device_type = ctx.device_type(node)
    if device_type is None:
        return no_device(ctx)

    def build(target: cst.CSTNode) -> cst.CSTNode:
        old = cast(cst.FormattedString, target)
        head = cast(cst.FormattedStringText, old.parts[0])
        parts = [cst.FormattedStringExpression(device_type), head.with_changes(value=head.value[4:]), *old.parts[1:]]
        return old.with_changes(parts=[p for p in parts
                                       if not (isinstance(p, cst.FormattedStringText) and not p.value)])
    return Plan(node, build, "safe", "f\"cuda:{i}\" -> the device type with the same index")


def _device_type_conditional(ifexp: cst.IfExp, ctx: Context) -> Plan | None:
    """`"cuda" if "cuda" in d else "cpu"` -> `torch.device(d).type` (the device type of d)."""
    test = ifexp.test
    if string_value(ifexp.orelse) != "cpu" or not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    if string_value(test.left) != "cuda" or not isinstance(test.comparisons[0].operator, cst.In):
        return None
    subject = test.comparisons[0].comparator
    torch_device = ctx.dotted("torch.device")

    def build(old: cst.CSTNode) -> cst.CSTNode:
        call = cst.Call(torch_device, [cst.Arg(subject)])
        return cst.Attribute(call, cst.Name("type"))
    return Plan(ifexp, build, "safe", "`\"cuda\" if \"cuda\" in d else \"cpu\"` -> `torch.device(d).type`")


# -- cuda-method ----------------------------------------------------------------------------------

def cuda_method(node: cst.CSTNode, ctx: Context) -> Plan | Leave | None:
    """`x.cuda()` -> `x.to(DEVICE)`; `x.cuda(i)` likewise, but unsafe (the index is dropped)."""
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute) or node.func.attr.value != "cuda":
        return None
    if any(a.star for a in node.args):
        return Leave("`.cuda(*args)`: rewrite by hand")
    device = ctx.device(node)
    if device is None:
        return no_device(ctx)
    index = [a for a in node.args if a.keyword is None or a.keyword.value == "device"]
    rest = [a for a in node.args if a not in index]
    unsafe = bool(index) and not (len(index) == 1 and isinstance(index[0].value, cst.Name)
                                  and index[0].value.value == "None")

    def build(target: cst.CSTNode) -> cst.CSTNode:
        old = cast(cst.Call, target)
        kept = [a for a in old.args if a.keyword is not None and a.keyword.value != "device"]
        args = [cst.Arg(device, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if kept
                        else cst.MaybeSentinel.DEFAULT)]
        args += kept
        if args and kept:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return old.with_changes(func=cast(cst.Attribute, old.func).with_changes(attr=cst.Name("to")), args=args)
    del rest
    if unsafe:
        return Plan(node, build, "unsafe", "`.cuda(i)` -> `.to(device)` drops the index i: right once the process "
                    "has selected its device (torch.accelerator.set_device_index(i))")
    return Plan(node, build, "safe", "`.cuda()` -> `.to(device)`")


# -- availability-idiom ---------------------------------------------------------------------------

def availability_idiom(node: cst.CSTNode, ctx: Context) -> Plan | Leave | None:
    """`"cuda" if torch.cuda.is_available() else "cpu"` -> the accelerator or the CPU."""
    if not isinstance(node, cst.IfExp):
        return None
    cuda_branch = node.body if string_value(node.body) is not None else node.orelse
    text = string_value(cuda_branch) or ""
    other = node.orelse if cuda_branch is node.body else node.body
    if not CUDA_TEXT.match(text) or string_value(other) != "cpu":
        return Leave("a conditional whose other branch is not \"cpu\": rewrite by hand")
    torch = ctx.torch
    if ctx.torch_alias is None:
        ctx.dotted("torch")          # marks `import torch` as needed
    canonical = cst.parse_expression(f'{torch}.accelerator.current_accelerator(check_available=True) '
                                     f'or {torch}.device("cpu")')
    indexed = text != "cuda"
    note = "the accelerator (CUDA, neuron, ...) or the CPU"
    call = _sole_argument_of_torch_device(node, ctx)
    if call is not None:
        return Plan(call, replace_with(canonical), "unsafe" if indexed else "safe",
                    "torch.device(idiom) -> " + note + (" (drops the index)" if indexed else ""))
    if _takes_device_object(ctx, node) or _assigned_and_used_as_device(node, ctx):
        return Plan(node, replace_with(canonical), "unsafe" if indexed else "safe",
                    note + (" (drops the index)" if indexed else ""))
    typed = cst.Attribute(canonical.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]), cst.Name("type"))
    return Plan(node, replace_with(typed), "unsafe" if indexed else "safe",
                "(the accelerator or the CPU).type: stays a str, since the value is used as one")


def _assigned_and_used_as_device(node: cst.CSTNode, ctx: Context) -> bool:
    """`name = <idiom>` where every other use of `name` in the module is a device argument."""
    assign = ctx.parent(node)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 \
            or not isinstance(assign.targets[0].target, cst.Name):
        return False
    name = assign.targets[0].target.value
    uses = 0
    for other in _names(ctx, name):
        parent = ctx.parent(other)
        if isinstance(parent, cst.AssignTarget):
            if parent is not assign.targets[0]:
                return False
            continue
        uses += 1
        if not _takes_device_object(ctx, other):
            return False
    return uses > 0


def _names(ctx: Context, name: str) -> Iterator[cst.Name]:
    """Every `Name` node spelling `name` in the module; the walk tells the context each node's
    parent on the way, so asking for it later places nothing (NOTE [positions per statement])."""
    stack: list[cst.CSTNode] = [ctx.module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and node.value == name:
            yield node
        children = node.children
        ctx.contains(node, children)
        stack.extend(children)


# -- accelerator-api ------------------------------------------------------------------------------

GUARD_NAMES = frozenset({"torch.cuda.is_available"})


# NOTE [accelerator calls on a CPU-only host]
# These torch.accelerator functions raise "Cannot access accelerator device when none is
# available" on a host without an accelerator (checked in torch 2.13), where the fixed code must
# still run. A call that is a statement of its own becomes `if torch.accelerator.is_available(): ...`;
# a memory statistic read as a value becomes `(... if torch.accelerator.is_available() else 0)`.
# On a CUDA (or neuron) host the test is true, so the behaviour there is unchanged.
NEEDS_ACCELERATOR = frozenset({
    "torch.accelerator.synchronize", "torch.accelerator.current_device_index", "torch.accelerator.set_device_index",
    "torch.accelerator.empty_cache", "torch.accelerator.memory_allocated", "torch.accelerator.max_memory_allocated",
    "torch.accelerator.memory_reserved", "torch.accelerator.max_memory_reserved", "torch.accelerator.memory_stats",
    "torch.accelerator.reset_peak_memory_stats", "torch.accelerator.get_memory_info",
})
CPU_VALUES = {"torch.accelerator.memory_allocated": "0", "torch.accelerator.max_memory_allocated": "0",
              "torch.accelerator.memory_reserved": "0", "torch.accelerator.max_memory_reserved": "0",
              "torch.accelerator.memory_stats": "{}"}


def accelerator_api(node: cst.CSTNode, ctx: Context, replacement: str) -> Plan | Leave | None:
    """`torch.cuda.synchronize` -> `torch.accelerator.synchronize` (a name in `replace`)."""
    found = ctx.has(replacement)
    if found is False:
        version = getattr(ctx.probe, "version", "?")
        return Leave(f"`{replacement}` does not exist in the installed torch {version}", "missing-in-torch")
    new = ctx.dotted(replacement)
    if replacement not in NEEDS_ACCELERATOR:
        return Plan(node, replace_with(new), "safe", f"-> `{replacement}`")
    call = ctx.parent(node)
    if not isinstance(call, cst.Call) or call.func is not node:
        return Plan(node, replace_with(new), "safe", f"-> `{replacement}`")
    available = cst.Call(ctx.dotted("torch.accelerator.is_available"), [])
    expr = ctx.parent(call)
    line = ctx.parent(expr) if isinstance(expr, cst.Expr) else None
    if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
        def build(target: cst.CSTNode) -> cst.CSTNode:
            # the call on its own line under the test (never `if ...: call()`, ruff E701); a
            # trailing comment stays with the call, the indentation is the module's own
            old = cast(cst.SimpleStatementLine, target)
            statement = cast(cst.Expr, old.body[0])
            inner = cast(cst.Call, statement.value)
            call_line = cst.SimpleStatementLine([statement.with_changes(value=inner.with_changes(func=new),
                                                                        semicolon=cst.MaybeSentinel.DEFAULT)],
                                                trailing_whitespace=old.trailing_whitespace)
            return cst.If(test=available, body=cst.IndentedBlock([call_line]), leading_lines=old.leading_lines)
        return Plan(line, build, "safe", f"-> `{replacement}`, run only when an accelerator is present")
    if replacement in CPU_VALUES:
        def build_value(target: cst.CSTNode) -> cst.CSTNode:
            return cst.IfExp(test=available, body=cast(cst.Call, target).with_changes(func=new),
                             orelse=cst.parse_expression(CPU_VALUES[replacement]),
                             lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return Plan(call, build_value, "safe", f"-> `{replacement}` ({CPU_VALUES[replacement]} without an accelerator)")
    return Plan(node, replace_with(new), "safe",
                f"-> `{replacement}` (raises on a host without an accelerator, as before)")


# -- required-check -------------------------------------------------------------------------------

def required_check(node: cst.CSTNode, ctx: Context, replacement: str) -> Plan | Leave | None:
    """`assert torch.cuda.is_available()` -> `assert torch.accelerator.is_available()` (NOTE [checks
    that require CUDA] in scan/string_contexts.py): on CUDA the answer is the same, on a Neuron
    device the script starts."""
    if ctx.has(replacement) is False:
        version = getattr(ctx.probe, "version", "?")
        return Leave(f"`{replacement}` does not exist in the installed torch {version}", "missing-in-torch")
    return Plan(node, replace_with(ctx.dotted(replacement)), "safe",
                f"-> `{replacement}`: the script starts on any accelerator, CUDA's answer unchanged")


# -- backend-for-device ---------------------------------------------------------------------------

def _nccl_choice(node: cst.CSTNode, ctx: Context) -> cst.IfExp | None:
    """`"nccl" if dist.is_nccl_available() else "gloo"` holding `node` (its "nccl" or its test's name):
    the choice PyTorch makes by device, rewritten whole so no part of it is left pinned."""
    above = ctx.parent(node)
    for candidate in (above, ctx.parent(above) if above is not None else None):
        if isinstance(candidate, cst.IfExp) and string_value(candidate.body) == "nccl" \
                and string_value(candidate.orelse) == "gloo" and isinstance(candidate.test, cst.Call) \
                and (candidate.body is node or candidate.test.func is node):
            func = candidate.test.func
            leaf = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
            if leaf == "is_nccl_available" and not candidate.test.args:
                return candidate
    return None


def backend_for_device(node: cst.CSTNode, ctx: Context) -> Plan | Leave | None:
    """`"nccl"` as a process-group backend -> `torch.distributed.get_default_backend_for_device(DEVICE)`."""
    choice = _nccl_choice(node, ctx)
    if choice is not None:   # `"nccl" if dist.is_nccl_available() else "gloo"`: nccl on CUDA, gloo on CPU
        device = ctx.device(node)
        if device is None:
            return no_device(ctx)
        if ctx.has("torch.distributed.get_default_backend_for_device") is False:
            return Leave("`torch.distributed.get_default_backend_for_device` is not in the installed torch",
                         "missing-in-torch")
        new = cst.Call(ctx.dotted("torch.distributed.get_default_backend_for_device"), [cst.Arg(device)])
        return Plan(choice, replace_with(new), "safe",
                    "-> the backend for the module's device (nccl on CUDA, gloo on CPU), the NCCL test with it")
    if string_value(node) != "nccl":
        return Leave("not a plain \"nccl\" string (e.g. `dist.Backend.NCCL`): rewrite by hand") \
            if not isinstance(node, cst.SimpleString) else None
    parent = ctx.parent(node)
    if isinstance(parent, (cst.ComparisonTarget, cst.Comparison)):
        return Leave("a comparison with \"nccl\": decide by hand what the code does on other backends", "decision")
    device = ctx.device(node)
    if device is None:
        return no_device(ctx)
    if ctx.has("torch.distributed.get_default_backend_for_device") is False:
        return Leave("`torch.distributed.get_default_backend_for_device` is not in the installed torch",
                     "missing-in-torch")
    func = ctx.dotted("torch.distributed.get_default_backend_for_device")
    new = cst.Call(func, [cst.Arg(device)])
    return Plan(node, replace_with(new), "safe", "-> the backend for the module's device (nccl on CUDA)")


# torch names codemods check besides the rules' `replace` targets (answered once per run: runner.py)

SIMPLE: dict[str, Callable[[cst.CSTNode, Context], Plan | Leave | None]] = {
    "device-string": device_string,
    "cuda-method": cuda_method,
    "availability-idiom": availability_idiom,
    "backend-for-device": backend_for_device,
}
# take the replacement of the matched name (`replace`)
NAMED: dict[str, Callable[[cst.CSTNode, Context, str], Plan | Leave | None]] = {
    "torch-amp": torch_amp,
    "accelerator-api": accelerator_api,
    "required-check": required_check,
}
CODEMODS = frozenset(SIMPLE) | frozenset(NAMED)
