"""`opscan examples/nanogpt` (the README's first command): verdict, tasks, details; golden outputs."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import jsonschema
import pytest

from tests.support.golden import check

from opscan.reporters import render

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = "examples/nanogpt"
GOLDEN = Path(__file__).resolve().parent / "golden"
SARIF_SCHEMA = ROOT / "tests/reporters/sarif-schema-2.1.0.json"   # vendored OASIS schema (see its NOTICE)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report():
    """The real run (scan + trace + coverage + plan), from the repository root like the README."""
    pytest.importorskip("torch")
    from opscan.pipeline.analyse import analyse
    from opscan.commands.check import load_effective_config
    import argparse

    here = os.getcwd()
    os.chdir(ROOT)
    try:
        args = argparse.Namespace(path=EXAMPLE, backend=None, db=None, fail_on=None, select=None, ignore=None,
                                  model=None, mode=None)
        return analyse(Path(EXAMPLE), load_effective_config(args))
    finally:
        os.chdir(here)


def _text(fmt: str, report) -> str:
    out = io.StringIO()
    render(fmt, report, out)
    return out.getvalue()


@pytest.mark.parametrize("fmt,name", [("markdown", "nanogpt.md"), ("sarif", "nanogpt.sarif"),
                                      ("json", "nanogpt.json"), ("github", "nanogpt.github.txt")])
def test_golden_outputs(report, fmt, name):
    check(name, _text(fmt, report), GOLDEN)


def test_the_model_is_traced_and_the_plan_is_complete(report):
    (trace,) = report.traces
    assert trace.target == "model.py:build" and trace.mode == "train" and trace.complete
    assert {"aten::linear", "aten::embedding_dense_backward"} <= {u.op for u in trace.ops}
    ids = [t.id for t in report.tasks]
    assert ids.index("device-agnostic") < ids.index("distributed-backend") < ids.index("kernel:rmsnorm")
    kernels = {t.id: t for t in report.tasks if t.id.startswith("kernel:")}
    # the CUDA extension: build call, C++ registration, .cu source and Python wrapper are one task
    gelu = next(t for t in kernels.values() if "fused_gelu" in t.id)
    assert {s.path for s in gelu.sites} >= {"setup.py", "csrc/fused_gelu.cpp", "csrc/fused_gelu_kernel.cu",
                                            "ops/fused_gelu.py"}
    assert "lines of kernel source" in gelu.effort_basis
    # `import triton` goes with the Triton kernel's port, not a separate library task
    assert not any(t.id.startswith("library:") for t in report.tasks)
    assert all(t.sources for t in report.tasks)


def test_sarif_of_the_example_validates(report):
    schema_path = SARIF_SCHEMA
    log = json.loads(_text("sarif", report))
    jsonschema.validate(log, json.loads(schema_path.read_text()))
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
    assert all(uri.startswith("examples/nanogpt/") for uri in uris)


def test_cli_shows_verdict_then_tasks_then_details_and_matches_golden_json(run_cli, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.chdir(ROOT)
    code, out, err = run_cli(EXAMPLE)
    assert code == 1 and "fail-on error" in err
    lines = out.splitlines()
    assert lines[0].startswith("✗ blocked by")
    assert out.index("Port tasks") < out.index("Findings") < out.index("Ops")
    code, out, _ = run_cli(EXAMPLE, "--format", "json")
    assert out == (GOLDEN / "nanogpt.json").read_text()      # same input, same bytes (a second full run)
