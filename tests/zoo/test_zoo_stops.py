"""Every row that is not ok carries its stop class (opscan/zoo/results.py, NOTE [stop classes])."""

from __future__ import annotations

import pytest
from tests.support.release import static_release

from opscan.records import ModelTrace, OpUsage, StandIn
from opscan.targets.hf import upstream
from opscan.zoo.jobs import Outcome
from opscan.zoo.render.common import explain, headline, stop_counts
from opscan.zoo.results import STOPS, build_row
from opscan.zoo.execution import ZooRun
from opscan.zoo.selection import ZooTarget

COVERAGE = static_release({"aten::mm": "native"}, "fakeneuron==1.0")
BUG = upstream.BUGS[0]   # a config-stage bug
STEP_BUG = next(b for b in upstream.BUGS if b.stage == "step")


def _trace(complete=True, stand_ins=()):
    return ModelTrace(target="t", mode="train", device="neuron",
                      ops=(OpUsage(op="aten::mm", count=1, phases=("forward",), modes=("train",)),),
                      stand_ins=stand_ins, complete=complete, stopped_at="" if complete else "aten::mm: stop")


@pytest.fixture
def checked(monkeypatch):
    monkeypatch.setattr(upstream, "installed", lambda: upstream.CHECKED)


def test_each_kind_of_stop_gets_its_class(checked):
    default = ZooTarget("m", "hf:/c/m", "causal-lm", model_type=STEP_BUG.model_type)
    plain = ZooTarget("p", "hf:/c/p", "causal-lm", model_type="llama")
    stand_in = StandIn("aten::nonzero", "dynamic-shape", "upper bound 4 rows", 1)
    rows = {
        "bug": build_row(default, Outcome("m", "partial", _trace(False), "aten::mm: stop"), COVERAGE),
        "config": build_row(ZooTarget("c", "hf:/c/c", "causal-lm", error="default config cannot be built",
                                      model_type=BUG.model_type), None, COVERAGE),
        "package": build_row(plain, Outcome("p", "build-error", None, "ImportError: needs timm",
                                            error_types=("ImportError", "Exception")), COVERAGE),
        "limit": build_row(plain, Outcome("p", "timeout", None, "no result after 1 s"), COVERAGE),
        "data": build_row(plain, Outcome("p", "partial", _trace(False, (stand_in,)), "aten::mm: stop"), COVERAGE),
        "gap": build_row(plain, Outcome("p", "partial", _trace(False), "aten::mm: stop"), COVERAGE),
        "ok": build_row(plain, Outcome("p", "ok", _trace()), COVERAGE),
    }
    assert {k: r.stop for k, r in rows.items()} == {
        "bug": "transformers-bug", "config": "transformers-bug", "package": "missing-package",
        "limit": "limit", "data": "data-dependent", "gap": "opscan", "ok": ""}
    assert set(r.stop for r in rows.values()) - {""} == set(STOPS)
    # a known bug's row carries the one-line reproduction
    assert rows["bug"].error.endswith(upstream.explain(STEP_BUG))
    assert rows["config"].error.endswith(upstream.explain(BUG))
    assert explain(rows["package"]).startswith("[missing package] ImportError")


def test_known_bugs_apply_only_to_default_configs_and_their_stage(checked):
    outcome = Outcome("m", "partial", _trace(False), "aten::mm: stop")
    own = ZooTarget("m", "hf:/mine/m", "file")           # a user's config.json: no model_type recorded
    assert build_row(own, outcome, COVERAGE).stop == "opscan"
    built = ZooTarget("m", "hf:/c/m", "causal-lm", model_type=STEP_BUG.model_type)
    row = build_row(built, Outcome("m", "build-error", None, "TargetError: x", error_types=("TargetError",)),
                    COVERAGE)
    assert row.stop == "opscan" and "reproduce" not in row.error   # a step bug does not explain a build error


def test_known_bugs_need_the_transformers_version_they_were_checked_with(monkeypatch):
    monkeypatch.setattr(upstream, "installed", lambda: "0.0.1")
    target = ZooTarget("m", "hf:/c/m", "causal-lm", model_type=STEP_BUG.model_type)
    assert build_row(target, Outcome("m", "partial", _trace(False), "stop"), COVERAGE).stop == "opscan"


def test_the_headline_gives_the_share_complete_and_the_stop_classes(checked):
    plain = ZooTarget("p", "hf:/c/p", "causal-lm", model_type="llama")
    rows = (build_row(ZooTarget("a", "hf:/c/a", "causal-lm"), Outcome("a", "ok", _trace()), COVERAGE),
            build_row(plain, Outcome("p", "timeout", None, "no result"), COVERAGE),
            build_row(ZooTarget("z", "hf:/c/z", "causal-lm"), Outcome("z", "ok", _trace()), COVERAGE))
    run = ZooRun(rows, (), {"backend": "fakeneuron==1.0"})
    assert stop_counts(run)["limit"] == 1 and sum(stop_counts(run).values()) == 1
    assert "2 traced completely (66.7%), the others stopped by: 1 limit" in headline(run)


def test_a_missing_package_keeps_its_exception_type(tmp_path):
    pytest.importorskip("torch")
    from opscan.errors import TargetError
    from opscan.zoo.tracing import trace_model

    (tmp_path / "needs.py").write_text("def build():\n    raise ImportError('\\nFoo requires the foo library')\n")
    with pytest.raises(ImportError, match="Foo requires the foo library"):
        trace_model(f"{tmp_path}/needs.py:build")
    (tmp_path / "bad.py").write_text("def build():\n    raise ValueError('no')\n")
    with pytest.raises(TargetError):
        trace_model(f"{tmp_path}/bad.py:build")
