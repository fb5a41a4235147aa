"""Effort of a task as a range (low / likely / high) from the cost model, the catalog and what the
code shows, with the arithmetic spelled out (NOTE [effort model]; docs/tasks.md, "Effort")."""

from __future__ import annotations

from dataclasses import dataclass

from opscan.records import Location, KernelSourceKind
from opscan.plan.cost import CostConfig
from opscan.plan import task_kinds, torch_move
from opscan.plan.torch_move import torch_distance
from opscan.plan.grouping import Draft
from opscan.plan.libraries import Catalog, KernelFamily, Range
from opscan.plan.measure import Usage

# NOTE [effort model]: every estimate is likely = the sum of what the code shows times the cost
# model's coefficients, and a range around it whose width depends on how much is known:
# - mechanical tasks: sites on adjacent lines of one file (ADJACENT) are one edit; an edit
#   `opscan fix` makes (every site fixable) costs `fixable-site-minutes` (reviewing its diff), any
#   other `site-minutes` plus the unflagged work around it: one more edit of file-minutes / 3 per
#   manual edit, at most file-minutes per file (the ports found about three per touched file);
#   plus the check its kind needs (NOTE [check overhead] in plan/task_kinds.py); range x
#   mechanical-low/high;
# - libraries: the catalog entry's hours (low/likely/high) for each part of its API the project
#   uses, x library-factor, plus call sites x the entry's call-site minutes and the edits;
#   a library without a catalog entry is not sized unless `library-hours` gives a figure;
# - kernels: (kernel-days per kernel + kernel-days-per-100-lines x measured lines) x the kernel
#   family's factor (low/likely/high), plus call sites; a PyTorch path already in the repository
#   makes the likely port kernel-reference-factor of that (the low end is the wiring alone);
# - op work: ops x their per-op cost + task overhead; range x op-low/high.
# A coefficient appears in the basis with its value, so a lead can redo the sum.

ADJACENT = 2   # sites this many lines apart or closer, in one file, are one edit (the calibration's tolerance)
DEFAULT_FAMILY = "cuda-extension"   # family of a custom op seen only in a trace (no rule found it)
FUNCTION_FAMILIES = ("triton", "numba-cuda")   # families whose kernels are decorated functions


@dataclass(frozen=True)
class Estimate:
    low: float
    likely: float
    high: float
    basis: str
    sized: bool = True


def _num(value: float) -> str:
    return f"{value:g}"


def _round(value: float) -> float:
    return round(value, 2)


def _scaled(likely: float, low_factor: float, high_factor: float, basis: str, what: str) -> Estimate:
    likely = _round(likely)
    low, high = _round(likely * low_factor), _round(likely * high_factor)
    return Estimate(low, likely, high,
                    f"{basis} = {_num(likely)} h likely; {what} x{_num(low_factor)} / x{_num(high_factor)} "
                    f"= {_num(low)}-{_num(high)} h")


def _edit_groups(draft: Draft) -> list[list[Location]]:
    """The task's sites as edits: runs of sites on adjacent lines of one file (or notebook cell)."""
    groups: list[list[Location]] = []
    for site in sorted(draft.sites, key=lambda s: (s.path, s.cell or 0, s.line, s.column)):
        last = groups[-1][-1] if groups else None
        if last is not None and (last.path, last.cell) == (site.path, site.cell) and site.line - last.line <= ADJACENT:
            groups[-1].append(site)
        else:
            groups.append([site])
    return groups


def _edits(draft: Draft, cost: CostConfig) -> tuple[float, str]:
    """Hours and text of the edits of a task (NOTE [effort model]): fixable edits are reviewed,
    manual ones made, with the unflagged work around them."""
    fixable = {f.location.site for f in draft.findings if f.fixable} - \
        {f.location.site for f in draft.findings if not f.fixable}   # a site: every finding on its line
    groups = _edit_groups(draft)
    manual = [g for g in groups if not all(site.site in fixable for site in g)]
    n_fix = len(groups) - len(manual)
    per_file: dict[str, int] = {}
    for group in manual:
        per_file[group[0].path] = per_file.get(group[0].path, 0) + 1
    unflagged = sum(min(n, 3) for n in per_file.values())
    hours = (n_fix * cost.fixable_site_minutes + len(manual) * cost.site_minutes
             + unflagged * cost.file_minutes / 3) / 60
    sites = len(draft.sites)
    parts = []
    if n_fix:
        parts.append(f"{n_fix} fixable edit(s) x {_num(cost.fixable_site_minutes)} min")
    if manual or not n_fix:
        parts.append(f"{len(manual)} edit(s) x {_num(cost.site_minutes)} min")
    if unflagged:
        parts.append(f"{unflagged} unflagged edit(s) around them x {_num(_round(cost.file_minutes / 3))} min "
                     f"(at most 3 per file)")
    where = f"{sites} site(s) in {len(groups)} edit(s): " if sites != len(groups) else ""
    return hours, where + " + ".join(parts)


def _mechanical(draft: Draft, cost: CostConfig) -> Estimate:
    edit, text = _edits(draft, cost)
    kind = draft.kind
    check = cost.task_hours if kind.check_hours is None else kind.check_hours
    why = f" ({kind.check})" if kind.check_hours is not None else " per task"
    return _scaled(edit + check, cost.mechanical_low, cost.mechanical_high,
                   f"{text} + {_num(check)} h to check{why}", "range")


def _library(draft: Draft, cost: CostConfig, usage: Usage, book: Catalog) -> Estimate:
    entry = book.library(draft.name)
    if entry is None and draft.known is not None and cost.library_hours <= 0:   # NOTE [library ops]: no port
        return Estimate(0.0, 0.0, 0.0, f"`{draft.name}`'s own ops: installing its paired build and probing them "
                        "is not sized (give [tool.opscan.cost] library-hours to assume a figure)", sized=False)
    edit, text = _edits(draft, cost)
    uses = [u for u in (usage.library(f) for f in draft.findings) if u is not None]
    measured = len(uses) == len(draft.findings) and bool(uses)
    call_sites = sum(u.call_sites for u in uses) if measured else len(draft.sites)
    calls_how = "call site(s)" if measured else "call site(s) (not measured: one per import)"
    if entry is None:
        if cost.library_hours <= 0:
            return Estimate(0.0, 0.0, 0.0, f"no catalog entry for `{draft.name}`: not sized "
                            "(give [tool.opscan.cost] library-hours to assume a figure)", sized=False)
        likely = edit + cost.task_hours + cost.library_hours
        return _scaled(likely, cost.op_low, cost.op_high,
                       f"no catalog entry: library-hours {_num(cost.library_hours)} h (assumed) + {text} + "
                       f"{_num(cost.task_hours)} h per task", "range")
    names = sorted({name for u in uses for name in u.names})
    parts: dict[str, Range] = {}
    for name in names or [entry.id]:
        part = entry.part_for(name)
        label = f"`{part.names[0]}`" if part else "core API"
        parts.setdefault(label, part.hours if part else entry.hours)
    f = cost.library_factor
    base = Range(sum(r.low for r in parts.values()) * f, sum(r.likely for r in parts.values()) * f,
                 sum(r.high for r in parts.values()) * f)
    calls = call_sites * entry.call_site_minutes / 60
    fixed = edit + calls + cost.task_hours
    low = _round(base.low + fixed * cost.mechanical_low)
    likely = _round(base.likely + fixed)
    high = _round(base.high + fixed * cost.mechanical_high)
    shown = " + ".join(f"{label} {_num(r.low)}/{_num(r.likely)}/{_num(r.high)} h" for label, r in parts.items())
    factor = f" x library-factor {_num(f)}" if f != 1 else ""
    basis = (f"catalog `{entry.id}` ({entry.size}): ({shown}){factor} + {call_sites} {calls_how} x "
             f"{_num(entry.call_site_minutes)} min + {text} + {_num(cost.task_hours)} h per task "
             f"(edits x{_num(cost.mechanical_low)} / x{_num(cost.mechanical_high)} at the ends) "
             f"= {_num(low)} / {_num(likely)} / {_num(high)} h")
    return Estimate(low, likely, high, basis)


def family_of(draft: Draft, book: Catalog) -> KernelFamily | None:
    """The kernel family most of the draft's findings belong to (by rule id), else the default."""
    counts: dict[str, int] = {}
    for finding in draft.findings:
        fam = book.family(finding.rule)
        if fam is not None:
            counts[fam.id] = counts.get(fam.id, 0) + 1
    wanted = min(counts, key=lambda k: (-counts[k], k)) if counts else DEFAULT_FAMILY
    return next((fam for fam in book.families if fam.id == wanted), None)


def _kernel_count(draft: Draft, family: KernelFamily | None) -> int:
    """Kernels in a task: its `.cu` files, plus its decorated functions for families whose kernels
    are functions (Triton, numba); C++ glue, headers and op registrations are not kernels."""
    functions = family is not None and family.id in FUNCTION_FAMILIES
    return sum(1 for src in draft.kernel_sources
               if src.is_cuda_file or (functions and src.kind is KernelSourceKind.FUNCTION))


def _kernel(draft: Draft, cost: CostConfig, usage: Usage, book: Catalog) -> Estimate:
    measured = draft.kernel_lines is not None
    lines = draft.kernel_lines if measured else cost.kernel_default_lines
    family = family_of(draft, book)
    kernels = max(1, _kernel_count(draft, family))
    factor = family.factor if family else Range(1.0, 1.0, 1.0)
    days = cost.kernel_days * kernels + cost.kernel_days_per_100_lines * lines / 100
    port = days * cost.hours_per_day
    calls = len(draft.sites) * cost.kernel_call_site_minutes / 60
    size_text = f"{lines} lines of kernel source" if measured else f"kernel source not found, {lines} lines assumed"
    port_text = (f"({_num(cost.kernel_days)} d x {kernels} kernel(s) + {_num(cost.kernel_days_per_100_lines)} d "
                 f"per 100 lines x {size_text}) x {_num(cost.hours_per_day)} h/d = {_num(_round(port))} h port")
    fam_text = f"{family.id} factor {_num(factor.low)}/{_num(factor.likely)}/{_num(factor.high)}" if family \
        else "no family factor"
    call_text = f"{len(draft.sites)} site(s) x {_num(cost.kernel_call_site_minutes)} min wiring"
    has_reference = any(f.guarded or f.location in usage.references for f in draft.findings)
    if has_reference:
        low = _round(calls)
        likely = _round(port * factor.likely * cost.kernel_reference_factor + calls)
        high = _round(port * factor.high + calls)
        basis = (f"{port_text}; {fam_text}; the repository already has a PyTorch path: low = wiring only, "
                 f"likely = x kernel-reference-factor {_num(cost.kernel_reference_factor)}, high = full port; "
                 f"+ {call_text} = {_num(low)} / {_num(likely)} / {_num(high)} h")
    else:
        low = _round(port * factor.low + calls)
        likely = _round(port * factor.likely + calls)
        high = _round(port * factor.high + calls)
        basis = f"{port_text} x {fam_text} + {call_text} = {_num(low)} / {_num(likely)} / {_num(high)} h"
    return Estimate(low, likely, high, basis)


def _torch_move(draft: Draft, cost: CostConfig) -> Estimate:
    """The torch move: the edits, plus torch-minor-hours per minor version a governing pin must cross
    (NOTE [effort model]; NOTE [torch move] in plan/torch_move.py: other files' pins are edits only)."""
    edit, text = _edits(draft, cost)
    check = cost.task_hours
    farthest = torch_move.upgrade(draft.findings)
    if farthest is None:
        others = any(torch_distance(f.subject) for f in draft.findings)
        why = ("no torch pin to move in the installed package: the pins found are in extras, tests, examples "
               "or CI files, edits only") if others else "no torch pin to move: the packages only"
        return _scaled(edit + check, cost.mechanical_low, cost.mechanical_high,
                       f"{text} + {_num(check)} h to check ({why})", "range")
    pin, paired, steps = farthest
    move = steps * cost.torch_minor_hours
    return _scaled(edit + check + move, cost.mechanical_low, cost.mechanical_high,
                   f"torch {pin} -> {paired}: {steps} minor version(s) x {_num(cost.torch_minor_hours)} h "
                   f"(torch-minor-hours) + {text} + {_num(check)} h to check ({draft.kind.check})", "range")


def size(draft: Draft, cost: CostConfig, usage: Usage, book: Catalog) -> Estimate:
    """The effort range of `draft` under `cost`, with its basis as one readable line."""
    kind = draft.kind
    overhead = cost.task_hours
    if kind is task_kinds.KERNEL_KIND:
        return _kernel(draft, cost, usage, book)
    if kind is task_kinds.LIBRARY_KIND:
        return _library(draft, cost, usage, book)
    if kind is task_kinds.TORCH_VERSION_KIND:
        return _torch_move(draft, cost)
    count = len(draft.ops)
    if kind is task_kinds.UNSUPPORTED_KIND:
        return _scaled(count * cost.unsupported_op_days * cost.hours_per_day + overhead, cost.op_low, cost.op_high,
                       f"{count} op(s) x {_num(cost.unsupported_op_days)} d x {_num(cost.hours_per_day)} h/d "
                       f"+ {_num(overhead)} h per task", "range")
    if kind is task_kinds.FALLBACK_KIND:
        return _scaled(count * cost.fallback_op_hours + overhead, cost.op_low, cost.op_high,
                       f"{count} op(s) x {_num(cost.fallback_op_hours)} h + {_num(overhead)} h per task", "range")
    if kind is task_kinds.UNKNOWN_KIND:
        return _scaled(count * cost.unknown_op_minutes / 60 + overhead, cost.mechanical_low, cost.mechanical_high,
                       f"{count} op(s) x {_num(cost.unknown_op_minutes)} min + {_num(overhead)} h per task", "range")
    return _mechanical(draft, cost)
