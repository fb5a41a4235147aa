"""Safety: scanning never imports or runs the scanned code; YAML never builds objects; no eval/exec/pickle."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.corpus import GOOD, write_tree

PACKAGE = Path(__file__).resolve().parents[2] / "opscan"


def _plant(root: Path, marker_dir: Path) -> list[Path]:
    """Files whose import, execution or build would create a marker file; returns the markers."""
    markers = []

    def payload(name: str) -> str:
        marker = marker_dir / f"RAN-{name}"
        markers.append(marker)
        return f"open({str(marker)!r}, 'w').write('x')\n"

    files = {
        "evil.py": payload("evil") + 'import torch\nx = x.to("cuda")\n',
        "setup.py": payload("setup") + "from setuptools import setup\nfrom torch.utils.cpp_extension import "
                    "CUDAExtension\nsetup(name='evil', ext_modules=[CUDAExtension('evil_cuda', ['k.cu'])])\n",
        "conftest.py": payload("conftest"),
        "sitecustomize.py": payload("sitecustomize"),
        "usercustomize.py": payload("usercustomize"),
        "pkg/__init__.py": payload("pkg_init"),
        "pkg/__main__.py": payload("pkg_main"),
        "pkg/model.py": payload("pkg_model") + "from pkg import helpers\nimport evil_cuda\n",
        "torch.py": payload("shadow_torch"),           # shadows torch if the cwd were on sys.path
        "yaml.py": payload("shadow_yaml"),
        "libcst.py": payload("shadow_libcst"),
        "opscan_evil_rule_mod.py": payload("rule_requires"),
        "notebook.ipynb": json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                                                  "source": payload("notebook")}], "nbformat": 4}),
        "evil.pth": f"import os; {payload('pth').strip()}\n",
        "rules/evil-rule.yaml": "",   # filled below
    }
    rule = (Path(__file__).resolve().parents[2] / "rules" / "cuda-env-var.yaml").read_text()
    rule = rule.replace("id: OPS", "id: USR", 1).replace("name: cuda-env-var", "name: evil-rule", 1)
    files["rules/evil-rule.yaml"] = rule + "requires: [opscan_evil_rule_mod.anything]\n"
    files["pyproject.toml"] = ("[build-system]\nrequires = ['setuptools']\nbuild-backend = 'evil_backend'\n"
                               "backend-path = ['.']\n[tool.opscan]\nextra-rules = ['rules']\n")
    files["evil_backend.py"] = payload("build_backend")
    write_tree(root, {k: v.encode() for k, v in files.items()})
    write_tree(root, GOOD)
    return markers


COMMANDS = {
    "scan": ["scan", "."],
    "scan-rules": ["scan", ".", "--rules", "rules", "--format", "json"],
    "check-no-trace": ["check", ".", "--no-trace", "--format", "json"],
    "baseline": ["baseline", ".", "--output", "{tmp}/baseline.json"],
    "scan-jobs": ["scan", ".", "--jobs", "2"],
}


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("launcher", ["python -m opscan", "console script"])
def test_scanning_never_runs_the_scanned_code(tmp_path, command, launcher):
    """Run as CI would, from inside the untrusted checkout (so `python -m` puts its folder first on
    sys.path, where its `yaml.py` / `torch.py` would shadow the real ones): no planted file may run.
    (PYTHONPATH is not set to the checkout: Python itself would then run its sitecustomize.py at
    start-up, before any opscan code; docs/reliability.md says so.)"""
    tree = tmp_path / "checkout"
    markers_dir = tmp_path / "markers"
    markers_dir.mkdir()
    markers = _plant(tree, markers_dir)
    args = [a.replace("{tmp}", str(tmp_path)) for a in COMMANDS[command]]
    if launcher == "python -m opscan":
        argv = [sys.executable, "-m", "opscan", *args]
    else:
        argv = [str(Path(sys.executable).with_name("opscan")), *args]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    proc = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    ran = sorted(m.name for m in markers if m.exists())
    assert ran == [], f"scanned code ran: {ran}\n{proc.stderr}"
    assert list(markers_dir.iterdir()) == []


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_scanning_in_process_never_runs_the_scanned_code(tmp_path, run_cli, monkeypatch, command):
    """The quick loop's twin of the test above: the same planted checkout, each command in this
    process (the launchers' own sys.path is what the slow test adds)."""
    tree = tmp_path / "checkout"
    markers_dir = tmp_path / "markers"
    markers_dir.mkdir()
    markers = _plant(tree, markers_dir)
    monkeypatch.chdir(tree)
    code, _, err = run_cli(*(a.replace("{tmp}", str(tmp_path)) for a in COMMANDS[command]))
    assert code in (0, 1), err
    assert sorted(m.name for m in markers if m.exists()) == [] and list(markers_dir.iterdir()) == []


@pytest.mark.slow
def test_setup_py_is_read_not_run(tmp_path):
    """setup.py is parsed for the extension names it declares (a later `import evil_cuda` is a
    finding), yet it is never executed."""
    from opscan.scan import scan_paths

    markers_dir = tmp_path / "markers"
    markers_dir.mkdir()
    _plant(tmp_path / "t", markers_dir)
    result = scan_paths(tmp_path / "t", check_fixes=False)
    assert any(f.location.path == "pkg/model.py" and "evil_cuda" in f.message for f in result.findings)
    assert list(markers_dir.iterdir()) == []


# -- static checks over opscan's own source ---------------------------------------------------------
DANGEROUS_CALLS = {"eval", "exec", "yaml.unsafe_load", "yaml.full_load", "yaml.load_all", "yaml.unsafe_load_all",
                   "pickle.load", "pickle.loads", "marshal.load", "marshal.loads", "os.system", "os.popen",
                   "shelve.open", "dill.load", "dill.loads", "torch.load", "runpy.run_path", "runpy.run_module"}
SAFE_LOADERS = {"SafeLoader", "CSafeLoader", "_Loader", "BaseLoader", "CBaseLoader", "StrictLoader"}
# Modules whose job is to import or execute a user's code, by design (trace, zoo, db probe) or to
# import opscan's own modules / torch by name.
IMPORTERS_ALLOWED = {"targets/loader.py", "targets/project_modules.py",   # a target's module, in the child
                     "db/probe.py", "db/replay.py", "cli.py", "commands/zoo.py",
                     "reporters/__init__.py", "reporters/terminal/__init__.py",
                     "containment/child.py",        # the function a child calls, once contained
                     "containment/codec.py",        # the parent's own records named in its request
                     "containment/forkserver.py",   # the modules a fork server preloads (torch, transformers)
                     "containment/outcome.py",
                     "scan/fixes.py", "targets/repository.py",
                     "db/cache_stats.py",   # the backend's cache counters, read in the contained child
                     "scan/__init__.py", "containment/__init__.py"}   # their own modules on first use (PEP 562)
# The module of `opscan run`, whose job is to run the user's script (in the contained child, docs/run.md).
SCRIPT_RUNNERS_ALLOWED = {"trace/run/script.py"}
# The construction of a repository's own models (issue 24), whose job is to execute the definitions of
# a model file (a training script without its top-level statements) or a README / __main__ example,
# in the contained child only (docs/repositories.md); test_the_parent_... in tests/test_architecture.py
# pins that the parent of a trace never imports the targets loader.
EXEC_ALLOWED = {"targets/repository.py"}


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield node, ast.unparse(node.func)


def _sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_no_eval_exec_pickle_or_unsafe_yaml_in_opscan():
    problems = []
    for rel, tree in _sources():
        for node, name in _calls(tree):
            if name in DANGEROUS_CALLS and not (name.startswith("runpy.") and rel in SCRIPT_RUNNERS_ALLOWED) \
                    and not (name == "exec" and rel in EXEC_ALLOWED):
                problems.append(f"{rel}:{node.lineno}: {name}()")
            if name == "yaml.load":
                loader = next((k.value for k in node.keywords if k.arg == "Loader"), None)
                text = ast.unparse(loader) if loader is not None else ""
                if not any(safe in text for safe in SAFE_LOADERS):
                    problems.append(f"{rel}:{node.lineno}: yaml.load with Loader={text or 'default'}")
            if any(k.arg == "shell" and isinstance(k.value, ast.Constant) and k.value.value for k in node.keywords):
                problems.append(f"{rel}:{node.lineno}: {name}(shell=True)")
    assert problems == []


def test_the_strict_yaml_loader_is_a_safe_loader():
    """opscan/strict_yaml.py's StrictLoader (rule and coverage-db files) only constructs safe types."""
    import yaml

    from opscan.strict_yaml import StrictLoader, YamlProblem, parse_yaml

    assert issubclass(StrictLoader, yaml.constructor.SafeConstructor)
    assert not issubclass(StrictLoader, (yaml.constructor.FullConstructor, yaml.constructor.UnsafeConstructor))
    with pytest.raises(YamlProblem):
        parse_yaml("x: !!python/object/apply:os.system ['true']\n")


@pytest.mark.slow
def test_only_the_tracing_side_imports_modules_by_name():
    """importlib / __import__ appear only where importing user code is the point (trace, zoo, probe)
    or where opscan imports its own modules; the scan package in particular never does."""
    problems = []
    for rel, tree in _sources():
        for node, name in _calls(tree):
            if name in {"importlib.import_module", "__import__", "importlib.util.spec_from_file_location",
                        "importlib.util.module_from_spec", "spec.loader.exec_module"}:
                if rel not in IMPORTERS_ALLOWED:
                    problems.append(f"{rel}:{node.lineno}: {name}()")
    assert problems == []


def test_fix_check_imports_only_torch():
    """The fix check imports what a rule's `requires` names: it must refuse anything outside torch,
    or a rule file in an untrusted repository could import (run) a module of that repository."""
    from opscan.scan.fixes import TorchProbe

    probe = TorchProbe()
    before = set(sys.modules)
    assert probe.has("json.decoder.JSONDecoder") is False
    assert probe.has("opscan_not_torch.thing") is False
    assert "opscan_not_torch" not in sys.modules
    assert not {m for m in set(sys.modules) - before if not m.startswith("torch")}


def test_yaml_loaders_reject_python_tags(tmp_path):
    """Every YAML loader opscan has refuses `!!python/...` tags (errors, not objects)."""
    marker = tmp_path / "PWNED"
    evil = f"!!python/object/apply:os.system ['touch {marker}']\n"
    from opscan.errors import OpscanError
    from opscan.scan import load_rule_file

    path = tmp_path / "evil.yaml"
    path.write_text(evil)
    with pytest.raises(OpscanError):
        load_rule_file(path)
    from opscan.db import load_file

    with pytest.raises(OpscanError):
        load_file(path)
    assert not marker.exists()


# -- a cache committed to the repository -----------------------------------------------------------
def _forge_cache(cache_dir: Path) -> int:
    """Rewrite every cache entry to claim "no findings", re-computing its checksum the way the
    documented format says (anyone can): what a pull request could commit as `.opscan_cache/`."""
    import hashlib

    forged = 0
    for entry in cache_dir.rglob("*.json"):
        raw = entry.read_bytes()
        header, sep, body = raw.partition(b"\n")
        if not header.startswith(b"opscan-cache ") or not sep:
            continue
        payload = json.loads(body)
        if isinstance(payload, dict) and "findings" in payload:
            payload["findings"], payload["requires"] = [], []
            new_body = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
            key = header.split(b" ")[2]
            entry.write_bytes(b"opscan-cache 1 " + key + b" " + hashlib.sha256(new_body).hexdigest().encode()
                              + b"\n" + new_body)
            forged += 1
    return forged


@pytest.mark.slow
def test_a_cache_committed_by_a_pull_request_cannot_hide_findings(tmp_path):
    """A pull request can commit a `.opscan_cache/` whose entries it forged (valid checksums, empty
    results). By default the cache lives outside the scanned tree, so such a folder is never read,
    and a scan never writes a cache into the tree it scans."""
    import shutil

    first = tmp_path / "first"
    write_tree(first, GOOD)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OPSCAN_CACHE_DIR")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    env["HOME"] = str(tmp_path / "home")
    opscan = str(Path(sys.executable).with_name("opscan"))
    base = [opscan, "scan", ".", "--format", "json", "--no-fix-check"]
    # the attacker builds a cache inside the tree and forges it
    proc = subprocess.run([*base, "--cache-dir", str(first / ".opscan_cache")], cwd=first, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert _forge_cache(first / ".opscan_cache") > 0
    checkout = tmp_path / "checkout"          # a fresh clone of the PR, cache folder included
    shutil.copytree(first, checkout)
    for attempt in range(2):                  # cold, then warm (the user's own cache)
        proc = subprocess.run(base, cwd=checkout, env=env, capture_output=True, text=True, timeout=120)
        found = json.loads(proc.stdout)["findings"]
        assert sorted({f["path"] for f in found}) == ["good_a.py", "good_b.py"], (attempt, found)
    assert sorted(p.name for p in checkout.iterdir()) == sorted(p.name for p in first.iterdir())
    # the forgery is effective when that folder is chosen explicitly: the default must never be it
    proc = subprocess.run([*base, "--cache-dir", str(checkout / ".opscan_cache")], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=120)
    assert json.loads(proc.stdout)["findings"] == []
