"""A training command opscan found by reading gets COMMAND_BUDGET seconds to reach its step: one that
never does (its code looping on made-up data) stops as a timeout and the model path answers; a
command the user names, or a `--timeout` of the user's own, keeps the whole limit (NOTE [the budget
of a command found by reading] in opscan/pipeline/entry_step.py)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from opscan.containment.policy import DEFAULT_TIMEOUT, Limits
from opscan.pipeline import entry_step
from tests.support.corpus import LINEAR_MODEL, write_sources

# a sampler that never finds what it draws for: the step is never reached
TRAIN = """\
    import random
    import torch
    from model import Net

    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    seen = set(range(1, 9))
    item = random.randint(1, 8)
    while item in seen:
        item = random.randint(1, 8)
    loss = model(torch.randn(4, 8, device=device)).sum()
    loss.backward()
    optimizer.step()
    """


def test_the_budget_applies_to_a_found_command_under_the_default_limit_only():
    found = entry_step.Entered(chosen=None)
    assert entry_step.budget(Limits(), found).timeout == entry_step.COMMAND_BUDGET < DEFAULT_TIMEOUT
    assert entry_step.budget(Limits(timeout=2000.0), found).timeout == 2000.0   # the user's --timeout
    assert entry_step.budget(Limits(), replace(found, given=True)).timeout == DEFAULT_TIMEOUT   # --entry
    assert entry_step.budget(None, found) is None   # in-process: no child, no limit


@pytest.mark.slow
def test_a_found_command_that_never_reaches_its_step_stops_at_the_budget_and_the_model_path_answers(
        tmp_path, run_cli, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setattr(entry_step, "COMMAND_BUDGET", 10.0)
    repo = write_sources(tmp_path / "repo", {"README.md": "# toy\n\n```\npython train.py\n```\n",
                                             "model.py": LINEAR_MODEL, "train.py": TRAIN})
    code, out, err = run_cli(str(repo), "--format", "json", "--exit-zero")
    assert code == 0, err
    report = json.loads(out)
    assert any("`python train.py` could not run" in n and "timed out after 10 s" in n for n in report["notes"])
    assert [t["target"] for t in report["traces"]] == ["repo:model.py:Net"]
    assert report["verdict"]["step"]["kind"] == "stand-in"
