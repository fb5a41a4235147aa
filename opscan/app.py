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
from opscan.errors import MissingDependencyError, ModelProcessError, OpscanError, TargetError, TraceError, UsageError
from opscan.model import BaselineStatus, Coverage, DeviceProfile, Finding, ModelTrace, Report
from opscan.plan import build_tasks
from opscan.plan.measure import kernel_sources, usage
from opscan import phases as default_phases
from opscan.phases import Database, ScanOptions, ScanOutcome
from opscan.verdict import NO_MODEL, judge

Progress = Callable[[str, str], None]


@dataclass
class Phases:
    """Replacement phase functions; None means the default in opscan/phases.py (looked up per run,
    so tests may also monkeypatch `opscan.phases`)."""

    scan: Callable[..., ScanOutcome] | None = None     # (target, config[, ScanOptions])
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
            on_error: Callable[[OpscanError], None] | None = None,
            scan_options: ScanOptions | None = None, untraced: str = "tracing skipped (--no-trace)",
            trust_remote_code: bool = False, mode: str | None = None) -> Report:
    """Run every phase for `target` (a folder or file) under `config` and return the Report.

    A model that cannot be built (TargetError) raises, unless `on_error` is given: then it is
    passed there, noted in the report, and the other models are still traced. `scan_options`
    narrows the scan (`opscan scan PATH...`: files, jobs, cache); `untraced` is what the verdict
    says when `trace` is False. The verdict is judged here, once (opscan/verdict.py). A folder
    with nothing to check (no source file, no model) is a UsageError.
    """
    phases = phases or Phases()
    say = progress or (lambda event, detail: None)
    target = Path(target).resolve()
    root = target if target.is_dir() else target.parent
    notes: list[str] = []
    entries = baselines.load(baseline) if baseline is not None else None   # fail before tracing
    discovery = None
    narrowed = scan_options is not None and scan_options.paths   # files given (pre-commit): no discovery
    if not config.models and not narrowed:   # nothing configured: PATH may be the model itself (opscan/discover.py)
        discovery, config = _discover(target, config, trust_remote_code, mode, search=trace)

    # The database is only needed to judge traced ops; a source-only run skips loading it.
    database = None
    if trace and config.models:
        say("phase", "loading the coverage database")
        database = phases.database(config)
        if database is not None:
            notes.extend(database.notes)

    say("phase", "scanning source")
    no_source = discovery is not None and discovery.traced and target.is_file()
    if no_source:
        scanned = ScanOutcome()   # PATH is a model file (.pt2, config.json): no source to scan
    else:
        scanned = phases.scan(target, config, scan_options) if scan_options is not None else phases.scan(target, config)
    notes.extend(scanned.notes)
    findings = scanned.findings

    traces: list[ModelTrace] = []
    not_traced = "" if trace else untraced   # why the ops were not checked (for the verdict)
    if trace and config.models:
        profile = database.profile if database is not None else None
        from opscan.targets.tries import ZeroConfig
        tries = ZeroConfig(discovery)   # found, not configured: tried in turn (opscan/discover.py)
        for index, model in enumerate(config.models, 1):
            if tries.done(traces):
                break
            say("trace", f"tracing {model.target} ({model.mode}) [{index}/{len(config.models)}]")
            try:
                if tries:
                    traces.extend(tries.attempt(lambda: phases.trace(model, root, profile), model.target, notes))
                    continue
                traces.append(phases.trace(model, root, profile))
            except ModelProcessError as exc:   # hung, crashed or out of memory: exit 2, keep the rest
                if on_error is None:
                    raise
                on_error(exc)
                traces.append(ModelTrace(model.target, model.mode, "neuron", complete=False,
                                         stopped_at=str(exc)))
            except TraceError as exc:
                notes.append(f"trace of {model.target} skipped: {exc}")
                not_traced = str(exc)
                if isinstance(exc, MissingDependencyError):   # no model can be traced: stop trying
                    break
            except TargetError as exc:
                if on_error is None:
                    raise
                on_error(exc)
                traces.append(ModelTrace(model.target, model.mode, "neuron", complete=False,
                                         stopped_at=f"the model could not be built: {exc}"))
            say("traced", model.target)
    elif not trace and config.models:
        notes.append(f"{untraced}: the verdict covers the source only")
    if not config.models and not not_traced:
        not_traced = _no_model(discovery) or NO_MODEL
    elif trace and tries and not traces and not not_traced:
        not_traced = f"no model of the repository could be built ({len(tries.failed)} tried; see the notes)"
    if not scanned.files_scanned and not traces and not config.models and target.is_dir() and not narrowed:
        raise UsageError("nothing to check: no Python, notebook or C++/CUDA source file (after include/"
                         "exclude) and no model (looked for [[tool.opscan.models]], --model, a model "
                         "folder with config.json, a .pt2 file)"
                         + (f"; {_no_model(discovery)}" if _no_model(discovery) else ""), path=str(target))

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
        if scan_options is not None and scan_options.paths:   # entries of files not scanned are not stale
            entries = tuple(e for e in entries if _within(root / e.path, scan_options.paths))
        applied = baselines.apply(findings, entries)
        findings = applied.new
        status = BaselineStatus(
            path=_relative_root(Path(baseline).resolve()), known=applied.known,
            stale=tuple(f"{e.path}:{e.line}: {e.rule} {e.message}" for e in applied.stale))

    say("phase", "planning port tasks")
    tasks = build_tasks(findings, tuple(traces), tuple(coverage), config.cost,
                        kernel_sources(root, findings), usage(root, findings))
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
        discovery=discovery,
        caveats=tuple(database.caveats(tuple(traces))) if database is not None and traces else (),
    )
    return replace(report, verdict=judge(report, ops_not_checked=not_traced,
                                         source_not_checked=None if no_source else ""))


def _discover(target: Path, config: Config, trust_remote_code: bool, mode: str | None = None,
              search: bool = True):
    """(Discovery, config): a model folder or exported program at PATH is traced as configured;
    otherwise (when `search`: runs that trace) the project's model candidates are read, never run,
    for the report and `opscan init`."""
    from opscan.discover import candidates, direct

    found = direct(target, _relative_root(target), trust_remote_code=trust_remote_code)
    if found is None and not search:
        return None, config
    if found is None:   # a repository: what builds with no configuration is tried (issue 24)
        root = target if target.is_dir() else target.parent
        found = candidates(root, trust_remote_code=trust_remote_code, construct=True)
        return found, replace(config, models=tuple(ModelConfig(target=t, mode=mode or "train")
                                                   for t in found.traced))
    models = tuple(ModelConfig(target=t, mode="inference" if t.startswith("pt2:") else (mode or "train"),
                               trust_remote_code=trust_remote_code) for t in found.traced)
    return found, replace(config, models=models)


def _no_model(discovery) -> str:
    """Why no model was traced, from what discovery found (for the verdict)."""
    if discovery is None:
        return ""
    if discovery.refused:
        return f"{discovery.refused[0].target} not traced: {discovery.refused[0].note}"
    ready = [c.target for c in discovery.candidates if c.ready]
    if ready:
        more = f" and {len(ready) - 3} more" if len(ready) > 3 else ""
        return (f"no model configured; found {', '.join(ready[:3])}{more} (`opscan init` adds "
                "them to [[tool.opscan.models]])")
    return ""


def _within(path: Path, paths: tuple[Path, ...]) -> bool:
    """Whether `path` is one of `paths` or inside one of them."""
    path = path.resolve()
    return any(path == p or p in path.parents for p in (Path(x).resolve() for x in paths))


def with_models(config: Config, targets: list[str] | None, mode: str | None) -> Config:
    """`--model TARGET` replaces the configured models; `--mode` applies to every model."""
    models = config.models
    if targets:
        models = tuple(ModelConfig(target=t) for t in targets)
    if mode:
        models = tuple(replace(m, mode=mode) for m in models)
    return replace(config, models=models)


__all__ = ["Database", "OpscanError", "Phases", "ScanOutcome", "analyse", "with_models"]
