"""A training command whose step never reaches the device (its model and data stay on the host) is
not the project's step on the device: `opscan PATH` says so and follows the model path (a stand-in
step, at best `likely`), and `opscan run` of it is `unchecked`, never `ready` (NOTE [a step that never
reaches the device] in opscan/assess/step.py). The same script moving its model to the device is the
project's step."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.corpus import LINEAR_MODEL, write_sources

pytestmark = pytest.mark.slow

TRAIN = """\
    import torch
    from torch import nn
    from model import Net

    device = {device}
    model = Net().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    labels = torch.zeros(4, dtype=torch.long).to(device)
    for step in range(2):
        loss = nn.functional.cross_entropy(model(torch.randn(4, 8).to(device)), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    """


def _project(tmp_path: Path, device: str) -> Path:
    return write_sources(tmp_path / "repo", {"README.md": "# toy\n\n```\npython train.py\n```\n",
                                             "model.py": LINEAR_MODEL, "train.py": TRAIN.format(device=device)})


def _opscan(repo: Path, command: str, *args: str) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, "-m", "opscan", command, "--format", "json", "--fail-on", "not-ready",
                           *args],
                          capture_output=True, text=True, timeout=900, cwd=repo)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def test_a_step_on_the_host_only_is_said_and_the_model_path_answers_at_best_likely(tmp_path):
    pytest.importorskip("torch")
    code, report = _opscan(_project(tmp_path, "'cpu'"), ".")
    step = report["verdict"]["step"]
    assert step["kind"] == "stand-in" and "no op of the step reached the device" in step["text"]
    assert [t["target"] for t in report["traces"]] == ["repo:model.py:Net"]
    assert report["verdict"]["kind"] != "ready" and code == 1
    assert any("aten::nll_loss_forward" == op["op"] for op in report["ops"])


def test_opscan_run_of_a_step_on_the_host_only_is_unchecked_not_ready(tmp_path):
    pytest.importorskip("torch")
    code, report = _opscan(_project(tmp_path, "'cpu'"), "run", "--", "python", "train.py")
    verdict = report["verdict"]
    assert verdict["kind"] == "unchecked" and "no op of the step reached the device" in verdict["headline"]
    assert verdict["step"]["kind"] == "project" and code == 1
    assert report["ops"] == [] and report["host_ops"]


def test_the_same_script_moving_its_model_to_the_device_is_the_projects_step(tmp_path):
    pytest.importorskip("torch")
    _, report = _opscan(_project(tmp_path, "'cuda' if torch.cuda.is_available() else 'cpu'"), ".")
    assert report["verdict"]["step"]["kind"] == "project" and not report["verdict"]["step"]["why"]
    assert [t["target"] for t in report["traces"]] == ["script:train.py"]
    assert any("aten::nll_loss_forward" == op["op"] for op in report["ops"])
