"""One project index (opscan/index): `opscan PATH` lists, reads and parses each file of the project once,
for the scan, the model search, its recipes, the repository's tests and the call sites alike."""

from __future__ import annotations

import ast
import shutil
from collections import Counter
from pathlib import Path

import pytest

from opscan.pipeline.analyse import Phases, RunOptions, analyse
from opscan.config import Config, ModelConfig
from opscan.index import ProjectIndex
from opscan.records import ModelTrace, OpUsage
from opscan.targets import call_sites
from opscan.targets.discovery import candidates

SETUPCALL = Path(__file__).resolve().parent / "repos" / "setupcall"

TEST_FILE = '''import torch
from model import ModelArgs, Transformer


def test_forward():
    model = Transformer(ModelArgs())
    model.setup_caches(max_batch_size=1, max_seq_length=8)
    assert model(torch.zeros(1, 4, dtype=torch.long), torch.arange(4)).shape[0] == 1
'''
KERNELS = '''import torch

def step(x):
    torch.cuda.synchronize()
    return x.to("cuda")
'''


def _project(tmp_path: Path) -> Path:
    """The gpt-fast-style fixture (model, generate with setup calls, a second model, a script), with a
    test of the model, a file only the scan parses and a README."""
    root = tmp_path / "repo"
    shutil.copytree(SETUPCALL, root)
    (root / "tests").mkdir()
    (root / "tests" / "test_model.py").write_text(TEST_FILE, encoding="utf-8")
    (root / "kernels.py").write_text(KERNELS, encoding="utf-8")
    (root / "README.md").write_text("# A model\n\n```python\nfrom model import Transformer\n```\n", encoding="utf-8")
    return root


def _counting(monkeypatch, root: Path) -> Counter:
    """Every `ast.parse` of a file of `root`, by its path relative to it (whoever parses it)."""
    parses: Counter = Counter()
    real = ast.parse
    files = {p.relative_to(root).as_posix() for p in root.rglob("*.py")}

    def counted(source, filename="<unknown>", *args, **kwargs):
        name = Path(str(filename)).as_posix()
        rel = next((f for f in files if name == f or name.endswith("/" + f)), None)
        if rel is not None:
            parses[rel] += 1
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counted)
    return parses


def test_opscan_path_parses_each_file_once(tmp_path, monkeypatch):
    root = _project(tmp_path)
    parses = _counting(monkeypatch, root)
    traced, handed = [], {}

    def trace(model, project_root, profile, limits):
        traced.append(model.target)
        handed[model.target] = dict(model.call_sites)
        return ModelTrace(model.target, model.mode, "neuron", (OpUsage("aten::mm", 1, ("forward",)),))

    report = analyse(root, Config(root=root), RunOptions(limits=None, scan=None),
                     phases=Phases.default(trace=trace, database=lambda _config: None))
    # scan, model search, recipes, tests and call sites all ran on this project ...
    assert {"OPS101"} <= {f.rule for f in report.findings}                  # kernels.py: "cuda"
    assert "repo:model.py:Transformer" in traced
    note = next(c.note for c in report.discovery.candidates if c.target == "repo:model.py:Transformer")
    assert "setup call .setup_caches" in note                                 # read from generate.py's call sites
    assert any(c.kind == "repo-test" for c in report.discovery.candidates)     # read from tests/test_model.py
    # the call sites the search read are handed to the trace's child as data (it reads nothing again)
    usage = handed["repo:model.py:Transformer"][("model.py", "Transformer")]
    assert usage.setups[0].method == "setup_caches" and usage.call.args == ("x", "input_pos")
    # ... and no file was parsed twice
    assert parses, "the counter saw no parse"
    assert {rel: n for rel, n in parses.items() if n > 1} == {}
    assert {"model.py", "generate.py", "kernels.py", "tests/test_model.py"} <= set(parses)
    # the fixable mark plans `opscan fix` from the scan's own parse and findings (NOTE [fixable is
    # what fix fixes] in opscan/fix/preview.py): no second parse, even of kernels.py, which it planned
    assert [f.fixable for f in report.findings if f.rule == "OPS101"] == [True]


def test_the_index_walks_reads_and_parses_once(tmp_path):
    root = _project(tmp_path)
    index = ProjectIndex(root)
    found = candidates(root, construct=True, index=index)
    assert "repo:model.py:Transformer" in found.traced
    again = candidates(root, construct=True, index=index)       # a second search over the same index
    assert again == found
    assert index.parsed and max(index.parsed.values()) == 1
    usage = call_sites.usage(index, "model.py", "Transformer")
    assert usage is not None and usage.setups[0].method == "setup_caches"
    assert max(index.parsed.values()) == 1


def test_the_scan_takes_the_searched_tree_only_for_the_same_text(tmp_path):
    (tmp_path / "m.py").write_text("import torch\nx = 1\n", encoding="utf-8")
    index = ProjectIndex(tmp_path)
    tree = index.tree("m.py")
    assert index.scan_parse("m.py", "import torch\nx = 1\n") is tree         # the same text: no second parse
    assert index.parsed["m.py"] == 1
    other = index.scan_parse("m.py", "import torch\nx = 2\n")                # another text: parsed, not kept
    assert ast.dump(other) != ast.dump(tree) and index.tree("m.py") is tree
    assert index.parsed["m.py"] == 2


def test_unreadable_and_broken_files_are_none_for_the_search_and_raise_for_the_scan(tmp_path):
    (tmp_path / "bad.py").write_text("def f(:\n", encoding="utf-8")
    (tmp_path / "latin.py").write_bytes(b"x = '\xff'\n")
    index = ProjectIndex(tmp_path)
    assert index.tree("bad.py") is None and index.tree("latin.py") is None and index.tree("gone.py") is None
    try:
        index.scan_parse("bad.py", "def f(:\n")
    except SyntaxError as exc:
        assert exc.lineno == 1
    else:
        raise AssertionError("a syntax error reaches the scan")
    assert index.parsed["bad.py"] == 1      # the failed parse is kept: the scan gets its error, not a second parse


def test_one_walk_skips_the_one_list_and_hidden_folders(tmp_path):
    for folder in ("src", ".hidden", "env", "node_modules", "pkg.egg-info", "venv2"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "venv2" / "pyvenv.cfg").write_text("home = /usr\n", encoding="utf-8")
    index = ProjectIndex(tmp_path)
    assert [index.rel(p) for p in index.paths()] == ["src/m.py"]
    assert [index.rel(p) for p in index.paths(lambda p: p.suffix == ".py")] == ["src/m.py"]   # the same listing


def test_the_tracer_options_carry_the_call_sites_and_the_child_uses_them(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from opscan.pipeline.phases import tracer_options
    from opscan.targets import repository

    (tmp_path / "net.py").write_text("import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
                                     "        return x\n", encoding="utf-8")
    read = call_sites.Usage((), call_sites.Call(("x",), (), "run.py:3"))
    model = ModelConfig("repo:net.py:Net", call_sites=((("net.py", "Net"), read),))
    assert tracer_options(model, tmp_path, None)["call_sites"] == model.call_sites
    assert "call_sites" not in tracer_options(ModelConfig("repo:net.py:Net"), tmp_path, None)

    monkeypatch.syspath_prepend(str(tmp_path))
    net = __import__("net").Net()
    reads = []
    monkeypatch.setattr(call_sites, "usage", lambda *args, **kwargs: reads.append(args))
    assert repository._usage(net, tmp_path.resolve(), dict(model.call_sites)) is read
    assert reads == []                                       # handed over: the child read nothing
    repository._usage(net, tmp_path.resolve(), {})
    assert [args[1:] for args in reads] == [("net.py", "Net")]   # not handed over: read in the child


def _counting_reads(monkeypatch, root: Path) -> Counter:
    """Every open of a file of `root` for reading, by its path relative to it (whoever reads it):
    the scan's guarded read (`os.open`) and `open`/`Path.read_text`/`Path.read_bytes` alike."""
    import builtins
    import io
    import os

    reads: Counter = Counter()
    real_os_open, real_open = os.open, builtins.open

    def note(path, flags_or_mode) -> None:
        try:
            rel = Path(os.fsdecode(path)).resolve().relative_to(root.resolve()).as_posix()
        except (TypeError, ValueError):
            return
        writing = (flags_or_mode & (os.O_WRONLY | os.O_RDWR)) if isinstance(flags_or_mode, int) \
            else any(c in flags_or_mode for c in "wax+")
        if not writing and (root / rel).is_file():
            reads[rel] += 1

    def os_open(path, flags, *args, **kwargs):
        note(path, flags)
        return real_os_open(path, flags, *args, **kwargs)

    def py_open(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, bytes, os.PathLike)):
            note(file, mode)
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", py_open)
    monkeypatch.setattr(io, "open", py_open)
    return reads


def test_opscan_path_reads_each_file_once_unused_suppressions_included(tmp_path, monkeypatch):
    """OPS003 is a job of the scan: its snippet is the line the scan read, no file is read again."""
    root = _project(tmp_path)
    (root / "quiet.py").write_text("import torch\n\ny = torch.ones(2)  # opscan: ignore[OPS101]\n", encoding="utf-8")
    reads = _counting_reads(monkeypatch, root)

    def trace(model, project_root, profile, limits):
        return ModelTrace(model.target, model.mode, "neuron", (OpUsage("aten::mm", 1, ("forward",)),))

    report = analyse(root, Config(root=root), RunOptions(limits=None, scan=None),
                     phases=Phases.default(trace=trace, database=lambda _config: None))
    unused = [f for f in report.findings if f.rule == "OPS003"]
    assert [(f.location.path, f.location.line, f.snippet) for f in unused] == [
        ("quiet.py", 3, "y = torch.ones(2)  # opscan: ignore[OPS101]")]
    assert unused[0].location.column == len("y = torch.ones(2)  #")
    assert reads["quiet.py"] == 1 and reads["kernels.py"] == 1
    assert {rel: n for rel, n in reads.items() if n > 1} == {}
