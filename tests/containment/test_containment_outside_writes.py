"""A training script that writes under an absolute folder outside the project (`/workspace/...`),
run by `opscan PATH` in the contained child: the run goes on past the write, the report names the
redirect, and nothing is written on the host outside the child's scratch (NOTE [writes outside the
project] in opscan/trace/run/outside_writes.py). The child's allow-list is unchanged: a script that
writes the same folder with the real `os` calls (no Python-level open or makedirs) still fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

linux_namespaces = pytest.mark.skipif(
    not sys.platform.startswith("linux") or subprocess.run(["unshare", "-Urn", "true"], capture_output=True).returncode,
    reason="needs Linux user namespaces (unshare -Urn)")

TRAIN = '''import os
import torch
from torch import nn

OUT = {out!r}
device = 'cuda' if torch.cuda.is_available() else 'cpu'
model = nn.Linear(8, 4).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
if not os.path.exists(OUT + '/weights'):
    os.makedirs(OUT + '/weights')
torch.save(model.state_dict(), OUT + '/weights/model.pth')
with open(OUT + '/log.txt', 'w') as handle:
    handle.write('saved')
assert sorted(os.listdir(OUT)) == ['log.txt', 'weights']
model.load_state_dict(torch.load(OUT + '/weights/model.pth'))
{escape}
for step in range(2):
    loss = nn.functional.mse_loss(model(torch.randn(2, 8, device=device)), torch.zeros(2, 4, device=device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
'''

# the same write below Python's `open`/`os.makedirs`: the contained child's read-only root refuses it
ESCAPE = '''import posix
posix.mkdir(OUT + '-raw')
'''


def _opscan(repo: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "opscan", str(repo), "--format", "json", "--exit-zero"],
                          capture_output=True, text=True, timeout=900, cwd=repo)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _project(tmp_path: Path, escape: str) -> tuple[Path, str]:
    out = f"/opscan-test-outside-{uuid.uuid4().hex[:12]}"
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("# toy\n\n```\npython train.py\n```\n", encoding="utf-8")
    (repo / "train.py").write_text(TRAIN.format(out=out, escape=escape), encoding="utf-8")
    return repo, out


@pytest.mark.slow
@linux_namespaces
def test_writes_outside_the_project_go_to_the_scratch_and_the_run_reaches_its_step(tmp_path):
    pytest.importorskip("torch")
    repo, out = _project(tmp_path, "")
    report = _opscan(repo)
    (trace,) = [t for t in report["traces"] if t["target"] == "script:train.py"]
    assert trace["complete"] and trace["mode"] == "train"
    assert [(r["kind"], r["subject"], r["line"]) for r in trace["replaced"]] == [("output", out, 10)]
    assert report["verdict"]["step"]["kind"] == "project"
    assert not os.path.exists(out) and not os.path.exists(out + "-raw")


@pytest.mark.slow
@linux_namespaces
def test_a_write_below_python_still_cannot_leave_the_child(tmp_path):
    pytest.importorskip("torch")
    repo, out = _project(tmp_path, ESCAPE)
    report = _opscan(repo)
    stops = [t.get("stopped_at") or "" for t in report["traces"] if t["target"] == "script:train.py"]
    notes = " ".join(report["notes"])
    assert "Read-only file system" in " ".join(stops) + notes
    assert not os.path.exists(out) and not os.path.exists(out + "-raw")
