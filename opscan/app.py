"""The phases of one run: config -> rules + db -> scan | trace -> assess (coverage, tasks, verdict) -> Report.

`analyse(target, config, options)` is what `opscan PATH` runs; `RunOptions` is everything about
the run that is not project configuration (the trace switch, baseline, limits, ...). Each phase
is a plain function held in `Phases`, so tests can replace the tracer (or any phase) without
torch. Analysis never prints; progress goes to an optional `progress(event, detail)` callback
that the command renders.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from opscan import __version__
from opscan import baseline as baselines
from opscan import phases as default_phases
from opscan.assess import assess
from opscan.config import Config, ModelConfig
from opscan.errors import MissingDependencyError, ModelProcessError, OpscanError, TargetError, TraceError, UsageError
from opscan.isolation import Limits, default_max_memory
from opscan.records import BaselineStatus, DeviceProfile, Finding, ModelTrace, Report
from opscan.phases import ScanOptions, ScanOutcome, database_notes
from opscan.verdict import NO_MODEL

if TYPE_CHECKING:
    from opscan.db import Release

Progress = Callable[[str, str], None]


# NOTE [explicit phases and limits]
# `Phases` used to swap its defaults in at attribute access, and the trace limits of `opscan PATH`
# reached the tracer through a context variable the command set around `analyse`. Both were
# invisible at the call. Now the phases a run uses are chosen in one visible place
# (`Phases.default`, read per run so tests may still monkeypatch opscan/phases.py) and the limits
# are a field of the frozen `RunOptions`, passed to the trace phase as an argument.
@dataclass(frozen=True)
class Phases:
    """The phase functions of a run (`Phases.default()`: those of opscan/phases.py)."""

    scan: Callable[..., ScanOutcome]                       # (target, config[, ScanOptions])
    database: Callable[[Config], Release | None]           # None: every traced op is unknown
    trace: Callable[[ModelConfig, Path, DeviceProfile | None, Limits | None], ModelTrace]

    @classmethod
    def default(cls, **replaced: Callable) -> Phases:
        """opscan/phases.py's functions, as that module holds them now (so tests may monkeypatch
        it), with `replaced` ones instead (e.g. `Phases.default(trace=fake)`)."""
        chosen = {"scan": default_phases.scan, "database": default_phases.database,
                  "trace": default_phases.trace}
        unknown = set(replaced) - set(chosen)
        if unknown:
            raise TypeError(f"no such phase: {', '.join(sorted(unknown))}")
        return cls(**{**chosen, **replaced})


def _default_limits() -> Limits:
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
    limits: Limits | None = field(default_factory=_default_limits)
    # False (`--no-project-code`): models found with no configuration are built only when that runs
    # no code of the project (model folders, .pt2 files); configured models are built as given
    project_code: bool = True


def _backend_label(spec: str) -> str:
    """The release a source-only run names (the database is not loaded to resolve it)."""
    if not spec:
        return "torchneuron (newest release)"
    return f"torchneuron=={spec}" if spec[:1].isdigit() else spec


def relative_root(root: Path) -> str:
    """The root as reporters show it: relative to the working directory when inside it."""
    try:
        rel = os.path.relpath(root, Path.cwd())
    except ValueError:
        return root.as_posix()
    return Path(rel).as_posix() if not rel.startswith("..") else root.as_posix()


def analyse(target: Path, config: Config, options: RunOptions | None = None, *,
            phases: Phases | None = None, progress: Progress | None = None,
            on_error: Callable[[OpscanError], None] | None = None) -> Report:
    """Run every phase for `target` (a folder or file) under `config` and `options`; the Report.

    A model that cannot be built (TargetError) or whose process failed (ModelProcessError) raises,
    unless `on_error` is given: then it is passed there, noted in the report, and the other models
    are still traced. What the traces show is judged once, in opscan/assess.py. A folder with
    nothing to check (no source file, no model) is a UsageError.
    """
    options = options or RunOptions()
    phases = phases or Phases.default()
    say = progress or (lambda event, detail: None)
    target = Path(target).resolve()
    root = target if target.is_dir() else target.parent
    notes: list[str] = []
    baseline = options.baseline
    entries = baselines.load(baseline) if baseline is not None else None   # fail before tracing
    discovery = None
    scan_options = options.scan
    narrowed = scan_options is not None and scan_options.paths   # files given (pre-commit): no discovery
    if not config.models and not narrowed:   # nothing configured: PATH may be the model itself (opscan/discover.py)
        discovery, config = _discover(target, config, options.trust_remote_code, options.mode,
                                      search=options.trace)
        if discovery is not None and not options.project_code:
            discovery, config = _without_project_code(discovery, config, options.trust_remote_code, notes)

    # The database is only needed to judge traced ops; a source-only run skips loading it.
    release = None
    if options.trace and config.models:
        say("phase", "loading the coverage database")
        release = phases.database(config)
        notes.extend(database_notes(release, config))

    say("phase", "scanning source")
    no_source = discovery is not None and discovery.traced and target.is_file()
    if no_source:
        scanned = ScanOutcome()   # PATH is a model file (.pt2, config.json): no source to scan
    else:
        scanned = phases.scan(target, config, scan_options) if scan_options is not None else phases.scan(target, config)
    notes.extend(scanned.notes)
    findings = scanned.findings

    traces: list[ModelTrace] = []
    # Models given (configured, --model, PATH itself) that could not be checked: the gate exits 2.
    unchecked: list[tuple[str, str]] = [(c.target, c.note) for c in discovery.refused] if discovery else []
    not_traced = "" if options.trace else options.untraced   # why the ops were not checked (for the verdict)
    tries = None
    if options.trace and config.models:
        profile = release.profile() if release is not None else None
        from opscan.targets.tries import ZeroConfig
        tries = ZeroConfig(discovery)   # found, not configured: tried in turn (opscan/discover.py)
        for index, model in enumerate(config.models, 1):
            if tries.done(traces):
                break
            say("trace", f"tracing {model.target} ({model.mode}) [{index}/{len(config.models)}]")
            try:
                if tries:
                    traces.extend(tries.attempt(lambda: phases.trace(model, root, profile, options.limits),
                                                model.target, notes))
                    continue
                traces.append(phases.trace(model, root, profile, options.limits))
            except ModelProcessError as exc:   # hung, crashed or out of memory: exit 2, keep the rest
                if on_error is None:
                    raise
                on_error(exc)
                unchecked.append((model.target, _why(exc, model.target)))
                traces.append(ModelTrace(model.target, model.mode, "neuron", complete=False,
                                         stopped_at=str(exc)))
            except TraceError as exc:
                not_traced = str(exc)
                if isinstance(exc, MissingDependencyError):   # no model can be traced: stop trying
                    unchecked.extend((m.target, _why(exc, m.target)) for m in config.models[index - 1:])
                    break
                unchecked.append((model.target, _why(exc, model.target)))
            except TargetError as exc:
                if on_error is None:
                    raise
                on_error(exc)
                unchecked.append((model.target, _why(exc, model.target)))
                traces.append(ModelTrace(model.target, model.mode, "neuron", complete=False,
                                         stopped_at=f"the model could not be built: {exc}"))
            say("traced", model.target)
    elif not options.trace and config.models:
        notes.append(f"{options.untraced}: the verdict covers the source only")
    if not config.models and not not_traced:
        not_traced = _no_model(discovery) or NO_MODEL
    elif options.trace and tries and not traces and not not_traced:
        not_traced = f"no model of the repository could be built ({len(tries.failed)} tried; see the notes)"
        # NOTE [zero-configuration tries]: one try that fails beside one that traced is a note (the
        # targets are opscan's guesses); when none could be built the ops were not checked, and the
        # gate says so as for any model given (exit 2 unless --allow-unchecked; issue 27).
        unchecked.extend(tries.failed)
    if not scanned.files_scanned and not traces and not config.models and target.is_dir() and not narrowed \
            and not unchecked:
        raise UsageError("nothing to check: no Python, notebook or C++/CUDA source file (after include/"
                         "exclude) and no model (looked for [[tool.opscan.models]], --model, a model "
                         "folder with config.json, a .pt2 file)"
                         + (f"; {_no_model(discovery)}" if _no_model(discovery) else ""), path=str(target))

    status = None
    if entries is not None:
        if narrowed:   # entries of files not scanned are not stale
            entries = tuple(e for e in entries if _within(root / e.path, scan_options.paths))
        applied = baselines.apply(findings, entries)
        findings = applied.new
        status = BaselineStatus(
            path=relative_root(Path(baseline).resolve()), known=applied.known,
            stale=tuple(f"{e.path}:{e.line}: {e.rule} {e.message}" for e in applied.stale))

    say("phase", "checking op coverage and planning port tasks")
    fired = {f.rule for f in findings}
    draft = Report(
        root=relative_root(root),
        tool_version=__version__,
        findings=tuple(sorted(findings, key=Finding.sort_key)),
        traces=tuple(traces),
        backend=_backend_label(config.backend),
        files_scanned=scanned.files_scanned,
        notes=tuple(notes),
        baseline=status,
        hours_per_day=config.cost.hours_per_day,
        rules=tuple(sorted((r for r in scanned.rules if r.id in fired), key=lambda r: r.id)),
        project_sources=tuple(sorted({s.path for t in traces for u in t.ops for s in u.sources
                                      if (root / s.path).is_file()})) if traces else None,
        discovery=discovery,
    )
    return assess(draft, release, project_root=root, cost=config.cost, ops_not_checked=not_traced,
                  source_not_checked=None if no_source else "", unchecked=tuple(unchecked),
                  facts=scanned.facts)


def _why(exc: OpscanError, target: str) -> str:
    """The whole reason `target` could not be checked, as one line (never cut)."""
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    prefix = f"trace of {target} "
    return text[len(prefix):] if text.startswith(prefix) else text


def _discover(target: Path, config: Config, trust_remote_code: bool, mode: str | None = None,
              search: bool = True):
    """(Discovery, config): a model folder or exported program at PATH is traced as configured;
    otherwise (when `search`: runs that trace) the project's model candidates are read, never run,
    for the report and `opscan init`."""
    from opscan.discover import candidates, direct

    found = direct(target, relative_root(target), trust_remote_code=trust_remote_code)
    if found is None and not search:
        return None, config
    if found is None:   # a repository: what builds with no configuration is tried (issue 24)
        root = target if target.is_dir() else target.parent
        found = candidates(root, trust_remote_code=trust_remote_code, construct=True)
        found = _with_config_blocks(found)
        return found, replace(config, models=tuple(ModelConfig(target=t, mode=mode or "train")
                                                   for t in found.traced))
    found = _with_config_blocks(found)
    models = tuple(ModelConfig(target=t, mode="inference" if t.startswith("pt2:") else (mode or "train"),
                               trust_remote_code=trust_remote_code) for t in found.traced)
    return found, replace(config, models=models)


def _with_config_blocks(found):
    """`found` with what the reporters print of it (they read the report, never discover.py): each
    candidate's [[tool.opscan.models]] block, as `opscan init` writes it, and the factory hint."""
    from opscan.discover import FACTORY_HINT, toml_lines

    return replace(found, config_blocks=tuple(toml_lines(c) for c in found.candidates), factory_hint=FACTORY_HINT)


def _without_project_code(discovery, config: Config, trust_remote_code: bool, notes: list[str]):
    """(discovery, config) without the models found whose building runs project code (`--no-project-code`)."""
    from opscan.targets.project_code import runs_project_code

    dropped = [t for t in discovery.traced if runs_project_code(t, trust_remote_code)]
    if not dropped:
        return discovery, config
    more = f" and {len(dropped) - 3} more" if len(dropped) > 3 else ""
    notes.append(f"--no-project-code: {len(dropped)} model(s) found whose building runs the project's code "
                 f"were not built ({', '.join(dropped[:3])}{more})")
    kept = tuple(t for t in discovery.traced if t not in dropped)
    return replace(discovery, traced=kept), replace(config, models=tuple(m for m in config.models
                                                                           if m.target in kept))


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


__all__ = ["OpscanError", "Phases", "RunOptions", "ScanOutcome", "analyse", "with_models"]
