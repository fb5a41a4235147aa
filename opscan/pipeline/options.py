"""How a run goes, beside the project's configuration: `RunOptions` (what `opscan PATH` and the
commands that narrow it choose: the trace switch, baseline, the child's limits, ...) and
`ScanOptions` (how `opscan scan` narrows and runs the same scan). Frozen records, read by
opscan/pipeline/analyse.py and phases.py; the commands build them from their flags."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# not process.py: a run that starts no child does not import it (NOTE [a source scan imports no targets])
from opscan.containment.policy import Limits, default_max_memory


@dataclass(frozen=True)
class ScanOptions:
    """How `opscan scan` narrows and runs the same scan (defaults: what `opscan PATH` does)."""

    paths: tuple[Path, ...] = ()         # files or folders under the target; () = the whole target
    jobs: int | None = None              # worker processes; None = the number of CPUs
    cache: bool = True                   # read and write the scan cache (OPSCAN_NO_CACHE also turns it off)
    cache_dir: str | None = None         # None = $OPSCAN_CACHE_DIR, else ~/.cache/opscan
    check_fixes: bool = True             # check suggested replacements against the installed torch
    environment: str | None = None       # `--environment PYTHON`: read its installed distributions' metadata
    # plan `opscan fix` per file for the findings' `fixable` (NOTE [fixable is what fix fixes] in
    # fix/preview.py); `opscan fix` itself, which plans every file it fixes anyway, turns it off
    mark_fixable: bool = True


def default_limits() -> Limits:
    """The limits of the child each model's code runs in, when the command sets none."""
    return Limits(max_memory=default_max_memory())


@dataclass(frozen=True)
class RunOptions:
    """How one run goes, beside the project's configuration (defaults: what `opscan PATH` does)."""

    trace: bool = True                     # False: source only (`--no-trace`, `opscan scan`)
    untraced: str = "tracing skipped (--no-trace)"   # what the verdict says when `trace` is False
    baseline: Path | None = None           # report only findings not recorded in this file
    scan: ScanOptions | None = None        # `opscan scan PATH...`: files, jobs, cache
    trust_remote_code: bool = False        # a model folder found at PATH may run its own code
    mode: str | None = None                # trace mode of a model found at PATH (default train)
    # The child process each model's code runs in (docs/reliability.md); None: in this process.
    limits: Limits | None = field(default_factory=default_limits)
    # False (`--no-project-code`): models found with no configuration are built only when that runs
    # no code of the project (model folders, .pt2 files); configured models are built as given
    project_code: bool = True
    # `--entry`: the training command whose step is traced, instead of the one found by reading
    # (NOTE [the training command first] in opscan/pipeline/entry_step.py); "" = `entry`, else found
    entry: str = ""
    # `opscan run`: the command it ran, whose step is the project's own (NOTE [the step answered for])
    script_command: str = ""
