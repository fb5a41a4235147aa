"""Each model is traced in its own process: crashes, hangs, build errors and memory hogs are rows."""

from __future__ import annotations

import pytest
from tests.support.zoo_fakes import FAKE_TRACER

from opscan.containment.process import Limits
from opscan.zoo.jobs import Job, trace_job
from opscan.zoo.execution import run_zoo
from opscan.zoo.selection import ZooTarget


def _targets(*names: str) -> list[ZooTarget]:
    return [ZooTarget(name=n, target=n, family="test", config_hash=n) for n in names]


@pytest.fixture(scope="module")
def mixed_run():
    from tests.support.release import static_release
    from tests.support.zoo_fakes import STATUSES

    names = ("fake:alpha", "fake:beta", "fake:segfault", "fake:abort", "fake:hang", "fake:nobuild",
             "fake:raises", "fake:gamma")
    return run_zoo(_targets(*names), static_release(STATUSES, "fakeneuron==1.0"), tracer=FAKE_TRACER,
                   workers=2, limits=Limits(timeout=3, max_memory=None, start_method="forkserver"))


@pytest.mark.slow
def test_every_model_is_a_row_and_failures_say_why(mixed_run):
    rows = {row.name: row for row in mixed_run.rows}
    assert list(rows) == sorted(rows)  # sorted, one per target
    assert len(rows) == 8
    assert (rows["fake:segfault"].status, rows["fake:segfault"].verdict) == ("crash", "failed")
    assert "SIGSEGV" in rows["fake:segfault"].error
    assert rows["fake:abort"].status == "crash" and "SIGABRT" in rows["fake:abort"].error
    assert "pretend C++ assertion failed" in rows["fake:abort"].error  # the child's last output
    assert rows["fake:hang"].status == "timeout" and "3 s" in rows["fake:hang"].error
    assert rows["fake:nobuild"].status == "build-error" and "FooForCausalLM" in rows["fake:nobuild"].error
    assert rows["fake:raises"].status == "trace-error" and "shape mismatch" in rows["fake:raises"].error
    # healthy models around them are untouched
    assert rows["fake:alpha"].verdict == "likely" and rows["fake:alpha"].ops == 3   # no evidence: unverified
    assert rows["fake:beta"].verdict == "blocked"
    assert rows["fake:gamma"].verdict == "unknown" and "aten::sort" in rows["fake:gamma"].error   # incomplete


@pytest.mark.slow
def test_row_counts_custom_ops_and_stand_ins(mixed_run):
    beta = next(r for r in mixed_run.rows if r.name == "fake:beta")
    assert beta.counts == {"cpu-fallback": 1, "native": 1, "unsupported": 1}
    assert beta.native == 1
    assert beta.custom_ops == ("mylib::fused_rope",)
    assert beta.stand_ins == ("aten::nonzero dynamic-shape=upper bound 16 x1",)
    assert beta.blockers == ("mylib::fused_rope",)     # only ops that cannot run (or of unknown status)
    assert beta.fallbacks == ("aten::nonzero",)        # runs, on the CPU
    assert beta.op_cells["aten::mm"] == "FBO"


@pytest.mark.slow
def test_ops_ranked_by_models_blocked_and_training_step(mixed_run):
    ops = [s.op for s in mixed_run.ops]
    # ops that block first; then mm (3 models, every step) before add (2 models); a CPU fallback
    # runs, so it keeps no model from running
    assert ops[:2] == ["mylib::fused_rope", "aten::sort"]
    stats = {s.op: s for s in mixed_run.ops}
    assert stats["aten::nonzero"].status == "cpu-fallback" and stats["aten::nonzero"].blocks == 0
    assert stats["aten::mm"].models == ("fake:alpha", "fake:beta", "fake:gamma")
    assert stats["aten::mm"].step_models == 3 and stats["aten::mm"].blocks == 0
    assert ops.index("aten::mm") < ops.index("aten::add.Tensor")


def test_memory_cap_turns_a_hog_into_an_out_of_memory_row():
    import resource

    _soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/status") as handle:
        vm_kib = next(int(line.split()[1]) for line in handle if line.startswith("VmSize:"))
    cap = vm_kib / 2**20 + 1.0  # what the test process maps now, plus 1 GiB; the hog wants 4 GiB more
    outcome = trace_job(Job("fake:hog", "fake:hog"), FAKE_TRACER,
                        Limits(timeout=60, max_memory=int(cap * 2**30), start_method="fork"))
    assert outcome.status == "out-of-memory", outcome
    assert "memory cap" in outcome.error


@pytest.mark.slow
def test_zoo_command_survives_a_crash(run_cli, tmp_path, monkeypatch, coverage):
    import opscan.db as cov

    monkeypatch.setattr(cov, "load_release", lambda spec=None, db_file=None: coverage)
    out_json = tmp_path / "zoo.json"
    code, out, err = run_cli("zoo", "fake:alpha,fake:segfault", "--tracer", FAKE_TRACER, "--workers", "2",
                             "--no-cache", "--json", str(out_json), "--timeout", "20")
    assert code == 0
    assert "fake:segfault" in out and "SIGSEGV" in out
    assert "[2/2]" in err
    import json

    data = json.loads(out_json.read_text())
    assert {m["name"]: m["status"] for m in data["models"]} == {"fake:alpha": "ok", "fake:segfault": "crash"}
