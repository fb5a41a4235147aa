"""The default phase functions of a run, adapting the scan, db and trace packages for opscan.pipeline.analyse.

Each adapter imports its package lazily: `opscan PATH` without torch still scans and checks the
source, and says that tracing was skipped.
"""

from __future__ import annotations

import os
import dataclasses
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opscan.config import Config, ModelConfig
from opscan.errors import MissingDependencyError, TraceError
from opscan.pipeline.options import ScanOptions
from opscan.records import DeviceProfile, Finding, ModelTrace, RuleInfo, ScanFacts, Shrink, Target, TargetKind

if TYPE_CHECKING:
    from opscan.containment.process import Limits


@dataclass(frozen=True)
class ScanOutcome:
    """What the source-scan phase hands on."""

    findings: tuple[Finding, ...] = ()
    files_scanned: int = 0
    rules: tuple[RuleInfo, ...] = ()
    notes: tuple[str, ...] = ()
    facts: ScanFacts = ScanFacts()       # what the scan learnt beside its findings (opscan/scan/facts.py)
    # the RuleSet the scan ran (the fixable mark plans with it); None: none
    ruleset: object = field(default=None, compare=False, repr=False)


def rule_info(rule) -> RuleInfo:
    """A scan Rule as reporters see it."""
    return RuleInfo(id=rule.id, name=rule.name, severity=rule.severity, category=rule.category,
                    what=rule.what, why=rule.why, fix=rule.fix_doc or rule.fix)


def scan(target: Path, config: Config, options: ScanOptions | None = None, *, index=None) -> ScanOutcome:
    """The source scan of `target` under `config` (rules, include/exclude, unused suppressions);
    `options.paths` narrows it to some files or folders under the target (paths stay relative to it).
    `index`: the run's project index (opscan/index), whose reads and parses the scan shares."""
    from opscan.scan.tree import scan_paths
    from opscan.scan.files import discover
    from opscan.scan.rules import load_rules
    from opscan.scan.workers import default_jobs

    options = options or ScanOptions()
    target = Path(target).resolve()
    root = target if target.is_dir() else target.parent
    folder = None
    if options.cache and not os.environ.get("OPSCAN_NO_CACHE"):   # the scan cache (docs/benchmarks.md, "Cache")
        from opscan.scan.cache import default_cache_dir

        folder = default_cache_dir(options.cache_dir)
    rules = load_rules(extra_dirs=config.extra_rules, select=config.select, ignore=config.ignore, memo_dir=folder)
    paths = [Path(p).resolve() for p in options.paths] or None
    if config.include:
        relpaths = discover(root, paths or [target], config.exclude)
        paths = [root / rel for rel in relpaths if _included(rel, config.include, root, config.root)]
        if not paths:
            return ScanOutcome(rules=tuple(rule_info(r) for r in rules), ruleset=rules,
                               notes=(f"no file under {root} matches include = {list(config.include)}",))
    elif target.is_file() and paths is None:
        paths = [target]
    cache = probe = None
    if folder is not None:
        from opscan.scan.cache import ResultCache, rules_salt, scan_salt
        from opscan.scan.probe_cache import CachedProbe

        cache = ResultCache(folder, scan_salt(rules_salt(rules)))
        probe = CachedProbe(folder) if options.check_fixes else None
    elif options.check_fixes:
        from opscan.scan.fixes import TorchProbe

        probe = TorchProbe()
    result = scan_paths(root, paths, rules=rules, exclude=config.exclude,
                        jobs=default_jobs() if options.jobs is None else options.jobs,
                        check_fixes=options.check_fixes, cache=cache, probe=probe,
                        deps=dependency_context(config, options.environment), index=index,
                        enrich=fixable_mark() if options.mark_fixable else None, unused_suppressions=True)
    if cache is not None and probe is not None:   # a CachedProbe: remember new answers
        probe.save()
    findings = result.findings   # OPS003 included, when selected (rules/unused-suppression.yaml)
    if config.problems:   # NOTE [unreadable config files] in opscan/config/load.py
        from opscan.scan.config_findings import config_findings, without_duplicates

        located = [(os.path.relpath(p.path, root).replace(os.sep, "/"), p) for p in config.problems]
        findings = without_duplicates(findings, config_findings(located, rules))
    infos = tuple(rule_info(r) for r in rules)
    return ScanOutcome(findings=findings, files_scanned=result.files_scanned, rules=infos, notes=result.notes,
                       facts=result.facts, ruleset=rules)


def fixable_mark():
    """The scan's enrichment that marks what `opscan fix` rewrites (fix/preview.py); the scan's fix
    check then unmarks what the installed torch cannot rewrite (scan/collect.py `collect`)."""
    from opscan.fix.preview import FixableMark

    return FixableMark()


def dependency_context(config: Config, environment: str | None = None):
    """What the dependency rules judge manifests against (scan/dependencies.py DependencyContext):
    the torch pairing of the selected release (its file's head, opscan/pipeline/pairing.py: the database is
    not loaded), the CUDA-only library catalog's distributions, and with `environment` the torch
    and CUDA requirements of the distributions installed there (opscan/pipeline/environment.py).

    Raises:
        DatabaseError: the selected release does not exist.
        UsageError: `environment` is no Python interpreter opscan can read.
    """
    from opscan.pipeline.pairing import release_head
    from opscan.plan.libraries import shipped
    from opscan.scan.dependencies import DependencyContext, library_patterns

    head = release_head(config.backend or None, config.db)
    installed: tuple = ()
    installed_cuda: tuple = ()
    where = ""
    if environment:
        from opscan.pipeline.environment import installed_metadata

        installed, installed_cuda, where = installed_metadata(environment)
    catalog = shipped()
    return DependencyContext(release=head.spec, torch=head.torch, pairs=head.describe(),
                             libraries=library_patterns(catalog.libraries), installed=installed,
                             installed_cuda=installed_cuda, environment=where,
                             cpu_since=tuple(sorted((lib.packages[0], lib.cpu_since.version)
                                                    for lib in catalog.libraries if lib.cpu_since)),
                             cuda_extras=tuple(sorted((extra.distribution, extra.extras)
                                                      for extra in catalog.cuda_extras)))


def _included(rel: str, patterns: tuple[str, ...], root: Path, config_root: Path) -> bool:
    """`include` globs match the path relative to the scanned root or to the config file's folder."""
    candidates = {rel}
    try:
        candidates.add((root / rel).resolve().relative_to(config_root).as_posix())
    except ValueError:
        pass
    for pattern in patterns:
        for path in candidates:
            if fnmatchcase(path, pattern) or (pattern.startswith("**/") and fnmatchcase(path, pattern[3:])):
                return True
    return False


def database(config: Config):
    """The chosen release of the coverage database (an opscan.db Release; `config.db` replaces the
    shipped folder). None only from a replaced phase: then every traced op is unknown."""
    from opscan.db import load_release

    return load_release(config.backend or None, config.db)


def database_notes(release, config: Config) -> tuple[str, ...]:
    """The run note about a release file the user chose (`config.db`) that loaded with warnings."""
    # One line here; the list itself belongs to the db commands. The shipped files' warnings
    # (names the installed torch lacks) are expected and documented in coverage_db/README.md.
    if release is None or not release.warnings or config.db is None:
        return ()
    return (f"coverage database {release.spec}: {len(release.warnings)} warning(s) (`opscan db validate`), "
            f"e.g. {release.warnings[0]}",)


def tracer_options(model: ModelConfig, root: Path | None, profile: DeviceProfile | None,
                   **extra: Any) -> dict[str, Any]:
    """The keyword options of `opscan.targets.loader.trace_target` for one configured model: the one
    translation of a ModelConfig (`opscan PATH`, `opscan trace` and every zoo model use it). `root`:
    the project the model belongs to (None for the zoo's models, which belong to none). `extra`:
    options that are not part of a model's configuration (device, fsdp, the zoo tracer's fill_unset)."""
    options: dict[str, Any] = dict(
        target=str(model.target), mode=model.mode, device="neuron", profile=profile, optimizer=model.optimizer,
        optimizer_impl=model.optimizer_impl or None, amp=model.amp or None, inputs=tuple(model.inputs),
        batch=model.batch, seq_len=model.seq_len, project_root=str(root) if root is not None else None)
    if model.trust_remote_code:
        options["trust_remote_code"] = True
    if model.target.kind is TargetKind.REPO:   # NOTE [GPU-only kernel libraries] in opscan/targets/absent.py
        options["gpu_only"] = cuda_only_packages()
    if model.call_sites:   # read in this process (NOTE [one project index]): the child does not read them again
        options["call_sites"] = model.call_sites
    if model.step is not None:   # the training script's step, read in this process (opscan/targets/train_step.py)
        options["step"] = model.step
    if model.built_with:   # NOTE [the model the command built] in opscan/trace/run/built_models.py
        options["built_with"] = model.built_with
    return {**options, **extra}


def cuda_only_packages() -> tuple[str, ...]:
    """The top-level packages of the catalog's CUDA-only libraries (opscan/plan/libraries.yaml), the
    one list of them: a `repo:` build stands them in when missing (the child cannot read the plan)."""
    from opscan.plan.libraries import shipped

    return tuple(sorted({package for library in shipped().libraries for package in library.packages}))


def command(entry, root: Path, profile: DeviceProfile | None, limits: Limits | None):
    """Run a training command (a records.TrainingEntry) for one optimizer step, as `opscan run` runs
    it, in a child under `limits` (None: in this process): (ModelTrace, notes). NOTE [the training
    command first] in opscan/pipeline/entry_step.py."""
    try:
        from opscan.trace import INSTALL_HINT  # noqa: F401 - torch is installed (the run happens in a child)
    except TraceError:
        raise
    except ImportError as exc:  # torch missing or broken
        raise MissingDependencyError(f"tracing needs PyTorch, which is not installed ({exc})", "torch") from exc
    from opscan.pipeline.entry_step import run_command

    return run_command(entry, root, profile, limits)


def trace(model: ModelConfig, root: Path, profile: DeviceProfile | None, limits: Limits | None,
          **extra: Any) -> ModelTrace:
    """Trace one configured model on the imitated `neuron` device, in a child process under
    `limits` (docs/reliability.md); `limits` None traces in this process (`--in-process`).
    `extra`: tracer options that are not part of a model's configuration (`opscan trace`'s
    `--device`, `--fsdp`, `--steps`: `tracer_options`)."""
    try:
        from opscan.trace import INSTALL_HINT  # noqa: F401 - torch is installed (the trace runs in a child)
    except TraceError:
        raise
    except ImportError as exc:  # torch missing or broken
        raise MissingDependencyError(f"tracing needs PyTorch, which is not installed ({exc})", "torch") from exc
    from opscan.containment.outcome import trace_isolated

    return at_real_size(trace_isolated(tracer_options(model, root, profile, **extra), limits), model, root)


def at_real_size(trace: ModelTrace, model: ModelConfig, root: Path | None = None) -> ModelTrace:
    """`trace` with the real step's size the model's configuration states (`real-layers`,
    `real-batch`, `real-seq-len`, `real-hidden`) written into its shrink record, so the assessment
    scales the cost of CPU fallbacks back to it (NOTE [fallback scaling] in opscan/assess/assessment.py). The
    traced batch and sequence length are the configured `batch` / `seq-len` where the trace did not
    record them; a size stated for what the trace cannot measure (no layer stack found, no traced
    batch) is left unscaled, and the fallback's `scaled_by` says what was scaled. Without
    `real-hidden`, the real width is the `hidden_size` of a config.json beside the target's file
    (a model folder's own config, when the factory builds a smaller one)."""
    changes: dict[str, Any] = {}
    if model.real_hidden:
        changes.update(real_hidden=model.real_hidden, hidden_from="--real-hidden")
    else:
        width = folder_width(model.target, root)
        if width:
            changes.update(real_hidden=width, hidden_from="config.json")
    if not (model.real_layers or model.real_batch or model.real_seq_len or changes):
        return trace
    shrink = trace.shrink or Shrink()
    if model.real_layers and shrink.layers:
        changes["real_layers"] = model.real_layers
    if model.real_batch:
        changes.update(real_batch=model.real_batch, batch=shrink.batch or model.batch or 0)
    if model.real_seq_len:
        changes.update(real_seq_len=model.real_seq_len, seq_len=shrink.seq_len or model.seq_len or 0)
    return dataclasses.replace(trace, shrink=dataclasses.replace(shrink, **changes))


def folder_width(target: Target, root: Path | None) -> int:
    """The width (`hidden_size`, `n_embd`, `d_model`) of the config.json beside a `file.py:NAME`
    target's file, or 0 (no such file, no width in it, not a file target)."""
    import json

    if not target.is_file:
        return 0
    path = target.where
    here = Path(path) if Path(path).is_absolute() or root is None else Path(root) / path
    try:
        data = json.loads((here.parent / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    for key in ("hidden_size", "n_embd", "d_model"):
        value = data.get(key) if isinstance(data, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0
