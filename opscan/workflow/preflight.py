"""The pre-flight checklist: environment, device, op coverage, blockers and the rollback path.

`probe()` reads this machine (package versions via importlib.metadata, TORCH_DEVICE, the visible
accelerator via torch.accelerator); `checklist()` turns a probe plus what an analysis assessed
(`Assessed`: read from the finished Report of the scan preflight runs, `from_report`, or from an
`opscan PATH --format json` file, `from_json`) into checks. Nothing here prints. Every lookup can
be injected, so each branch is testable on a machine without torch or Trainium.

Statuses: ok | warn | fail | stop | info | skip. The checklist is "ready" when no check is
fail or stop. Ops "without a Neuron kernel" are those whose status does not run on the device
and is known (cpu-fallback, unsupported: `model.OpStatus`); ops of status unknown are listed as a
warning and only count as missing when asked (`unknown_missing`), because an unchecked op is not
known to lack a kernel. Blockers are the verdict's count (`Verdict.blockers.count`, in JSON
`verdict.blockers.count`), read, never counted again.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from opscan.records import Report, Status
from opscan.workflow.neuronx_lines import classify, torch_release

DEVICE_VAR = "TORCH_DEVICE"
FALLBACK_VAR = "CPU_FALLBACK_COMMAND"
# device-or-cpu (not listed; may have a kernel) is as open as unknown: not known to be missing
# (Status.needs_probe); missing: known not to run on the device (cpu-fallback, unsupported)
UNCHECKED_STATUSES = tuple(s.value for s in Status if s.needs_probe)
MISSING_STATUSES = tuple(s.value for s in Status if not s.runs_on_device and not s.needs_probe)
NO_FALLBACK = "no fallback documented -> stop here"
SRC_ACCELERATOR = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/about-pytorch-neuron.html"
SRC_FALLBACK_DEFAULT = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/"
                        "best-practices-pytorch-neuron.html")


@dataclass(frozen=True)
class Probe:
    """What this machine looks like."""

    torch_version: str | None            # None: not installed
    neuronx_version: str | None          # installed torch-neuronx, None: not installed
    requested_device: str | None         # TORCH_DEVICE, None: not set
    accelerator: str | None              # torch.accelerator.current_accelerator(check_available=True)
    accelerator_note: str = ""           # why the accelerator could not be read, if so
    fallback_env: str | None = None      # CPU_FALLBACK_COMMAND


@dataclass(frozen=True)
class Assessed:
    """What the checklist reads of a finished analysis: each traced op's status, the traced models,
    the verdict's blocking count and the number of priority-1 port tasks."""

    ops: tuple[tuple[str, str], ...]     # (op, status), one per distinct traced op, by op name
    models: tuple[str, ...]              # the traced targets, sorted
    blockers: int | None                 # the verdict's Blockers.count; None: the report has no verdict
    first_tasks: int = 0                 # port tasks of priority 1


def from_report(report: Report) -> Assessed:
    """Read a finished Report (the analysis `opscan preflight PATH` runs); an op without coverage
    is unknown, as the JSON report leaves its status out."""
    statuses = {c.op: c.status for c in report.coverage}
    ops = sorted({usage.op for trace in report.traces for usage in trace.ops})
    return Assessed(ops=tuple((op, statuses.get(op, Status.UNKNOWN)) for op in ops),
                    models=tuple(sorted({t.target for t in report.traces})),
                    blockers=report.verdict.blockers.count if report.verdict is not None else None,
                    first_tasks=sum(1 for t in report.tasks if t.priority == 1))


def from_json(doc: dict) -> Assessed:
    """Read the dict of an `opscan PATH --format json` report (given with `--report`)."""
    ops = []
    for op in doc.get("ops") or []:
        if isinstance(op, dict):
            ops.append((str(op.get("op", "?")), str(op.get("status", Status.UNKNOWN.value))))
        else:
            ops.append((str(op), Status.UNKNOWN.value))
    traces = [t for t in doc.get("traces") or [] if isinstance(t, dict)]
    tasks = [t for t in doc.get("tasks") or [] if isinstance(t, dict) and t.get("priority") == 1]
    return Assessed(ops=tuple(ops), models=tuple(sorted({str(t.get("target", "?")) for t in traces})),
                    blockers=_json_blockers(doc), first_tasks=len(tasks))


class CheckStatus(StrEnum):
    """How one line of the checklist came out (docs/workflow.md)."""

    OK = "ok"
    WARN = "warn"     # may not work as is: look at it
    FAIL = "fail"     # will not work as is: not ready
    STOP = "stop"     # the plan has no way back (no rollback path): not ready
    INFO = "info"     # a fact, no judgement (the installed torch; no Trainium on this machine)
    SKIP = "skip"     # not checked (no report, no ops)

    @property
    def blocks(self) -> bool:
        """The checklist is not ready while a line has this status."""
        return self in (CheckStatus.FAIL, CheckStatus.STOP)


@dataclass(frozen=True)
class Check:
    """One line of the checklist."""

    id: str
    title: str
    status: str                          # a CheckStatus
    value: str
    detail: str = ""
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class Checklist:
    """The finished checklist."""

    checks: tuple[Check, ...]
    missing_ops: tuple[str, ...]         # ops without a Neuron kernel (per the rule above)
    unknown_ops: tuple[str, ...]
    ops_by_status: tuple[tuple[str, int], ...]
    blockers: int | None                 # the verdict's blocking count; None without one
    unknown_missing: bool
    report_source: str                   # e.g. "report.json", "scan of ./model", ""

    @property
    def ready(self) -> bool:
        return not any(CheckStatus(c.status).blocks for c in self.checks)


def _version(name: str, lookup: Callable[[str], str]) -> str | None:
    try:
        return lookup(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def visible_accelerator() -> tuple[str | None, str]:
    """The accelerator torch sees (type string) or None, and a note when torch cannot tell."""
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - any import failure means "cannot tell"
        return None, f"torch does not import: {type(exc).__name__}: {exc}"
    accel = getattr(torch, "accelerator", None)
    if accel is None or not hasattr(accel, "current_accelerator"):
        return None, f"torch {torch.__version__} has no torch.accelerator.current_accelerator"
    try:
        device = accel.current_accelerator(check_available=True)
    except Exception as exc:  # noqa: BLE001
        return None, f"torch.accelerator failed: {type(exc).__name__}: {exc}"
    return (device.type if device is not None else None), ""


def probe(environ: Mapping[str, str] | None = None,
          version: Callable[[str], str] = importlib.metadata.version,
          accelerator: Callable[[], tuple[str | None, str]] | None = None) -> Probe:
    """Read this machine; every lookup can be replaced (tests, or a remote host's facts)."""
    env = os.environ if environ is None else environ
    torch_version = _version("torch", version)
    if accelerator is not None:
        accel, note = accelerator()
    elif torch_version is None:
        accel, note = None, "torch is not installed"
    else:
        accel, note = visible_accelerator()
    return Probe(
        torch_version=torch_version,
        neuronx_version=_version("torch-neuronx", version),
        requested_device=(env.get(DEVICE_VAR) or None),
        accelerator=accel,
        accelerator_note=note,
        fallback_env=(env.get(FALLBACK_VAR) or None),
    )


def _torch_checks(p: Probe) -> list[Check]:
    checks = []
    if p.torch_version is None:
        checks.append(Check("torch", "torch version", CheckStatus.WARN, "not installed",
                            "this machine cannot run the job; the rest of the checklist still applies"))
    else:
        checks.append(Check("torch", "torch version", CheckStatus.INFO, p.torch_version))
    if p.neuronx_version is None:
        checks.append(Check("torch-neuronx", "torch-neuronx version", CheckStatus.WARN, "not installed",
                            "needed on the Trainium host: torch-neuronx 2.13.x with torch 2.13 or "
                            "2.14.x with torch 2.14 (Neuron SDK 2.33.0)",
                            (classify("2.14.3.0").sources[0],)))
        return checks
    line = classify(p.neuronx_version)
    status = {"native": CheckStatus.OK, "xla": CheckStatus.FAIL, "unknown": CheckStatus.WARN}[line.line]
    checks.append(Check("torch-neuronx", "torch-neuronx version and line", status,
                        f"{p.neuronx_version} ({line.line})", line.detail, line.sources))
    have = torch_release(p.torch_version) if p.torch_version else None
    if line.torch is None or have is None:
        checks.append(Check("pairing", "torch-neuronx pairs with this torch", CheckStatus.WARN, "cannot tell",
                            "torch not installed" if have is None else line.detail, line.sources))
    elif line.torch == have:
        checks.append(Check("pairing", "torch-neuronx pairs with this torch", CheckStatus.OK,
                            f"torch {have[0]}.{have[1]} <-> torch-neuronx {p.neuronx_version}",
                            "", line.sources))
    else:
        want = f"{line.torch[0]}.{line.torch[1]}"
        checks.append(Check("pairing", "torch-neuronx pairs with this torch", CheckStatus.FAIL,
                            f"torch {p.torch_version} with torch-neuronx {p.neuronx_version}",
                            f"torch-neuronx {p.neuronx_version} pairs with torch {want}: install the "
                            f"torch-neuronx family matching torch {have[0]}.{have[1]}, or torch {want}",
                            line.sources))
    return checks


def _device_checks(p: Probe) -> list[Check]:
    requested = p.requested_device
    visible = p.accelerator
    shown = visible or "none"
    checks = []
    if requested is None:
        checks.append(Check("device", "device requested (TORCH_DEVICE)", CheckStatus.WARN, "not set",
                            "the job chooses its own device; set TORCH_DEVICE=neuron for the port"))
    else:
        checks.append(Check("device", "device requested (TORCH_DEVICE)", CheckStatus.INFO, requested))
    note = f" ({p.accelerator_note})" if p.accelerator_note else ""
    want = (requested or "").split(":")[0]
    if visible == "neuron":
        detail, status = "Trainium visible to torch", CheckStatus.OK
    else:
        detail, status = f"no Trainium visible on this machine{note}", CheckStatus.INFO
    if want and want != "cpu":
        if want == visible:
            status, detail = CheckStatus.OK, f"the requested device {want!r} is the visible accelerator"
        else:
            status = CheckStatus.FAIL
            detail = f"TORCH_DEVICE={requested} but the visible accelerator is {shown}{note}"
    checks.append(Check("accelerator", "accelerator visible (torch.accelerator)", status, shown,
                        detail, (SRC_ACCELERATOR,)))
    return checks


def _coverage_checks(report: Assessed | None, source: str, unknown_missing: bool,
                     exit_on_missing: bool) -> tuple[list[Check], tuple, tuple, tuple, int | None]:
    if report is None:
        check = Check("coverage", "op coverage of the configured models", CheckStatus.SKIP, "not checked",
                      "give --report REPORT.json (from `opscan PATH --format json`) or a PATH to scan")
        blockers = Check("blockers", "scan blockers", CheckStatus.SKIP, "not checked", check.detail)
        return [check, blockers], (), (), (), None
    ops = report.ops
    statuses: dict[str, int] = {}
    missing, unknown = [], []
    for name, status in ops:
        statuses[status] = statuses.get(status, 0) + 1
        if status in MISSING_STATUSES or (unknown_missing and status in UNCHECKED_STATUSES):
            missing.append(name)
        if status in UNCHECKED_STATUSES:
            unknown.append(name)
    models = report.models
    counts = ", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))
    where = f"models: {', '.join(models)}" if models else "no model traced"
    checks = []
    if not ops:
        checks.append(Check("coverage", "op coverage of the configured models", CheckStatus.SKIP, "no ops",
                            f"{where} in {source}; configure [[tool.opscan.models]] to check ops"))
    else:
        rule = "cpu-fallback, unsupported" + (", unknown" if unknown_missing else "")
        if missing:
            status = CheckStatus.FAIL if exit_on_missing else CheckStatus.WARN
            detail = (f"{len(missing)} op(s) without a Neuron kernel ({rule}): "
                      + ", ".join(sorted(missing)[:10]) + (" ..." if len(missing) > 10 else ""))
        elif unknown:
            status, detail = CheckStatus.WARN, f"{len(unknown)} op(s) of unknown status (not counted as missing)"
        else:
            status, detail = CheckStatus.OK, "every traced op has a Neuron kernel"
        checks.append(Check("coverage", "op coverage of the configured models", status,
                            f"{len(ops)} ops: {counts}", f"{detail}; {where} ({source})",
                            (SRC_FALLBACK_DEFAULT,)))
    blockers = report.blockers
    if blockers is None:
        checks.append(Check("blockers", "scan blockers (the verdict's blocking count)", CheckStatus.SKIP,
                            "not in the report",
                            f"the report has no `verdict.blockers` (made by an older opscan): run "
                            f"`opscan PATH --format json` again; {source}"))
    else:
        checks.append(Check("blockers", "scan blockers (the verdict's blocking count)",
                            CheckStatus.OK if blockers == 0 else CheckStatus.WARN, str(blockers),
                            f"{report.first_tasks} priority-1 port task(s); {source}"))
    return checks, tuple(sorted(missing)), tuple(sorted(unknown)), tuple(sorted(statuses.items())), blockers


def _json_blockers(report: dict) -> int | None:
    """The verdict's blocking count in a JSON report (NOTE [blockers] in opscan/assess/verdict.py): what the
    headline and the gate count, read, never counted again; None when the report does not carry it."""
    verdict = report.get("verdict")
    blockers = verdict.get("blockers") if isinstance(verdict, dict) else None
    count = blockers.get("count") if isinstance(blockers, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) else None


def _rollback_check(p: Probe, configured: str | None, config_source: str) -> Check:
    if configured:
        detail = f"from {config_source}"
        if p.fallback_env and p.fallback_env != configured:
            detail += f" ({FALLBACK_VAR} differs: {p.fallback_env})"
        return Check("rollback", "rollback path", CheckStatus.OK, configured, detail)
    if p.fallback_env:
        return Check("rollback", "rollback path", CheckStatus.OK, p.fallback_env, f"from ${FALLBACK_VAR}")
    return Check("rollback", "rollback path", CheckStatus.STOP, NO_FALLBACK,
                 "document the command that sends the job back to the old device: "
                 f"[tool.opscan.parity] fallback-command, or ${FALLBACK_VAR}")


def checklist(p: Probe, report: Assessed | None = None, report_source: str = "", *,
              fallback_command: str | None = None, config_source: str = "",
              unknown_missing: bool = False, exit_on_missing: bool = False) -> Checklist:
    """Build the checklist from a probe, what an analysis assessed (optional) and the configured rollback."""
    checks = _torch_checks(p) + _device_checks(p)
    coverage, missing, unknown, by_status, blockers = _coverage_checks(
        report, report_source, unknown_missing, exit_on_missing)
    checks += coverage
    checks.append(_rollback_check(p, fallback_command, config_source))
    return Checklist(tuple(checks), missing, unknown, by_status, blockers, unknown_missing, report_source)
