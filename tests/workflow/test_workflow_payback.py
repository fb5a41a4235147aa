"""`opscan payback` with known figures, deliberate half-up rounding, --from and input validation."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from opscan.workflow import payback as pb

BASE = ["payback", "--weeks", "3", "--hours-per-week", "35", "--rate", "120", "--monthly-now", "10000"]


def figures(run_cli, *extra):
    code, out, err = run_cli(*BASE, *extra, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_known_figures_worth_a_pilot(run_cli):
    record = figures(run_cli, "--monthly-after", "6000")
    assert record["port_cost"] == 12600          # 3 weeks x 35 h x 120/h
    assert record["monthly_saving"] == 4000
    assert record["breakeven_months"] == 3.2     # 3.15 rounded half-up
    assert record["verdict"] == "worth a pilot"
    assert list(record)[:4] == ["port_cost", "monthly_saving", "breakeven_months", "verdict"]


def test_half_up_is_deliberate():
    assert round(3.15, 1) == 3.1                 # why Decimal is used
    result = pb.compute(pb.effort_from_weeks(Decimal(3), Decimal(35)), Decimal(120),
                        Decimal(10000), Decimal(6000))
    assert result.breakeven_months == Decimal("3.15")
    assert result.breakeven_rounded == Decimal("3.2")


def test_900_a_month_is_not_this_quarter(run_cli):
    record = figures(run_cli, "--monthly-after", "9100")
    assert record["monthly_saving"] == 900 and record["breakeven_months"] == 14.0
    assert record["verdict"] == "not this quarter"


def test_longer_horizon_changes_the_verdict(run_cli):
    record = figures(run_cli, "--monthly-after", "9100", "--horizon-months", "18")
    assert record["verdict"] == "worth a pilot"


def test_breakeven_exactly_at_the_horizon_is_within(run_cli):
    record = figures(run_cli, "--monthly-after", "7900")      # 12,600 / 2,100 = 6.0
    assert record["breakeven_months"] == 6.0 and record["verdict"] == "worth a pilot"


@pytest.mark.parametrize("after", ["10000", "12000"])
def test_no_savings(run_cli, after):
    record = figures(run_cli, "--monthly-after", after)
    assert record["breakeven_months"] is None and record["verdict"] == "no savings on these inputs"


def test_terminal_output(run_cli):
    code, out, _ = run_cli(*BASE, "--monthly-after", "6000")
    assert code == 0
    assert "12,600" in out and "4,000" in out and "3.2 months" in out
    assert "verdict: worth a pilot" in out


def test_effort_from_report(run_cli, tmp_path):
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"summary": {"effort_hours": 52.5, "tasks": 4}}))
    code, out, err = run_cli("payback", "--from", str(report), "--rate", "100", "--monthly-now", "5000",
                             "--monthly-after", "4000", "--format", "json")
    assert code == 0, err
    record = json.loads(out)
    assert record["effort_hours"] == 52.5 and record["engineer_days"] == 6.56    # 52.5 / 8, half-up
    assert record["port_cost"] == 5250 and record["breakeven_months"] == 5.3      # 5.25 -> 5.3
    assert "engineer-days of 8 h" in record["effort_basis"]


def test_effort_range_from_report_likely_decides(run_cli, tmp_path):
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"summary": {"effort_hours": 52.5, "effort_low_hours": 30,
                                              "effort_high_hours": 120, "tasks": 4, "unsized_tasks": ["library:x"]}}))
    argv = ("payback", "--from", str(report), "--rate", "100", "--monthly-now", "5000", "--monthly-after", "4000")
    code, out, err = run_cli(*argv, "--format", "json")
    assert code == 0, err
    record = json.loads(out)
    assert record["port_cost"] == 5250 and record["verdict"] == "worth a pilot"       # the likely 52.5 h
    assert record["effort_low_hours"] == 30 and record["effort_high_hours"] == 120
    assert record["port_cost_range"] == [3000, 12000]
    assert record["breakeven_months_range"] == [3.0, 12.0]                           # 3000/1000, 12000/1000
    assert "range 30-120 h" in record["effort_basis"] and "library:x" in record["effort_basis"]
    code, out, _ = run_cli(*argv)
    assert code == 0 and "3,000-12,000" in out and "3.0-12.0 months" in out


def test_report_range_must_contain_the_likely_value(run_cli, tmp_path):
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"summary": {"effort_hours": 52.5, "effort_low_hours": 60, "effort_high_hours": 80}}))
    code, _, err = run_cli("payback", "--from", str(report), "--rate", "1", "--monthly-now", "2",
                           "--monthly-after", "1")
    assert code == 2 and "does not contain" in err


@pytest.mark.parametrize("argv, cause", [
    (["--weeks", "-3"], "--weeks must be greater than 0"),
    (["--weeks", "0"], "--weeks must be greater than 0"),
    (["--hours-per-week", "0"], "--hours-per-week must be greater than 0"),
    (["--rate", "abc"], "--rate: 'abc' is not a number"),
    (["--rate", "nan"], "not a finite number"),
    (["--monthly-now", "0"], "--monthly-now must be greater than 0"),
    (["--monthly-after", "-1"], "--monthly-after must not be negative"),
    (["--horizon-months", "0"], "--horizon-months must be greater than 0"),
])
def test_invalid_inputs_exit_2(run_cli, argv, cause):
    values = {"--weeks": "3", "--hours-per-week": "35", "--rate": "120", "--monthly-now": "10000",
              "--monthly-after": "6000"}
    values.update(dict(zip(argv[::2], argv[1::2])))
    code, out, err = run_cli("payback", *[x for kv in values.items() for x in kv])
    assert code == 2 and out == "" and cause in err


@pytest.mark.parametrize("missing", ["--weeks", "--hours-per-week", "--rate", "--monthly-now",
                                     "--monthly-after"])
def test_missing_inputs_exit_2(run_cli, missing):
    values = {"--weeks": "3", "--hours-per-week": "35", "--rate": "120", "--monthly-now": "10000",
              "--monthly-after": "6000"}
    del values[missing]
    code, _, err = run_cli("payback", *[x for kv in values.items() for x in kv])
    assert code == 2 and missing in err and "required" in err


def test_from_and_weeks_together(run_cli, tmp_path):
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"summary": {"effort_hours": 8}}))
    code, _, err = run_cli("payback", "--from", str(report), "--weeks", "1", "--rate", "1",
                           "--monthly-now", "2", "--monthly-after", "1")
    assert code == 2 and "not both" in err


@pytest.mark.parametrize("content, cause", [
    ('{"summary": {"effort_hours": 0}}', "lists no port tasks"),
    ('{"summary": {}}', "no summary.effort_hours"),
    ("[1, 2]", "no summary.effort_hours"),
    ("{oops", "not valid JSON"),
])
def test_bad_report(run_cli, tmp_path, content, cause):
    report = tmp_path / "r.json"
    report.write_text(content)
    code, _, err = run_cli("payback", "--from", str(report), "--rate", "1", "--monthly-now", "2",
                           "--monthly-after", "1")
    assert code == 2 and str(report) in err and cause in err
