"""The phases of one run: config -> rules + db -> scan | trace -> assess (coverage, tasks, verdict) -> Report.

`analyse(target, config, options)` is what `opscan PATH` runs, a short pipeline of named steps over
records (NOTE [the pipeline of analyse]) ending in a `Draft` that opscan/assess/assessment.py judges into the
Report; `RunOptions` (opscan/pipeline/options.py) is everything about the run that is not project
configuration (the trace switch, baseline, limits, ...). Each phase is a plain function held in `Phases`, so tests can
replace the tracer (or any phase) without torch. Analysis never prints; progress goes to an
optional `progress(event, detail)` callback that the command renders.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from opscan import __version__
from opscan.pipeline import phases as default_phases
from opscan.assess import assess
from opscan.config import Config, ModelConfig
from opscan.errors import (MissingDependencyError, MissingModulesError, ModelProcessError, OpscanError, TargetError,
                           TraceError, UsageError)
from opscan.index import ProjectIndex
from opscan.pipeline import entry_step
from opscan.records import (BaselineStatus, Checked, DeviceProfile, Discovery, Draft, Finding, Mode, ModelTrace,
                            NothingToCheck, Report, SourceCheck, Step, Target, TargetKind)
from opscan.pipeline.options import RunOptions, ScanOptions
from opscan.pipeline.phases import ScanOutcome, database_notes
from opscan.assess.verdict import NO_MODEL

if TYPE_CHECKING:
    from opscan.assess import baseline as baselines
    from opscan.containment.process import Limits
    from opscan.db import Release

Progress = Callable[[str, str], None]


# NOTE [explicit phases and limits]
# `Phases` used to swap its defaults in at attribute access, and the trace limits of `opscan PATH`
# reached the tracer through a context variable the command set around `analyse`. Both were
# invisible at the call. Now the phases a run uses are chosen in one visible place
# (`Phases.default`, read per run so tests may still monkeypatch opscan/pipeline/phases.py) and the limits
# are a field of the frozen `RunOptions`, passed to the trace phase as an argument.
@dataclass(frozen=True)
class Phases:
    """The phase functions of a run (`Phases.default()`: those of opscan/pipeline/phases.py)."""

    scan: Callable[..., ScanOutcome]                       # (target, config[, ScanOptions])
    database: Callable[[Config], Release | None]           # None: every traced op is unknown
    trace: Callable[[ModelConfig, Path, DeviceProfile | None, Limits | None], ModelTrace]
    # a training command run for its step: (TrainingEntry, root, profile, limits) -> (ModelTrace, notes)
    command: Callable[..., tuple[ModelTrace, tuple[str, ...]]] = default_phases.command

    @classmethod
    def default(cls, **replaced: Callable) -> Phases:
        """opscan/pipeline/phases.py's functions, as that module holds them now (so tests may monkeypatch
        it), with `replaced` ones instead (e.g. `Phases.default(trace=fake)`)."""
        chosen = {"scan": default_phases.scan, "database": default_phases.database,
                  "trace": default_phases.trace, "command": default_phases.command}
        unknown = set(replaced) - set(chosen)
        if unknown:
            raise TypeError(f"no such phase: {', '.join(sorted(unknown))}")
        return cls(**{**chosen, **replaced})


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


# NOTE [the pipeline of analyse]: `analyse` is a row of named steps, each taking and returning
# records (frozen dataclasses), so a step can be read, and tested, alone:
#   start -> find_models -> load_database -> scan_source -> trace_models -> require_something
#   -> apply_baseline -> draft_of -> assess (opscan/assess/assessment.py: Draft -> Report)
# No step edits another's lists or reads state out of message text: each says what it found in
# its result (`Found`, `Loaded`, `Traced`, `Kept`), the notes included, and `draft_of` joins them
# in the order the run made them.
@dataclass(frozen=True)
class Run:
    """Where one run looks: the target as given (resolved), the folder it is in, the files a
    pre-commit run was given (`narrowed`), and the baseline's entries (read before any trace)."""

    target: Path
    root: Path
    narrowed: tuple[Path, ...] = ()
    baseline: Path | None = None
    entries: tuple[baselines.Entry, ...] | None = None   # the baseline's entries (None: no baseline)
    index: ProjectIndex | None = None    # each file of the run listed, read and parsed once (NOTE [one project index])


# NOTE [found beside the configuration]: the models found at PATH when none was configured are
# carried here, beside the user's configuration, never written into it: `Found.config` is the
# configuration as the user gave it, `Found.models` what the run traces (the configured models, else
# the discovered ones), and every later step reads the latter.
@dataclass(frozen=True)
class Found:
    """The models the run traces: the user's configuration (unchanged), what discovery found (None:
    not run), the notes of that choice, and the models found at PATH when none was configured."""

    config: Config
    discovery: Discovery | None = None
    notes: tuple[str, ...] = ()
    discovered: tuple[ModelConfig, ...] = ()

    @property
    def models(self) -> tuple[ModelConfig, ...]:
        """What the run traces: the configured models, else those found at PATH."""
        return self.config.models or self.discovered


@dataclass(frozen=True)
class Loaded:
    """The coverage database of the run (None: not needed, or none), and its notes."""

    release: Release | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scanned:
    """What the source scan found (findings, notes, rules, facts), and whether there was source to
    scan (NOTE [checked or not] in opscan/records/report.py)."""

    outcome: ScanOutcome
    source: SourceCheck = Checked()


@dataclass(frozen=True)
class Traced:
    """What tracing the models gave: the traces, the models given that could not be checked
    ((target, why): the gate exits 2), why no ops were checked when none were, and the notes."""

    traces: tuple[ModelTrace, ...] = ()
    unchecked: tuple[tuple[str, str], ...] = ()
    ops_not_checked: str = ""
    notes: tuple[str, ...] = ()
    missing: bool = False                # a model missed modules not installed here (one remedy line)
    source_only: bool = False            # no trace was asked for (--no-trace, `opscan scan`, the hook)
    step: Step | None = None             # the step the traces answer for (NOTE [the step answered for])


@dataclass(frozen=True)
class Kept:
    """The findings the report keeps after the baseline (all of them without one), and how they compared."""

    findings: tuple[Finding, ...]
    baseline: BaselineStatus | None = None


def analyse(target: Path, config: Config, options: RunOptions | None = None, *,
            phases: Phases | None = None, progress: Progress | None = None,
            on_error: Callable[[OpscanError], None] | None = None) -> Report:
    """Run every phase for `target` (a folder or file) under `config` and `options`; the Report.

    A model that cannot be built (TargetError) or whose process failed (ModelProcessError) raises,
    unless `on_error` is given: then it is passed there, noted in the report, and the other models
    are still traced. What the traces show is judged once, in opscan/assess/assessment.py. A folder with
    nothing to check (no source file, no model) is a UsageError. The steps: NOTE [the pipeline of analyse].
    """
    options = options or RunOptions()
    phases = phases or Phases.default()
    say = progress or (lambda event, detail: None)
    run = start(target, options)
    entered = entry_step.choose(run.target, config, trace=options.trace and not run.narrowed,
                                project_code=options.project_code, given=options.entry, index=run.index)
    found = find_models(run, config, options)
    loaded = load_database(found, options, phases, say, needed=entered.chosen is not None)
    scanned = scan_source(run, found, options, phases, say)
    traced = trace_models(run, found, loaded.release, options, phases, say, on_error, entered)
    require_something(run, found, scanned.outcome, traced)
    kept = apply_baseline(run, scanned.outcome.findings)
    say("phase", "checking op coverage and planning port tasks")
    draft = replace(draft_of(run, found, loaded, scanned, traced, kept), entries=entered.entries)
    return assess(draft, loaded.release, project_root=run.root, cost=found.config.cost, facts=scanned.outcome.facts)


def start(target: Path, options: RunOptions) -> Run:
    """The run's target and root; the baseline is read here, so a bad one fails before any trace."""
    target = Path(target).resolve()
    scan = options.scan
    entries = None
    if options.baseline is not None:
        from opscan.assess import baseline as baselines

        entries = baselines.load(options.baseline)
    root = target if target.is_dir() else target.parent
    return Run(target=target, root=root, narrowed=tuple(scan.paths) if scan is not None and scan.paths else (),
               baseline=options.baseline, entries=None if entries is None else tuple(entries),
               index=ProjectIndex(root))


def find_models(run: Run, config: Config, options: RunOptions) -> Found:
    """The models to trace: the configured ones; with none configured (and no files given, as
    pre-commit does), the model PATH is, or the project's candidates (opscan/targets/discovery.py)."""
    if config.models or run.narrowed:
        return Found(config)
    discovery, models = _discover(run.target, options.trust_remote_code, options.mode,
                                  search=options.trace, index=run.index)
    if discovery is None or options.project_code:
        return Found(config, discovery, discovered=models)
    return _without_project_code(discovery, config, models, options.trust_remote_code)


def load_database(found: Found, options: RunOptions, phases: Phases, say: Progress, needed: bool = False) -> Loaded:
    """The coverage database, only needed to judge traced ops: a source-only run skips loading it
    (`needed`: a training command will be run)."""
    if not (options.trace and (found.models or needed)):
        return Loaded()
    say("phase", "loading the coverage database")
    release = phases.database(found.config)
    return Loaded(release, tuple(database_notes(release, found.config)))


def scan_source(run: Run, found: Found, options: RunOptions, phases: Phases, say: Progress) -> Scanned:
    """The scan of the project's source, and whether there was source to scan (PATH may be a model
    file: a .pt2 file or a config.json, traced with nothing to scan)."""
    say("phase", "scanning source")
    if found.discovery is not None and found.discovery.traced and run.target.is_file():
        return Scanned(ScanOutcome(), NothingToCheck())
    # the findings come marked with what `opscan fix` rewrites (NOTE [fixable is what fix fixes])
    return Scanned(phases.scan(run.target, found.config, options.scan, index=run.index))


def trace_models(run: Run, found: Found, release: Release | None, options: RunOptions, phases: Phases,
                 say: Progress, on_error: Callable[[OpscanError], None] | None,
                 entered: entry_step.Entered | None = None) -> Traced:
    """The project's training command run first, when one was chosen (NOTE [the training command
    first]); then, unless it trained, each model traced in turn (those found with no configuration:
    NOTE [zero-configuration tries]). The Traced says which step its traces answer for.

    A model whose process failed, or that could not be built, is a trace that stopped plus a model
    not checked (or raises, without `on_error`); a TraceError means that model was not traced, and a
    missing dependency (no torch) that no model can be: the rest are not tried.
    """
    entered = entered or entry_step.Entered()
    ran = None
    if entered.chosen is not None and options.trace:
        say("trace", f"running the training command `{entry_step.shown_command(entered.chosen)}`")
        profile = release.profile() if release is not None else None
        ran = entry_step.run_chosen(entered, run.root, profile, options.limits, phases.command)
        tried, skipped = 0, ()
        while (following := entry_step.next_entry(entered, ran, run.root, tried)) is not None:
            entered, said = following   # NOTE [a command that cannot import here] in entry_step.py
            kept = tuple(n for n in ran.notes if not n.endswith("the model path follows"))   # the next runs instead
            tried, skipped = tried + 1, skipped + kept + (said,)
            say("trace", f"running the training command `{entry_step.shown_command(entered.chosen)}`")
            ran = entry_step.run_chosen(entered, run.root, profile, options.limits, phases.command)
        ran = replace(ran, notes=skipped + ran.notes)
        if ran.trained and ran.trace is not None and (found.discovery is not None or not found.models):
            return Traced((ran.trace,), notes=ran.notes + entry_step.others_note(entered),
                          step=entry_step.step_of((ran.trace,), (), entered, ran, found.config))
    if not found.config.models:   # NOTE [the model the command built] in opscan/trace/run/built_models.py
        discovery, discovered = entry_step.built_model_first(found.discovery, found.discovered, ran, entered,
                                                             run.index)
        found = replace(found, discovery=discovery, discovered=discovered)
    traced = _trace_models(run, found, release, options, phases, say, on_error)
    notes = (ran.notes if ran is not None else ()) + traced.notes + entry_step.others_note(entered)
    traces = traced.traces
    if ran is not None and ran.trace is not None and (ran.trained or (ran.trace.ops and not traces)):
        # the configured models beside the command's step; or nothing else traced: the run's ops kept
        traces = (ran.trace, *traces)
    step = entry_step.step_of(traces, found.models, entered, ran, found.config, options.script_command)
    return replace(traced, traces=traces, notes=notes, step=step)


def _trace_models(run: Run, found: Found, release: Release | None, options: RunOptions, phases: Phases,
                  say: Progress, on_error: Callable[[OpscanError], None] | None) -> Traced:
    models, discovery = found.models, found.discovery
    refused = tuple((c.target, c.note) for c in discovery.refused) if discovery else ()
    if not models:
        return Traced(unchecked=refused, ops_not_checked=(options.untraced if not options.trace else "")
                      or _no_model(discovery) or NO_MODEL, source_only=not options.trace)
    if not options.trace:
        return Traced(unchecked=refused, ops_not_checked=options.untraced, source_only=True,
                      notes=(f"{options.untraced}: the verdict covers the source only",))
    from opscan.targets.tries import ZeroConfig

    profile = release.profile() if release is not None else None
    tries = ZeroConfig(discovery)   # found, not configured: tried in turn (opscan/targets/discovery.py)
    traces: list[ModelTrace] = []
    unchecked = list(refused)
    notes: list[str] = []
    not_traced = ""
    missing = False   # a model's module missed modules not installed here: one remedy line (Verdict.remedy)
    for index, model in enumerate(models, 1):
        if tries.done():
            break
        say("trace", f"tracing {model.target} ({model.mode}) [{index}/{len(models)}]")
        trace = lambda model=model: phases.trace(model, run.root, profile, options.limits)   # noqa: E731
        try:
            if tries:
                attempt = tries.attempt(trace, model.target)
                notes.append(attempt.note)
                traces.extend((attempt.trace,) if attempt.trace is not None else ())
                continue
            traces.append(trace())
        except ModelProcessError as exc:   # hung, crashed or out of memory: exit 2, keep the rest
            if on_error is None:
                raise
            on_error(exc)
            unchecked.append((model.target, exc.reason))
            traces.append(ModelTrace(model.target, model.mode, "neuron", complete=False, stopped_at=str(exc)))
        except TraceError as exc:
            not_traced = str(exc)
            if isinstance(exc, MissingDependencyError):   # no model can be traced: stop trying
                unchecked.extend((m.target, exc.reason) for m in models[index - 1:])
                break
            unchecked.append((model.target, exc.reason))
        except TargetError as exc:
            if on_error is None:
                raise
            on_error(exc)
            missing = missing or isinstance(exc, MissingModulesError)
            unchecked.append((model.target, exc.reason))
            traces.append(ModelTrace(model.target, model.mode, "neuron", complete=False,
                                     stopped_at=f"the model could not be built: {exc}"))
        say("traced", model.target)
    if tries and not traces and not not_traced:
        # NOTE [zero-configuration tries]: one try that fails beside one that traced is a note (the
        # targets are opscan's guesses); when none could be built the ops were not checked, and the
        # gate says so as for any model given (exit 2 unless --allow-unchecked; issue 27).
        # Each failed try is then a "could not check" line of the verdict, so not a note as well
        # (the reason is said once).
        not_traced = f"no model of the repository could be built ({len(tries.failed)} tried)"
        unchecked.extend(tries.failed)
        notes = [a.note for a in tries.attempts if a.traced]
    return Traced(tuple(traces), tuple(unchecked), not_traced, tuple(notes), missing or tries.missing)


def require_something(run: Run, found: Found, scanned: ScanOutcome, traced: Traced) -> None:
    """A UsageError when a folder holds nothing to check: no source file, no model (configured or found)."""
    if scanned.files_scanned or traced.traces or found.models or not run.target.is_dir() \
            or run.narrowed or traced.unchecked:
        return
    no_model = _no_model(found.discovery)
    raise UsageError("nothing to check: no Python, notebook or C++/CUDA source file (after include/"
                     "exclude) and no model (looked for [[tool.opscan.models]], --model, a model "
                     "folder with config.json, a .pt2 file)"
                     + (f"; {no_model}" if no_model else ""), path=str(run.target))


def apply_baseline(run: Run, findings: tuple[Finding, ...] | list[Finding]) -> Kept:
    """The findings a baseline does not know (all of them without one), and how they compared."""
    if run.entries is None:
        return Kept(tuple(findings))
    entries = run.entries
    if run.narrowed:   # entries of files not scanned are not stale
        entries = tuple(e for e in entries if _within(run.root / e.path, run.narrowed))
    from opscan.assess import baseline as baselines

    applied = baselines.apply(findings, entries)
    status = BaselineStatus(
        path=relative_root(Path(run.baseline).resolve()), known=applied.known,
        stale=tuple(f"{e.path}:{e.line}: {e.rule} {e.message}" for e in applied.stale))
    return Kept(tuple(applied.new), status)


def draft_of(run: Run, found: Found, loaded: Loaded, scanned: Scanned, traced: Traced, kept: Kept) -> Draft:
    """The Draft the steps make together, for `assess`; the notes in the order the run made them."""
    root = run.root
    fired = {f.rule for f in kept.findings}
    traces = traced.traces
    return Draft(
        root=relative_root(root),
        tool_version=__version__,
        findings=tuple(sorted(kept.findings, key=Finding.sort_key)),
        traces=traces,
        backend=_backend_label(found.config.backend),
        files_scanned=scanned.outcome.files_scanned,
        notes=found.notes + loaded.notes + tuple(scanned.outcome.notes) + traced.notes,
        baseline=kept.baseline,
        hours_per_day=found.config.cost.hours_per_day,
        rules=tuple(sorted((r for r in scanned.outcome.rules if r.id in fired), key=lambda r: r.id)),
        project_sources=tuple(sorted({s.path for t in traces for u in t.ops for s in u.sources
                                      if (root / s.path).is_file()})) if traces else None,
        discovery=found.discovery,
        source=scanned.source,
        ops_not_checked=traced.ops_not_checked,
        unchecked=traced.unchecked,
        remedy=_remedy(root) if traced.missing else "",
        source_only=traced.source_only,
        step=traced.step,
    )


def _remedy(root: Path) -> str:
    """The one remedy line for models that missed modules not installed here."""
    from opscan.targets.absent import remedy
    return remedy(root)


def _discover(target: Path, trust_remote_code: bool, mode: str | None = None,
              search: bool = True, index: ProjectIndex | None = None
              ) -> tuple[Discovery | None, tuple[ModelConfig, ...]]:
    """(Discovery, the models to trace): a model folder or exported program at PATH is traced as if
    configured; otherwise (when `search`: runs that trace) the project's model candidates are read,
    never run, for the report and `opscan init` (NOTE [found beside the configuration])."""
    if not search and not _may_be_a_model(target):
        return None, ()
    from opscan.targets.discovery import call_site_table, candidates, direct, step_plans

    found = direct(target, relative_root(target), trust_remote_code=trust_remote_code)
    if found is None and not search:
        return None, ()
    if found is None:   # a repository: what builds with no configuration is tried (issue 24)
        root = target if target.is_dir() else target.parent
        index = index if index is not None else ProjectIndex(root)
        found = candidates(root, trust_remote_code=trust_remote_code, construct=True, index=index)
        found = _with_config_blocks(found)
        sites = call_site_table(index, found.traced)   # read here, handed to the child (NOTE [one project index])
        steps = step_plans(index, found.traced)         # the training script's step, read here too
        targets = [Target.parse(t) for t in found.traced]   # NOTE [targets parsed once]
        return found, tuple(ModelConfig(target=t, mode=mode or Mode.TRAIN, call_sites=sites
                                        if t.kind is TargetKind.REPO else (), step=steps.get(t)) for t in targets)
    found = _with_config_blocks(found)
    models = tuple(ModelConfig(target=t, mode=Mode.INFERENCE if t.kind is TargetKind.EXPORT else (mode or Mode.TRAIN),
                               trust_remote_code=trust_remote_code) for t in map(Target.parse, found.traced))
    return found, models


# NOTE [a source scan imports no targets]
# A warm `opscan scan` of transformers' source took ~0.3 s, of which ~0.15 s was importing modules,
# some of them for nothing: the model discovery (opscan/targets/discovery.py and the repository
# readers it imports, ~7 ms) for the one check of whether PATH itself is a model folder, the
# baseline reader with no baseline (~5 ms), and the child-process machinery (containment/process.py,
# the supervisor, Landlock, the allow-list, subprocess: ~10 ms) for the default Limits that every
# RunOptions carries. Now: `direct` is asked only when PATH could be a model (`_may_be_a_model`, a
# superset of what `direct` accepts: tests/pipeline/test_pipeline_source_only.py), the baseline
# is read where a run has one, Limits (and its defaults) live in containment/policy.py beside the
# Policy they hold, and the containment package loads its supervisor's, allow-list's and Landlock's
# names on first use (PEP 562). tests/test_architecture.py runs a whole `opscan scan` in a
# subprocess and names what must stay out of sys.modules.
def _may_be_a_model(target: Path) -> bool:
    """False when `direct` (opscan/targets/discovery.py) surely finds no model at `target`: not a
    `.pt2` or `config.json` file, nor a folder holding either (NOTE [a source scan imports no targets])."""
    if target.is_file():
        return target.suffix == ".pt2" or target.name == "config.json"
    try:
        return (target / "config.json").exists() or any(p.suffix == ".pt2" for p in target.iterdir())
    except OSError:
        return True   # let `direct` say what it says of a folder it cannot list


def _with_config_blocks(found):
    """`found` with what the reporters print of it (they read the report, never discovery): each
    candidate's [[tool.opscan.models]] block, as `opscan init` writes it, and the factory hint."""
    from opscan.targets.discovery import FACTORY_HINT, toml_lines

    return replace(found, config_blocks=tuple(toml_lines(c) for c in found.candidates), factory_hint=FACTORY_HINT)


def _without_project_code(discovery: Discovery, config: Config, models: tuple[ModelConfig, ...],
                          trust_remote_code: bool) -> Found:
    """The models found, without those whose building runs project code (`--no-project-code`), and a note on them."""
    from opscan.targets.project_code import runs_project_code

    dropped = [t for t in discovery.traced if runs_project_code(t, trust_remote_code)]
    if not dropped:
        return Found(config, discovery, discovered=models)
    more = f" and {len(dropped) - 3} more" if len(dropped) > 3 else ""
    note = (f"--no-project-code: {len(dropped)} model(s) found whose building runs the project's code "
            f"were not built ({', '.join(dropped[:3])}{more})")
    kept = tuple(t for t in discovery.traced if t not in dropped)
    return Found(config, replace(discovery, traced=kept), (note,), tuple(m for m in models if m.target in kept))


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
    """`--model TARGET` replaces the configured models; `--mode` applies to every model. A TARGET
    that is none of the target forms is a one-line UsageError naming it (NOTE [targets parsed once])."""
    models = config.models
    if targets:
        try:
            models = tuple(ModelConfig(target=Target.parse(t)) for t in targets)
        except ValueError as exc:
            raise UsageError(f"--model: {exc}") from None
    if mode:
        models = tuple(replace(m, mode=mode) for m in models)
    return replace(config, models=models)


__all__ = ["OpscanError", "Phases", "RunOptions", "ScanOptions", "ScanOutcome", "analyse", "with_models"]
