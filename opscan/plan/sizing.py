"""Effort of a task from the configurable cost model, with the arithmetic spelled out."""

from __future__ import annotations

from opscan.config import CostConfig
from opscan.plan import catalog
from opscan.plan.grouping import Draft


def _num(value: float) -> str:
    return f"{value:g}"


def size(draft: Draft, cost: CostConfig) -> tuple[float, str]:
    """(effort in hours, the basis as one readable line) for `draft` under `cost`."""
    kind = draft.kind
    sites, files = len(draft.sites), len(draft.files)
    overhead = cost.task_hours
    if kind is catalog.KERNEL_KIND:
        measured = draft.kernel_lines is not None
        lines = draft.kernel_lines if measured else cost.kernel_default_lines
        days = cost.kernel_days + cost.kernel_days_per_100_lines * lines / 100
        hours = days * cost.hours_per_day
        size_text = f"{lines} lines of kernel source" if measured else \
            f"kernel source not found, {lines} lines assumed"
        basis = (f"({_num(cost.kernel_days)} d + {_num(cost.kernel_days_per_100_lines)} d per 100 lines "
                 f"x {size_text}) x {_num(cost.hours_per_day)} h/d")
    elif kind is catalog.UNSUPPORTED_KIND:
        count = len(draft.ops)
        hours = count * cost.unsupported_op_days * cost.hours_per_day + overhead
        basis = (f"{count} op(s) x {_num(cost.unsupported_op_days)} d x {_num(cost.hours_per_day)} h/d "
                 f"+ {_num(overhead)} h per task")
    elif kind is catalog.FALLBACK_KIND:
        count = len(draft.ops)
        hours = count * cost.fallback_op_hours + overhead
        basis = f"{count} op(s) x {_num(cost.fallback_op_hours)} h + {_num(overhead)} h per task"
    elif kind is catalog.UNKNOWN_KIND:
        count = len(draft.ops)
        hours = count * cost.unknown_op_minutes / 60 + overhead
        basis = f"{count} op(s) x {_num(cost.unknown_op_minutes)} min + {_num(overhead)} h per task"
    else:
        edit = sites * cost.site_minutes / 60 + files * cost.file_minutes / 60
        hours = edit + overhead
        basis = (f"{sites} site(s) x {_num(cost.site_minutes)} min + {files} file(s) x "
                 f"{_num(cost.file_minutes)} min + {_num(overhead)} h per task")
        if kind is catalog.LIBRARY_KIND:
            hours += cost.library_hours
            basis += f" + {_num(cost.library_hours)} h per library"
    hours = round(hours, 2)
    return hours, f"{basis} = {_num(hours)} h"
