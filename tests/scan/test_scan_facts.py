"""Scan facts: one import binding per alias, library use per alias, kernel spans; read by the plan."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from opscan.pipeline.analyse import RunOptions, analyse
from opscan.config import load_config
from opscan.records import FunctionSpan, ImportBinding, LibraryUse
from opscan.scan import decode_result, encode_result, scan_memory, scan_paths, scan_source
from opscan.scan.rules import load_rules

TWO_LIBRARIES = (
    "import cupy, flash_attn\n"
    "\n"
    "def attention(q, k, v):\n"
    "    return flash_attn.flash_attn_func(q, k, v)\n"
    "\n"
    "def ones(n):\n"
    "    a = cupy.ones(n)\n"
    "    return cupy.asnumpy(a)\n"
)


def test_each_alias_of_one_import_statement_is_its_own_finding():
    result = scan_memory({"m.py": TWO_LIBRARIES})
    libraries = [(f.rule, f.subject, f.task, f.location.line) for f in result.findings if f.task == "library"]
    assert sorted(libraries) == [("OPS401", "cupy", "library", 1), ("OPS401", "flash_attn", "library", 1)]


def test_the_scan_states_one_binding_per_alias_and_each_librarys_own_use():
    n_py = "import numpy as np, torch.cuda\ndef f():\n    from flash_attn import flash_attn_func as faf\n"
    facts = scan_memory({"m.py": TWO_LIBRARIES, "n.py": n_py}).facts
    assert facts.bindings_of("m.py") == (ImportBinding("m.py", 1, "cupy", "cupy", end_line=1),
                                         ImportBinding("m.py", 1, "flash_attn", "flash_attn", end_line=1))
    assert ImportBinding("n.py", 1, "np", "numpy", end_line=1) in facts.bindings
    assert ImportBinding("n.py", 3, "faf", "flash_attn.flash_attn_func", module_level=False, end_line=3) \
        in facts.bindings
    # the statement is shared, the measurement is not: each package counts its own loads
    assert facts.library("m.py", 1, "cupy") == LibraryUse("m.py", 1, "cupy", ("cupy", "cupy.asnumpy", "cupy.ones"), 2)
    assert facts.library("m.py", 1, "flash_attn") == LibraryUse(
        "m.py", 1, "flash_attn", ("flash_attn", "flash_attn.flash_attn_func"), 1)


def test_import_cupy_flash_attn_gives_a_flash_attn_task_end_to_end(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(TWO_LIBRARIES)
    report = analyse(tmp_path, load_config(tmp_path), RunOptions(trace=False))
    assert {(f.rule, f.subject) for f in report.findings} >= {("OPS401", "cupy"), ("OPS401", "flash_attn")}
    tasks = {t.id: t for t in report.tasks}
    assert "library:flash_attn" in tasks and "library:cupy" in tasks
    # sized from flash_attn's own use (1 call site), not cupy's loads as well
    assert "1 call site(s)" in tasks["library:flash_attn"].effort_basis, tasks["library:flash_attn"].effort_basis
    assert "2 call site(s)" in tasks["library:cupy"].effort_basis, tasks["library:cupy"].effort_basis


@pytest.mark.slow
def test_cli_json_lists_both_libraries(tmp_path):
    (tmp_path / "m.py").write_text(TWO_LIBRARIES)
    out = subprocess.run([sys.executable, "-m", "opscan", str(tmp_path), "--no-trace", "--format", "json"],
                         capture_output=True, text=True, cwd=tmp_path, check=False)
    data = json.loads(out.stdout)
    assert out.returncode == 1, out.stderr
    assert {t["id"] for t in data["tasks"]} >= {"library:cupy", "library:flash_attn"}


def test_two_extension_modules_in_one_import_are_two_kernel_findings():
    result = scan_memory({"a.py": "import fused_adam_cuda, fused_layer_norm_cuda\nfused_adam_cuda.step()\n"})
    imports = sorted((f.rule, f.subject) for f in result.findings if f.location.line == 1)
    assert imports == [("OPS305", "fused_adam_cuda"), ("OPS305", "fused_layer_norm_cuda")]


def test_kernel_function_span_and_reference_path_are_facts():
    text = ("import triton\n\n@triton.jit\ndef add_kernel(x):\n    a = 1\n    return a\n\n"
            "def add_ref(x):\n    return x + 1\n")
    facts = scan_memory({"k.py": text}).facts
    assert facts.kernels == (FunctionSpan("k.py", 3, 4, 4, "add_kernel"),)
    assert facts.references == ("k.py",)


def test_facts_survive_the_result_cache_round_trip():
    rules = load_rules()
    result = scan_source("m.py", TWO_LIBRARIES.encode(), rules)
    assert result.facts.bindings and result.facts.libraries
    assert decode_result(json.loads(json.dumps(encode_result(result)))) == result


def test_every_field_survives_the_compact_encoding():
    """The codec leaves out defaults and writes dotted names as one string (NOTE [decoding
    bindings], result_codec.py): every field, odd names and another file's bindings come back."""
    from dataclasses import fields, replace

    from opscan.records import ScanFacts
    from opscan.scan.results import Suppression

    result = scan_source("m.py", TWO_LIBRARIES.encode(), load_rules())
    other = ImportBinding("other.py", 3, "np", "numpy", False, 2, 4)
    full = replace(result, scanned=False, parsed=False, marked=True, notes=("a note",), exports=("a.b=OPS101", "c d"),
                   imports=("pkg.mod",), modules=("", "x.y"), demos=((5, 9),), members=(("m", "_C", 3, "C"),),
                   fix_needs=(("torch.accelerator",),) * len(result.findings),
                   suppressions=(Suppression("m.py", 2, ("OPS101",), ("OPS101",), "x = 1"),),
                   facts=replace(result.facts, bindings=result.facts.bindings + (other,), references=("m.py",)))
    back = decode_result(json.loads(json.dumps(encode_result(full))))
    assert back == full
    for name in (f.name for f in fields(full)):
        assert getattr(back, name) == getattr(full, name), name
    for made, built in zip(back.facts.bindings, full.facts.bindings):   # built the fast way, same record
        assert vars(made) == vars(built) and hash(made) == hash(built) and not made < built
    empty = replace(result, findings=(), requires=(), fix_needs=(), facts=ScanFacts())
    assert set(encode_result(empty)) <= {"path", "lines", "imports", "modules"}   # nothing at its default
    assert decode_result(encode_result(empty)) == empty


def test_a_file_the_prefilter_skips_states_no_facts(tmp_path):
    (tmp_path / "plain.py").write_text("import os\nprint(os.getcwd())\n")
    (tmp_path / "m.py").write_text(TWO_LIBRARIES)
    facts = scan_paths(tmp_path, check_fixes=False).facts
    assert {b.path for b in facts.bindings} == {"m.py"}


def test_no_reader_of_scan_knowledge_parses_python_again():
    """plan/measure.py reads the facts: it no longer imports ast."""
    source = (Path(__file__).resolve().parents[2] / "opscan" / "plan" / "measure.py").read_text(encoding="utf-8")
    imported = {a.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Import) for a in n.names}
    assert "ast" not in imported


def test_the_fixer_takes_torchs_name_from_the_scans_bindings(monkeypatch):
    """fix/context.py reads the name torch is bound to from the scan's facts (not its own reading)."""
    import opscan.fix.context as context
    from opscan.fix.module import fix_module

    def unused(module):
        raise AssertionError("the fixer read the imports itself")

    monkeypatch.setattr(context, "_torch_import", unused)
    rules = load_rules()
    text = "import os\nimport torch as T\n\ndef f(x):\n    return x.to('cuda')\n"
    scanned = scan_source("m.py", text.encode(), rules)
    fixed = fix_module(text, list(scanned.findings), {r.id: r for r in rules}, bindings=scanned.facts.bindings)
    assert 'DEVICE = T.accelerator.current_accelerator(check_available=True) or T.device("cpu")' in fixed.text
    assert "import torch\n" not in fixed.text
    assert [o.status for o in fixed.outcomes] == ["fixed"]


def test_discovery_resolves_module_bases_with_the_scans_resolver(tmp_path):
    """A model class whose base is nn.Module under another name is a candidate (opscan/targets/discovery.py
    resolves bases with opscan/index/resolver.py); a class of the same spelling from elsewhere is not."""
    from opscan.targets.discovery import candidates

    (tmp_path / "net.py").write_text("from torch.nn import Module as Base\n\nclass Net(Base):\n"
                                     "    def forward(self, x):\n        return x\n")
    (tmp_path / "other.py").write_text("from mylib import Thing as Base\n\nclass Other(Base):\n    pass\n")
    found = {c.target: c.kind for c in candidates(tmp_path).candidates}
    assert found == {"net.py:Net": "module-class"}
