"""The answer for one op in one release: exact entry, overload packet, composite parts, unlisted default."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Protocol

from opscan.db import registry
from opscan.db.entries import CONFIDENCES, DtypeFallback, Entry, KnownFailure, Narrowing, Package
from opscan.records import Confidence, Coverage, Evidence, NoKernel, OpName, Status, status_of, EvidenceKind


class Release(Protocol):
    """What the lookup reads of a release: `db.release.Release`, whose `lookup(op)` calls `lookup` here.

    Written out so that the release can call the lookup without the lookup importing the release
    (no import cycle, tests/test_architecture.py).
    """

    dispatch_key: str
    kernel_list: str
    sdpa_policy: str
    unlisted: Entry
    no_kernel: NoKernel | None
    packages: tuple[Package, ...]
    dtype_fallbacks: tuple[DtypeFallback, ...]
    _cache: dict       # canonical op name (or (name, dtype)) -> its Coverage, filled by the lookup

    @property
    def spec(self) -> str: ...
    def entry_for(self, op: str) -> tuple[Entry | None, str]: ...
    def evidence(self, ids: tuple[str, ...]) -> tuple[Evidence, ...]: ...
    def pairs_with_torch(self, version: str) -> bool: ...
    def dtype_limits(self, op: str) -> frozenset[str]: ...
    def failures_for(self, op: str) -> tuple[KnownFailure, ...]: ...
    def dtype_rule(self, dtype: str) -> Narrowing | None: ...


# NOTE [lookup order]
# 1. An entry for the exact overload (aten::add.Tensor) — in files with op_names: overload.
# 2. An entry for its overload packet (aten::add) — in files with op_names: packet (the XLA line's
#    published list names base ops only); the packet entry answers for every overload.
# 3. A composite kernel the backend gets for free (CompositeExplicitAutogradNonFunctional,
#    CompositeExplicitAutograd, CompositeImplicitAutograd, in dispatcher precedence, as the
#    installed torch registers them): the op never reaches the backend itself, its parts do, so it is
#    judged by its parts (traced on meta tensors over several sample variants, see NOTE [tracing
#    composite kernels] and NOTE [sample variants]; the parts are the union over the variants): the
#    worst part decides (unsupported > cpu-fallback > unknown > limited); when every part has a
#    kernel the status is `composite`. NOTE [composite confidence]: a composite answer ranks one
#    level below its weakest part (it adds a derivation to the parts' evidence), and no higher than
#    the expansion itself (high when every sample variant traced, medium when some could not); an
#    op that reaches no backend op at all has just the expansion's confidence. The expansion is
#    the installed torch's: when that torch does not pair with the release, the answer drops one
#    more level. Scaled dot-product attention follows the release's SDPA policy instead (the
#    overrideable kernel, plus the math parts when the policy keeps math for non-4-D inputs).
# 4. The file's `unlisted` default. It can only say more than `unknown` when the file's kernel list
#    is complete (a probe read every kernel the backend registers): then "no kernel" is known and
#    the documented/probed default applies (cpu-fallback for TorchNeuron's catch-all fallback).
#    Without torch, step 3 cannot run, so a complete file's default is not applied either: an
#    unlisted op might be composite, so the answer is `unknown` and says why. With a partial list,
#    a file that states what happens to an op without a kernel (`no_kernel:`, release data with
#    its source: TorchNeuron eager falls back to the CPU) answers `device-or-cpu` (it runs, on the
#    device or on the CPU), or `unsupported` for the classes its docs call not supported.
_MAX_DEPTH = 6
_SDPA = "aten::scaled_dot_product_attention"
_SDPA_KERNEL = "aten::_scaled_dot_product_fused_attention_overrideable"


def lower(confidence: str, steps: int = 1) -> str:
    """One (or `steps`) confidence level(s) lower; low stays low."""
    return Confidence(confidence).lower(steps)


def _weakest(*levels: str) -> str:
    return max(levels, key=CONFIDENCES.index)


def _pairs(release: Release) -> bool:
    """Whether the installed torch is the one the release is built for (True when not known)."""
    version = registry.torch_version()
    return version is None or not release.packages or release.pairs_with_torch(version)


# NOTE [dtypes after decomposition]
# A release states some facts per dtype: a `dtype_fallbacks` row (an imported table's "CPU_FALLBACK
# for float32"), a plain known-failure row (upstream tests fail for one dtype), a dtype rule
# (`dtype_narrowing:` with effect cpu-fallback or raises). A traced op is judged for the dtypes the
# model calls it with (`lookup(op, dtype)`, one answer per dtype; the model's answer is the worst of
# them, `for_model`), and so is every part of a composite: `aten::zeros_like` on float32 decomposes
# into `aten::zero_` on float32, so a table whose only fallback is `zero_` for float32 makes a
# float32 AdamW model's `zeros_like` a `cpu-fallback`. Per dtype, an op with a kernel of its own is
#   - `cpu-fallback` when a `dtype_fallbacks` row names the dtype, or the release's rule for the
#     dtype says it runs on the CPU; `unsupported` when the rule says it raises;
#   - `native` when its entry is `limited` only by rows that name other dtypes (`lerp_.Scalar` is
#     limited for float64 and complex: for float32 it is native, so `_foreach_lerp_.Scalar` on
#     float32 is a plain composite, with no float64 or complex caveat);
#   - its entry's answer otherwise (a `limited` entry whose limits no row states per dtype stays
#     `limited` for every dtype: nothing says which).
# A part is taken to compute in the dtype of the composite's call (a composite kernel passes its
# tensors on to its parts; parts that change dtype, such as a comparison's bool output, are not told
# apart). An op without a kernel of its own (device-or-cpu, cpu-fallback, unknown) is not changed by
# a dtype rule: it does not run the backend's kernel. Without a dtype the answer is the release's
# for any dtype (`opscan db show`).


def lookup(release: Release, op: str, dtype: str = "") -> Coverage:
    """Status, evidence and confidence of `op` in `release`, called with `dtype` ("float32", no
    "torch." prefix) when given (see NOTE [lookup order] and NOTE [dtypes after decomposition])."""
    return _lookup(release, op, (), dtype)


def check(release: Release, op_names: Iterable[str],
          dtypes: Mapping[str, Iterable[str]] | None = None) -> tuple[Coverage, ...]:
    """Look up every op (each once), sorted by op name; with `dtypes` (op -> the dtypes a model calls
    it with), each op's answer for the model (`for_model`)."""
    dtypes = dtypes or {}
    return tuple(for_model(release, op, dtypes.get(op, ())) for op in sorted(set(op_names)))


def model_dtypes(op: str, dtypes: Iterable[str]) -> tuple[str, ...]:
    """The dtypes (without "torch.") an op's calls compute in, of those a trace recorded for it (every
    tensor taken or returned): an int64 index tensor (`index`, `indices`) is no int64 data."""
    out = {d.removeprefix("torch.") for d in dtypes}
    if "int64" in out and registry.has_index_argument(op):
        out.discard("int64")
    return tuple(sorted(out))


def for_model(release: Release, op: str, dtypes: Iterable[str] = ()) -> Coverage:
    """The answer for an op a model calls with `dtypes` (as a trace records them, "torch.float32"):
    the worst of its answers per dtype (NOTE [dtypes after decomposition]); without dtypes, `lookup(op)`."""
    wanted = model_dtypes(op, dtypes)
    if not wanted:
        return lookup(release, op)
    answers = [(d, lookup(release, op, d)) for d in wanted]
    dtype, worst = max(answers, key=lambda a: (status_of(a[1].status).rank, CONFIDENCES.index(a[1].confidence)))
    if len({(a.status, a.via) for _, a in answers}) > 1:
        worst = replace(worst, via=f"for {dtype}: {worst.via}")
    return worst


def parts_reached(release: Release, op: str) -> tuple[str, ...]:
    """Every op `op`'s composite answer reaches (its parts, theirs, ...), sorted; () for a leaf."""
    seen: set[str] = set()
    todo = list(lookup(release, op).parts)
    while todo and len(seen) < 200:
        part = todo.pop()
        if part in seen or part == op:
            continue
        seen.add(part)
        todo.extend(lookup(release, part).parts)
    return tuple(sorted(seen))


def expand_packets(names: Iterable[str]) -> list[str]:
    """Overload packets -> every overload the installed torch has (packets kept as-is without torch)."""
    out: set[str] = set()
    for name in names:
        out.update(registry.packet_overloads(name) or (name,))
    return sorted(out)


def _inferred(text: str) -> Evidence:
    return Evidence(kind=EvidenceKind.INFERRED, text=text)


def _lookup(release: Release, op: str, stack: tuple[str, ...], dtype: str = "") -> Coverage:
    try:
        canonical = str(OpName.parse(op))
    except ValueError:
        return Coverage(op=op, status="unknown", confidence="low", via="not an operator name",
                        evidence=(_inferred(f"{op!r} is not an operator name"),))
    key = (canonical, dtype) if dtype else canonical
    cached = release._cache.get(key)
    if cached is not None:
        return cached
    answer = _answer(release, canonical, stack, dtype)
    release._cache[key] = answer
    return answer


def _answer(release: Release, op: str, stack: tuple[str, ...], dtype: str = "") -> Coverage:
    entry, how = release.entry_for(op)
    if entry is not None and not Status(entry.status).decomposes:
        via = f"{how}: {entry.note}" if entry.note else how
        listed = Coverage(op=op, status=entry.status, evidence=release.evidence(entry.sources),
                          confidence=entry.confidence, via=via, confidence_note=_listed_note(release, entry))
        return _for_dtype(release, listed, dtype) if dtype else listed
    if entry is not None:
        return _judge(release, op, entry.parts, stack, f"{how} as composite",
                      release.evidence(entry.sources), entry.confidence, derived=False, dtype=dtype,
                      note=_listed_note(release, entry))
    version = registry.torch_version()
    if version is None:
        return _unlisted(release, op, torch_missing=True)
    if not registry.op_exists(op):
        return Coverage(op=op, status="unknown", confidence="low", via=f"not an operator of torch {version}",
                        evidence=(_inferred(f"torch {version} has no operator {op}"),))
    key = registry.composite_key(op, release.dispatch_key)
    if key is not None:
        if len(stack) >= _MAX_DEPTH or op in stack:
            return _unjudged(release, op, Coverage(
                op=op, status="unknown", confidence="low", via=f"{key} expansion too deep",
                evidence=(_inferred(f"{key} expansion of {op} nests too deep to judge"),)))
        expansion = registry.composite_expansion(op, release.dispatch_key)
        if expansion is None:
            return _unjudged(release, op, Coverage(
                op=op, status="unknown", confidence="low", via=f"{key} kernel, parts not traced",
                evidence=(_inferred(f"{key} kernel in torch {version}; its parts could not be "
                                    "traced on meta tensors with any sample"),)))
        parts, how = expansion.parts, f"{key} kernel in torch {version}"
        if op == _SDPA and release.sdpa_policy != "math":
            parts = (_SDPA_KERNEL,) + (parts if release.sdpa_policy == "overrideable-4d" else ())
            how = f"SDPA policy {release.sdpa_policy}"
        confidence = expansion.confidence
        why = "" if confidence == Confidence.HIGH else "its composite kernel traced with only some sample inputs"
        if not _pairs(release):
            confidence = lower(confidence)
            how += " (not the torch this release pairs with)"
            why = "expanded with an installed torch the release does not pair with"
        return _judge(release, op, tuple(sorted(set(parts))), stack, how, (), confidence, derived=True, dtype=dtype,
                      note=why)
    return _unlisted(release, op, torch_missing=False)


def _listed_note(release: Release, entry: Entry) -> str:
    """Why a listed op's confidence is below high: the release file lists it so ("" at high)."""
    if entry.confidence == Confidence.HIGH:
        return ""
    return f"{release.spec} lists it at {entry.confidence} confidence" + (f" ({entry.note})" if entry.note else "")


def _for_dtype(release: Release, listed: Coverage, dtype: str) -> Coverage:
    """A listed op's answer for one dtype (NOTE [dtypes after decomposition])."""
    if not listed.status.has_kernel:
        return listed
    op = listed.op
    row = next((r for r in release.dtype_fallbacks if r.op == op and dtype in r.dtypes), None)
    if row is not None:
        return Coverage(op=op, status="cpu-fallback", evidence=release.evidence(row.sources),
                        confidence=listed.confidence, confidence_note=listed.confidence_note,
                        via=f"falls back to the CPU for {dtype}" + (f" ({row.note})" if row.note else ""))
    rule = release.dtype_rule(dtype)
    if rule is not None and rule.effect in ("cpu-fallback", "raises"):
        what = "raises for" if rule.effect == "raises" else "runs on the CPU for"
        return Coverage(op=op, status="unsupported" if rule.effect == "raises" else "cpu-fallback",
                        evidence=release.evidence(rule.sources), confidence=listed.confidence,
                        confidence_note=listed.confidence_note,
                        via=f"{release.spec} {what} {dtype}" + (f" ({rule.note})" if rule.note else ""))
    limits = release.dtype_limits(op)
    if listed.status is Status.LIMITED and limits and dtype not in limits:
        # the rows about the other dtypes are no evidence for this one (their sources are dropped)
        rows = {e for f in release.failures_for(op) if f.dtype in limits and not f.case
                for e in release.evidence(f.sources)}
        kept = tuple(e for e in listed.evidence if e not in rows) or listed.evidence
        return replace(listed, status=Status.NATIVE, evidence=kept,
                       via=f"{listed.via} (limited for {', '.join(sorted(limits))}; has a kernel for {dtype})")
    return listed


def _unjudged(release: Release, op: str, unknown: Coverage) -> Coverage:
    """An unlisted composite op whose parts could not be judged: with a documented CPU fallback
    (`no_kernel:`) it still runs, its kernel's parts on the device or on the CPU (device-or-cpu, at
    low confidence), as any unlisted op does (NOTE [lookup order] 4); else `unknown`."""
    answer = _unlisted(release, op, torch_missing=False)
    if answer.status is not Status.DEVICE_OR_CPU:   # a complete list's default is for ops without any kernel
        return unknown
    return Coverage(op=op, status="device-or-cpu", confidence="low", via=f"{unknown.via}; {answer.via}",
                    evidence=unknown.evidence + answer.evidence)


def _unlisted(release: Release, op: str, torch_missing: bool) -> Coverage:
    default = release.unlisted
    evidence = release.evidence(default.sources)
    if torch_missing and not Status(default.status).unchecked:
        return Coverage(op=op, status="unknown", confidence="low",
                        via="not listed; torch not importable, composite kernels not checked",
                        evidence=(_inferred(f"not listed; {default.status} unless it decomposes into "
                                            "other ops (torch is needed to tell)"),) + evidence)
    rule = release.no_kernel
    if Status(default.status).unchecked and rule is not None and release.kernel_list == "partial" and not torch_missing:
        if rule.refuses(op):   # a class the docs call not supported (quantized variants, ...)
            note = rule.not_supported_note or "a class of ops the backend's docs call not supported"
            return Coverage(op=op, status="unsupported", confidence="low", via=f"not listed: {note}",
                            evidence=release.evidence(rule.not_supported_sources))
        if rule.eager == NoKernel.CPU_FALLBACK:   # NOTE [lookup order] 4: runs, on the device or the CPU
            return Coverage(op=op, status="device-or-cpu", confidence="medium",
                            via="not listed: runs on the device if it has a kernel, else on the CPU "
                                "(documented eager default)",
                            evidence=release.evidence(rule.sources))
    via = f"not listed: {default.note}" if default.note else "not listed"
    return Coverage(op=op, status=default.status, evidence=evidence, confidence=default.confidence, via=via)


def _judge(release: Release, op: str, parts: tuple[str, ...], stack: tuple[str, ...], how: str,
           own: tuple[Evidence, ...], confidence: str, derived: bool, dtype: str = "", note: str = ""
           ) -> Coverage:
    """Judge `op` by its parts (each for `dtype`, when given). `confidence` is the expansion's
    (derived) or the entry's own; `note` says why it is below high ("" when it is high)."""
    subs = [_lookup(release, part, stack + (op,), dtype) for part in parts]
    arrow = ", ".join(parts) if parts else "no other op"
    if not subs:
        return Coverage(op=op, status="composite", confidence=confidence, via=f"{how} -> {arrow}",
                        evidence=own + (_inferred(f"decomposes ({how}) into no backend op"),), confidence_note=note)
    worst = max(subs, key=lambda c: status_of(c.status).rank)   # how bad: model.OpStatus.rank
    status = worst.status if worst.status not in (Status.NATIVE, Status.COMPOSITE) else Status.COMPOSITE
    weakest_part = _weakest(*(c.confidence for c in subs))
    lowest = _weakest(confidence, lower(weakest_part) if derived else weakest_part)
    if lowest == Confidence.HIGH:
        note = ""
    elif lowest != confidence or not note:   # the parts decide it (NOTE [composite confidence])
        note = _part_note(max(subs, key=lambda c: CONFIDENCES.index(c.confidence)), derived)
    if status.decomposes:
        weakest = max(subs, key=lambda c: CONFIDENCES.index(c.confidence))
        basis = next((e.text for e in weakest.evidence if e.kind is not EvidenceKind.INFERRED), "")
        text = f"decomposes into {arrow}, all with kernels" + (f" ({basis})" if basis else "")
    else:
        why = worst.evidence[0].text if worst.evidence else worst.via
        text = f"decomposes; {worst.op} is {worst.status}: {why}"
    evidence = [_inferred(text), *own]
    # the parts' own sources (their derivations are summed up in `text`): of every part when all have
    # kernels (they are the basis of `composite`), else only of the parts that decide the status --
    # `aten::sort` is device-or-cpu by `sort.values_stable`, and the snapshot registration of its
    # other part `empty_strided` is no evidence about it (issue 36)
    deciding = subs if status.decomposes else [c for c in subs if c.status == worst.status]
    for sub in deciding:
        evidence.extend(e for e in sub.evidence if e.kind is not EvidenceKind.INFERRED and e not in evidence)
    return Coverage(op=op, status=status, evidence=tuple(evidence), confidence=lowest,
                    via=f"{how} -> {arrow}", parts=parts, confidence_note=note)


def _part_note(part: Coverage, derived: bool) -> str:
    """Why a composite's confidence is below high when its weakest part decides it."""
    because = f"{part.op} at {part.confidence}" + (f": {part.confidence_note}" if part.confidence_note else "")
    return f"a composite, one level below its weakest part ({because})" if derived else f"its part {because}"
