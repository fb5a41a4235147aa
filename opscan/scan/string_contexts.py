"""Where a string is a device, a backend or an environment variable, and what counts as a guard.

These tables define the contexts of the `string` matcher (see rules.CONTEXTS). A string is only
ever reported in one of these positions, which is why docstrings, comments, log messages and
other strings that merely mention CUDA never are.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

Resolve = Callable[[ast.AST], str | None]   # the file's import resolver (index.resolver.Imports.resolve)

# Callables whose positional argument N is a device (dotted names after import resolution).
DEVICE_ARG_CALLS: dict[str, int] = {
    "torch.device": 0,
    "torch.set_default_device": 0,
    "torch.autocast": 0,
    "torch.amp.autocast": 0,
    "torch.amp.autocast_mode.autocast": 0,
    "torch.amp.GradScaler": 0,
    "torch.GradScaler": 0,
    "torch.get_device_module": 0,
    "torch.Generator": 0,
    "torch.load": 1,
    "torch.get_autocast_dtype": 0,
    "torch.set_autocast_dtype": 0,
    "torch.is_autocast_enabled": 0,
    "torch.set_autocast_enabled": 0,
    "torch.amp.is_autocast_available": 0,
    "torch.cuda.set_rng_state": 1,      # set_rng_state(state, "cuda"): the device is the second argument
    "torch.cuda.get_rng_state": 0,
}
# NOTE [disabled autocast]: `torch.autocast("cuda", enabled=False)` (or the decorator) turns CUDA's
# autocast off for a region. It runs without error where CUDA is absent, but it switches off CUDA's
# autocast only: under a `neuron` autocast the region stays in lower precision. Its device string
# is therefore a warning (numerics differ), not an error: the strings get the match name
# AUTOCAST_DISABLED, whose `fixes` entry in rules/hardcoded-cuda-device.yaml sets the severity.
AUTOCAST_CALLS = frozenset({"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"})
AUTOCAST_DISABLED = "#autocast-disabled"


def disables_autocast(call: ast.Call) -> bool:
    """`enabled=False` (keyword, or the third positional argument of `autocast(device, dtype, enabled)`)."""
    value = keyword_value(call, "enabled")
    if value is None and len(call.args) >= 3 and not any(isinstance(a, ast.Starred) for a in call.args[:3]):
        value = call.args[2]
    return isinstance(value, ast.Constant) and value.value is False


# Functions of an accelerator's namespace take a device first (`torch.cuda.get_device_properties("cuda")`,
# `torch.xpu.set_device("xpu:0")`): a string there is a device.
ACCELERATOR_CALL = re.compile(r"^torch\.(?:cuda|xpu|mps|npu|mtia|hpu|accelerator|neuron)\.[a-z_]+$")
# Methods (on any object opscan cannot resolve to a module) whose argument N is a device.
DEVICE_ARG_METHODS: dict[str, int] = {"to": 0, "to_empty": -1}

DEVICE_NAME = re.compile(
    r"^(?:device|devices|device_type|device_types|device_map|map_location|dev|\w+_device|\w+_devices"
    r"|\w+_device_type)$",
    re.IGNORECASE)
# Attributes that hold a device type: `x.device.type`, `dev.type`, `self.device_type`.
DEVICE_TYPE_ATTRS = ("type", "device_type")
# `t.is_cuda` and its siblings: a device-type test written as an attribute (value: the type).
DEVICE_TYPE_FLAGS = {"is_cuda": "cuda", "is_mps": "mps", "is_xpu": "xpu", "is_xla": "xla", "is_hpu": "hpu"}
# Calls whose first argument is a condition that must hold (a failed device test raises).
CHECK_CALLS = ("torch._check", "torch._check_with", "torch._check_value", "torch._check_type", "torch._assert")
# Callables whose first argument is a command to run (a string, or a list whose first item is it).
COMMAND_CALLS = {"shutil.which", "subprocess.run", "subprocess.call", "subprocess.check_call",
                 "subprocess.check_output", "subprocess.Popen", "subprocess.getoutput",
                 "subprocess.getstatusoutput", "os.system", "os.popen"}
BACKEND_NAME = re.compile(r"^(?:backend|\w+_backend|\w*backend_name|dist_backend)$", re.IGNORECASE)
# Attributes and variables that name the accelerator a class or a launcher drives (`self._name =
# "cuda"` in an accelerator class, `accelerator_name = "cuda"`): "cuda" assigned there is a device type.
ACCELERATOR_NAME = re.compile(r"^_?(?:name|\w*accelerator_name)$", re.IGNORECASE)
# A literal compared with anything is a device-type test when it is exactly a CUDA device string
# (`accelerator_name == "cuda"`, `get_accelerator().device_name() == "cuda"`).
TABLES = (ast.List, ast.Tuple, ast.Set)
CUDA_LITERAL = re.compile(r"^cuda(:\d+)?$")
# Names of functions that return environment-variable names to set or export (`export_envs()`,
# `visible_devices_envs()`): their returned strings are variable names, or prefixes of them.
ENV_FUNCTION = re.compile(r"(?:^|_)envs?(?:_|$)|environ", re.IGNORECASE)
# `env = os.environ.copy()`, `dict(os.environ)`, `copy.deepcopy(os.environ)`: a copy whose
# subscripts are environment variables (of a child process).
ENV_COPY = re.compile(r"^[ \t]*(\w+)[ \t]*=[ \t]*(?:os\.environ\.copy\(\)|dict\(os\.environ\)"
                      r"|copy\.(?:deep)?copy\(os\.environ\))", re.MULTILINE)
# Other accelerators, by the word their availability checks and functions use: a pin to one of them
# inside `if is_xla_installed():` or a function named `*_hpu` is that accelerator's own code path.
OTHER_ACCELERATORS = ("mps", "xpu", "npu", "hpu", "xla", "mlu", "musa")
_OWN_CHECK = re.compile(r"^is_\w*?({})\w*_(?:available|installed)$".format("|".join(OTHER_ACCELERATORS)))

BACKEND_ARG_CALLS: dict[str, int] = {
    "torch.distributed.init_process_group": 0,
    "torch.distributed.distributed_c10d.init_process_group": 0,
    "torch.distributed.is_backend_available": 0,
    "torch.distributed.Backend": 0,
}
BACKEND_CALL_NAMES = ("get_backend", "get_default_backend_for_device")

# Environment access: callables whose argument 0 is a variable name.
ENV_ARG_CALLS = {"os.getenv", "os.putenv", "os.unsetenv", "os.environ.get", "os.environ.setdefault",
                 "os.environ.pop", "os.environ.__getitem__", "os.environ.__setitem__", "os.getenvb"}
ENV_ARG_METHODS = {"setenv", "delenv"}        # pytest monkeypatch
# Environment lookups with a default (argument 1, or `default=`): the value when the variable is unset.
ENV_DEFAULT_CALLS = {"os.getenv", "os.environ.get", "os.environ.setdefault"}
ENV_MAPPING = "os.environ"
ENV_DICT_CALLS = {"os.environ.update"}
# CUDA/NCCL variables in the lower case a launcher upper-cases (`env["nccl_p2p_disable"] = "1"`, then
# `patch_environment(**env)`): only names that are environment variables in that spelling too.
LOWER_ENV = re.compile(r"^(?:nccl_[a-z0-9_]+|torch_nccl_[a-z0-9_]+|cuda_visible_devices|cuda_launch_blocking"
                       r"|cuda_device_max_connections|cuda_device_order|cublas_workspace_config"
                       r"|pytorch_cuda_alloc_conf)$")
# A prefix that selects the CUDA/NCCL variables to export (`k.startswith("NCCL")`).
ENV_PREFIX = re.compile(r"^(?:NCCL|TORCH_NCCL|CUDA|CUBLAS|CUDNN)_?$")

FIELD_CALLS = {"dataclasses.field", "field", "pydantic.Field", "Field"}

# Guards: `if` tests that make the body device-specific (the finding is still reported, guarded).
_GUARD_SUFFIXES = (".is_available", ".device_count", ".is_built", ".is_initialized")
_GUARD_NAME = re.compile(r"^is_\w*(available|installed|cuda|gpu)\w*$|^has_cuda$|^use_cuda$|^cuda_available$", re.I)
_DEVICE_STRINGS = re.compile(r"^(cuda|mps|xpu|npu|hpu|xla|gpu|cpu|meta|neuron)(:\d+)?$")


def is_guard(test: ast.AST, resolve: Resolve) -> bool:
    """Whether an `if`/`while` test checks the device or an accelerator library's availability."""
    for node in ast.walk(test):
        if isinstance(node, ast.Call):
            name = resolve(node.func) or ""
            if name.startswith("torch.") and name.endswith(_GUARD_SUFFIXES):
                return True
            leaf = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if _GUARD_NAME.match(leaf or ""):
                return True
            if leaf == "hasattr" and node.args and (resolve(node.args[0]) or "").split(".")[:2] == ["torch", "ops"]:
                return True   # `hasattr(torch.ops, "ns")`: the ops it guards are still sites, guarded
        elif isinstance(node, ast.Attribute):
            if node.attr in ("is_cuda", "is_mps", "is_xpu") or (resolve(node) or "") == "torch.version.cuda":
                return True
        elif isinstance(node, ast.Name) and _GUARD_NAME.match(node.id):
            return True
        elif isinstance(node, ast.Compare):
            for part in [node.left, *node.comparators]:
                if isinstance(part, ast.Constant) and isinstance(part.value, str) and _DEVICE_STRINGS.match(part.value):
                    return True
    return False


def guards_the_rest(stmt: ast.stmt, resolve: Resolve) -> bool:
    """NOTE [short-circuit guards]: whether a statement is an early exit on a device check
    (`if not torch.cuda.is_available(): return`, `... continue`, `... break`), so that the
    statements after it in the same block run only on the device it checked and are guarded. An
    exit by `raise` or `sys.exit` is not one: such a script refuses to start without CUDA (OPS214)."""
    if not isinstance(stmt, ast.If) or stmt.orelse or not stmt.body:
        return False
    return isinstance(stmt.body[-1], (ast.Return, ast.Continue, ast.Break)) and fails_off_device(stmt.test, resolve)


def fails_off_device(test: ast.AST, resolve: Resolve) -> bool:
    """Whether a test is true when the device it checks is missing: `not torch.cuda.is_available()`,
    `torch.cuda.device_count() == 0` (or `< 1`), `device.type != "cuda"`, or an `or` holding one.
    (`if torch.cuda.is_available(): return ...` is the opposite: what follows is the other path.)"""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return is_guard(test.operand, resolve)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return any(fails_off_device(value, resolve) for value in test.values)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and is_guard(test, resolve):
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, (ast.NotEq, ast.IsNot, ast.NotIn)):
            return True
        number = right.value if isinstance(right, ast.Constant) and isinstance(right.value, int) else None
        return (isinstance(op, ast.Eq) and number == 0) or (isinstance(op, ast.Lt) and number == 1) \
            or (isinstance(op, ast.LtE) and number == 0)
    return False


# NOTE [checks that require CUDA]
# `assert torch.cuda.is_available(), "needs a GPU"`, `if not torch.cuda.is_available(): raise
# SystemExit(...)` / `sys.exit(...)`, `if torch.cuda.device_count() == 0: raise ...`: a script that
# refuses to start without CUDA stops there on Trainium, before any work. The walk (visitor.py)
# evaluates such a test as a Neuron machine answers it (`torch.cuda.is_available()` False,
# `torch.cuda.device_count()` 0; what it cannot tell, such as `or args.cpu`, leaves the answer
# unknown and the test unreported) and, where that answer is the one that raises, sets
# `ctx.requires_device`; a name matcher with `required-to-start: true` then matches the check
# (OPS214), instead of the name's general rule. An early exit by `return`/`continue` is a guard
# instead (NOTE [short-circuit guards]).
_OFF_DEVICE = {"torch.cuda.is_available": False, "torch.cuda.device_count": 0, "torch.cuda.is_initialized": False}
_EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit", "os.abort"})


def neuron_answer(test: ast.AST, resolve: Resolve) -> bool | int | None:
    """What `test` gives on a Neuron machine (no CUDA), or None when that cannot be told."""
    if isinstance(test, ast.Call) and not test.args:
        return _OFF_DEVICE.get(resolve(test.func) or "")
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        answer = neuron_answer(test.operand, resolve)
        return None if answer is None else not answer
    if isinstance(test, ast.BoolOp):
        answers = [neuron_answer(value, resolve) for value in test.values]
        stop = not isinstance(test.op, ast.And)   # `and` stops at a false value, `or` at a true one
        if any(a is not None and bool(a) == stop for a in answers):
            return stop
        return None if None in answers else not stop
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, right = neuron_answer(test.left, resolve), test.comparators[0]
        if isinstance(left, bool) or not isinstance(left, int) \
                or not (isinstance(right, ast.Constant) and type(right.value) is int):
            return None
        compare = {ast.Eq: int.__eq__, ast.NotEq: int.__ne__, ast.Lt: int.__lt__, ast.LtE: int.__le__,
                   ast.Gt: int.__gt__, ast.GtE: int.__ge__}.get(type(test.ops[0]))
        return None if compare is None else compare(left, right.value)
    return None


def exits(body: list[ast.stmt], resolve: Resolve) -> bool:
    """Whether a block ends the program or raises: its first or last statement is a `raise` or a
    call of sys.exit / exit / quit / os._exit."""
    if not body:
        return False
    for stmt in (body[0], body[-1]):
        if isinstance(stmt, ast.Raise):
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            if (resolve(func) or (func.id if isinstance(func, ast.Name) else "")) in _EXITS:
                return True
    return False


def own_paths(test: ast.AST, resolve: Resolve) -> set[str]:
    """The other accelerators whose availability an `if` test checks (`is_xla_installed()`,
    `torch.xpu.is_available()`, `torch.backends.mps.is_available()`)."""
    out: set[str] = set()
    for node in ast.walk(test):
        if isinstance(node, ast.Call):
            leaf = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            match = _OWN_CHECK.match(leaf or "")
            if match:
                out.add(match[1])
            parts = (resolve(node.func) or "").split(".")
            if len(parts) >= 3 and parts[0] == "torch" and parts[-1] == "is_available" \
                    and parts[-2] in OTHER_ACCELERATORS:
                out.add(parts[-2])
    return out


def function_accelerators(name: str) -> set[str]:
    """The other accelerators a function's name is written for (`all_gather_object_list_hpu`)."""
    return set(name.lower().split("_")) & set(OTHER_ACCELERATORS)


def is_availability_test(test: ast.AST, resolve: Resolve) -> bool:
    """Whether a conditional's test asks if an accelerator is there (the `"cuda" if ... else` idiom)."""
    for node in ast.walk(test):
        if isinstance(node, ast.Call):
            name = resolve(node.func) or ""
            if name.startswith("torch.") and name.endswith((".is_available", ".device_count", ".is_built")):
                return True
    return False


def catches_import_error(node: ast.Try | ast.TryStar) -> bool:
    """Whether a try statement has a handler for ImportError (an optional import)."""
    for handler in node.handlers:
        kinds = handler.type
        names = []
        if kinds is None:
            return True
        for k in (kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]):
            names.append(k.id if isinstance(k, ast.Name) else getattr(k, "attr", ""))
        if {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"} & set(names):
            return True
    return False


def string_values(expr: ast.AST, skip_ifexp: Callable[[ast.IfExp], bool] = lambda node: False
                  ) -> list[tuple[ast.AST, str]]:
    """The strings an expression may evaluate to, each with the node to report.

    f-strings, `%` and `.format` templates and `"cuda:" + x` render their holes as "0", so that
    f"cuda:{rank}" matches `^cuda(:\\d+)?$`. Conditional expressions give both branches (unless
    `skip_ifexp` says the conditional is reported on its own); lists and tuples give their items.
    """
    out: list[tuple[ast.AST, str]] = []
    _collect(expr, out, skip_ifexp, expr)
    return out


def _collect(expr: ast.AST, out: list[tuple[ast.AST, str]], skip_ifexp: Callable[[ast.IfExp], bool],
             report: ast.AST) -> None:
    if isinstance(expr, ast.Constant):
        if isinstance(expr.value, str):
            out.append((report, expr.value))
    elif isinstance(expr, ast.JoinedStr):
        text = "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "0"
                       for v in expr.values)
        out.append((report, text))
    elif isinstance(expr, ast.BinOp) and isinstance(expr.left, ast.Constant) and isinstance(expr.left.value, str):
        if isinstance(expr.op, ast.Add):
            out.append((report, expr.left.value + "0"))
        elif isinstance(expr.op, ast.Mod):
            out.append((report, re.sub(r"%[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]", "0", expr.left.value)))
    elif (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "format"
          and isinstance(expr.func.value, ast.Constant) and isinstance(expr.func.value.value, str)):
        out.append((report, re.sub(r"\{[^{}]*\}", "0", expr.func.value.value)))
    elif isinstance(expr, ast.BoolOp) and isinstance(expr.op, ast.Or):
        # `detect() or "cuda"`: the string is the value when the rest gives nothing
        for value in expr.values:
            _collect(value, out, skip_ifexp, value)
    elif isinstance(expr, ast.IfExp):
        if not skip_ifexp(expr):
            _collect(expr.body, out, skip_ifexp, expr.body)
            _collect(expr.orelse, out, skip_ifexp, expr.orelse)
    elif isinstance(expr, (ast.List, ast.Tuple, ast.Set)) and report is expr:
        # One level only (["cuda:0", "cuda:1"], not tables of tuples), and not an enumeration of
        # device types such as ("cuda", "xpu", "npu"), which lists what is supported, not a pin.
        items: list[tuple[ast.AST, str]] = []
        for item in expr.elts:
            if not isinstance(item, (ast.List, ast.Tuple, ast.Set)):
                _collect(item, items, skip_ifexp, item)
        if len({value.split(":", 1)[0] for _, value in items}) <= 1:
            out.extend(items)


def is_deviceish(expr: ast.AST) -> bool:
    """Whether an expression holds a device or a device type: `x.device.type`, `dev`, `self.device`,
    `cfg["device_type"]`, `str(device)`."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "str" and len(expr.args) == 1:
        return is_deviceish(expr.args[0])
    if isinstance(expr, ast.Attribute) and expr.attr in DEVICE_TYPE_ATTRS:
        return True
    name = target_name(expr)
    return bool(name and DEVICE_NAME.match(name))


def compared_strings(expr: ast.AST) -> list[tuple[ast.AST, str]]:
    """The strings a comparison operand stands for: a literal or template, or each item of a literal
    tuple/list/set (`device.type in ("cuda", "npu")`), each with its own node."""
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        out: list[tuple[ast.AST, str]] = []
        for item in expr.elts:
            out += string_values(item)
        return out
    return string_values(expr)


def keyword_value(call: ast.Call, name: str) -> ast.AST | None:
    """The value passed as keyword `name`, or None."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def target_name(target: ast.AST) -> str | None:
    """The last identifier of an assignment target (`device`, `self.device`, `cfg["device"]`)."""
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) \
            and isinstance(target.slice.value, str):
        return target.slice.value
    return None
