"""Writes of a run under absolute folders outside the project go to the run's scratch folder, and
the later reads of what was written read them back (NOTE [writes outside the project] in
opscan/trace/run/outside_writes.py). The contained child's read-only root is imitated here by a
folder `os.access` calls unwritable; tests/containment/test_containment_outside_writes.py runs it
for real."""

from __future__ import annotations

import os
import posix
import tempfile

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from opscan.trace.run import outside_writes  # noqa: E402
from opscan.trace.run.stand_in_hooks import installed  # noqa: E402
from opscan.trace.run.stand_ins import StandIns  # noqa: E402
from opscan.trace.sources import SourceFinder  # noqa: E402


@pytest.fixture()
def run(tmp_path, monkeypatch):
    """A project, a temporary folder of the run, and `tmp_path/readonly` as a read-only folder."""
    project, scratch, readonly = tmp_path / "project", tmp_path / "scratch", tmp_path / "readonly"
    for folder in (project, scratch, readonly):
        folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.chdir(project)
    real_access = outside_writes._ACCESS
    monkeypatch.setattr(outside_writes, "_ACCESS", lambda path, mode: (
        False if str(path).startswith(str(readonly)) else real_access(path, mode)))
    (project / "train.py").write_text("", encoding="utf-8")
    made = StandIns(str(project), SourceFinder(str(project)), str(project / "train.py"))
    with installed(made):
        yield made, readonly, scratch, tmp_path


def test_a_folder_made_and_written_outside_the_project_is_written_to_scratch_and_read_back(run):
    made, readonly, scratch, _ = run
    weights = readonly / "workspace" / "weights"
    if not os.path.exists(weights):
        os.makedirs(weights)
    torch.save({"w": torch.ones(2, 3)}, f"{weights}/model.pth")
    with open(readonly / "workspace" / "log.txt", "w") as handle:
        handle.write("step 1")
    np.save(str(readonly / "workspace" / "us.npy"), np.arange(4))
    assert os.path.isdir(weights) and os.path.exists(weights / "model.pth")
    assert sorted(os.listdir(readonly / "workspace")) == ["log.txt", "us.npy", "weights"]
    assert torch.load(f"{weights}/model.pth")["w"].shape == (2, 3)
    assert open(readonly / "workspace" / "log.txt").read() == "step 1"
    assert np.load(str(readonly / "workspace" / "us.npy")).tolist() == [0, 1, 2, 3]
    assert posix.listdir(str(readonly)) == []   # nothing was written where the script asked (the real call)
    copy = scratch / outside_writes.FOLDER / str(readonly).lstrip(os.sep) / "workspace"
    assert sorted(os.listdir(copy)) == ["log.txt", "us.npy", "weights"]
    assert [(r.kind, r.subject) for r in made.replaced] == [("output", os.sep + str(readonly).split(os.sep)[1])]


def test_writes_that_can_be_made_and_reads_never_written_are_left_alone(run):
    made, readonly, scratch, tmp_path = run
    with pytest.raises(FileNotFoundError):   # an absent absolute path the run never wrote: absent data
        open(readonly / "ckpt" / "best.bin", "rb")
    assert not os.path.exists(readonly / "ckpt")
    writable = tmp_path / "elsewhere"
    os.makedirs(writable / "out")   # outside the project but writable here: written where asked
    with open(writable / "out" / "a.txt", "w") as handle:
        handle.write("x")
    os.makedirs("runs/weights")   # inside the project: written where asked
    torch.save(torch.zeros(1), "runs/weights/x.pt")
    with open(scratch / "t.txt", "w") as handle:   # the temporary folder: written where asked
        handle.write("t")
    assert (writable / "out" / "a.txt").read_text() == "x" and os.path.exists("runs/weights/x.pt")
    assert not os.path.exists(scratch / outside_writes.FOLDER) and made.replaced == []


def test_the_patches_are_put_back_after_the_run(tmp_path):
    before = (open, os.makedirs, os.stat, torch.save, torch.load)
    made = StandIns(str(tmp_path), SourceFinder(str(tmp_path)))
    with installed(made):
        assert os.makedirs is not before[1]
    assert (open, os.makedirs, os.stat, torch.save, torch.load) == before
