"""Which files a scan reads: default skips, --exclude, explicit files, symlink loops, unreadable files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from opscan.errors import InputError
from opscan.scan import scan_memory, scan_paths
from opscan.scan.files import discover
from opscan.scan.rules import load_rules

CUDA = "import torch\nx = torch.zeros(1).to('cuda')\n"


def make(root: Path, rel: str, text: str = CUDA) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_default_skips_and_suffixes(tmp_path):
    for rel in ["src/a.py", ".git/hooks/x.py", "venv/lib/b.py", "node_modules/m/c.py", "build/lib/d.py",
                "dist/e.py", "pkg.egg-info/f.py", "lib/site-packages/g.py", "myenv/h.py", "k/kernel.cu",
                "k/ops.cpp", "notes.txt", "nb.ipynb", "src/__pycache__/i.py"]:
        make(tmp_path, rel)
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr\n")
    assert discover(tmp_path) == ["k/kernel.cu", "k/ops.cpp", "nb.ipynb", "src/a.py"]


def test_exclude_globs_and_explicit_files(tmp_path):
    for rel in ["src/a.py", "src/gen/b.py", "tests/test_c.py", "build/d.py"]:
        make(tmp_path, rel)
    assert discover(tmp_path, exclude=["gen", "tests/*"]) == ["src/a.py"]
    assert discover(tmp_path, exclude=["*.py"]) == []
    assert discover(tmp_path, paths=[tmp_path / "build" / "d.py"]) == ["build/d.py"]   # explicit wins
    with pytest.raises(InputError):
        discover(tmp_path, paths=[tmp_path / "nope.py"])


def test_symlink_loops_do_not_hang(tmp_path):
    make(tmp_path, "a/b/c.py")
    os.symlink(tmp_path / "a", tmp_path / "a" / "b" / "loop")
    os.symlink(tmp_path, tmp_path / "a" / "up")
    found = discover(tmp_path)
    assert "a/b/c.py" in found and len(found) <= 3


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads everything")
def test_unreadable_file_is_a_finding_and_the_scan_goes_on(tmp_path):
    make(tmp_path, "a.py")
    make(tmp_path, "b.py")
    (tmp_path / "a.py").chmod(0)
    result = scan_paths(tmp_path, check_fixes=False)
    assert [(f.rule, f.location.path) for f in result.findings] == [("OPS001", "a.py"), ("OPS101", "b.py")]


def test_scan_paths_counts_and_sorts(tmp_path):
    make(tmp_path, "z.py")
    make(tmp_path, "a/y.py")
    make(tmp_path, "a/clean.py", "x = 1\n")
    result = scan_paths(tmp_path, check_fixes=False)
    assert result.files_scanned == 3
    assert [f.location.path for f in result.findings] == ["a/y.py", "z.py"]
    assert scan_paths(tmp_path, jobs=2, check_fixes=False) == result


def test_broken_explicit_file_and_scanner_crash_become_findings(tmp_path, monkeypatch):
    make(tmp_path, "b.py")
    os.symlink(tmp_path / "gone.py", tmp_path / "a.py")
    result = scan_paths(tmp_path, paths=[tmp_path / "a.py", tmp_path / "b.py"], check_fixes=False)
    assert [(f.rule, f.location.path) for f in result.findings] == [("OPS001", "a.py"), ("OPS101", "b.py")]

    from opscan.scan import visitor

    def boom(self):
        raise KeyError("bug")

    monkeypatch.setattr(visitor.Visitor, "run", boom)
    (crash,) = scan_paths(tmp_path, paths=[tmp_path / "b.py"], check_fixes=False).findings
    assert crash.rule == "OPS002" and "KeyError" in crash.message


def test_the_projects_own_packages_are_not_cuda_only_libraries(tmp_path):
    """Scanning liger_kernel's own source must not flag `import liger_kernel...` (a real false alarm)."""
    pkg = tmp_path / "liger_kernel"
    make(pkg, "__init__.py", "")
    make(pkg, "ops/__init__.py", "")
    make(pkg, "ops/rms.py",
         "import triton\nfrom liger_kernel.ops.utils import ensure_contiguous\nfrom .utils import x\n")
    for root in (pkg, tmp_path):                       # the package itself, or the repo holding it
        result = scan_paths(root, check_fixes=False)
        assert [(f.rule, f.location.line) for f in result.findings] == [("OPS401", 1)]
    result = scan_paths(tmp_path, paths=[pkg / "ops" / "rms.py"], check_fixes=False)   # one changed file
    assert [(f.rule, f.location.line) for f in result.findings] == [("OPS401", 1)]


# -- the pre-check: which files are parsed at all (NOTE [pre-check] in file_scan.py) -------------------
RULES = load_rules()
REPO = Path(__file__).resolve().parents[2]


def _found(result):
    return [(f.location.path, f.location.line, f.rule, f.message) for f in result.findings]


def test_precheck_skips_files_that_spell_no_token_within_its_bounds():
    relevant = RULES.compiled.relevant
    assert not relevant("def f(inputs):\n    return inputs\n")            # "npu" inside a word
    assert not relevant("# distributed under the License\nx = 1\n")          # not a token any more
    assert not relevant("y = payload.download()\n")                          # "load" inside words
    assert relevant("x = t.to('npu')\n") and relevant('x = t.to("npu:0")\n')  # a device string
    assert not relevant("x = t.to(device_npu)\n")                            # not a string start
    assert relevant("import flash_attn\n") and relevant("t.cuda()\n")
    assert relevant("import my_ext_cuda\n")                                  # "_cuda" is open on the left
    assert relevant("os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n")
    assert not relevant("MY_CUDA_HOME = 1\n")                                 # env names start a string
    # an import matcher's module counts in import statements only
    assert not relevant("self.rotary_emb = RotaryEmbedding(dim)\n")
    assert relevant("import rotary_emb\n") and relevant("if ok: import rotary_emb\n")
    assert relevant("from flash_attn.layers import (\n    x,\n    rotary_emb,\n)\n")
    assert relevant("from pkg import a, \\\n    rotary_emb\n")


def test_a_syntax_error_is_reported_where_a_rule_could_match():
    files = {"broken_plain.py": "def f(:\n    pass\n", "broken_cuda.py": "x = 'cuda'\ndef f(:\n    pass\n"}
    assert [(p, line, rule) for p, line, rule, _ in _found(scan_memory(files, RULES))] == [
        ("broken_cuda.py", 2, "OPS000")]
    full = scan_memory(files, RULES, precheck=False)   # the old path parses everything
    assert {f.location.path for f in full.findings} == {"broken_plain.py", "broken_cuda.py"}


WRAPPED = {
    "pkg/__init__.py": "",
    "pkg/common.py": "import torch\ndef get_operator(ns, name):\n    return getattr(getattr(torch.ops, ns), name)\n",
    # spells no token at all: skipped by the first pass, found by the wrapper re-check
    "pkg/use.py": "from .common import get_operator as lookup\nOP = lookup('pkg', 'fwd')\n",
    "pkg/other.py": "def helper(x):\n    return x + 1\n",
}


def test_a_file_using_a_name_another_file_binds_is_still_analysed(tmp_path):
    expected = [("pkg/common.py", 3, "OPS304"), ("pkg/use.py", 2, "OPS304")]
    assert not RULES.compiled.relevant(WRAPPED["pkg/use.py"])   # skipping it alone would miss line 2
    assert [(p, line, r) for p, line, r, _ in _found(scan_memory(WRAPPED, RULES))] == expected
    assert _found(scan_memory(WRAPPED, RULES)) == _found(scan_memory(WRAPPED, RULES, precheck=False))
    for rel, text in WRAPPED.items():
        make(tmp_path, rel, text)
    for jobs in (1, 2):
        got = scan_paths(tmp_path, rules=RULES, check_fixes=False, jobs=jobs)
        assert [(p, line, r) for p, line, r, _ in _found(got)] == expected


def _tree_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.suffix in (".py", ".ipynb", ".cu", ".cpp", ".toml")}


@pytest.mark.slow
def test_precheck_gives_the_same_findings_on_examples_and_rule_examples(tmp_path):
    """The same findings with and without the pre-check: the repository's examples/ tree, and every
    rule's examples as one tree (so each file also sees the others' names)."""
    trees = {"examples": _tree_files(REPO / "examples")}
    snippets: dict[str, str] = {}
    for rule in RULES:
        for i, example in enumerate(rule.examples):
            for rel, text in example.files:
                snippets[f"{rule.name}/{i}/{rel}"] = text
    assert len(snippets) > 50
    trees["rule-examples"] = snippets
    for name, files in trees.items():
        assert files, name
        fast, full = scan_memory(files, RULES, precheck=True), scan_memory(files, RULES, precheck=False)
        parse_errors = {f.location.path for f in full.findings if f.rule == "OPS000"}
        assert _found(fast) == [f for f in _found(full) if f[2] != "OPS000" or f[0] in
                                {x.location.path for x in fast.findings}], name
        assert {f.location.path for f in fast.findings if f.rule == "OPS000"} <= parse_errors
        assert fast.findings, name
    root = REPO / "examples"
    one, two = (_found(scan_paths(root, rules=RULES, check_fixes=False, jobs=j)) for j in (1, 2))
    assert one == two == _found(scan_paths(root, rules=RULES, check_fixes=False, jobs=2, precheck=False))
