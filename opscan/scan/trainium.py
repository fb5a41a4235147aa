"""What a test gives on Trainium with the paired torch: a small, closed evaluator of `if` and conditional tests."""

# NOTE [the branch Trainium takes]
# A conditional is judged by the branch it takes on a Trainium host running the torch TorchNeuron
# pairs with (PAIRED_TORCH, the minors of the shipped release: tests/scan/test_scan_trainium.py
# pins them to its file). `on_trainium(test, resolve)` evaluates a test under these answers, and
# only these (anything else is unknown, and an unknown part makes the whole test unknown unless
# `and` / `or` / `not` decide without it):
#   - CUDA is not there: `torch.cuda.is_available()` False, `torch.cuda.device_count()` 0,
#     `torch.cuda.is_initialized()` False (the answers NOTE [checks that require CUDA] uses);
#   - nor are MPS and XPU: `torch.backends.mps.is_available()`, `torch.mps.is_available()`,
#     `torch.xpu.is_available()` False, `torch.xpu.device_count()` 0, and the helpers of
#     transformers and accelerate that ask the same (`is_torch_cuda_available()`, `is_mps_available()`, ...);
#   - the accelerator is: `torch.accelerator.is_available()` True, `current_accelerator()` a
#     device whose `.type` is "neuron" (TorchNeuron: code written against torch.accelerator needs
#     no change);
#   - `hasattr(M, "name")` is True when `M.name` is an API of the paired torch (PRESENT; absent
#     names stay unknown, since a plugin such as torch_npu adds `torch.npu`);
#   - literals: `if 0:`, `if False:` (`while` loops are not judged, only `if` and conditionals);
#   - version tests: `torch.__version__` (a TorchVersion: it compares as a version) against a
#     string, `packaging.version.parse/Version(...)` of both sides, and transformers' and
#     accelerate's `is_torch_greater_or_equal("2.6")` / `is_torch_version(">=", "2.6")`, answered
#     for every patch release of each paired minor (or unknown).
# What the answer changes (scan/visitor.py, scan/context.py): the branch taken is judged as code
# that runs (a `"cuda"` there blocks like the literal, however the test looks), and the branch not
# taken is not reported at all when the answer rests on version or API tests or on another
# accelerator's availability (`... if hasattr(torch, "accelerator") else "cuda"`: legacy code for
# an older torch, no port work); when it rests on a CUDA check, the branch not taken is the CUDA path
# the port has to handle, reported guarded as before. An unknown test keeps the judgement it had.

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

Resolve = Callable[[ast.AST], "str | None"]

PAIRED_TORCH: tuple[tuple[int, int], ...] = ((2, 13), (2, 14))

# APIs of the paired torch that `hasattr` probes for (checked against the installed torch by
# tests/scan/test_scan_trainium.py). Only names that exist: a name absent here is unknown.
PRESENT = frozenset({
    "torch.accelerator", "torch.accelerator.current_accelerator", "torch.accelerator.is_available",
    "torch.accelerator.device_count", "torch.accelerator.current_device_index", "torch.accelerator.set_device_index",
    "torch.accelerator.synchronize", "torch.accelerator.current_stream", "torch.accelerator.set_stream",
    "torch.accelerator.device_index", "torch.accelerator.empty_cache", "torch.accelerator.memory_allocated",
    "torch.accelerator.max_memory_allocated", "torch.accelerator.memory_reserved", "torch.accelerator.memory_stats",
    "torch.accelerator.reset_peak_memory_stats", "torch.accelerator.get_memory_info",
    "torch.amp", "torch.amp.autocast", "torch.amp.GradScaler", "torch.amp.is_autocast_available", "torch.GradScaler",
    "torch.get_autocast_dtype", "torch.compile", "torch.compiler", "torch.compiler.is_compiling", "torch.export",
    "torch.xpu", "torch.mps", "torch.mtia", "torch.backends.mps", "torch.get_device_module", "torch.set_default_device",
    "torch.nn.attention", "torch.nn.attention.sdpa_kernel", "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.RMSNorm", "torch.library.custom_op", "torch.library.register_fake", "torch.library.triton_op",
    "torch.float8_e4m3fn", "torch.float8_e5m2", "torch.distributed.device_mesh", "torch.cuda.is_bf16_supported",
})

_FALSE_CALLS = {"torch.cuda.is_available": (False, True), "torch.cuda.is_initialized": (False, True),
                "torch.backends.mps.is_available": (False, False), "torch.mps.is_available": (False, False),
                "torch.xpu.is_available": (False, False), "torch.accelerator.is_available": (True, False)}
_COUNT_CALLS = {"torch.cuda.device_count": True, "torch.xpu.device_count": False}
# helpers of transformers / accelerate that ask whether CUDA, MPS or XPU is there: leaf -> about CUDA
_HELPERS = {"is_torch_cuda_available": True, "is_cuda_available": True, "is_torch_mps_available": False,
            "is_mps_available": False, "is_torch_xpu_available": False, "is_xpu_available": False}
_HELPER_PACKAGES = ("transformers.", "accelerate.")
_VERSION_CALLS = {"packaging.version.parse", "packaging.version.Version", "pkg_resources.parse_version"}
_COMPARE = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


@dataclass(frozen=True)
class Branch:
    """What a test gives on Trainium: its truth, and whether that rests on a CUDA check."""

    value: bool
    cuda: bool


class _Unknown:
    pass


UNKNOWN = _Unknown()


@dataclass(frozen=True)
class _Device:
    type: str


@dataclass(frozen=True)
class _TorchVersion:      # torch.__version__ (or a parsed copy): any patch release of one paired minor
    minor: tuple[int, int]


def on_trainium(test: ast.AST, resolve: Resolve) -> Branch | None:
    """The branch `test` takes on Trainium with the paired torch, or None when that cannot be told
    (NOTE [the branch Trainium takes])."""
    answers: set[bool] = set()
    cuda = False
    for minor in PAIRED_TORCH:
        value, uses_cuda = _Evaluator(resolve, minor).truth(test)
        if value is UNKNOWN:
            return None
        answers.add(bool(value))
        cuda = cuda or uses_cuda
    if len(answers) != 1:
        return None
    return Branch(answers.pop(), cuda)


class _Evaluator:
    def __init__(self, resolve: Resolve, minor: tuple[int, int]) -> None:
        self.resolve = resolve
        self.minor = minor
        self.cuda = False

    def truth(self, test: ast.AST) -> tuple[Any, bool]:
        value = self.value(test)
        if value is UNKNOWN:
            return UNKNOWN, self.cuda
        return bool(value), self.cuda

    def value(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.BoolOp):
            return self._boolop(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.value(node.operand)
            return UNKNOWN if inner is UNKNOWN else not inner
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Attribute):
            if (self.resolve(node) or "") == "torch.__version__":
                return _TorchVersion(self.minor)
            if node.attr == "type":
                base = self.value(node.value)
                return base.type if isinstance(base, _Device) else UNKNOWN
        return UNKNOWN

    def _boolop(self, node: ast.BoolOp) -> Any:
        stop = isinstance(node.op, ast.Or)       # `or` stops at a true value, `and` at a false one
        unknown = False
        last = None
        for part in node.values:
            value = self.value(part)
            if value is UNKNOWN:
                unknown = True
                continue
            if bool(value) == stop:
                return value
            last = value
        return UNKNOWN if unknown else last

    def _call(self, node: ast.Call) -> Any:
        name = self.resolve(node.func) or ""
        if name == "torch.accelerator.current_accelerator":
            return _Device("neuron")
        if isinstance(node.func, ast.Name) and node.func.id == "hasattr" and not name \
                and len(node.args) == 2 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str):
            base = self.resolve(node.args[0]) or ""
            return True if f"{base}.{node.args[1].value}" in PRESENT else UNKNOWN
        if name in _VERSION_CALLS and len(node.args) == 1:
            return self._version(self.value(node.args[0]))
        if node.args or node.keywords:
            return self._torch_helper(name, node)
        if name in _FALSE_CALLS:
            value, about_cuda = _FALSE_CALLS[name]
            self.cuda = self.cuda or about_cuda
            return value
        if name in _COUNT_CALLS:
            self.cuda = self.cuda or _COUNT_CALLS[name]
            return 0
        leaf = name.rsplit(".", 1)[-1]
        if leaf in _HELPERS and name.startswith(_HELPER_PACKAGES):
            self.cuda = self.cuda or _HELPERS[leaf]
            return False
        return UNKNOWN

    def _torch_helper(self, name: str, node: ast.Call) -> Any:
        """`is_torch_greater_or_equal("2.6")`, `is_torch_version(">=", "2.6")` of transformers / accelerate."""
        if not name.startswith(_HELPER_PACKAGES) or node.keywords:
            return UNKNOWN
        leaf = name.rsplit(".", 1)[-1]
        args = [a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None for a in node.args]
        if leaf == "is_torch_greater_or_equal" and len(args) == 1 and args[0]:
            return self._version_compare(">=", args[0])
        if leaf == "is_torch_version" and len(args) == 2 and args[0] and args[1]:
            return self._version_compare(args[0], args[1])
        return UNKNOWN

    def _version(self, value: Any) -> Any:
        if isinstance(value, (_TorchVersion, Version)):
            return value
        if isinstance(value, str):
            try:
                return Version(value)
            except InvalidVersion:
                return UNKNOWN
        return UNKNOWN

    def _compare(self, node: ast.Compare) -> Any:
        if len(node.ops) != 1:
            return UNKNOWN
        op = node.ops[0]
        left, right = self.value(node.left), self.value(node.comparators[0])
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        if isinstance(op, (ast.Is, ast.IsNot)) and (left is None or right is None):
            same = left is right
            return same if isinstance(op, ast.Is) else not same
        symbol = _COMPARE.get(type(op))
        if symbol is None:
            return UNKNOWN
        if isinstance(left, _TorchVersion) or isinstance(right, _TorchVersion):
            if isinstance(right, _TorchVersion):   # "2.6" <= torch.__version__  ->  torch.__version__ >= "2.6"
                left, right = right, left
                symbol = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(symbol, symbol)
            other = self._version(right)
            return UNKNOWN if other is UNKNOWN or isinstance(other, _TorchVersion) else \
                self._version_compare(symbol, str(other))
        if type(left) is type(right) and isinstance(left, (str, int)):
            return {"==": left == right, "!=": left != right, "<": left < right, "<=": left <= right,
                    ">": left > right, ">=": left >= right}[symbol]
        return UNKNOWN

    def _version_compare(self, symbol: str, text: str) -> Any:
        """`torch version SYMBOL text` for every patch release of the paired minor, or UNKNOWN."""
        try:
            other = Version(text)
        except InvalidVersion:
            return UNKNOWN
        if symbol not in ("==", "!=", "<", "<=", ">", ">="):
            return UNKNOWN
        low, high = Version(f"{self.minor[0]}.{self.minor[1]}.0"), Version(f"{self.minor[0]}.{self.minor[1]}.999")
        if other.release[:2] == self.minor and (other.pre or other.dev or other.post or other.local):
            return UNKNOWN
        results = {_apply(symbol, low, other), _apply(symbol, high, other)}
        if symbol == "==" and low <= other <= high:
            return UNKNOWN
        if symbol == "!=" and low <= other <= high:
            return UNKNOWN
        return results.pop() if len(results) == 1 else UNKNOWN


def _apply(symbol: str, left: Version, right: Version) -> bool:
    return {"==": left == right, "!=": left != right, "<": left < right, "<=": left <= right,
            ">": left > right, ">=": left >= right}[symbol]
