"""Per dtype after decomposition (issue 44; NOTE [dtypes after decomposition] in opscan/db/lookup.py):
a composite's verdict includes its parts' per-dtype statuses and caveats, a foreach op is judged by its
rows for the dtype it is called with, and the release's dtype rules reach every op's dtype."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.db_files import doc, write

from opscan.db import load_file, load_release
from opscan.errors import DatabaseError
from opscan.records import Draft, ModelTrace, NothingToCheck, OpUsage

pytest.importorskip("torch")   # composite parts come from the installed torch's dispatcher

REPO = Path(__file__).resolve().parents[2]
TABLE = "## {space}\n\n| API | Status | Limitations |\n|---|---|---|\n{rows}"


def _imported(run_cli, folder: Path, rows: str, space: str = "torch", name: str = "r.yaml") -> Path:
    from opscan.db import registry

    (folder / f"{name}.md").write_text(TABLE.format(space=space, rows=rows), encoding="utf-8")
    minor = ".".join(registry.torch_version().split(".")[:2])
    code, _, err = run_cli("db", "import-compat", str(folder / f"{name}.md"), "--release", "2.34.0", "--out",
                           str(folder / name), "--date", "2026-11-06", "--torch", minor)
    assert (code, err) == (0, ""), err
    return folder / name


def _assess(release, *usages: OpUsage):
    from opscan.assess import assess

    return assess(Draft(root="", tool_version="", traces=(ModelTrace("m", "train", "neuron", usages),),
                        source=NothingToCheck()), release)


def test_a_parts_fallback_for_one_dtype_reaches_the_composite(run_cli, tmp_path):
    row = "| torch.Tensor.zero_ | CPU_FALLBACK | aten::zero_ for float32 |\n"
    release = load_file(_imported(run_cli, tmp_path, row))
    assert "aten::zero_" in release.lookup("aten::zeros_like").parts
    assert release.lookup("aten::zeros_like", "float32").status == "cpu-fallback"
    assert release.lookup("aten::zeros_like", "bfloat16").status == "composite"
    usage = OpUsage("aten::zeros_like", 2, ("optimizer",), ("torch.float32",), modes=("train",), step_calls=2,
                    step_bytes=512)
    report = _assess(release, usage)
    assert {c.op: c.status for c in report.coverage} == {"aten::zeros_like": "cpu-fallback"}
    assert [(f.op, f.bytes_per_step) for f in report.fallbacks] == [("aten::zeros_like", 512)]
    assert report.verdict.kind == "fallback"
    from opscan.assess.gate import failures

    assert failures(report, ("error", "fallback")) and not failures(report, ("error",))


def test_a_foreach_op_is_judged_by_the_rows_of_its_own_dtype():
    release = load_release("torchneuron==2.33.0")
    op = "aten::_foreach_lerp_.Scalar"
    assert release.lookup(op).status == "limited"               # any dtype: lerp_ fails for float64, complex
    float32 = release.lookup(op, "float32")
    assert float32.status == "composite"
    said = " ".join([float32.via] + [e.text for e in float32.evidence])
    assert "float64" not in said and "complex" not in said
    assert release.lookup(op, "float64").status == "limited"
    # the model's answer: the worst over its dtypes (an int64 index is no data)
    from opscan.db.lookup import for_model

    assert for_model(release, op, ("torch.float32",)).status == "composite"
    assert for_model(release, op, ("torch.float32", "torch.float64")).status == "limited"


def test_a_float32_adamw_carries_no_float64_caveat_and_a_float64_one_shows_its_failure():
    from opscan.db.caveats import usages_caveats

    release = load_release("torchneuron==2.33.0")
    lerp32 = OpUsage("aten::_foreach_lerp_.Scalar", 1, ("optimizer",), ("torch.float32",))
    assert usages_caveats(release, (lerp32,)) == ()
    lerp64 = OpUsage("aten::_foreach_lerp_.Scalar", 1, ("optimizer",), ("torch.float64",))
    failing = [c for c in usages_caveats(release, (lerp64,)) if c.kind == "known-failure"]
    assert [c.ops for c in failing] == [("aten::_foreach_lerp_.Scalar",)]
    assert "aten::lerp_.Scalar" in failing[0].message
    assert "Float64 data type is not supported on Neuron" in failing[0].message
    assert _assess(release, lerp64).verdict.kind == "unknown"     # a known failure keeps it from ready


def _rule(effect: str, dtype: str = "float64", **extra) -> dict:
    return {"dtype": dtype, "effect": effect, "evidence": ["probe"], **extra}


@pytest.mark.parametrize("effect, status, kind", [("raises", "unsupported", "blocked"),
                                                  ("cpu-fallback", "cpu-fallback", "fallback")])
def test_a_dtype_rule_reaches_every_op_with_a_kernel_and_shows_as_what_it_is(tmp_path, effect, status, kind):
    release = load_file(write(tmp_path, doc(dtype_narrowing=[_rule(effect, note="planted")])), check_registry=False)
    assert release.lookup("aten::mm", "float64").status == status
    assert release.lookup("aten::mm", "float32").status == "native"
    assert release.lookup("aten::mm", "float64").evidence == release.evidence(("probe",))
    mm64 = OpUsage("aten::mm", 1, ("forward",), ("torch.float64",))
    report = _assess(release, mm64)
    assert report.verdict.kind == kind
    if effect == "raises":
        assert report.verdict.blockers.unsupported_ops == 1
    # inside a composite: add.Tensor decomposes (in this file) into add.out, which has a kernel
    assert release.lookup("aten::add.Tensor", "float64").status == status


def test_a_narrowed_dtype_stays_a_caveat(tmp_path):
    from opscan.db.caveats import usages_caveats

    release = load_file(write(tmp_path, doc(dtype_narrowing=[{"dtype": "float64", "computed_as": "float32",
                                                               "evidence": ["probe"]}])), check_registry=False)
    assert release.lookup("aten::mm", "float64").status == "native"
    caveats = usages_caveats(release, (OpUsage("aten::mm", 1, ("forward",), ("torch.float64",)),))
    assert [c.kind for c in caveats] == ["float64-narrowed"]


@pytest.mark.parametrize("rule, cause", [
    ({"dtype": "float64", "evidence": ["probe"]}, "computed_as is required"),
    (_rule("raises", computed_as="float32"), "only for effect narrowed"),
    (_rule("explodes"), "effect 'explodes' is not one of"),
])
def test_dtype_rules_are_checked_on_load(tmp_path, rule, cause):
    with pytest.raises(DatabaseError, match=cause):
        load_file(write(tmp_path, doc(dtype_narrowing=[rule])), check_registry=False)


# ---- the whole command, as a new user runs it (a float32 and a float64 AdamW model) ----------------

MODEL = '''import torch
from torch import nn


def build():
    return nn.Linear(8, 8), (torch.randn(4, 8),)


def build64():
    return nn.Linear(8, 8).double(), (torch.randn(4, 8, dtype=torch.float64),)
'''


def _project(folder: Path, target: str, config: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "m.py").write_text(MODEL, encoding="utf-8")
    (folder / "pyproject.toml").write_text(f'[tool.opscan]\n{config}[[tool.opscan.models]]\ntarget = "m.py:{target}"\n',
                                           encoding="utf-8")
    return folder


def _run(run_cli, project: Path, *extra: str) -> tuple[int, dict]:
    code, out, err = run_cli(str(project), "--format", "json", *extra)
    assert code in (0, 1), err
    return code, json.loads(out)


@pytest.mark.slow
def test_zero_through_zeros_like_fails_the_fallback_gate(run_cli, tmp_path):
    project = _project(tmp_path / "p", "build")
    for n, rows in enumerate(("| torch.Tensor.zero_ | CPU_FALLBACK | aten::zero_ for float32 |\n",
                              "| torch.Tensor.zero_ | CPU_FALLBACK | aten::zero_ |\n")):
        db = _imported(run_cli, tmp_path, rows, name=f"r{n}.yaml")
        code, data = _run(run_cli, project, "--db", str(db), "--fail-on", "error,fallback")
        ops = {o["op"]: o["status"] for o in data["ops"]}
        assert ops["aten::zeros_like"] == "cpu-fallback", rows
        assert data["verdict"]["kind"] == "fallback" and code == 1, rows


@pytest.mark.slow
def test_float32_foreach_adamw_is_ready_against_a_table_that_documents_its_ops(run_cli, tmp_path):
    """Every op the step reaches documented Y Native (lerp_ too, which 2.33's float64/complex rows keep
    `limited`): ready, and `--fail-on not-ready` passes; against the shipped 2.33 it is likely and fails.
    The step is the stand-in step of a configured model, accepted as right (NOTE [the step answered for])."""
    project = _project(tmp_path / "p", "build", "accept-stand-in-step = true\n")
    code, shipped = _run(run_cli, project, "--fail-on", "not-ready")
    assert shipped["verdict"]["kind"] == "likely" and code == 1
    lerp = {o["op"]: o for o in shipped["ops"]}["aten::_foreach_lerp_.Scalar"]
    assert lerp["status"] == "composite" and not [c for c in shipped["caveats"] if "lerp" in c["message"]]
    release = load_release("torchneuron==2.33.0")
    from opscan.db.lookup import parts_reached

    reached = {p for o in shipped["ops"] for p in (o["op"], *parts_reached(release, o["op"]))}
    # the ops with a kernel in 2.33 (the leaves), and the in-place composites a foreach op calls
    documented = sorted(op for op in reached if release.lookup(op).status.has_kernel
                        or op in ("aten::addcdiv_", "aten::addcmul_", "aten::empty_like"))
    db = _imported(run_cli, tmp_path, "".join(f"| {op} | Y | Native |\n" for op in documented), space="torch.ops.aten")
    assert load_file(db).entries["aten::lerp_.Scalar"].status == "limited"     # float64 and complex tests fail
    code, data = _run(run_cli, project, "--db", str(db), "--fail-on", "not-ready")
    assert data["verdict"]["kind"] == "ready" and code == 0, data["verdict"]
    text = json.dumps(data["caveats"]) + json.dumps(data["verdict"])
    assert "float64" not in text and "complex" not in text


@pytest.mark.slow
def test_a_float64_adamw_model_shows_its_failure(run_cli, tmp_path):
    code, data = _run(run_cli, _project(tmp_path / "p", "build64"))
    failing = [c for c in data["caveats"] if c["kind"] == "known-failure"]
    assert any("Float64 data type is not supported on Neuron" in c["message"]
               and c["ops"] == ["aten::_foreach_lerp_.Scalar"] for c in failing)
    assert data["verdict"]["kind"] == "unknown" and "known failure" in data["verdict"]["headline"]


@pytest.mark.slow
def test_the_div_alias_row_fires_on_a_float32_division(run_cli, tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    (project / "m.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass D(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = nn.Linear(8, 8)\n\n    def forward(self, x):\n"
        "        return self.fc(x) / 2\n\n\ndef build():\n    return D(), (torch.randn(4, 8),)\n", encoding="utf-8")
    (project / "pyproject.toml").write_text('[[tool.opscan.models]]\ntarget = "m.py:build"\nmode = "inference"\n',
                                            encoding="utf-8")
    db = _imported(run_cli, tmp_path, "| torch.div | CPU_FALLBACK | aten::div for float32 |\n")
    code, data = _run(run_cli, project, "--db", str(db), "--fail-on", "fallback")
    assert {o["op"]: o["status"] for o in data["ops"]}["aten::div.Tensor"] == "cpu-fallback"
    assert code == 1 and data["verdict"]["kind"] == "fallback"
