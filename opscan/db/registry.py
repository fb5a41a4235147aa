"""What the installed torch knows about an op: does it exist, does a backend get a composite kernel, its parts.

torch is imported lazily, inside functions: the database loads and answers without it (then
composite lookups are skipped and the answers say so).
"""

from __future__ import annotations

import functools
import importlib.util
import warnings
from dataclasses import dataclass

# Alias keys whose kernels a backend with no kernel of its own receives, in dispatcher precedence
# order (a backend kernel beats all of them; CompositeImplicitAutograd comes last).
COMPOSITE_KEYS = ("CompositeExplicitAutogradNonFunctional", "CompositeExplicitAutograd",
                  "CompositeImplicitAutograd")

# NOTE [tracing composite kernels]
# To see what a composite kernel expands into, the op is re-dispatched straight to a runtime key
# on meta tensors under a recording dispatch mode: the outer op skips the Python key, the ops the
# kernel calls do not, so the mode records exactly the first level of the expansion. For a
# PrivateUse1 backend the key used is PrivateUse3, which nothing registers: its computed kernel is
# exactly what a fresh PrivateUse1 backend gets, unaffected by kernels that a real backend or the
# trace's device profile registered on PrivateUse1 in this process.
_TRACE_KEY = {"PrivateUse1": "PrivateUse3", "XLA": "XLA"}
# Kernels that crash the process (not an exception) on invented inputs; never traced.
_UNSAFE_TO_TRACE = ("aten::_thnn_differentiable_",)


@functools.cache
def torch_version() -> str | None:
    """The installed torch version, or None when torch is not importable."""
    if importlib.util.find_spec("torch") is None:
        return None
    try:
        import torch
    except Exception:  # noqa: BLE001 - a broken torch install is the same as none for the database
        return None
    return torch.__version__


@functools.cache
def _all_names() -> frozenset[str]:
    import torch

    return frozenset(torch._C._dispatch_get_all_op_names())


@functools.cache
def _packets() -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for name in _all_names():
        out.setdefault(name.split(".")[0], []).append(name)
    return {k: tuple(sorted(v)) for k, v in out.items()}


def op_exists(op: str) -> bool | None:
    """Whether the installed torch registers `op` (canonical overload name); None without torch."""
    if torch_version() is None:
        return None
    return op in _all_names()


def packet_overloads(packet: str) -> tuple[str, ...]:
    """Every overload of `packet` (e.g. aten::add) in the installed torch; () without torch."""
    if torch_version() is None:
        return ()
    return _packets().get(packet, ())


def registry_warnings(release) -> tuple[str, ...]:
    """One warning per listed op the installed torch does not have (none without torch)."""
    version = torch_version()
    if version is None:
        return ()
    out = []
    for entry in release.entries.values():
        if release.op_names == "packet":
            if entry.op not in _packets():
                out.append(f"line {entry.line}: {entry.op}: no such overload packet in torch {version}")
        elif entry.op not in _all_names():
            hint = ""
            overloads = _packets().get(entry.op.split(".")[0])
            if overloads and "." not in entry.op:
                hint = f" (the packet has: {', '.join(o.split('.', 1)[-1] for o in overloads[:6])})"
            out.append(f"line {entry.line}: {entry.op}: no such operator in torch {version}{hint}")
        for part in entry.parts:
            if part not in _all_names():
                out.append(f"line {entry.line}: {entry.op}: part {part}: no such operator in torch {version}")
    return tuple(out)


@functools.cache
def has_index_argument(op: str) -> bool:
    """Whether `op` takes an index tensor (`index`, `indices`): then int64 among its dtypes is the index."""
    if torch_version() is None:
        return False
    from opscan.db.samples import resolve

    overload = resolve(op)
    if overload is None:
        return False
    return any(a.name in ("index", "indices") for a in overload._schema.arguments)


def composite_key(op: str, dispatch_key: str) -> str | None:
    """The composite alias key whose kernel a backend without its own kernel for `op` runs, if any."""
    import torch

    C = torch._C
    runtime = getattr(C.DispatchKey, dispatch_key)
    for alias in COMPOSITE_KEYS:
        if not C._dispatch_has_kernel_for_dispatch_key(op, alias):
            continue
        if C._dispatch_is_included_in_alias(runtime, getattr(C.DispatchKey, alias)):
            return alias
    return None


@dataclass(frozen=True)
class Expansion:
    """What tracing a composite kernel over the sample variants showed (NOTE [sample variants])."""

    parts: tuple[str, ...]             # union of the first-level ops over every sample that traced
    variants: tuple[str, ...]          # the variants the op's schema has
    traced: tuple[str, ...]            # the variants that traced with at least one shape

    @property
    def confidence(self) -> str:
        """high when every variant traced, medium when some could not (their branches are unseen)."""
        return "high" if set(self.traced) == set(self.variants) else "medium"


def composite_parts(op: str, dispatch_key: str) -> tuple[str, ...] | None:
    """The ops `op`'s composite kernel calls (first level, sorted), or None if it could not be traced."""
    expansion = composite_expansion(op, dispatch_key)
    return expansion.parts if expansion is not None else None


def _coerce(func, args, kwargs):
    """Python numbers back into 0-dim tensors where the schema wants a Tensor.

    A composite kernel may pass a wrapped number (`bitwise_and.Scalar` calls `bitwise_and.Tensor`
    with one); a TorchDispatchMode sees it as a Python number, and re-calling the op with it fails.
    """
    import torch

    schema = func._schema.arguments
    out = list(args)
    device = next((a.device for a in out if isinstance(a, torch.Tensor)), None)
    for i, value in enumerate(out):
        if i < len(schema) and str(schema[i].type) == "Tensor" and isinstance(value, (int, float, bool)):
            out[i] = torch.tensor(value, device=device)
    return out, kwargs


@functools.cache
def composite_expansion(op: str, dispatch_key: str) -> Expansion | None:
    """Trace `op`'s composite kernel over every sample variant; None if no sample traced."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from opscan.db.samples import candidates, resolve, variants

    overload = resolve(op)
    if overload is None or op.startswith(_UNSAFE_TO_TRACE):
        return None
    keyset = torch._C.DispatchKeySet(getattr(torch._C.DispatchKey, _TRACE_KEY[dispatch_key]))

    class _Recorder(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(func.name())
            try:
                return func(*args, **(kwargs or {}))
            except (TypeError, RuntimeError):
                args, kwargs = _coerce(func, args, kwargs or {})
                return func(*args, **kwargs)

    def meta(shape, role="data"):
        dtype = {"index": torch.int64, "mask": torch.bool}.get(role, torch.float32)
        return torch.empty(shape, dtype=dtype, device="meta")

    parts: set[str] = set()
    traced: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecations and resize notes about invented inputs
        for sample, args, kwargs in candidates(overload, meta):
            recorder = _Recorder()
            try:
                with recorder:
                    overload.redispatch(keyset, *args, **kwargs)
            except Exception:  # noqa: BLE001 - wrong sample shape or a data-dependent kernel: try the next sample
                continue
            parts.update(recorder.ops)
            traced.add(sample.variant)
    if not traced:
        return None
    return Expansion(parts=tuple(sorted(parts - {op})), variants=variants(overload),
                     traced=tuple(v for v in variants(overload) if v in traced))
