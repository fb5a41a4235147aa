"""The cost model's parameters (`[tool.opscan.cost]`): what one site, file, task, kernel or op costs.

It lives in plan/ so the layers run one way: config reads it from here to check the table
(opscan/config/load.py); plan never imports config.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CostConfig:
    """The transparent cost model of the port-task list (see docs/config.md, "Cost model")."""

    site_minutes: float = 15.0             # one mechanical edit at one site
    fixable_site_minutes: float = 2.0      # a site `opscan fix` rewrites: run it and review the diff
    file_minutes: float = 30.0             # per file touched: review, test, unflagged edits (calibrated up from 10)
    task_hours: float = 2.0                # per task: review, test run, merge
    mechanical_low: float = 0.75           # range of a mechanical task: likely x low .. likely x high
    mechanical_high: float = 2.0           # calibrated up from 1.5 (docs/tasks.md, "Calibration")
    kernel_days: float = 3.0               # base cost of porting one custom kernel
    kernel_days_per_100_lines: float = 1.0  # plus this per 100 lines of kernel source
    kernel_default_lines: int = 200        # size assumed when the kernel source is not found
    kernel_call_site_minutes: float = 15.0  # wiring one call site of a kernel to its replacement
    kernel_reference_factor: float = 0.25  # likely share of the port when the repo has a PyTorch path
    library_factor: float = 1.0            # scales the catalog's hours of every library
    library_hours: float = 0.0             # a library with no catalog entry; 0 = not sized (says so)
    fallback_op_hours: float = 4.0         # work around one op that runs on the CPU
    unsupported_op_days: float = 2.0       # provide one op the backend rejects
    unknown_op_minutes: float = 20.0       # probe one op of unknown status
    op_low: float = 0.5                    # range of op work (unsupported, fallback): likely x low ..
    op_high: float = 2.0                   # .. likely x high
    hours_per_day: float = 8.0             # one engineer-day
    torch_minor_hours: float = 6.0         # moving torch by one minor version (2.0 -> 2.1): a prior, not calibrated
    # seconds neuronx-cc takes per compile signature (op + shapes + dtypes, or one torch.compile
    # graph): an assumption only the user can make (no readable fact states it); None = unknown
    compile_seconds_per_signature: float | None = None


def compile_seconds(counts: tuple[tuple[str, int], ...], cost: CostConfig) -> tuple[tuple[str, float], ...]:
    """Each count of compiles (e.g. ("first step", 214)) times the user's assumed seconds per
    signature; () when the assumption is not set (compile time is then unknown, never guessed)."""
    per = cost.compile_seconds_per_signature
    if per is None:
        return ()
    return tuple((what, round(n * per, 1)) for what, n in counts)
