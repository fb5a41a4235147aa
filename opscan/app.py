"""The phases of one run: config -> rules + db -> scan | trace -> coverage -> tasks -> Report.

`analyse(root, config, ...)` is what `opscan PATH` runs. Each phase is a plain function held in
`Phases`, so tests can replace the tracer (or any phase) without torch. Analysis never prints;
progress goes to an optional `progress(event, detail)` callback that the command renders.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from opscan import __version__
from opscan import baseline as baselines
from opscan.config import Config, ModelConfig
from opscan.errors import ModelProcessError, OpscanError, TargetError, TraceError
from opscan.model import BaselineStatus, Coverage, DeviceProfile, Finding, ModelTrace, Report
from opscan.plan import build_tasks
from opscan.plan.measure import kernel_sources
from opscan import phases as default_phases
from opscan.phases import Database, ScanOutcome

Progress = Callable[[str, str], None]


@dataclass
class Phases:
    """Replacement phase functions; None means the default in opscan/phases.py (looked up per run,
    so tests may also monkeypatch `opscan.phases`)."""

    scan: Callable[[Path, Config], ScanOutcome] | None = None
    database: Callable[[Config], Database | None] | None = None
    trace: Callable[[ModelConfig, Path, DeviceProfile | None], ModelTrace] | None = None

    def __getattribute__(self, name: str):
        value = object.__getattribute__(self, name)
        if value is None and name in ("scan", "database", "trace"):
            return getattr(default_phases, name)
        return value


def _backend_label(spec: str) -> str:
    """The release a source-only run names (the database is not loaded to resolve it)."""
    if not spec:
        return "torchneuron (newest release)"
    return f"torchneuron=={spec}" if spec[:1].isdigit() else spec


def _relative_root(root: Path) -> str:
    """The root as reporters show it: relative to the working directory when inside it."""
    try:
        rel = os.path.relpath(root, Path.cwd())
    except ValueError:
        return root.as_posix()
    return Path(rel).as_posix() if not rel.startswith("..") else root.as_posix()


def analyse(target: Path, config: Config, *, trace: bool = True, baseline: Path | None = None,
            phases: Phases | None = None, progress: Progress | None = None,
            on_error: Callable[[OpscanError], None] | None = None) -> Report:
    """Run every phase for `target` (a folder or file) under `config` and return the Report.

    A model that cannot be built (TargetError) raises, unless `on_error` is given: then it is
    passed there, noted in the report, and the other models are still traced.
    """
    phases = phases or Phases()
    say = progress or (lambda event, detail: None)
    target = Path(target).resolve()
    root = target if target.is_dir() else target.parent
    notes: list[str] = []
    entries = baselines.load(baseline) if baseline is not None else None   # fail before tracing

    # The database is only needed to judge traced ops; a source-only run skips loading it.
    database = None
    if trace and config.models:
        say("phase", "loading the coverage database")
        database = phases.database(config)
        if database is not None:
            notes.extend(database.notes)

    say("phase", "scanning source")
    scanned = phases.scan(target, config)
    notes.extend(scanned.notes)
    findings = scanned.findings

    traces: list[ModelTrace] = []
    if trace and config.models:
        profile = database.profile if database is not None else None
        for index, model in enumerate(config.models, 1):
            say("trace", f"tracing {model.target} ({model.mode}) [{index}/{len(config.models)}]")
            try:
                traces.append(phases.trace(model, root, profile))
            except ModelProcessError as exc:   # hung, crashed or out of memory: exit 2, keep the rest
                if on_error is None:
                    raise
                on_error(exc)
                traces.append(ModelTrace(model.target, model.mode, "neuron", complete=False,
                                         stopped_at=str(exc)))
            except TraceError as exc:
                notes.append(f"trace of {model.target} skipped: {exc}")
                if "not installed" in str(exc):
                    break
            except TargetError as exc:
                if on_error is None:
                    raise
                on_error(exc)
                traces.append(ModelTrace(model.target, model.mode, "neuron", complete=False,
                                         stopped_at=f"the model could not be built: {exc}"))
            say("traced", model.target)
    elif not trace and config.models:
        notes.append("tracing skipped (--no-trace): the verdict covers the source only")

    say("phase", "checking op coverage")
    coverage: list[Coverage] = []
    if database is not None and traces:
        warning = database.pairing()
        if warning:
            notes.append(warning)
    if database is not None:
        ops = sorted({usage.op for t in traces for usage in t.ops})
        coverage = [database.lookup(op) for op in ops]
    elif traces:
        notes.append("no coverage database: every traced op is reported as unknown")
        ops = sorted({usage.op for t in traces for usage in t.ops})
        coverage = [Coverage(op, "unknown", (), "low", "no coverage database loaded") for op in ops]

    status = None
    if entries is not None:
        applied = baselines.apply(findings, entries)
        findings = applied.new
        status = BaselineStatus(
            path=_relative_root(Path(baseline).resolve()), known=applied.known,
            stale=tuple(f"{e.path}:{e.line}: {e.rule} {e.message}" for e in applied.stale))

    say("phase", "planning port tasks")
    tasks = build_tasks(findings, tuple(traces), tuple(coverage), config.cost,
                        kernel_sources(root, findings))
    fired = {f.rule for f in findings}
    report = Report(
        root=_relative_root(root),
        tool_version=__version__,
        findings=tuple(sorted(findings, key=Finding.sort_key)),
        traces=tuple(traces),
        coverage=tuple(sorted(coverage, key=lambda c: c.op)),
        tasks=tasks,
        backend=database.backend if database is not None else _backend_label(config.backend),
        files_scanned=scanned.files_scanned,
        notes=tuple(notes),
        baseline=status,
        hours_per_day=config.cost.hours_per_day,
        rules=tuple(sorted((r for r in scanned.rules if r.id in fired), key=lambda r: r.id)),
        project_sources=tuple(sorted({s.path for t in traces for u in t.ops for s in u.sources
                                      if (root / s.path).is_file()})) if traces else None,
    )
    return report


def with_models(config: Config, targets: list[str] | None, mode: str | None) -> Config:
    """`--model TARGET` replaces the configured models; `--mode` applies to every model."""
    models = config.models
    if targets:
        models = tuple(ModelConfig(target=t) for t in targets)
    if mode:
        models = tuple(replace(m, mode=mode) for m in models)
    return replace(config, models=models)


__all__ = ["Database", "OpscanError", "Phases", "ScanOutcome", "analyse", "with_models"]
