"""The steps of `analyse` (NOTE [the pipeline of analyse] in opscan/pipeline/analyse.py), each records in, records out,
and the Draft -> Report seam of opscan/assess/assessment.py."""

from __future__ import annotations

import json

import pytest
from tests.support.release import static_release

from opscan.pipeline.analyse import (Found, Kept, Loaded, Phases, Run, RunOptions, Scanned, Traced, analyse,
                                     apply_baseline, draft_of, find_models, require_something, scan_source, start,
                                     trace_models)
from opscan.assess import assess
from opscan.config import Config, ModelConfig
from opscan.errors import InputError, MissingDependencyError, ModelProcessError, TargetError, UsageError
from opscan.containment.process import Ended, Limits
from opscan.containment.outcome import result_of
from opscan.pipeline.phases import ScanOutcome
from opscan.records import (Checked, Discovery, Draft, Finding, Location, ModelTrace, NotChecked, NothingToCheck,
                            OpUsage, Report)

OPTIONS = RunOptions(limits=None)
MM = OpUsage("aten::mm", 1, ("forward",))


def _silent(event: str, detail: str) -> None:
    pass


def _database(_config):
    return static_release({"aten::mm": "native"}, "torchneuron==2.33.0")


def _phases(trace, calls=None):
    def scan(target, config, options=None, *, index=None):
        if calls is not None:
            calls.append("scan")
        return ScanOutcome()
    return Phases.default(trace=trace, database=_database, scan=scan)


def _config(tmp_path, *targets: str) -> Config:
    return Config(root=tmp_path, models=tuple(ModelConfig(t) for t in targets))


def _traced(tmp_path, config, trace, options=OPTIONS, on_error=None, found=None) -> Traced:
    run = start(tmp_path, options)
    return trace_models(run, found or Found(config), None, options, _phases(trace), _silent, on_error)


# --- start, find_models, scan_source ----------------------------------------------------------

def test_start_reads_the_baseline_before_anything_and_names_a_missing_one(tmp_path):
    with pytest.raises(InputError) as caught:
        start(tmp_path, RunOptions(baseline=tmp_path / "nope.json"))
    assert caught.value.path == str(tmp_path / "nope.json")
    run = start(tmp_path / "m.py", OPTIONS)
    assert (run.root, run.entries, run.narrowed) == (tmp_path.resolve(), None, ())


def test_configured_models_are_traced_as_given_without_discovery(tmp_path):
    config = _config(tmp_path, "a.py:build")
    assert find_models(start(tmp_path, OPTIONS), config, OPTIONS) == Found(config)


def test_models_found_at_path_are_carried_beside_the_configuration_not_in_it(tmp_path):
    """NOTE [found beside the configuration]: the user's Config comes back as given."""
    (tmp_path / "m.pt2").write_bytes(b"")
    config = _config(tmp_path)
    found = find_models(start(tmp_path / "m.pt2", OPTIONS), config, OPTIONS)
    assert found.config is config and config.models == ()
    assert [(m.target.rpartition("/")[2], m.mode) for m in found.models] == [("m.pt2", "inference")]
    assert found.discovery is not None and found.discovery.traced == tuple(m.target for m in found.models)
    own_code = RunOptions(limits=None, project_code=False)   # a .pt2 file runs no project code: kept
    assert find_models(start(tmp_path / "m.pt2", own_code), config, own_code).models == found.models


def test_a_model_file_has_no_source_to_scan_and_the_scan_is_not_run(tmp_path):
    (tmp_path / "m.pt2").write_bytes(b"")
    calls: list[str] = []
    found = Found(_config(tmp_path, "pt2:m.pt2"), Discovery(traced=("pt2:m.pt2",)))
    phases = _phases(lambda *a: None, calls)
    assert scan_source(start(tmp_path / "m.pt2", OPTIONS), found, OPTIONS, phases, _silent) \
        == Scanned(ScanOutcome(), NothingToCheck())
    assert calls == []
    assert scan_source(start(tmp_path, OPTIONS), found, OPTIONS, phases, _silent).source == Checked()
    assert calls == ["scan"]


# --- trace_models ---------------------------------------------------------------------------------

def test_a_failed_process_is_a_stopped_trace_and_a_model_not_checked_with_the_reason_alone(tmp_path):
    def trace(model, root, profile, limits):
        if model.target == "a.py:build":
            raise ModelProcessError("trace of a.py:build timed out after 9 s\n  (limit --timeout 9)",
                                    subject="trace of a.py:build")
        return ModelTrace(model.target, model.mode, "neuron", (MM,))

    seen = []
    got = _traced(tmp_path, _config(tmp_path, "a.py:build", "b.py:build"), trace, on_error=seen.append)
    assert [type(e) for e in seen] == [ModelProcessError]
    assert got.unchecked == (("a.py:build", "timed out after 9 s (limit --timeout 9)"),)
    assert [(t.target, t.complete) for t in got.traces] == [("a.py:build", False), ("b.py:build", True)]
    assert got.traces[0].stopped_at.startswith("trace of a.py:build timed out")
    assert got.ops_not_checked == "" and got.notes == ()


def test_without_on_error_a_model_that_cannot_be_built_raises(tmp_path):
    def trace(model, root, profile, limits):
        raise TargetError("has no 'build'", path="a.py")

    with pytest.raises(TargetError):
        _traced(tmp_path, _config(tmp_path, "a.py:build"), trace)
    got = _traced(tmp_path, _config(tmp_path, "a.py:build"), trace, on_error=lambda exc: None)
    assert got.unchecked == (("a.py:build", "a.py: has no 'build'"),)
    assert got.traces[0].stopped_at == "the model could not be built: a.py: has no 'build'"


def test_a_missing_dependency_stops_tracing_and_leaves_every_model_left_unchecked(tmp_path):
    tried = []

    def trace(model, root, profile, limits):
        tried.append(model.target)
        if model.target == "b.py:build":
            raise MissingDependencyError("tracing needs PyTorch, which is not installed", "torch")
        return ModelTrace(model.target, model.mode, "neuron", (MM,))

    got = _traced(tmp_path, _config(tmp_path, "a.py:build", "b.py:build", "c.py:build"), trace)
    assert tried == ["a.py:build", "b.py:build"]
    assert got.unchecked == (("b.py:build", "tracing needs PyTorch, which is not installed"),
                             ("c.py:build", "tracing needs PyTorch, which is not installed"))
    assert got.ops_not_checked == "tracing needs PyTorch, which is not installed"


def test_no_trace_says_why_and_notes_that_the_verdict_covers_the_source_only(tmp_path):
    options = RunOptions(trace=False, untraced="tracing skipped (--no-trace)", limits=None)
    got = _traced(tmp_path, _config(tmp_path, "a.py:build"), lambda *a: pytest.fail("traced"), options)
    assert got == Traced(ops_not_checked="tracing skipped (--no-trace)", source_only=True,
                         notes=("tracing skipped (--no-trace): the verdict covers the source only",))
    assert _traced(tmp_path, _config(tmp_path), lambda *a: None).ops_not_checked.startswith("no model found")


# --- require_something, apply_baseline, draft_of ------------------------------------------------

def test_a_folder_with_nothing_to_check_is_a_usage_error_naming_it(tmp_path):
    run, found = start(tmp_path, OPTIONS), Found(_config(tmp_path))
    with pytest.raises(UsageError) as caught:
        require_something(run, found, ScanOutcome(), Traced())
    assert caught.value.path == str(tmp_path.resolve())
    require_something(run, found, ScanOutcome(files_scanned=1), Traced())   # source: something to check


def _finding(path: str, line: int) -> Finding:
    return Finding("OPS101", "hardcoded-cuda-device", "device-string", "error", "device pinned to 'cuda'",
                   Location(path, line, 1))


def test_the_baseline_keeps_only_new_findings_and_a_narrowed_run_finds_no_stale_entry_elsewhere(tmp_path):
    from opscan.assess import baseline

    known, new = _finding("a.py", 1), _finding("a.py", 2)
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("x = 1\n")
    baseline.write(tmp_path / "base.json", [known, _finding("b.py", 1)], "0")
    kept = apply_baseline(start(tmp_path, RunOptions(baseline=tmp_path / "base.json", limits=None)), [known, new])
    assert kept.findings == (new,)
    assert (kept.baseline.known, len(kept.baseline.stale)) == (1, 1)
    narrowed = Run(tmp_path, tmp_path, (tmp_path / "a.py",), tmp_path / "base.json",
                   baseline.load(tmp_path / "base.json"))
    assert apply_baseline(narrowed, [known, new]).baseline.stale == ()
    assert apply_baseline(start(tmp_path, OPTIONS), [new]) == Kept((new,))


def test_the_draft_joins_the_notes_in_the_order_the_run_made_them(tmp_path):
    run = start(tmp_path, OPTIONS)
    draft = draft_of(run, Found(_config(tmp_path), notes=("found",)), Loaded(None, ("database",)),
                     Scanned(ScanOutcome(notes=("scan",)), NotChecked("why")),
                     Traced(unchecked=(("m", "gone"),), ops_not_checked="none", notes=("traced",)), Kept(()))
    assert isinstance(draft, Draft)
    assert draft.notes == ("found", "database", "scan", "traced")
    assert (draft.source, draft.ops_not_checked, draft.unchecked) == (NotChecked("why"), "none", (("m", "gone"),))


# --- Draft -> Report ------------------------------------------------------------------------------

def _assessed(source) -> Report:
    trace = ModelTrace("m", "train", "neuron", (MM,))
    return assess(Draft(root="", tool_version="0", traces=(trace,), source=source), _database(None))


def test_assess_turns_a_draft_into_a_report_whose_verdict_reads_the_source_check():
    checked, not_checked, nothing = _assessed(Checked()), _assessed(NotChecked("lists ops only")), \
        _assessed(NothingToCheck())
    assert isinstance(checked, Report) and checked.verdict is not None
    assert checked.verdict.source_checked and not not_checked.verdict.source_checked
    assert not_checked.verdict.kind == "unchecked"
    assert not_checked.verdict.headline.startswith("source: not checked — lists ops only; ")
    assert not nothing.verdict.source_checked
    assert nothing.verdict.kind == checked.verdict.kind != "unchecked"   # no source to scan is not a gap
    assert "source: not checked" not in " ".join((nothing.verdict.headline,) + nothing.verdict.details)
    with pytest.raises(ValueError):
        NotChecked("")


def test_a_whole_run_through_the_steps_gives_the_report_as_json(tmp_path, monkeypatch):
    from opscan.reporters.json import to_dict

    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text("import torch\nx = torch.zeros(1).to('cuda')\n")

    def trace(model, root, profile, limits):
        return ModelTrace(model.target, model.mode, "neuron", (MM,))

    report = analyse(tmp_path, _config(tmp_path, "m.py:build"), OPTIONS, phases=Phases.default(
        trace=trace, database=_database))
    doc = to_dict(report)
    assert doc["verdict"]["kind"] == "blocked"
    assert [f["rule"] for f in doc["findings"]] == ["OPS101"]
    assert json.dumps(doc, sort_keys=True) == json.dumps(to_dict(analyse(
        tmp_path, _config(tmp_path, "m.py:build"), OPTIONS,
        phases=Phases.default(trace=trace, database=_database))), sort_keys=True)


# --- errors say why apart from what failed ----------------------------------------------------------

def test_an_error_about_a_trace_gives_its_reason_without_its_subject():
    exc = ModelProcessError("trace of m.py:build crashed:\n  died of SIGABRT", subject="trace of m.py:build")
    assert str(exc).startswith("trace of m.py:build crashed")
    assert exc.reason == "crashed: died of SIGABRT"
    assert TargetError("has no 'build'", path="a.py").reason == "a.py: has no 'build'"
    with pytest.raises(ValueError):
        ModelProcessError("timed out", subject="trace of m.py:build")
    with pytest.raises(ModelProcessError) as caught:
        result_of(Ended("timeout", seconds=3.0), "trace of m.py:build", Limits(timeout=3))
    assert caught.value.subject == "trace of m.py:build"
    assert caught.value.reason.startswith("timed out after 3 s (limit --timeout 3)")
