"""`opscan parity run` end to end on examples/parity/train.py (CPU against CPU), and its failures."""

from __future__ import annotations

import json
import sys

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture
def example(repo_root, monkeypatch, tmp_path):
    """The shipped example script; run from a clean folder with no perturbation set."""
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PARITY_PERTURB", raising=False)
    return str(repo_root / "examples" / "parity" / "train.py")


def test_identical_runs_are_in_parity(example, run_cli, tmp_path):
    out_dir = tmp_path / "runs"
    code, out, err = run_cli("parity", "run", "--target-device", "cpu", "--tolerance", "1e-3",
                             "--out-dir", str(out_dir), "--format", "json",
                             "--", sys.executable, example, "--seed", "1337", "--steps", "40")
    assert code == 0, err
    record = json.loads(out)
    assert record["first_divergence_step"] is None and record["drift"] == "none"
    assert record["steps_compared"] == 40
    assert record["run"]["target_device"] == "cpu" and record["run"]["command"][-1] == "40"
    assert json.loads((out_dir / "baseline.json").read_text()) == json.loads(
        (out_dir / "candidate.json").read_text())
    assert "TORCH_DEVICE=cpu" in err                      # progress goes to stderr


def test_perturbed_run_diverges(example, run_cli, monkeypatch):
    monkeypatch.setenv("PARITY_PERTURB", "lr")           # the candidate's learning rate is 2% higher
    code, out, err = run_cli("parity", "run", "--target-device", "cpu", "--tolerance", "1e-3",
                             "--pass-env", "PARITY_PERTURB",   # the contained run gets only what is passed
                             "--format", "json", "--", sys.executable, example, "--seed", "1337",
                             "--steps", "40")
    assert code == 1, err
    record = json.loads(out)
    first = record["first_divergence_step"]
    assert first is not None and first > 0
    rows = {r["step"]: r for r in record["rows"]}
    assert all(rows[s]["ok"] for s in range(first))      # everything before it is in tolerance
    assert abs(rows[first]["delta"]) > 1e-3
    assert rows[0]["delta"] == 0                         # same seed, same first loss
    assert record["drift"] in ("flat", "growing")         # a measurable gap (shape: see drift tests)


def test_failing_script_is_exit_2_with_its_last_line(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("parity", "run", "--target-device", "cpu", "--tolerance", "1e-3", "--",
                           sys.executable, "-c", "import sys; print('boom on', 'x'); sys.exit(3)")
    assert code == 2
    assert "baseline run (TORCH_DEVICE=cpu) exited with code 3: boom on x" in err


def test_script_that_writes_no_loss_log(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("parity", "run", "--target-device", "cpu", "--tolerance", "1e-3", "--",
                           sys.executable, "-c", "pass")
    assert code == 2 and "wrote no loss log to $LOSS_DUMP" in err


def test_candidate_sees_the_target_device(run_cli, tmp_path, monkeypatch):
    """The env contract without torch: the script writes a loss that encodes its TORCH_DEVICE."""
    monkeypatch.chdir(tmp_path)
    script = ("import json, os; d = os.environ['TORCH_DEVICE']; role = os.environ['OPSCAN_PARITY_RUN'];"
              "json.dump({'0': 1.0, '1': 1.0 if d == 'cpu' else 2.0}, open(os.environ['LOSS_DUMP'], 'w'));"
              "assert (role == 'baseline') == (d == 'cpu')")
    code, out, err = run_cli("parity", "run", "--target-device", "neuron", "--tolerance", "1e-3",
                             "--format", "json", "--", sys.executable, "-c", script)
    assert code == 1, err
    record = json.loads(out)
    assert record["first_divergence_step"] == 1 and record["run"]["target_device"] == "neuron"


def test_missing_command_binary(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("parity", "run", "--tolerance", "1e-3", "--", "no-such-binary-xyz")
    assert code == 2 and "command not found" in err
