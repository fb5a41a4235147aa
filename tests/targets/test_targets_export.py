"""Exported programs (`pt2:`): ops read from the graph, checked against a trace of the same model,
and read without importing or running any user module."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from opscan.records import DeviceProfile  # noqa: E402
from opscan.targets import trace_target  # noqa: E402
from opscan.targets.export import trace_export  # noqa: E402
from opscan.trace.export import SDPA_OVERRIDEABLE  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "export"
PT2 = EXAMPLE / "tiny_classifier.pt2"


@pytest.fixture(scope="module")
def traced_inference():
    """`opscan trace examples/export/tiny_classifier.py:build --mode inference`: the same model, run."""
    return trace_target(f"{EXAMPLE / 'tiny_classifier.py'}:build", mode="inference", project_root=str(EXAMPLE))


def _ops(trace) -> set[str]:
    return {u.op for u in trace.ops}


@pytest.mark.slow
def test_export_ops_are_a_subset_of_the_traced_inference_ops(traced_inference):
    exported = trace_export(f"pt2:{PT2}", project_root=str(EXAMPLE))
    assert exported.mode == "inference" and exported.complete
    assert {p for u in exported.ops for p in u.phases} == {"forward"}   # a forward-only program
    assert _ops(exported) <= _ops(traced_inference), _ops(exported) - _ops(traced_inference)
    assert _ops(exported) == _ops(traced_inference)     # for this model, nothing is missing either (docs)
    assert {"aten::addmm", "aten::t", "aten::native_layer_norm", "aten::embedding", "aten::bmm"} <= _ops(exported)


@pytest.mark.slow
def test_saved_level_differs_from_the_trace_only_by_composite_implicit_ops(traced_inference):
    """The ops as saved (`linear`, `layer_norm`, `scaled_dot_product_attention`) are ones the
    dispatcher decomposes before a backend sees them: every difference is explained by that."""
    saved = trace_export(f"pt2:{PT2}", project_root=str(EXAMPLE), level="exported")
    extra = _ops(saved) - _ops(traced_inference)
    assert {"aten::linear", "aten::layer_norm", "aten::scaled_dot_product_attention"} <= extra
    for op in extra:
        assert torch._C._dispatch_has_kernel_for_dispatch_key(op, "CompositeImplicitAutograd"), op


@pytest.mark.slow
def test_core_level_is_what_a_compiler_receives():
    core = _ops(trace_export(f"pt2:{PT2}", project_root=str(EXAMPLE), level="core"))
    assert "aten::permute" in core and "aten::t" not in core        # t is decomposed in Core ATen


@pytest.mark.slow
def test_sources_come_from_the_stack_traces():
    ops = {u.op: u for u in trace_export(f"pt2:{PT2}", project_root=str(EXAMPLE)).ops}
    sources = {(s.path, s.module) for s in ops["aten::addmm"].sources}
    assert ("tiny_classifier.py", "qkv") in sources and ("tiny_classifier.py", "head") in sources
    assert {s.path for u in ops.values() for s in u.sources} == {"tiny_classifier.py"}   # user frames only
    assert ops["aten::embedding"].dtypes == ("torch.float32", "torch.int64")


@pytest.mark.slow
def test_device_profile_decides_native_ops_and_attention():
    profile = DeviceProfile(name="test", native_ops=("aten::linear",), sdpa_policy="overrideable")
    ops = _ops(trace_export(f"pt2:{PT2}", project_root=str(EXAMPLE), profile=profile))
    assert "aten::linear" in ops and "aten::addmm" not in ops
    assert SDPA_OVERRIDEABLE in ops and "aten::bmm" not in ops


@pytest.mark.slow
def test_the_script_beside_the_example_regenerates_it(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    import make_export

    fresh = make_export.main(tmp_path / "again.pt2")
    assert fresh.stat().st_size < 200_000
    again = trace_export(f"pt2:{fresh}", project_root=str(EXAMPLE))
    shipped = trace_export(f"pt2:{PT2}", project_root=str(EXAMPLE))
    assert [(u.op, u.count) for u in again.ops] == [(u.op, u.count) for u in shipped.ops]
    assert b"/site-packages/torch" not in PT2.read_bytes() and str(ROOT).encode() not in PT2.read_bytes()


@pytest.mark.slow
def test_a_bad_file_is_one_line_naming_it(tmp_path, run_cli):
    bad = tmp_path / "broken.pt2"
    bad.write_bytes(b"not a zip archive")
    code, _, err = run_cli("trace", f"pt2:{bad}")
    assert code == 2 and str(bad) in err and len(err.strip().splitlines()) == 1


def test_a_bad_file_is_one_line_naming_it_in_process(tmp_path, run_cli):
    """The quick loop's twin of the test above, without the contained child."""
    bad = tmp_path / "broken.pt2"
    bad.write_bytes(b"not a zip archive")
    code, _, err = run_cli("trace", f"pt2:{bad}", "--in-process")
    assert code == 2 and str(bad) in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_reading_an_export_runs_no_user_code(tmp_path):
    """As tests/reliability/test_reliability_safety.py does for the scan: modules named like the
    ones in the program (its model's module, the script that made it) write a marker when imported;
    they sit beside the .pt2 and on PYTHONPATH. `opscan model.pt2` reports the ops; no marker."""
    tree, planted, markers = tmp_path / "served", tmp_path / "on-path", tmp_path / "markers"
    for folder in (tree, planted, markers):
        folder.mkdir()
    shutil.copy(PT2, tree / "model.pt2")

    def payload(name: str) -> str:
        return f"open({str(markers / name)!r}, 'w').write('x')\n"

    for folder in (tree, planted):
        for module in ("tiny_classifier", "make_export", "model"):
            (folder / f"{module}.py").write_text(payload(f"{folder.name}-{module}"))
    for name in ("sitecustomize", "usercustomize", "conftest", "__init__"):
        (tree / f"{name}.py").write_text(payload(f"served-{name}"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(planted), PYTHONDONTWRITEBYTECODE="1")
    # the plant works: importing the model's module by its name would leave a marker
    subprocess.run([sys.executable, "-c", "import tiny_classifier"], env=env, cwd=tmp_path, check=True)
    assert [m.name for m in markers.iterdir()] == ["on-path-tiny_classifier"]
    (markers / "on-path-tiny_classifier").unlink()

    opscan = str(Path(sys.executable).with_name("opscan"))
    proc = subprocess.run([opscan, "model.pt2", "--format", "json"], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    assert [t["target"] for t in report["traces"]] == ["pt2:model.pt2"]
    ops = {op["op"] for op in report["ops"]}     # at the level the release's device profile asks for
    assert "aten::embedding" in ops and ops & {"aten::linear", "aten::addmm"}
    assert report["findings"] == [] and report["verdict"]["checked"]["ops"]
    assert sorted(m.name for m in markers.iterdir()) == []


def _crafted(tmp_path: Path, marker: Path) -> Path:
    """The example with its stored sample inputs replaced by a pickle that writes `marker`."""
    import io
    import zipfile

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    evil = tmp_path / "evil.pt2"
    with zipfile.ZipFile(PT2) as source, zipfile.ZipFile(evil, "w") as out:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename.endswith("sample_inputs/model.pt"):
                buffer = io.BytesIO()
                torch.save(Payload(), buffer)
                data = buffer.getvalue()
            out.writestr(item, data)
    return evil


@pytest.mark.slow
def test_a_crafted_file_cannot_run_code_through_pickle(tmp_path, run_cli):
    """torch.export.load falls back to an unsafe torch.load for stored artifacts: opscan keeps every
    load weights-only (NOTE [no pickle from a .pt2] in opscan/trace/export.py)."""
    marker = tmp_path / "RAN"
    evil = _crafted(tmp_path, marker)
    code, _, err = run_cli("trace", f"pt2:{evil}", "--in-process")
    assert code == 2 and "pickled Python objects" in err and len(err.strip().splitlines()) == 1
    assert not marker.exists()
    # the plant works: a plain torch.export.load of the same file runs the payload
    subprocess.run([sys.executable, "-c", f"import torch\ntry:\n torch.export.load({str(evil)!r})\n"
                    "except Exception:\n pass\n"], capture_output=True, timeout=300)
    assert marker.exists()
