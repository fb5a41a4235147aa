"""Properties: generated programs never crash the scanner; --jobs, the cache and reruns never change the output."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.corpus import CORPUS, GOOD, by_path, write_tree
from opscan.cli import build_parser, main
from opscan.scan import load_rules, scan_paths, scan_source

RULES = load_rules()

# Statements that the rules fire on, mixed into generated programs so findings are not all empty.
CUDA_SNIPPETS = [
    'x = x.to("cuda")', "model.cuda()", "torch.cuda.synchronize()", 'd = torch.device("cuda:0")',
    'import flash_attn', 'dist.init_process_group("nccl")', "torch.backends.cudnn.benchmark = True",
    'os.environ["CUDA_VISIBLE_DEVICES"] = "0"', "if torch.cuda.is_available():\n    model.cuda()",
    "@triton.jit\ndef k(x):\n    pass", 'DEVICE = "cuda"\nm.to(DEVICE)', "import torch as T\nT.cuda.empty_cache()",
]
HEADER = "import os\nimport torch\nimport triton\nimport torch.distributed as dist\n"

programs = st.one_of(
    hypothesmith.from_grammar(),
    st.builds(lambda body, cuda: HEADER + body + "\n" + "\n".join(cuda) + "\n",
              hypothesmith.from_grammar(), st.lists(st.sampled_from(CUDA_SNIPPETS), max_size=4)),
)


def _signature(result) -> list:
    return [(f.rule, f.location.line, f.location.column, f.location.cell, f.message) for f in result.findings]


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(source=programs)
def test_generated_programs_never_crash_the_scanner(source):
    """A valid program gives findings, never an internal error, and the same ones every time."""
    data = source.encode("utf-8", errors="surrogatepass")
    first = scan_source("gen.py", data, RULES)
    assert not [f for f in first.findings if f.rule == "OPS002"], first.findings
    assert _signature(scan_source("gen.py", data, RULES)) == _signature(first)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.binary(max_size=400) | st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_arbitrary_bytes_never_crash_the_scanner(data):
    """Any bytes at all: a result, never an exception; at worst a located `input` finding."""
    for name in ("blob.py", "blob.ipynb"):
        result = scan_source(name, data, RULES)
        assert all(f.rule != "OPS002" for f in result.findings), result.findings


# -- jobs, cache, reruns ----------------------------------------------------------------------------
def _scan_flags() -> set[str]:
    parser = build_parser("scan")
    sub = next(a for a in parser._actions if a.dest == "command").choices["scan"]
    return {opt for action in sub._actions for opt in action.option_strings}


def _cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(list(args))
    return code, out.getvalue()


@pytest.fixture(scope="module")
def mixed_tree(tmp_path_factory) -> Path:
    """The hostile corpus, the good files and generated programs: enough files for a worker pool."""
    root = tmp_path_factory.mktemp("mixed")
    write_tree(root, {rel: data for rel, (data, _) in CORPUS.items()})
    write_tree(root, GOOD)
    examples = []

    @settings(max_examples=24, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(source=programs)
    def collect(source):
        examples.append(source)

    collect()
    for i, source in enumerate(examples):
        (root / f"gen_{i:02d}.py").write_text(source, encoding="utf-8", errors="surrogatepass")
    return root


@pytest.mark.slow
def test_findings_same_whatever_jobs_and_cache(mixed_tree, tmp_path):
    """In-process, a pool of 2, a cold cache and a warm cache: the same findings, in the same order."""
    runs = {"jobs1": scan_paths(mixed_tree, jobs=1, check_fixes=False),
            "jobs2": scan_paths(mixed_tree, jobs=2, check_fixes=False)}
    try:
        from opscan.scan.cache import ResultCache, scan_salt
    except ImportError:  # pragma: no cover - no cache in this build
        ResultCache = None
    if ResultCache is not None:
        cache = ResultCache(tmp_path / "cache", scan_salt("reliability"))
        runs["cold"] = scan_paths(mixed_tree, jobs=2, check_fixes=False, cache=cache)
        runs["warm"] = scan_paths(mixed_tree, jobs=2, check_fixes=False, cache=cache)
        runs["warm1"] = scan_paths(mixed_tree, jobs=1, check_fixes=False, cache=cache)
    base = _signature(runs["jobs1"])
    assert base and any(f.category == "input" for f in runs["jobs1"].findings)
    for name, result in runs.items():
        assert [(f.location.path, *s) for f, s in zip(result.findings, _signature(result))] == \
               [(f.location.path, *s) for f, s in zip(runs["jobs1"].findings, base)], name
        assert result.files_scanned == runs["jobs1"].files_scanned, name


@pytest.mark.slow
def test_cli_output_same_whatever_jobs_and_cache(mixed_tree, tmp_path):
    flags = _scan_flags()
    base = ["scan", str(mixed_tree), "--format", "json", "--no-fix-check"]
    variants = [["--jobs", "1"], ["--jobs", "2"]]
    if "--cache-dir" in flags:
        cache = str(tmp_path / "cache")
        variants += [["--jobs", "2", "--cache-dir", cache], ["--jobs", "2", "--cache-dir", cache],
                     ["--jobs", "1", "--cache-dir", cache]]
    if "--no-cache" in flags:
        variants.append(["--jobs", "2", "--no-cache"])
    outputs = {" ".join(v): _cli(*base, *v) for v in variants}
    first = next(iter(outputs.values()))
    assert first[0] == 1 and json.loads(first[1])["findings"]
    for name, got in outputs.items():
        assert got == first, name


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "sarif", "markdown", "github", "terminal"])
def test_same_inputs_give_byte_identical_reports(mixed_tree, tmp_path, fmt):
    """Two runs (one with --output) give the same bytes, and nothing of the run's time or order leaks."""
    args = ["check", str(mixed_tree), "--no-trace", "--format", fmt]
    code1, out1 = _cli(*args)
    code2, out2 = _cli(*args)
    target = tmp_path / f"report.{fmt}"
    code3, _ = _cli(*args, "--output", str(target))
    assert code1 == code2 == code3 and code1 in (0, 1)
    assert out1 == out2 and out1.strip()
    assert target.read_text(encoding="utf-8") == out1


@pytest.mark.slow
def test_scan_json_byte_identical_across_runs(mixed_tree):
    assert _cli("scan", str(mixed_tree), "--format", "json") == _cli("scan", str(mixed_tree), "--format", "json")


# -- a rule that crashes ----------------------------------------------------------------------------
CRASH_FILE = b"import torch\nmodel.cuda()  # crash-me\ntorch.cuda.synchronize()\nx = x.to('cuda')\n"


def test_rule_crash_is_that_rules_internal_error_and_keeps_other_findings(tmp_path, monkeypatch):
    """OPS105 (`.cuda()`) raises on one file: that file gets an OPS002 naming OPS105 at the line it
    failed on, keeps its other findings, and every other file is untouched."""
    import opscan.scan.visitor as visitor

    real_hit = visitor.Visitor.hit

    def crashing_hit(self, rule, node, guarded, *args, **kwargs):
        if rule.id == "OPS105" and "# crash-me" in self.text:
            raise ZeroDivisionError("injected failure in rule OPS105")
        return real_hit(self, rule, node, guarded, *args, **kwargs)

    monkeypatch.setattr(visitor.Visitor, "hit", crashing_hit)
    write_tree(tmp_path, {**GOOD, "crash.py": CRASH_FILE})
    code, out = _cli("scan", str(tmp_path), "--format", "json", "--no-fix-check", "--no-cache")
    found = by_path(json.loads(out))
    crash = found["crash.py"]
    internal = [f for f in crash if f["rule"] == "OPS002"]
    assert len(internal) == 1 and internal[0]["line"] == 2, crash
    assert "OPS105" in internal[0]["message"] and "ZeroDivisionError" in internal[0]["message"]
    assert sorted((f["rule"], f["line"]) for f in crash if f["rule"] != "OPS002") == [("OPS101", 4), ("OPS201", 3)]
    assert [f["rule"] for f in found["good_a.py"]] == ["OPS105", "OPS101"]
    assert code == 1


def test_whole_file_crash_is_reported_and_the_run_goes_on(tmp_path, monkeypatch):
    """If the scan of one file raises outside any rule, that file gets OPS002; the others are intact."""
    import opscan.scan.visitor as visitor

    real_run = visitor.Visitor.run

    def crashing_run(self):
        if "# crash-me" in self.text:
            raise RuntimeError("injected failure")
        return real_run(self)

    monkeypatch.setattr(visitor.Visitor, "run", crashing_run)
    write_tree(tmp_path, {**GOOD, "crash.py": CRASH_FILE})
    code, out = _cli("scan", str(tmp_path), "--format", "json", "--no-fix-check", "--no-cache")
    found = by_path(json.loads(out))
    assert [f["rule"] for f in found["crash.py"]] == ["OPS002"]
    assert "RuntimeError" in found["crash.py"][0]["message"]
    assert [f["rule"] for f in found["good_a.py"]] == ["OPS105", "OPS101"] and code == 1
