"""Release caveats the trace can check: known (op, dtype) failures and 64-bit narrowing, per traced op.

Coverage answers "does this op have a kernel"; a caveat answers "does a release fact hit the way
this model uses the op" — which needs the dtypes the trace saw (OpUsage.dtypes: every tensor an
op call took or returned). Computed once here and carried in Report.caveats; reporters only read.
"""

from __future__ import annotations

from collections.abc import Iterable

from opscan.db import registry
from opscan.db.lookup import parts_reached
from opscan.db.release import Release
from opscan.records import ModelTrace, OpCaveat, OpName, OpSource, OpUsage

MAX_SOURCES = 10

# NOTE [int64 arithmetic beyond indexing]
# int64 is everywhere in a trace as indices (embedding, gather, index_select), positions and
# shapes; narrowing those to int32 only matters past 2**31 elements. What narrowing changes is
# arithmetic on int64 values: sums, products, cumulative sums, shifts and matmuls overflow at
# 2**31 instead of 2**63 (position ids from cumsum are fine; hashing or large-vocab offset tricks
# are not). So only these packets are flagged when the trace gives them int64 tensors.
INT64_ARITHMETIC = frozenset({
    "add", "add_", "sub", "sub_", "rsub", "mul", "mul_", "div", "div_", "floor_divide", "floor_divide_",
    "remainder", "remainder_", "fmod", "fmod_", "pow", "pow_", "neg", "neg_", "abs", "abs_", "square",
    "cumsum", "cumsum_", "cumprod", "cumprod_", "sum", "prod", "mm", "bmm", "matmul", "addmm", "dot",
    "bitwise_left_shift", "bitwise_left_shift_", "__lshift__", "__ilshift__", "bitwise_right_shift",
    "__rshift__", "__irshift__", "lcm", "gcd",
})


class _Merged(dict):
    """op -> (dtypes, sources) over every trace; `by_dtype[(op, dtype)]`: the sources of the calls
    with that dtype, for ops whose trace recorded them (model.OpUsage.dtype_sources)."""

    def __init__(self) -> None:
        super().__init__()
        self.by_dtype: dict[tuple[str, str], set[OpSource]] = {}


def _merge(traces: Iterable[ModelTrace]) -> _Merged:
    """op -> (dtypes, sources) over every trace (and the sources per dtype)."""
    out = _Merged()
    for trace in traces:
        for usage in trace.ops:
            dtypes, sources = out.setdefault(usage.op, (set(), set()))
            dtypes.update(usage.dtypes)
            sources.update(usage.sources)
            for dtype, found in usage.dtype_sources:
                out.by_dtype.setdefault((usage.op, dtype), set()).update(found)
    return out


def _sources(merged, ops: Iterable[str]) -> tuple[OpSource, ...]:
    """The model source lines that dispatched `ops`, one per (path, line).

    OpUsage keeps the sources of an op over all its calls, not per dtype: for an op the model
    calls with several dtypes these are the lines of the op, some of them with other dtypes.
    """
    found: dict[tuple[str, int], OpSource] = {}
    for op in ops:
        for source in sorted(merged[op][1], key=lambda s: (s.path, s.line, s.module)):
            found.setdefault((source.path, source.line), source)
    return tuple(found[key] for key in sorted(found))[:MAX_SOURCES]


def _lines(merged, ops: list[str], dtype: str) -> tuple[tuple[OpSource, ...], str]:
    """(the sources of `ops`, "; lines calling these ops: a.py:3, b.py:7" with at most 3 shown).

    The lines are those of the calls with `dtype` when the trace recorded sources per dtype;
    otherwise the ops' over all their calls (see _sources): when an op was also called with
    another dtype, the text says "(any dtype)", since some of the lines may be those other calls."""
    exact = bool(dtype) and all((op, dtype) in getattr(merged, "by_dtype", {}) for op in ops)
    if exact:   # the calls with this dtype only
        found: dict[tuple[str, int], OpSource] = {}
        for op in ops:
            for source in sorted(merged.by_dtype[(op, dtype)], key=lambda s: (s.path, s.line, s.module)):
                found.setdefault((source.path, source.line), source)
        sources = tuple(found[key] for key in sorted(found))[:MAX_SOURCES]
    else:
        sources = _sources(merged, ops)
    if not sources:
        return sources, ""
    shown = ", ".join(f"{s.path}:{s.line}" for s in sources[:3])
    mixed = bool(dtype) and not exact and any(merged[op][0] - {dtype} for op in ops)
    return sources, (f"; {'line' if len(sources) == 1 else 'lines'} calling {'it' if len(ops) == 1 else 'these ops'}"
                     f"{' (any dtype)' if mixed else ''}: {shown}"
                     + (f" and {len(sources) - 3} more" if len(sources) > 3 else ""))


def _packet(op: str) -> str:
    try:
        return OpName.parse(op).packet
    except ValueError:
        return ""


def op_caveats(release: Release, traces: Iterable[ModelTrace]) -> tuple[OpCaveat, ...]:
    """The caveats of `release` that the traced ops hit, sorted by kind then ops."""
    merged = _merge(traces)
    out = _known_failures(release, merged) + _narrowing(release, merged)
    return tuple(sorted(out, key=lambda c: (c.kind, c.ops, c.dtypes)))


def usages_caveats(release: Release, usages: Iterable[OpUsage]) -> tuple[OpCaveat, ...]:
    """op_caveats for loose OpUsage records (one pseudo-trace)."""
    return op_caveats(release, (ModelTrace(target="", mode="", device="", ops=tuple(usages)),))


# NOTE [failure cases]
# A row fires `known-failure` (which keeps the verdict from `ready`) only when the trace can check
# its whole condition: the test calls this op itself (not a decomposition into it), it varies the
# dtype and fails for one the trace uses, and it names no special case. Everything else -- a
# variant (`cat_empty`, `nll_loss_all_ignored`), a test that fails for every dtype it tries
# (`test_arange_neuron`: many arguments, no dtype), an op another op decomposes into (`dstack` ->
# `cat`) -- is a `known-failure-case`: shown under the verdict with the tests and reasons, since
# the trace records ops and dtypes, not the arguments or values that make the case.
# A traced composite reaches its parts with its own dtypes (NOTE [dtypes after decomposition] in
# opscan/db/lookup.py): a plain row on a part fires for the traced op, naming the part
# (`aten::_foreach_lerp_.Scalar` on float64 reaches `aten::lerp_.Scalar`, whose float64 test fails
# with "Float64 data type is not supported on Neuron"); the other rows stay with the ops they name.
def _known_failures(release: Release, merged) -> list[OpCaveat]:
    """One caveat per plain row the traced ops and dtypes hit (`known-failure`; directly, or through a
    composite's part), and one per traced op for the special-case rows (`known-failure-case`: a test
    variant, or another op's decomposition)."""
    out, cases = [], {}
    reached = {op: parts_reached(release, op) for op in merged}   # each traced op's composite parts, once
    for failure in release.known_failures:
        dtype = f"torch.{failure.dtype}" if failure.dtype else ""
        through: dict[str, str] = {}   # traced op -> the part the row names ("" itself)
        for op, (dtypes, _) in merged.items():
            if dtype and dtype not in dtypes:
                continue
            if _hits(failure, op) and not _index_int64(failure, op):
                through[op] = ""
            elif failure.dtype and not failure.case:
                part = next((p for p in reached[op] if _names(failure, p) and not _index_int64(failure, p)), None)
                if part is not None:
                    through[op] = part
        ops = sorted(through)
        if not ops:
            continue
        if failure.case or not failure.dtype or any(op in failure.parts for op in ops):   # NOTE [failure cases]
            for op in ops:
                cases.setdefault(op, []).append(failure)
            continue
        basis = release.evidence(failure.sources)[0].text
        sources, lines = _lines(merged, ops, dtype)
        named = [f"{op} (through {through[op]})" if through[op] else op for op in ops]
        out.append(OpCaveat(
            kind="known-failure",
            message=(f"{', '.join(named)} with {dtype or 'any dtype'}: {failure.count} upstream test"
                     f"{'s' * (failure.count != 1)} fail{'s' * (failure.count == 1)} on "
                     f"{release.device} for {'this dtype' if dtype else 'this op'} "
                     f"({_tests(failure.tests, failure.more_tests)}{_reasons(failure)}; {basis}){lines}"),
            ops=tuple(ops), dtypes=(dtype,) if dtype else (), sources=sources,
            evidence=release.evidence(failure.sources), tests=failure.tests))
    for op, failures in sorted(cases.items()):
        tests = tuple(dict.fromkeys(t for f in failures for t in f.tests))
        total = len(tests) + sum(f.more_tests for f in failures)
        what = [text for _, text in sorted({(bool(f.dtype), _case(f, op)) for f in failures})]  # any dtype first
        sources, lines = _lines(merged, [op], "")
        out.append(OpCaveat(
            kind="known-failure-case",
            message=(f"{op}: upstream tests fail on {release.device} in cases the trace cannot check "
                     f"({'; '.join(what[:4])}{f'; and {len(what) - 4} more' if len(what) > 4 else ''}; "
                     f"{total} test{'s' * (total != 1)}: opscan db show {op}){lines}"),
            ops=(op,), dtypes=tuple(sorted({f"torch.{f.dtype}" for f in failures if f.dtype})), sources=sources,
            evidence=release.evidence(tuple(dict.fromkeys(s for f in failures for s in f.sources))), tests=tests))
    return out


def _hits(failure, op: str) -> bool:
    try:
        return failure.hits(op)
    except ValueError:
        return False


def _names(failure, op: str) -> bool:
    """Whether the row names `op` itself: among its ops, or (a row without ops or parts) its packet."""
    if failure.ops or failure.parts:
        return op in failure.ops
    return _packet(op) == failure.packet


def _index_int64(failure, op: str) -> bool:
    """An int64 row on an op taking an index tensor: the trace's int64 there is the index, not data."""
    return failure.dtype == "int64" and registry.has_index_argument(op)


def _tests(tests: tuple[str, ...], more: int = 0) -> str:
    hidden = len(tests) - 3 + more if len(tests) > 3 else more
    return ", ".join(tests[:3]) + (f" and {hidden} more" if hidden > 0 else "")


def _reasons(failure) -> str:
    return f"; reason: {' / '.join(failure.reasons)}" if failure.reasons else ""


def _case(failure, op: str) -> str:
    """'via aten::dstack with float32', 'empty', 'out of bounds ignore index', 'any dtype', + reasons."""
    dtype = f" with {failure.dtype}" if failure.dtype else ""
    if op in failure.parts:
        head = f"via {failure.packet}{dtype}" + (f", {failure.case.replace('_', ' ')}" if failure.case else "")
    elif failure.case:
        head = f"{failure.case.replace('_', ' ')}{dtype}"
    else:
        head = f"{failure.packet} tests{dtype or ' for any dtype'}"
    return head + (f" ({' / '.join(failure.reasons)})" if failure.reasons else "")


def _arithmetic(release: Release, op: str) -> bool:
    """int64 arithmetic in `op` or in a part of its composite (NOTE [int64 arithmetic beyond indexing])."""
    return any(OpName.parse(x).name in INT64_ARITHMETIC for x in (op, *parts_reached(release, op)))


def _narrowing(release: Release, merged) -> list[OpCaveat]:
    """The release's narrowed dtypes the traced ops compute in (its other dtype rules change an op's
    status instead: NOTE [dtypes after decomposition] in opscan/db/lookup.py)."""
    out = []
    for rule in release.narrowing:
        if rule.effect != "narrowed":
            continue
        dtype = f"torch.{rule.dtype}"
        ops = sorted(op for op, (dtypes, _) in merged.items() if dtype in dtypes
                     and (rule.dtype != "int64" or _arithmetic(release, op)))
        if not ops:
            continue
        what = "computes in" if rule.dtype != "int64" else "does arithmetic in"
        sources, lines = _lines(merged, ops, dtype)
        out.append(OpCaveat(
            kind=f"{rule.dtype}-narrowed",       # the loader allows float64 and int64 only
            message=(f"the model {what} {rule.dtype} ({len(ops)} op{'s' * (len(ops) != 1)}: "
                     f"{', '.join(ops[:8])}{', ...' if len(ops) > 8 else ''}); {release.spec} computes "
                     f"{rule.dtype} as {rule.computed_as} by default"
                     + (f" ({rule.note})" if rule.note else "") + lines),
            ops=tuple(ops), dtypes=(dtype,), sources=sources,
            evidence=release.evidence(rule.sources)))
    return out
