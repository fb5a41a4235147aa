"""Pins the package's shape: the root's modules, a package per phase, the import direction between
stages, and the CI/README contract."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "opscan"


def _opscan_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.startswith("opscan"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("opscan"):
            names.add(node.module)
    return names


def _stage_files(stage: str) -> list[Path]:
    target = PKG / stage
    return sorted(target.rglob("*.py")) if target.is_dir() else [PKG / f"{stage}.py"]


@pytest.mark.parametrize("stage,forbidden", [
    ("scan", ("opscan.trace", "opscan.db", "opscan.plan", "opscan.reporters", "opscan.pipeline", "opscan.cli")),
    # trace/ is the engine: the targets it traces are built above it (opscan/targets/), for the zoo above that.
    ("trace", ("opscan.scan", "opscan.db", "opscan.plan", "opscan.reporters", "opscan.pipeline", "opscan.cli",
               "opscan.targets", "opscan.zoo")),
    ("db", ("opscan.scan", "opscan.trace", "opscan.plan", "opscan.reporters", "opscan.pipeline", "opscan.cli")),
    # Reporters read the finished report (its verdict included); they never plan or judge.
    ("reporters", ("opscan.scan", "opscan.trace", "opscan.db", "opscan.pipeline", "opscan.cli", "opscan.plan",
                   "opscan.assess.verdict", "opscan.assess.gate")),
    # config/load.py reads data; the release and the rule selectors are checked by its callers (config/checks.py).
    ("config/load", ("opscan.scan", "opscan.db", "opscan.trace", "opscan.targets", "opscan.pipeline",
                     "opscan.commands", "opscan.config.checks")),
    # The plan owns its cost model (plan/cost.py); config reads it from there, never the reverse.
    ("plan", ("opscan.config", "opscan.scan", "opscan.trace", "opscan.db", "opscan.reporters", "opscan.pipeline",
              "opscan.cli")),
    # The project index (opscan/index/) is read by the scan and by targets/: it imports neither.
    ("index", ("opscan.scan", "opscan.targets", "opscan.trace", "opscan.db", "opscan.plan", "opscan.reporters",
               "opscan.pipeline", "opscan.cli", "opscan.zoo", "opscan.commands")),
    ("zoo/render", ("opscan.plan", "opscan.assess.verdict", "opscan.assess.gate", "opscan.scan", "opscan.db")),
    # targets/ build models for the engine below them; the zoo's orchestration and the commands are above.
    ("targets", ("opscan.zoo", "opscan.scan", "opscan.db", "opscan.plan", "opscan.reporters", "opscan.pipeline",
                 "opscan.cli", "opscan.commands", "opscan.containment.process", "opscan.containment.outcome")),
])
def test_stages_do_not_import_each_other(stage, forbidden):
    for path in _stage_files(stage):
        bad = {name for name in _opscan_imports(path) if name.startswith(forbidden)}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", readme, flags=re.S)
    assert blocks, "README has no quick start"
    commands = [line for line in blocks[0].splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2, "the quick start is two commands"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1] in ci


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> nx.DiGraph:
    """opscan's modules and their imports, at any level (function-level imports included).

    `import opscan.x.y` is an edge to opscan.x.y. `from opscan.x import y` is an edge to the module
    opscan.x.y when y is one, else to opscan.x (the module, or the package's __init__, defining y).
    A package's __init__ runs before any of its modules whatever the import's form, so that implicit
    step is no edge (else `from opscan.trace import device` in trace/tracer.py and the lazy import
    of runner in trace/__init__.py would make a cycle no import order can trip on). On the code
    before issue 23 this finds exactly the issue's four cycles.
    """
    modules = {_module_name(path): path for path in PKG.rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:   # relative: from the package, up level - 1
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                subs = [f"{base}.{alias.name}" for alias in node.names]
                targets = [sub for sub in subs if sub in modules]
                if len(targets) < len(subs):
                    targets.append(base)
            else:
                continue
            graph.add_edges_from((name, target) for target in targets if target in modules and target != name)
    return graph


# No import cycle is left (issue 23 removed the last two: scan.matchers <-> scan.rules and
# db.lookup <-> db.release); none may appear.
KNOWN_CYCLES: frozenset[str] = frozenset()


def test_no_import_cycles():
    cycles = {" -> ".join(_rotated(cycle)) for cycle in nx.simple_cycles(import_graph())}
    assert cycles <= KNOWN_CYCLES, sorted(cycles - KNOWN_CYCLES)
    assert not KNOWN_CYCLES - cycles, f"gone, drop from KNOWN_CYCLES: {sorted(KNOWN_CYCLES - cycles)}"


def _rotated(cycle: list[str]) -> list[str]:
    """A cycle written from its smallest module, back to it: one text per cycle."""
    start = cycle.index(min(cycle))
    ordered = cycle[start:] + cycle[:start]
    return ordered + [ordered[0]]


@pytest.mark.slow
def test_the_import_graph_sees_known_edges():
    graph = import_graph()
    assert graph.has_edge("opscan.targets.loader", "opscan.trace.tracer")      # from opscan.trace import tracer
    assert graph.has_edge("opscan.targets.loader", "opscan.trace.spec")        # from opscan.trace.spec import Built
    assert graph.has_edge("opscan.zoo.results", "opscan.targets.hf.upstream")  # from opscan.targets.hf import upstream
    assert graph.has_edge("opscan.zoo.tracing", "opscan.targets.hf.repair")    # a function-level import
    assert graph.has_edge("opscan.targets.discovery", "opscan.targets.folders")
    assert graph.has_edge("opscan.targets", "opscan.targets.folders")          # a package's __init__ is a module
    assert not graph.has_edge("opscan.trace.tracer", "opscan.trace")            # the implicit package step


def test_targets_package_and_folders_import_nothing_heavy():
    """targets/discovery.py reads config.json through targets/folders.py with no torch installed: the package's
    __init__ and folders.py import (at module level) only the standard library and opscan's errors."""
    for path in (PKG / "targets" / "__init__.py", PKG / "targets" / "folders.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
        names |= {node.module for node in tree.body if isinstance(node, ast.ImportFrom) and node.module}
        assert not {name.split(".")[0] for name in names} & {"torch", "transformers", "timm", "numpy"}, path
        assert {name for name in names if name.startswith("opscan")} <= {"opscan.errors",
                                                                         "opscan.targets.folders"}, path


def test_the_parent_of_a_trace_does_not_import_torch_or_the_targets_loader():
    """`opscan PATH` traces in a child (opscan/containment/process.py): the parent checks that torch is there
    without importing it, and builds nothing (opscan/targets/loader.py is the child's)."""
    code = """
import json, sys
from pathlib import Path
import opscan.containment.outcome
from opscan.pipeline import phases
from opscan.config import ModelConfig
opscan.containment.outcome.trace_isolated = lambda options, limits: options["target"]
print(json.dumps([phases.trace(ModelConfig(target="m.py:build"), Path("."), None, None),
                  "torch" in sys.modules, "opscan.targets.loader" in sys.modules]))
"""
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stdout) == ["m.py:build", False, False]


def test_one_module_assesses_and_one_isolates():
    """Coverage, caveats, tasks and the verdict are computed in opscan/assess/assessment.py only (for
    `opscan PATH`, `opscan trace` and every zoo row); opscan/containment/process.py only runs a child
    process, and the containment's mechanism (policy, namespaces, Landlock, supervisor, the child's
    side, its codec, its starts and fork server) is stdlib."""
    calls = re.compile(r"(?<![\w.])(?:judge|build_tasks|op_caveats|annotate)\(")
    callers = sorted(path.relative_to(PKG).as_posix() for path in PKG.rglob("*.py")
                     if path.name not in ("verdict.py",) and path.parent.name not in ("plan",)
                     and any(not line.lstrip().startswith(("def ", "#", "`")) and calls.search(line)
                             for line in path.read_text(encoding="utf-8").splitlines()))
    assert callers == ["assess/assessment.py", "db/caveats.py"]   # db/caveats.py: op_caveats for loose usages
    assert {i for i in _opscan_imports(PKG / "containment" / "process.py")
            if not i.startswith("opscan.containment.")} <= {"opscan", "opscan.errors", "opscan.containment"}
    for name in ("policy", "namespaces", "rootfs", "landlock", "seccomp", "limits", "cgroup", "supervisor",
                 "interpreter", "child", "children", "codec", "forkserver"):
        # stdlib; records for one line, errors for the child's exceptions
        imports = _opscan_imports(PKG / "containment" / f"{name}.py")
        assert {i for i in imports if not i.startswith("opscan.containment.")} <= {"opscan.records", "opscan",
                                                                                 "opscan.containment"}, name
    imports = _opscan_imports(PKG / "containment" / "allowlist.py")   # and where opscan's data is
    assert {i for i in imports if not _within(i, ("opscan.containment",))} <= {"opscan.resources"}


# --- public seams (issue 37) --------------------------------------------------------------------------

def _private_names_used_across_modules() -> list[str]:
    """`from opscan.x import _name` and `x._name` (x an opscan module bound by an import) in a module
    other than opscan.x: a private name of another module. Dunders are not private names."""
    modules = {_module_name(path): path for path in PKG.rglob("*.py")}
    found = []
    for name, path in sorted(modules.items()):
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound: dict[str, str] = {}   # local name -> the opscan module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                if not base.startswith("opscan"):
                    continue
                for alias in node.names:
                    private = alias.name.startswith("_") and not alias.name.startswith("__")
                    if private and base != name:
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {base} import {alias.name}")
                    if f"{base}.{alias.name}" in modules:
                        bound[alias.asname or alias.name] = f"{base}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("opscan"):
                        bound[alias.asname or alias.name.split(".")[0]] = alias.asname and alias.name or "opscan"
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
                continue
            parts, value = [], node.value
            while isinstance(value, ast.Attribute):
                parts.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in bound:
                owner = ".".join([bound[value.id], *reversed(parts)])
                if owner in modules and owner != name:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {owner}.{node.attr}")
    return found


@pytest.mark.slow
def test_no_module_uses_another_modules_private_names():
    """A name with a leading underscore is its module's own; what another module needs is public."""
    assert _private_names_used_across_modules() == []


def test_the_private_name_check_sees_both_forms(tmp_path, monkeypatch):
    """The check finds `from opscan.x import _y` and `x._y` (x imported as a module), not `self._y`."""
    package = tmp_path / "opscan"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "own.py").write_text("def _hidden():\n    pass\n\n\ndef shown():\n    return _hidden()\n")
    (package / "user.py").write_text("from opscan.sub import own\nfrom opscan.sub.own import _hidden, shown\n"
                                     "import opscan.sub.own as alias\n\n\nclass A:\n    def f(self):\n"
                                     "        return self._x, own._hidden(), alias._hidden, shown\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PKG", package)
    assert _private_names_used_across_modules() == [
        "opscan/user.py:2: from opscan.sub.own import _hidden",
        "opscan/user.py:8: opscan.sub.own._hidden",
        "opscan/user.py:8: opscan.sub.own._hidden",
    ]


def test_reporters_read_the_report_not_the_analysis():
    """A reporter imports the records, the errors, other reporters and the baseline's fingerprints
    (SARIF's partialFingerprints) only: nothing that analyses, discovers, traces or judges."""
    allowed = ("opscan.records", "opscan.errors", "opscan.reporters", "opscan.assess.baseline")
    for path in _stage_files("reporters"):
        bad = {name for name in _opscan_imports(path) if not name.startswith(allowed)}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


@pytest.mark.slow
def test_the_run_mode_has_one_public_face():
    """opscan run's machinery lives in opscan/trace/run/: the engine (the rest of trace/) never imports
    it, and outside it only its package (opscan.trace.run: run_script, ...) is imported."""
    graph = import_graph()
    run_modules = {name for name in graph if name.startswith("opscan.trace.run.")}
    assert {"opscan.trace.run.script", "opscan.trace.run.redirect", "opscan.trace.run.run_mode"} <= run_modules
    for name in graph:
        inside = name == "opscan.trace.run" or name in run_modules
        for target in graph.successors(name):
            if target in run_modules:
                assert inside, f"{name} imports {target}: use the public opscan.trace.run"
            if target == "opscan.trace.run" and name.startswith("opscan.trace") and not inside:
                raise AssertionError(f"the engine's {name} imports the run mode")


def test_one_definition_of_each_shared_flag():
    """--backend and --db are added by commands/flags.py only, so they mean the same in every command."""
    for path in sorted((PKG / "commands").glob("*.py")):
        if path.name == "flags.py":
            continue
        text = path.read_text(encoding="utf-8")
        for flag in ("--backend", "--db"):
            assert f'add_argument("{flag}"' not in text, f"{path.relative_to(ROOT)} declares {flag} itself"


def test_one_writer_of_command_output():
    """A command's report (or table, or checklist) goes to stdout or --output through
    commands/flags.py `render_report` / `write_output` only: atomic, the same error line everywhere."""
    edits_files = {"init.py": "adds [[tool.opscan.models]] to pyproject.toml", "rules.py": "regenerates rule docs",
                   "replay.py": "keeps a scan's record in the cache (NOTE [report replay]), not a report"}
    for path in sorted((PKG / "commands").glob("*.py")):
        if path.name == "flags.py":
            continue
        text = path.read_text(encoding="utf-8")
        assert "opscan.reporters" not in _opscan_imports(path), f"{path.name} renders a report itself"
        assert "atomic_open" not in text, f"{path.name} writes its output itself"
        assert "atomic_write" not in text or path.name in edits_files, f"{path.name} writes its output itself"


def test_the_scan_command_loads_no_child_process_machinery():
    """`opscan scan` (the pre-commit hook) shares commands/flags.py with the commands that run model
    code; building its parser imports neither opscan/containment/ nor multiprocessing (start-up)."""
    import json
    import subprocess

    code = ("import json, sys\nfrom opscan.cli import build_parser\nbuild_parser('scan')\n"
            "print(json.dumps([m in sys.modules for m in ('opscan.commands.flags', 'opscan.containment.process', "
            "'opscan.containment', 'multiprocessing')]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stdout) == [True, False, False, False]


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["terminal", "json"])
def test_a_source_scan_imports_no_model_or_child_machinery(tmp_path: Path, fmt: str) -> None:
    """A whole `opscan scan` of a small project (findings, a requirements file, its cache written then
    read) imports nothing of what finds, builds, traces or isolates models: no opscan.targets,
    opscan.trace, opscan.db, opscan.zoo, no containment beyond the Limits it carries (policy.py);
    warm, with one job, no multiprocessing either (NOTE [a source scan imports no targets] in
    pipeline/analyse.py)."""
    import json
    import subprocess

    project = tmp_path / "proj"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "model.py").write_text("import torch\nx = torch.zeros(2).cuda()\n"
                                              "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n")
    (project / "requirements.txt").write_text("torch==2.4.0\nflash-attn\n")
    code = ("import io, json, sys, contextlib\nfrom opscan import cli\nout = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            f"    code = cli.main(['scan', {str(project)!r}, '--format', {fmt!r}, '--jobs', '1', '--cache-dir', "
            f"{str(tmp_path / 'cache')!r}])\n"
            "print(json.dumps([code, len(out.getvalue()) > 0, sorted(m for m in sys.modules if m.startswith(("
            "'opscan.targets', 'opscan.trace', 'opscan.db', 'opscan.zoo', 'opscan.containment.', 'multiprocessing'))"
            ")]))")
    import os
    import shutil
    import time

    then = time.time() - 30   # older than the racy window, so that the last run may replay
    for path in [project, *project.rglob("*")]:
        os.utime(path, (then, then))
    for run in ("cold", "warm", "replayed"):
        if run == "warm":   # the per-file cache path: the replay recorded by the cold run put aside
            shutil.rmtree(tmp_path / "cache" / "replay")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
        exit_code, printed, loaded = json.loads(done.stdout.splitlines()[-1])
        assert exit_code == 1 and printed, (run, done.stdout, done.stderr)     # the .cuda() call blocks
        if run == "cold":   # the fix check's first question imports torch (and torch multiprocessing)
            loaded = [m for m in loaded if not m.startswith("multiprocessing")]
        # a replayed run (NOTE [report replay] in commands/replay.py) loads not even the scan's Limits
        assert loaded == ([] if run == "replayed" else ["opscan.containment.policy"]), run


# --- the layout (issue 45) ----------------------------------------------------------------------------

# The root holds entry points and foundations only; every other module is in the package of its phase
# (docs/architecture.md, "Where a new module goes").
ROOT_MODULES = frozenset({"__init__", "__main__", "cli", "errors", "resources", "fsutil", "strict_yaml"})
PHASE_PACKAGES = ("records", "config", "index", "scan", "targets", "trace", "containment", "db", "plan", "assess",
                  "pipeline", "reporters", "commands", "fix", "workflow", "zoo")
# Who may import the pipeline: the commands, and the orchestrators that run its steps (issue 45: the zoo
# and `opscan fix` call the pipeline's steps instead of rebuilding them).
PIPELINE_USERS = ("opscan.cli", "opscan.__main__", "opscan.commands", "opscan.pipeline", "opscan.zoo", "opscan.fix")
# The stages below the pipeline: they never import it, the commands, nor the orchestrators above them.
BELOW_PIPELINE = ("opscan.records", "opscan.errors", "opscan.config", "opscan.index", "opscan.scan", "opscan.targets",
                  "opscan.trace", "opscan.containment", "opscan.db", "opscan.plan", "opscan.assess",
                  "opscan.reporters")
ABOVE_THEM = ("opscan.cli", "opscan.__main__", "opscan.commands", "opscan.pipeline", "opscan.zoo", "opscan.workflow")
# containment/ runs project code contained: it reads records and errors, never the stages that analyse.
# outcome.py names the child's trace function and says what project code built the model (targets/);
# allowlist.py puts opscan's own data (the resources module finds it) in the child's files.
CONTAINMENT_EXCEPTIONS = frozenset({("opscan.containment.outcome", "opscan.targets.loader"),
                                    ("opscan.containment.outcome", "opscan.targets.project_code"),
                                    ("opscan.containment.allowlist", "opscan.resources")})


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def layout_problems() -> list[str]:
    """Modules at the root beyond ROOT_MODULES, and phase packages that are missing."""
    extra = sorted({path.stem for path in PKG.glob("*.py")} - ROOT_MODULES)
    missing = [name for name in PHASE_PACKAGES if not (PKG / name / "__init__.py").is_file()]
    return [f"opscan/{name}.py: at the root (move it into its phase's package)" for name in extra] + \
        [f"opscan/{name}/: no such package" for name in missing]


def direction_problems() -> list[str]:
    """Imports against the one direction: commands -> pipeline -> {config, scan, trace, db, plan, assess, ...}
    -> {records, errors}, at any level (function-level imports included)."""
    found = []
    for importer, imported in sorted(import_graph().edges):
        if _within(importer, ("opscan.records",)) and not _within(imported, ("opscan.records",)):
            found.append(f"{importer} -> {imported}: records import nothing of opscan but records")
        elif importer == "opscan.errors":
            found.append(f"{importer} -> {imported}: errors import nothing of opscan")
        elif _within(importer, ("opscan.containment",)) and not _within(
                imported, ("opscan.containment", "opscan.records", "opscan.errors")) and imported != "opscan" \
                and (importer, imported) not in CONTAINMENT_EXCEPTIONS:
            found.append(f"{importer} -> {imported}: containment reads records and errors only")
        elif _within(importer, BELOW_PIPELINE) and _within(imported, ABOVE_THEM):
            found.append(f"{importer} -> {imported}: a stage imports what stands above it")
        elif _within(imported, ("opscan.pipeline",)) and not _within(importer, PIPELINE_USERS):
            found.append(f"{importer} -> {imported}: only the commands and the orchestrators run the pipeline")
        elif _within(imported, ("opscan.commands", "opscan.cli")) and not _within(
                importer, ("opscan.commands", "opscan.cli", "opscan.__main__")):
            found.append(f"{importer} -> {imported}: nothing imports the commands")
    return found


def test_the_root_keeps_entry_points_and_foundations_and_each_phase_has_its_package():
    assert layout_problems() == []


@pytest.mark.slow
def test_imports_go_one_way():
    assert direction_problems() == []


def test_the_layout_checks_find_planted_violations(tmp_path, monkeypatch):
    """Each check fails on a planted violation: a module at the root, a missing phase package, records
    importing the scan, containment importing the trace, the scan importing the pipeline, the
    trace importing the zoo, the plan importing a command."""
    package = tmp_path / "opscan"
    package.mkdir()
    for name in ROOT_MODULES:
        (package / f"{name}.py").write_text("")
    for name in PHASE_PACKAGES:
        if name != "workflow":
            (package / name).mkdir()
            (package / name / "__init__.py").write_text("")
    (package / "helpers.py").write_text("")
    (package / "records" / "report.py").write_text("from opscan.scan import engine\n")
    (package / "scan" / "engine.py").write_text("def run():\n    from opscan.pipeline import phases\n")
    (package / "pipeline" / "phases.py").write_text("")
    (package / "containment" / "process.py").write_text("import opscan.trace.tracer\n")
    (package / "trace" / "tracer.py").write_text("from opscan.zoo import jobs\n")
    (package / "zoo" / "jobs.py").write_text("from opscan.pipeline import phases\n")   # allowed: an orchestrator
    (package / "plan" / "cost.py").write_text("from opscan.commands.flags import codes\n")
    (package / "commands" / "flags.py").write_text("from opscan.pipeline import phases\n")   # allowed
    (package / "containment" / "outcome.py").write_text("from opscan.targets import loader\n")   # allowed
    (package / "targets" / "loader.py").write_text("")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PKG", package)
    assert layout_problems() == ["opscan/helpers.py: at the root (move it into its phase's package)",
                                 "opscan/workflow/: no such package"]
    assert [line.split(":")[0] for line in direction_problems()] == [
        "opscan.containment.process -> opscan.trace.tracer",
        "opscan.plan.cost -> opscan.commands.flags",
        "opscan.records.report -> opscan.scan.engine",
        "opscan.scan.engine -> opscan.pipeline.phases",
        "opscan.trace.tracer -> opscan.zoo.jobs",
    ]


# --- rooms with one job each (issue 45) ------------------------------------------------------------

# The big rooms split by job: each job's names are defined in its module and in no other module of
# its package (scan/engine.py held the first seven, targets/construct.py the shrinking and variants,
# trace/signatures.py the forecast, pipeline/analyse.py and phases.py the options).
JOBS = {
    "scan/file_scan.py": {"scan_source", "scan_file", "scan_manifest"},          # the per-file scan
    "scan/tree.py": {"scan_paths", "scan_memory", "read_project"},                # the tree run
    "scan/wrappers.py": {"second_pass"},                                          # its second pass
    "scan/suppressions.py": {"unused", "unused_suppression_findings"},            # OPS003
    "scan/locks.py": {"dedupe_locks"},                                            # lock dedupe
    "scan/collect.py": {"collect"},                                               # results -> ScanResult
    "scan/result_codec.py": {"encode_result", "decode_result"},                   # cache encoding
    "scan/results.py": {"FileResult", "ScanResult", "Suppression"},
    "scan/builder.py": {"Builder", "internal_error"},
    "targets/construct.py": {"arguments"},
    "targets/shrinking.py": {"shrink", "cut_repeats"},
    "targets/variants.py": {"pick_variant", "size_in_name"},
    "targets/constraints.py": {"retries"},
    "trace/signatures.py": {"signature", "CompileLog"},
    "trace/forecast.py": {"forecast", "merged", "joined", "steps_of"},
    "pipeline/options.py": {"RunOptions", "ScanOptions"},
}
MAX_LINES = 500   # a room that grows past this holds more than one job again


def _top_level_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def job_problems() -> list[str]:
    found = []
    for rel, names in sorted(JOBS.items()):
        path = PKG / rel
        if not path.is_file():
            found.append(f"opscan/{rel}: missing")
            continue
        if len(path.read_text(encoding="utf-8").splitlines()) > MAX_LINES:
            found.append(f"opscan/{rel}: over {MAX_LINES} lines")
        missing = names - _top_level_names(path)
        if missing:
            found.append(f"opscan/{rel}: does not define {sorted(missing)}")
        for other in sorted(path.parent.glob("*.py")):   # its package (subpackages have their own jobs)
            if other != path:
                for name in sorted(names & _top_level_names(other)):
                    found.append(f"{other.relative_to(PKG.parent)} defines {name} (opscan/{rel}'s job)")
    return found


def test_each_room_holds_one_job():
    assert not (PKG / "scan" / "engine.py").exists()
    assert job_problems() == []


def test_the_job_check_finds_a_job_defined_twice(tmp_path, monkeypatch):
    package = tmp_path / "opscan"
    (package / "scan").mkdir(parents=True)
    (package / "scan" / "tree.py").write_text("def scan_paths(): pass\ndef scan_memory(): pass\n")
    (package / "scan" / "engine.py").write_text("def scan_paths(): pass\n")
    monkeypatch.setattr(sys.modules[__name__], "JOBS", {"scan/tree.py": {"scan_paths", "scan_memory", "read_project"},
                                                       "scan/locks.py": {"dedupe_locks"}})
    monkeypatch.setattr(sys.modules[__name__], "PKG", package)
    assert job_problems() == ["opscan/scan/locks.py: missing",
                              "opscan/scan/tree.py: does not define ['read_project']",
                              "opscan/scan/engine.py defines scan_paths (opscan/scan/tree.py's job)"]
