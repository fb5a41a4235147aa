"""Names a library has removed since the project was written, answered for the run and named in the
report (NOTE [removed library names]): NumPy's removed aliases (`np.float`, `np.Inf`, `np.bool8`,
`np.product`, ...), `torch._six`, matplotlib's `cm.get_cmap`, pandas' `append`, `iteritems` and
`fillna(method=...)`.

NOTE [removed library names]
Research code is written against the libraries of its year, and `opscan PATH` runs it in today's
environment, the one a port to TorchNeuron (torch 2.13 / 2.14) installs. Code of a few years ago
names what has since been removed: NumPy 1.24 removed the aliases of builtins (`np.float`, `np.int`,
`np.bool`, `np.object`), NumPy 2.0 removed `np.Inf`, `np.NaN`, `np.bool8`, `np.float_`,
`np.product`, `np.asfarray` and more (NEP 52), PyTorch 2.0 removed `torch._six`, matplotlib 3.9
removed `matplotlib.cm.get_cmap`, pandas 2.0 removed `DataFrame.append` and `iteritems` and pandas
3.0 `fillna(method=...)`. The run stopped at the first one (an early-stopping helper's
`np.Inf`, a metric's `dtype=np.bool`), far from the model and its step, on a line the port has to
change anyway. So a removed name the project's own code asks for is answered with what it meant
(the builtin, the value, the function its release notes name as the replacement), only when the
installed library no longer has it (a library that still has it answers as itself), and each one is
named in the report with the line that asked and what to write instead: the line is a finding of
the port, not something opscan fixed. A library's own use of these names is never answered (it is
the library's compatibility, not the project's code). `opscan run` never installs them: it runs the
team's script where the team runs it.
"""

from __future__ import annotations

import collections.abc
import importlib.abc
import importlib.machinery
import math
import sys
import types
from collections.abc import Callable

from opscan.trace.run.stand_ins import Patches, StandIns

_NEP52 = "removed in NumPy 2.0 (NEP 52)"
_BUILTIN = "removed in NumPy 1.24 (deprecated in 1.20)"


def _numpy_names(np) -> dict[str, tuple[Callable[[], object], str, str]]:
    """Removed name -> (its value, what to write instead, when it was removed)."""
    def asfarray(a, dtype=np.float64):
        dtype = np.dtype(dtype)
        return np.asarray(a, dtype=dtype if np.issubdtype(dtype, np.inexact) else np.float64)

    names: dict[str, tuple[Callable[[], object], str, str]] = {
        "float": (lambda: float, "float", _BUILTIN), "int": (lambda: int, "int", _BUILTIN),
        "bool": (lambda: bool, "bool", _BUILTIN), "object": (lambda: object, "object", _BUILTIN),
        "str": (lambda: str, "str", _BUILTIN), "complex": (lambda: complex, "complex", _BUILTIN),
        "long": (lambda: int, "int", _BUILTIN), "unicode": (lambda: str, "str", _BUILTIN),
        "Inf": (lambda: np.inf, "np.inf", _NEP52), "Infinity": (lambda: np.inf, "np.inf", _NEP52),
        "PINF": (lambda: np.inf, "np.inf", _NEP52), "infty": (lambda: np.inf, "np.inf", _NEP52),
        "NINF": (lambda: -np.inf, "-np.inf", _NEP52), "NaN": (lambda: np.nan, "np.nan", _NEP52),
        "NAN": (lambda: np.nan, "np.nan", _NEP52), "PZERO": (lambda: 0.0, "0.0", _NEP52),
        "NZERO": (lambda: -0.0, "-0.0", _NEP52),
        "bool8": (lambda: np.bool_, "np.bool_", _NEP52), "int0": (lambda: np.intp, "np.intp", _NEP52),
        "uint0": (lambda: np.uintp, "np.uintp", _NEP52), "float_": (lambda: np.float64, "np.float64", _NEP52),
        "complex_": (lambda: np.complex128, "np.complex128", _NEP52),
        "cfloat": (lambda: np.complex128, "np.complex128", _NEP52),
        "longfloat": (lambda: np.longdouble, "np.longdouble", _NEP52),
        "singlecomplex": (lambda: np.complex64, "np.complex64", _NEP52),
        "longcomplex": (lambda: np.clongdouble, "np.clongdouble", _NEP52),
        "clongfloat": (lambda: np.clongdouble, "np.clongdouble", _NEP52),
        "string_": (lambda: np.bytes_, "np.bytes_", _NEP52), "unicode_": (lambda: np.str_, "np.str_", _NEP52),
        "object0": (lambda: np.object_, "np.object_", _NEP52),
        "product": (lambda: np.prod, "np.prod", _NEP52), "cumproduct": (lambda: np.cumprod, "np.cumprod", _NEP52),
        "sometrue": (lambda: np.any, "np.any", _NEP52), "alltrue": (lambda: np.all, "np.all", _NEP52),
        "round_": (lambda: np.round, "np.round", _NEP52), "asfarray": (lambda: asfarray, "np.asarray(a, dtype=float)",
                                                                        _NEP52),
        "msort": (lambda: lambda a: np.sort(a, axis=0), "np.sort(a, axis=0)", _NEP52),
        "row_stack": (lambda: np.vstack, "np.vstack", "deprecated in NumPy 2.0"),
        "trapz": (lambda: np.trapezoid, "np.trapezoid", "deprecated in NumPy 2.0"),
        "in1d": (lambda: lambda a, b, **k: np.isin(np.ravel(a), b, **k), "np.isin", "deprecated in NumPy 2.0"),
        "mat": (lambda: np.asmatrix, "np.asmatrix", _NEP52),
    }
    return names


def install(stand_ins: StandIns, patches: Patches) -> dict[str, Callable]:
    """numpy and matplotlib.cm patched when the script imports them; `torch._six` found when asked."""
    finder = _SixFinder(stand_ins)
    sys.meta_path.append(finder)
    patches.on_undo(lambda: _remove_six(finder))
    return {"numpy": lambda module: _patch_numpy(module, stand_ins, patches),
            "matplotlib.cm": lambda module: _patch_cm(module, stand_ins, patches),
            "pandas": lambda module: _patch_pandas(module, stand_ins, patches)}


def _patch_numpy(np, stand_ins: StandIns, patches: Patches) -> None:
    original = getattr(np, "__getattr__", None)
    if original is None:
        return
    names = _numpy_names(np)

    def removed(attribute: str):
        try:
            return original(attribute)
        except AttributeError:
            entry = names.get(attribute)
            if entry is None or stand_ins.asked_by_library(sys._getframe(1)):
                raise
        value, instead, when = entry
        stand_ins.record("removed API", f"np.{attribute}", f"{when}; answered as {instead} for this run: "
                         f"write {instead} (NOTE [removed library names])")
        return value()

    patches.set(np, "__getattr__", removed)


def _patch_cm(cm, stand_ins: StandIns, patches: Patches) -> None:
    if "get_cmap" in vars(cm):
        return

    def get_cmap(name=None, lut=None):
        if not stand_ins.asked_by_library(sys._getframe(1)):
            stand_ins.record("removed API", "matplotlib.cm.get_cmap", "removed in matplotlib 3.9; answered as "
                             "matplotlib.colormaps.get_cmap for this run: write matplotlib.colormaps[name] "
                             "(NOTE [removed library names])")
        import matplotlib

        cmap = matplotlib.colormaps.get_cmap(name)
        return cmap.resampled(lut) if lut is not None else cmap

    patches.set(cm, "get_cmap", get_cmap)


_FILLS = {"ffill": "ffill", "pad": "ffill", "bfill": "bfill", "backfill": "bfill"}


def _patch_pandas(pd, stand_ins: StandIns, patches: Patches) -> None:
    """pandas 2.0 removed `DataFrame.append` / `Series.append` and `iteritems`; pandas 3.0 removed
    `fillna(method=...)`: answered by what their release notes name (`pd.concat`, `items`, `ffill` /
    `bfill`), each named at the project's line."""
    def said(name: str, instead: str, when: str) -> None:
        if not stand_ins.asked_by_library(sys._getframe(2)):
            stand_ins.record("removed API", name, f"{when}; answered as {instead} for this run: write {instead} "
                             "(NOTE [removed library names])")

    for cls in (pd.DataFrame, pd.Series):
        kind = cls.__name__
        if not hasattr(cls, "append"):
            def append(self, other, ignore_index=False, verify_integrity=False, sort=False, _kind=kind):
                said(f"{_kind}.append", "pd.concat([a, b])", "removed in pandas 2.0")
                others = list(other) if isinstance(other, (list, tuple)) else [other]
                if _kind == "DataFrame":
                    others = [pd.DataFrame([o]) if isinstance(o, (dict, pd.Series)) else o for o in others]
                return pd.concat([self, *others], ignore_index=ignore_index, verify_integrity=verify_integrity,
                                 sort=sort)
            patches.set(cls, "append", append)
        if not hasattr(cls, "iteritems"):
            def iteritems(self, _kind=kind):
                said(f"{_kind}.iteritems", ".items()", "removed in pandas 2.0")
                return self.items()
            patches.set(cls, "iteritems", iteritems)
    generic = getattr(getattr(pd, "core", None), "generic", None)
    frame = getattr(generic, "NDFrame", None)
    original = vars(frame).get("fillna") if frame is not None else None
    code = getattr(original, "__code__", None)
    if code is None or "method" in code.co_varnames:   # a pandas that still takes `method` (or a wrapped one)
        return

    def fillna(self, value=None, *args, method=None, **kwargs):
        if method is None or value is not None or method not in _FILLS:
            return original(self, value, *args, **kwargs) if method is None else \
                original(self, value, *args, method=method, **kwargs)
        instead = _FILLS[method]
        said(f"{type(self).__name__}.fillna(method={method!r})", f".{instead}()", "removed in pandas 3.0")
        return getattr(self, instead)(**{k: v for k, v in kwargs.items() if k in ("axis", "inplace", "limit")})

    patches.set(frame, "fillna", fillna)


# what `torch._six` held, as its last release had it (PyTorch 1.13): names old code imports from it
_SIX = {"inf": math.inf, "nan": math.nan, "string_classes": (str, bytes), "int_classes": int,
        "container_abcs": collections.abc, "PY3": True, "PY37": True, "FileNotFoundError": FileNotFoundError}


class _SixFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`import torch._six` when the installed torch has none (removed in PyTorch 2.0): a module of
    the names it held, each named in the report when the project's code reads it."""

    def __init__(self, stand_ins: StandIns) -> None:
        self.stand_ins = stand_ins

    def find_spec(self, name, path=None, target=None):
        if name != "torch._six":
            return None
        return importlib.machinery.ModuleSpec(name, self)

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        stand_ins = self.stand_ins

        def read(attribute: str):
            if attribute not in _SIX:
                raise AttributeError(f"module 'torch._six' has no attribute {attribute!r}")
            if not stand_ins.asked_by_library(sys._getframe(1)):
                stand_ins.record("removed API", f"torch._six.{attribute}", "torch._six was removed in PyTorch "
                                 f"2.0; answered as {_SIX_INSTEAD[attribute]} for this run: write that "
                                 "(NOTE [removed library names])")
            return _SIX[attribute]

        module.__getattr__ = read   # type: ignore[attr-defined]


_SIX_INSTEAD = {"inf": "math.inf", "nan": "math.nan", "string_classes": "str", "int_classes": "int",
                "container_abcs": "collections.abc", "PY3": "True", "PY37": "True",
                "FileNotFoundError": "FileNotFoundError"}


def _remove_six(finder: _SixFinder) -> None:
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
    module = sys.modules.get("torch._six")
    if isinstance(module, types.ModuleType) and getattr(module.__spec__, "loader", None) is finder:
        del sys.modules["torch._six"]
