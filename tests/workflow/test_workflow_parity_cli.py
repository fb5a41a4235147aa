"""`opscan parity BASELINE CANDIDATE`: exit codes, the JSON record, the terminal report, plots."""

from __future__ import annotations

import json
import math

import pytest

BASE = {s: 2.3 * math.exp(-s / 80) + 0.1 for s in range(0, 201, 5)}


@pytest.fixture
def logs(tmp_path, monkeypatch):
    """Write synthetic logs into a clean folder (no project config above it) and cd there."""
    monkeypatch.chdir(tmp_path)

    def write(name: str, losses: dict, fmt: str = "json") -> str:
        path = tmp_path / name
        if fmt == "json":
            path.write_text(json.dumps({str(k): v for k, v in losses.items()}))
        elif fmt == "jsonl":
            path.write_text("".join(json.dumps({"step": k, "loss": v}) + "\n" for k, v in losses.items()))
        else:
            path.write_text("step,loss\n" + "".join(f"{k},{v!r}\n" for k, v in losses.items()))
        return name

    return write


def test_parity_exit_0_and_json_record(logs, run_cli):
    base = logs("base.json", BASE)
    cand = logs("cand.csv", {s: v + 1e-4 for s, v in BASE.items()}, fmt="csv")
    code, out, err = run_cli("parity", base, cand, "--tolerance", "2e-3", "--format", "json")
    assert code == 0, err
    record = json.loads(out)
    assert record["tolerance"] == 2e-3
    assert record["tolerance_source"] == "command line"
    assert record["first_divergence_step"] is None
    assert record["drift"] == "flat"
    assert set(record["drift_statistics"]) >= {"slope", "r_squared", "early_mean", "late_mean"}
    assert len(record["rows"]) == len(BASE)
    row = record["rows"][0]
    assert list(row)[:5] == ["step", "baseline", "candidate", "delta", "ok"]
    assert row["delta"] == pytest.approx(1e-4) and row["ok"] is True


def test_growing_divergence_exit_1(logs, run_cli):
    base = logs("base.json", BASE)
    cand = logs("cand.jsonl", {s: v + 2e-5 * s for s, v in BASE.items()}, fmt="jsonl")
    code, out, _ = run_cli("parity", base, cand, "--tolerance", "2e-3", "--format", "json")
    assert code == 1
    record = json.loads(out)
    # 2e-5 * s > 2e-3 first at s = 105 (s = 100 gives 2e-3 up to rounding, so check the rows)
    failing = [r["step"] for r in record["rows"] if not r["ok"]]
    assert record["first_divergence_step"] == failing[0]
    assert failing[0] in (100, 105)
    assert record["drift"] == "growing"
    assert record["drift_statistics"]["slope"] == pytest.approx(2e-5, rel=1e-6)


def test_steps_option_and_nan_row(logs, run_cli):
    cand_losses = dict(BASE)
    cand_losses[150] = math.nan
    base = logs("base.json", BASE)
    cand = logs("cand.json", cand_losses)
    code, out, _ = run_cli("parity", base, cand, "--tolerance", "1e-3", "--steps", "10,50,150,200",
                           "--format", "json")
    assert code == 1
    record = json.loads(out)
    assert [r["step"] for r in record["rows"]] == [10, 50, 150, 200]
    assert record["first_divergence_step"] == 150
    nan_row = record["rows"][2]
    assert nan_row["candidate"] == "nan" and nan_row["delta"] is None and nan_row["ok"] is False


def test_terminal_report(logs, run_cli):
    base = logs("base.json", BASE)
    cand = logs("cand.json", {s: v + (0.0 if s < 120 else 5e-3) for s, v in BASE.items()})
    code, out, _ = run_cli("parity", base, cand, "--tolerance", "2e-3")
    assert code == 1
    assert "tolerance: |delta| <= 0.002  (from command line)" in out
    assert "first divergence: step 120" in out
    assert "drift: growing" in out
    assert "baseline " in out and "candidate " in out and "|delta|" in out   # the chart
    assert "tolerance 0.002" in out
    assert "NO PARITY: diverges at step 120" in out


def test_tolerance_is_required(logs, run_cli):
    base = logs("base.json", BASE)
    code, _, err = run_cli("parity", base, base)
    assert code == 2 and "no tolerance" in err


def test_tolerance_from_pyproject(logs, run_cli, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.opscan.parity]\ntolerance = 5e-3\n")
    base = logs("base.json", BASE)
    cand = logs("cand.json", {s: v + 3e-3 for s, v in BASE.items()})
    code, out, _ = run_cli("parity", base, cand, "--format", "json")
    record = json.loads(out)
    assert code == 0
    assert record["tolerance"] == 5e-3 and record["rel_tolerance"] == 0.0
    assert record["tolerance_source"] == "pyproject.toml [tool.opscan.parity]"
    code, out, _ = run_cli("parity", base, cand, "--tolerance", "1e-3", "--format", "json")
    assert code == 1 and json.loads(out)["tolerance_source"] == "command line"


def test_bad_config_key_is_exit_2(logs, run_cli, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.opscan.parity]\ntolerence = 5e-3\n")
    base = logs("base.json", BASE)
    code, _, err = run_cli("parity", base, base)
    assert code == 2 and "tolerence" in err


def test_bad_input_is_exit_2_naming_file_and_line(logs, run_cli, tmp_path):
    base = logs("base.json", BASE)
    (tmp_path / "bad.csv").write_text("step,loss\n0,1.0\n5,oops\n")
    code, out, err = run_cli("parity", base, "bad.csv", "--tolerance", "1e-3")
    assert code == 2 and out == ""
    assert "bad.csv:3:" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv, cause", [
    (["parity", "only-one.json", "--tolerance", "1e-3"], "two loss logs"),
    (["parity", "run", "--tolerance", "1e-3"], "after `--`"),
    (["parity", "a.json", "b.json", "--tolerance", "-1"], "must be a finite number"),
    (["parity", "a.json", "b.json", "--tolerance", "1e-3", "--target-device", "cpu"], "only applies"),
    (["parity", "a.json", "b.json", "--tolerance", "1e-3", "--", "python"], "parity run"),
])
def test_usage_errors(logs, run_cli, argv, cause):
    code, _, err = run_cli(*argv)
    assert code == 2 and cause in err


def test_mismatched_steps_and_require_same_steps(logs, run_cli):
    base = logs("base.json", BASE)
    cand = logs("cand.json", {s: v for s, v in BASE.items() if s <= 100})
    code, out, _ = run_cli("parity", base, cand, "--tolerance", "1e-3")
    assert code == 0 and "step sets differ" in out and "only in baseline" in out
    code, out, _ = run_cli("parity", base, cand, "--tolerance", "1e-3", "--require-same-steps",
                           "--format", "json")
    record = json.loads(out)
    assert code == 1 and record["only_in_baseline"][0] == 105 and record["only_in_candidate"] == []


def test_json_is_deterministic(logs, run_cli):
    base = logs("base.json", BASE)
    cand = logs("cand.json", {s: v + 1e-5 * s for s, v in BASE.items()})
    first = run_cli("parity", base, cand, "--tolerance", "2e-3", "--format", "json")
    second = run_cli("parity", base, cand, "--tolerance", "2e-3", "--format", "json")
    assert first == second


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_plot_file(logs, run_cli, tmp_path, suffix):
    pytest.importorskip("matplotlib")
    base = logs("base.json", BASE)
    cand = logs("cand.json", {s: v + 2e-5 * s for s, v in BASE.items()})
    target = tmp_path / f"parity{suffix}"
    code, _, err = run_cli("parity", base, cand, "--tolerance", "2e-3", "--plot", str(target),
                           "--format", "json")
    assert code == 1 and "plot written" in err
    data = target.read_bytes()
    if suffix == ".png":
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and b"IEND" in data[-16:]
    else:
        import xml.etree.ElementTree as ET
        root = ET.fromstring(data)
        assert root.tag == "{http://www.w3.org/2000/svg}svg"


def test_plot_bad_suffix(logs, run_cli):
    base = logs("base.json", BASE)
    code, _, err = run_cli("parity", base, base, "--tolerance", "1e-3", "--plot", "out.pdf")
    assert code == 2 and ".png or .svg" in err


def test_chart_marks_nan_and_failures():
    import io

    from rich.console import Console

    from opscan.workflow.losslog import LossLog
    from opscan.workflow.parity import Tolerance, compare
    from opscan.workflow.parity_render import chart, render_terminal

    base = {s: 1 - 0.004 * s for s in range(100)}
    cand = {s: v + (1e-5 * math.exp(s / 10) if s < 80 else math.nan) for s, v in base.items()}
    result = compare(LossLog("b", "json-object", tuple(base.items())),
                     LossLog("c", "json-object", tuple(cand.items())), Tolerance(1e-3))
    lines = [line.plain for line in chart(result)]
    assert lines[0].startswith("baseline") and "✗" not in lines[0]
    assert lines[1].startswith("candidate") and lines[1].count("✗") == 12     # 20 NaN steps, 60 columns
    assert lines[-2].endswith("tolerance 0.001") and "─" in lines[-2]
    out = io.StringIO()
    render_terminal(result, Console(file=out, width=100, color_system=None))
    text = out.getvalue()
    assert "first divergence: step 47" in text and "NaN in candidate only" in text
    assert "20 step(s) with a non-finite loss are left out" in text


def test_steps_from_pyproject(logs, run_cli, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.opscan.parity]\ntolerance = 1e-3\nsteps = [10, 5]\n")
    base = logs("base.json", BASE)
    code, out, _ = run_cli("parity", base, base, "--format", "json")
    assert code == 0
    assert [row["step"] for row in json.loads(out)["rows"]] == [5, 10]
