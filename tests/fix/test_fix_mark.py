"""The scan's fixable mark (issue 40): planned in the scan's own per-file work, cached with the
file's result, never stopping the scan (NOTE [fixable is what fix fixes] in opscan/fix/preview.py)."""

from __future__ import annotations

import json
from pathlib import Path

import libcst
import pytest

from opscan.config import Config
from opscan.fix import codemods, file_plan
from opscan.pipeline.phases import ScanOptions, fixable_mark, scan
from opscan.scan import load_rules, scan_paths
from opscan.scan.cache import ResultCache

FIXABLE = {   # three files with a finding the fixer rewrites
    "a.py": "import torch\n\n# the largest of the three\nx = torch.zeros(1).to('cuda')\n",
    "pkg/b.py": "import torch\n\n\ndef f(m):\n    return m.cuda()\n",
    "pkg/c.py": "import torch\ntorch.cuda.synchronize()\n",
}
OTHERS = {    # a finding the fixer never tries, and files without findings
    "flags.py": "import torch\ntorch.backends.cudnn.benchmark = True\n",
    "clean.py": "import torch\nx = torch.zeros(1)\n",
    "pkg/__init__.py": "",
}


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return _tree(tmp_path / "proj", {**FIXABLE, **OTHERS})


@pytest.fixture
def parses(monkeypatch) -> list[int]:
    """How many times libcst parses a module (in this process: the scans below run with --jobs 1)."""
    count = [0]
    real = libcst.parse_module

    def counted(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(libcst, "parse_module", counted)
    return count


def _scan_json(run_cli, root: Path, *extra: str) -> tuple[int, dict]:
    code, out, err = run_cli("scan", str(root), "--format", "json", "--jobs", "1", *extra)
    assert "Traceback" not in err
    return code, json.loads(out)


def test_a_warm_scan_plans_nothing_and_a_cold_one_plans_each_fixable_file_once(project, parses, run_cli):
    code, cold = _scan_json(run_cli, project)
    assert code == 1 and parses[0] == len(FIXABLE)      # flags.py, clean.py, __init__.py: never parsed by libcst
    assert sorted(f["path"] for f in cold["findings"] if f["fixable"]) == sorted(FIXABLE)
    assert cold["summary"]["fixable"] == len(FIXABLE)
    parses[0] = 0
    code, warm = _scan_json(run_cli, project)
    assert code == 1 and parses[0] == 0 and warm == cold
    (project / "pkg" / "b.py").write_text(FIXABLE["pkg/b.py"] + "# touched\n", encoding="utf-8")
    parses[0] = 0
    _scan_json(run_cli, project)
    assert parses[0] == 1                                  # only the changed file is planned again


def test_the_mark_is_what_fix_rewrites(project, run_cli):
    _, doc = _scan_json(run_cli, project)
    code, out, err = run_cli("fix", "--diff", str(project))
    assert code == 1 and f"would fix {doc['summary']['fixable']} of" in err


def test_a_fixer_failure_is_one_note_and_the_scan_is_unchanged(project, run_cli, monkeypatch, tmp_path):
    code, clean = _scan_json(run_cli, project)

    def boom(node, ctx):
        raise RuntimeError("planted failure")

    monkeypatch.setitem(codemods.SIMPLE, "device-string", boom)    # a.py's `.to('cuda')` only
    monkeypatch.setenv("OPSCAN_CACHE_DIR", str(tmp_path / "other-cache"))
    planted_code, planted = _scan_json(run_cli, project)
    assert planted_code == code == 1
    assert planted["verdict"] == clean["verdict"] and planted["summary"]["blockers"] == clean["summary"]["blockers"]
    strip = [{k: v for k, v in f.items() if k != "fixable"} for f in planted["findings"]]
    assert strip == [{k: v for k, v in f.items() if k != "fixable"} for f in clean["findings"]]
    assert [n for n in planted["notes"] if "not computed" in n] == [
        "fixable not computed for a.py: RuntimeError: planted failure"]
    assert sorted(f["path"] for f in planted["findings"] if f["fixable"]) == ["pkg/b.py", "pkg/c.py"]
    # `opscan fix` leaves that file alone, says so on stderr, and fixes the others
    code, out, err = run_cli("fix", "--diff", str(project))
    assert code == 1 and "internal error: a.py" in err and "RuntimeError: planted failure" in err
    assert "b/pkg/b.py" in out and "b/a.py" not in out
    code, out, err = run_cli("fix", str(project))
    assert code == 0 and "m.to(DEVICE)" in (project / "pkg" / "b.py").read_text()
    assert (project / "a.py").read_text() == FIXABLE["a.py"]


def test_a_file_over_the_size_bound_is_never_parsed_by_libcst(project, parses, run_cli, monkeypatch):
    monkeypatch.setattr(file_plan, "MAX_FIX_BYTES", len(FIXABLE["a.py"]) - 1)   # a.py only is over it
    assert all(len(text) <= file_plan.MAX_FIX_BYTES for rel, text in FIXABLE.items() if rel != "a.py")
    _, doc = _scan_json(run_cli, project)
    assert parses[0] == len(FIXABLE) - 1
    assert [f["fixable"] for f in doc["findings"] if f["path"] == "a.py"] == [False]
    assert any(n.startswith("a.py: too large for the fixer") for n in doc["notes"])
    parses[0] = 0
    code, out, err = run_cli("fix", str(project))
    assert code == 0 and parses[0] == len(FIXABLE) - 1
    assert (project / "a.py").read_text() == FIXABLE["a.py"] and "too large for the fixer" in out


class _Probe:
    """A torch with or without `torch.accelerator.synchronize`, known by `identity`."""

    installed = True
    version = "2.13.0"

    def __init__(self, identity: str, has_synchronize: bool) -> None:
        self.identity = identity
        self.missing = set() if has_synchronize else {"torch.accelerator.synchronize"}

    def has(self, path: str) -> bool:
        return path not in self.missing


def test_the_installed_torch_is_asked_on_every_run_and_the_plan_is_cached(project, tmp_path, parses):
    """A rewrite that relies on a name the installed torch lacks is not fixable (`opscan fix` leaves
    it: missing-in-torch); the cached plan holds for any torch, so no run plans again for it."""
    rules = load_rules()

    def marks(probe) -> dict[str, bool]:
        cache = ResultCache(tmp_path / "cache", "salt")
        result = scan_paths(project, rules=rules, cache=cache, probe=probe, enrich=fixable_mark())
        return {f.location.path: f.fixable for f in result.findings}

    full = marks(_Probe("torch-a", True))
    assert full["pkg/c.py"] is True and parses[0] == len(FIXABLE)
    parses[0] = 0
    older = marks(_Probe("torch-b", False))      # another torch, without torch.accelerator.synchronize
    assert older["pkg/c.py"] is False and older["a.py"] is True and parses[0] == 0
    assert marks(_Probe("torch-a", True)) == full and parses[0] == 0


def test_the_mark_without_the_replacement_is_what_fix_leaves(project, run_cli, monkeypatch):
    from opscan.scan.fixes import TorchProbe

    real = TorchProbe._lookup
    monkeypatch.setattr(TorchProbe, "_lookup",
                        lambda self, path: False if path == "torch.accelerator.synchronize" else real(self, path))
    monkeypatch.setenv("OPSCAN_NO_CACHE", "1")
    _, doc = _scan_json(run_cli, project)
    assert [f["fixable"] for f in doc["findings"] if f["path"] == "pkg/c.py"] == [False]
    code, out, err = run_cli("fix", "--diff", str(project))
    assert f"would fix {doc['summary']['fixable']} of" in err and "torch.accelerator.synchronize" not in out


def test_the_same_marks_with_any_number_of_workers(tmp_path):
    files = {f"m{i:02d}.py": FIXABLE["a.py"] if i % 3 else OTHERS["flags.py"] for i in range(40)}
    root = _tree(tmp_path / "many", files)
    one = scan(root, Config(root=root), ScanOptions(jobs=1, cache=False))
    two = scan(root, Config(root=root), ScanOptions(jobs=2, cache=False))
    assert one.findings == two.findings and one.notes == two.notes
    assert sum(f.fixable for f in one.findings) == sum(1 for i in range(40) if i % 3)


# -- planning on an elided module (NOTE [planning on an elided module] in opscan/fix/elision.py) -----
ROOT = Path(__file__).resolve().parents[2]
SHAPES = {   # forms where eliding could go wrong: every finding must get the whole file's outcome
    "elif.py": ("import torch\n\n\ndef pick(a):\n    if a == 1:\n        x = 1\n    elif a == 2:\n"
                "        x = torch.zeros(1).to('cuda')\n    else:\n        x = 3\n    return x\n"),
    "branches.py": ("import torch\n\n\ndef f(m):\n    try:\n        m = m.cuda()\n    except RuntimeError:\n"
                    "        m = None\n    finally:\n        pass\n    for i in range(3):\n        y = i\n"
                    "    else:\n        torch.cuda.synchronize()\n    return m\n"),
    "header.py": ("import torch\n\n\ndef f(x, device='cuda'):\n    a = 1\n    return x.to(device)\n\n\n"
                  "with torch.autocast('cuda'):\n    z = 1\n    w = 2\n"),
    "shared.py": ("import torch\na = 1; b = torch.zeros(1).cuda()\nif a: c = 2\n"
                  "class K: d = torch.zeros(1).to('cuda')\n"),
    "methods.py": ("import os\n\nimport torch\n\n\nclass Model:\n    '''doc'''\n    size = 3\n\n"
                   "    @property\n    def name(self):\n        return 'm'\n\n    def move(self, t):\n"
                   "        # where it runs\n        t = t.cuda()\n        return t\n\n    def other(self):\n"
                   "        return os.getcwd()\n\n\ndef helper():\n    return 1\n"),
    "reuse.py": ("import torch\n\n\ndef f(x):\n    return x.to('cuda')\n\n\n"
                 "dev = torch.accelerator.current_accelerator(check_available=True) or torch.device('cpu')\n"
                 "y = torch.zeros(1).to('cuda')\n"),
    "late_import.py": ("'''doc'''\nimport os\nlog = os.getenv('LOG')\nimport torch\n\n\ndef run(m):\n"
                       "    torch.cuda.synchronize()\n    return m.cuda()\n"),
    "deep.py": "y = " + " and ".join(["a"] * 600) + "\nimport torch\nx = torch.zeros(1).to('cuda')\n",
}


def _trees() -> dict[str, bytes]:
    files = {f"shapes/{name}": text.encode() for name, text in SHAPES.items()}
    for folder in (ROOT / "examples" / "nanogpt", ROOT / "tests" / "fix" / "fixtures",
                   ROOT / "tests" / "run" / "fixtures"):
        files.update({f"{folder.name}/{p.relative_to(folder).as_posix()}": p.read_bytes()
                      for p in sorted(folder.rglob("*.py"))})
    for rule in load_rules():
        for number, example in enumerate(rule.autofix.examples if rule.autofix else ()):
            files[f"examples/{rule.id}_{number}.py"] = example.before.encode()
    return files


def _outcomes(plan) -> list[tuple]:
    return [(o.finding.rule, o.finding.location.line, o.finding.location.column, o.status, o.reason, o.detail)
            for o in plan.outcomes]


def _compare(files: dict[str, bytes]) -> tuple[int, int]:
    """(files compared, of which planned elided): each file's outcomes planned whole and elided."""
    from opscan.fix.preview import AllPresent
    from opscan.scan import scan_source

    rules = load_rules()
    by_id = {r.id: r for r in rules}
    elided = compared = 0
    for rel, data in files.items():
        findings = list(scan_source(rel, data, rules).findings)
        if not findings:
            continue
        whole = file_plan.plan_file(rel, data, findings, by_id, probe=AllPresent())
        quick = file_plan.plan_file(rel, data, findings, by_id, probe=AllPresent(), outcomes_only=True)
        assert _outcomes(quick) == _outcomes(whole), rel
        compared += 1
        elided += file_plan._elided(data, findings, by_id, None) is not None
    return compared, elided


@pytest.mark.slow
def test_the_elided_plan_gives_every_finding_the_whole_files_outcome():
    compared, elided = _compare(_trees())
    assert compared >= 40 and elided >= 7      # the comparison covers elided plans, not only whole ones


@pytest.mark.slow
def test_the_elided_plan_on_an_installed_library():
    import importlib.util

    spec = importlib.util.find_spec("transformers")      # read, never imported
    if spec is None or not spec.origin:
        pytest.skip("transformers is not installed")
    root = Path(spec.origin).parent
    rules = load_rules()
    by_id = {r.id: r for r in rules}
    from opscan.fix.scope import would_try
    from opscan.scan import scan_source

    files = {}
    for path in sorted(root.rglob("*.py")):
        data = path.read_bytes()
        if would_try(scan_source(path.name, data, rules).findings, by_id):
            files[path.relative_to(root).as_posix()] = data
    compared, elided = _compare(files)
    assert compared >= 20 and elided >= compared // 2


def test_the_elided_module_keeps_every_finding_on_its_line_and_column():
    import ast

    from opscan.fix.elision import elided

    text = SHAPES["methods.py"]
    cut = elided(text, [(16, 16)])
    assert cut is not None
    ast.parse(cut.text)
    assert text.splitlines()[15] == "        t = t.cuda()"
    assert cut.text.splitlines()[cut.line(16) - 1] == "        t = t.cuda()"     # kept, on its column
    assert "os.getcwd" not in cut.text and "size = 3" not in cut.text and "return 'm'" not in cut.text
    assert cut.text.splitlines()[:3] == text.splitlines()[:3]                 # the imports, kept
    assert not cut.keeps(20) and cut.keeps(16)
    assert elided(SHAPES["deep.py"], [(3, 3)]) is None              # libcst's limit: planned whole
