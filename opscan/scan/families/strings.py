"""String matchers in context: devices, backends, environment variables and commands, where a
string is used as one (string_contexts.py lists the positions), and module constants used as devices."""

from __future__ import annotations

import ast

from opscan.scan import string_contexts as P
from opscan.scan.context import Constant, FileContext

# NOTE [device-type tests]
# A comparison of a device or device type with "cuda" (or `t.is_cuda`, `str(d).startswith("cuda")`)
# is a device-type test: on a Neuron device it gives False for `==`/`in`/`is_cuda` and True for
# `!=`/`not in` (flipped under `not`). Where the test sits decides what that does: in an `assert`
# or `torch._check` a False answer raises; as the test of an `if` whose block raises, a True
# answer does. A test whose Neuron answer raises is OPS107 (error); every other device-type test
# (branches, conditional expressions, values computed for later) is OPS106 (warning), naming
# the lines it guards. The walk (visitor.py) keeps the test being visited in `ctx.test`;
# FileContext.device_test decides.


def bind(ctx: FileContext, stmt: ast.stmt, guarded: bool) -> None:
    """A module-level string constant (`DEVICE = "cuda"`): reported where it is used as a device."""
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
        value = ctx.field_default(stmt.value)
        if value is None:
            return
        for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
            if isinstance(target, ast.Name):
                parts = ctx.branches(value, guarded)   # NOTE [the branch Trainium takes]
                found = False
                for part, g in parts:
                    vals = P.string_values(part, ctx.is_idiom)
                    if vals:
                        found = True
                        ctx.constants.setdefault(target.id, []).append(Constant(target.id, vals, g))
                if found or parts != [(value, guarded)]:
                    continue
                if isinstance(value, P.TABLES):   # SUPPORTED = ["cuda", "cpu", "xpu"]: a table of device types
                    items = P.compared_strings(value)
                    if any(P.CUDA_LITERAL.match(v) for _, v in items):
                        ctx.collections[target.id] = items


def prepare(ctx: FileContext) -> None:
    ctx.extra_words |= set(ctx.constants) | set(ctx.collections)
    if "environ" in ctx.text:
        ctx.env_copies = {m[1] for m in P.ENV_COPY.finditer(ctx.text)}


def finish(ctx: FileContext) -> None:
    for consts in ctx.constants.values():
        for const in consts:
            if const.used or P.DEVICE_NAME.match(const.name):
                for node, value in const.values:
                    ctx.strings("device-constant", [(node, value)], const.guarded)


def check_call(ctx: FileContext, node: ast.Call, g: bool) -> None:
    qual, method = ctx.callee
    args = node.args
    if method == "startswith" and args:   # str(dev).startswith("cuda"): a device-type test
        ctx.device_test(P.compared_strings(args[0]), g, False)   # the rules match the prefix "cuda:" too
        _env_prefix(ctx, args[0], g)
    if qual in P.COMMAND_CALLS and args:
        command = args[0].elts[0] if isinstance(args[0], (ast.List, ast.Tuple)) and args[0].elts else args[0]
        if isinstance(command, ast.BinOp) and isinstance(command.op, ast.Add) \
                and isinstance(command.right, ast.Constant) \
                and isinstance(command.right.value, str):   # cuda_home + "/bin/nvcc": the program is the last part
            ctx.strings("command", [(command.right, command.right.value.rsplit("/", 1)[-1])], g)
        ctx.strings("command", P.string_values(command), g)
    pos = P.DEVICE_ARG_CALLS.get(qual) if qual else P.DEVICE_ARG_METHODS.get(method or "")
    disabled = P.AUTOCAST_DISABLED if qual in P.AUTOCAST_CALLS and P.disables_autocast(node) else ""
    if pos is not None and 0 <= pos < len(args) and not any(isinstance(a, ast.Starred) for a in args[:pos + 1]):
        ctx.device("device-arg", args[pos], g, disabled)
    if qual == "torch.device":
        ctx.device("device-arg", P.keyword_value(node, "type"), g)
    elif qual and args and P.ACCELERATOR_CALL.match(qual):   # torch.cuda.get_device_capability("cuda")
        ctx.device("device-arg", args[0], g)
    for kw in node.keywords:
        if kw.arg and P.DEVICE_NAME.match(kw.arg):
            ctx.device("device-keyword", kw.value, g, disabled)
        elif kw.arg and P.BACKEND_NAME.match(kw.arg):
            ctx.strings("backend-arg", P.string_values(kw.value), g)
        elif kw.arg == "env" and isinstance(kw.value, ast.Dict):
            _env_keys(ctx, kw.value, g)
        elif kw.arg and P.LOWER_ENV.match(kw.arg) and "env" in _callee_leaf(node).lower():
            _env_name(ctx, kw, kw.arg.upper(), g)   # patch_environment(nccl_p2p_disable="1")
    if method == "add_argument" or (qual or "").endswith(".add_argument"):
        _argparse(ctx, node, g)
    bpos = P.BACKEND_ARG_CALLS.get(qual or "")
    if bpos is not None and bpos < len(args):
        ctx.strings("backend-arg", P.string_values(args[bpos]), g)
    if (qual in P.ENV_ARG_CALLS or method in P.ENV_ARG_METHODS) and args:
        ctx.strings("env-var", P.string_values(args[0]), g)
    if qual in P.ENV_DEFAULT_CALLS:   # os.environ.get("DEV", "cuda"): the device when DEV is unset
        default = args[1] if len(args) >= 2 else P.keyword_value(node, "default")
        if default is not None:
            ctx.strings("env-default", P.string_values(default), g)
    if qual in P.ENV_DICT_CALLS:
        for arg in args:
            if isinstance(arg, ast.Dict):
                _env_keys(ctx, arg, g)
        ctx.strings("env-var", [(kw, kw.arg) for kw in node.keywords if kw.arg], g)


def _callee_leaf(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _argparse(ctx: FileContext, node: ast.Call, g: bool) -> None:
    flags = [a.value.lstrip("-").replace("-", "_") for a in node.args
             if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    default = P.keyword_value(node, "default")
    if default is None:
        return
    if any(P.DEVICE_NAME.match(f) for f in flags):
        ctx.device("device-keyword", default, g)
    if any(P.BACKEND_NAME.match(f) for f in flags):
        ctx.strings("backend-arg", P.string_values(default), g)


def _env_keys(ctx: FileContext, node: ast.Dict, g: bool) -> None:
    ctx.strings("env-var", [(k, k.value) for k in node.keys
                            if isinstance(k, ast.Constant) and isinstance(k.value, str)], g)


def check_ifexp(ctx: FileContext, node: ast.IfExp, g: bool) -> None:
    """`"cuda" if torch.cuda.is_available() else "cpu"`: the idiom is one hit; its parts are consumed.
    (A conditional that is part of a device dispatch is consumed by it: NOTE [device dispatch].)"""
    if id(node) not in ctx.consumed and ctx.is_idiom(node):
        values = P.string_values(node.body, ctx.is_idiom) + P.string_values(node.orelse, ctx.is_idiom)
        for regex, rule in ctx.c.strings.get("availability-idiom", ()):
            matched = [v for _, v in values if regex.search(v)]
            if matched:
                ctx.hit(rule, node, g, value=matched[0])
        for sub in ast.walk(node.test):
            ctx.consumed.add(id(sub))
        for sub, _ in values:
            ctx.consumed.add(id(sub))


def check_return(ctx: FileContext, node: ast.Return, g: bool) -> None:
    """`return "cuda"` in a function named for a device (`infer_device`), `return "nccl"` in one
    named for a backend."""
    if node.value is not None and ctx.functions:
        function = ctx.functions[-1].lower()
        if "device" in function:
            ctx.device("device-return", node.value, g)
        if "backend" in function:
            ctx.strings("backend-arg", P.string_values(node.value), g)
        if P.ENV_FUNCTION.search(function):   # def export_envs(): return ["NCCL"]: names (or prefixes) to set
            items = P.compared_strings(node.value)
            ctx.strings("env-var", items, g)
            _env_prefix(ctx, node.value, g)


def check_def(ctx: FileContext, node: ast.FunctionDef | ast.AsyncFunctionDef, g: bool) -> None:
    """Parameter defaults: `def f(device="cuda")`, `def g(backend="nccl")`."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    for arg, default in pairs:
        if P.DEVICE_NAME.match(arg.arg):
            ctx.device("device-keyword", default, g)
        elif P.BACKEND_NAME.match(arg.arg):
            ctx.strings("backend-arg", P.string_values(default), g)


def check_assign(ctx: FileContext, node: ast.Assign | ast.AnnAssign, g: bool) -> None:
    if node.value is None:
        return
    value = ctx.field_default(node.value)
    if value is None:
        return
    for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
        name = P.target_name(target)
        if not name:
            continue
        if P.DEVICE_NAME.match(name) and not (ctx.depth == 0 and isinstance(target, ast.Name)):
            ctx.device("device-variable", value, g)
        elif P.BACKEND_NAME.match(name):
            ctx.strings("backend-arg", P.string_values(value), g)
        elif P.ACCELERATOR_NAME.match(name) and not (ctx.depth == 0 and isinstance(target, ast.Name)):
            # self._name = "cuda" in an accelerator class (a module constant is reported where used)
            ctx.strings("device-variable", [(n, v) for n, v in P.string_values(value) if P.CUDA_LITERAL.match(v)], g)


def check_dict(ctx: FileContext, node: ast.Dict, g: bool) -> None:
    for key, value in zip(node.keys, node.values):
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            if P.DEVICE_NAME.match(key.value):
                ctx.device("device-keyword", value, g)
            elif P.BACKEND_NAME.match(key.value):
                ctx.strings("backend-arg", P.string_values(value), g)


def check_subscript(ctx: FileContext, node: ast.Subscript, g: bool) -> None:
    if ctx.resolve(node.value) == P.ENV_MAPPING \
            or (isinstance(node.value, ast.Name) and node.value.id in ctx.env_copies):
        ctx.strings("env-var", P.string_values(node.slice), g)
    elif isinstance(node.ctx, ast.Store) and isinstance(node.slice, ast.Constant) \
            and isinstance(node.slice.value, str) and P.LOWER_ENV.match(node.slice.value):
        # env["nccl_p2p_disable"] = "1": written for a launcher that upper-cases it
        _env_name(ctx, node.slice, node.slice.value.upper(), g)


def _env_prefix(ctx: FileContext, arg: ast.AST, g: bool) -> None:
    """`k.startswith("NCCL")`: the CUDA/NCCL variables selected by prefix (to export or copy)."""
    items = arg.elts if isinstance(arg, (ast.Tuple, ast.List)) else [arg]
    for item in items:
        if isinstance(item, ast.Constant) and isinstance(item.value, str) and P.ENV_PREFIX.match(item.value):
            prefix = item.value.rstrip("_") + "_"
            _env_name(ctx, item, prefix + "*", g, probe=prefix + "X")


def _env_name(ctx: FileContext, node: ast.AST, name: str, g: bool, probe: str = "") -> None:
    """An environment variable spelled other than as its literal name, reported as `name`."""
    for regex, rule in ctx.c.strings.get("env-var", ()):
        if regex.search(probe or name):
            ctx.hit(rule, node, g, value=name)


def check_compare(ctx: FileContext, node: ast.Compare, g: bool) -> None:
    parts = [node.left, *node.comparators]
    if any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and \
            any(ctx.resolve(p) == P.ENV_MAPPING for p in node.comparators):
        ctx.strings("env-var", P.string_values(node.left), g)
    if any(_backendish(p) for p in parts):
        ctx.strings("backend-compare", [v for p in parts if isinstance(p, ast.Constant)
                                        for v in P.string_values(p)], g)
    negative = isinstance(node.ops[0], (ast.NotEq, ast.NotIn, ast.IsNot))
    if any(P.is_deviceish(p) for p in parts):   # x.device.type == "cuda", dev in ("cuda", "npu")
        ctx.device_test([v for p in parts if not P.is_deviceish(p) for v in P.compared_strings(p)], g, negative)
    elif isinstance(node.ops[0], (ast.Eq, ast.NotEq)) and len(parts) == 2 and not any(_backendish(p) for p in parts) \
            and any(not isinstance(p, ast.Constant) for p in parts) \
            and not any(P.target_name(p) == "accelerator" for p in parts):   # a framework's flag (Lightning)
        # NOTE [device-type tests]: anything compared with exactly "cuda" / "cuda:N" is tested for
        # the CUDA device type (`accelerator_name == "cuda"`, `get_accelerator().device_name() == "cuda"`);
        # `"cuda" in state` looks up a key, not a device type; a framework's `accelerator` flag
        # (`accelerator == "cuda"`, Lightning's Trainer vocabulary) is OPS108's, not a device type
        ctx.device_test([(p, p.value) for p in parts if isinstance(p, ast.Constant) and isinstance(p.value, str)
                         and P.CUDA_LITERAL.match(p.value)], g, negative)
    if any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):   # "cuda" in SUPPORTED_DEVICES (a module table)
        for p in node.comparators:
            if isinstance(p, ast.Name) and p.id in ctx.collections and ctx.imports.alias.get(p.id) is None:
                ctx.device_test(ctx.collections[p.id], g, negative)


def _backendish(expr: ast.AST) -> bool:
    if isinstance(expr, ast.Call):
        expr = expr.func
        leaf = expr.attr if isinstance(expr, ast.Attribute) else getattr(expr, "id", "")
        return leaf in P.BACKEND_CALL_NAMES or bool(P.BACKEND_NAME.match(leaf or ""))   # communication_backend_name()
    leaf = P.target_name(expr)
    return bool(leaf and P.BACKEND_NAME.match(leaf))


CHECKS = {
    ast.Call: check_call, ast.IfExp: check_ifexp, ast.Return: check_return,
    ast.FunctionDef: check_def, ast.AsyncFunctionDef: check_def,
    ast.Assign: check_assign, ast.AnnAssign: check_assign, ast.Dict: check_dict,
    ast.Subscript: check_subscript, ast.Compare: check_compare,
}
