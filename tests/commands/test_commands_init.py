"""`opscan init`: the models found are appended to the configuration, existing text kept byte for byte."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from opscan.config import load_config

ROOT = Path(__file__).resolve().parents[2]


def _nanogpt_without_config(tmp_path: Path) -> Path:
    project = tmp_path / "nanogpt"
    shutil.copytree(ROOT / "examples" / "nanogpt", project)
    text = (project / "pyproject.toml").read_text(encoding="utf-8")
    (project / "pyproject.toml").write_text(text[: text.index("# opscan settings")], encoding="utf-8")
    assert load_config(project).models == ()
    return project


def test_init_on_nanogpt_adds_model_build(tmp_path, run_cli):
    project = _nanogpt_without_config(tmp_path)
    before = (project / "pyproject.toml").read_text(encoding="utf-8")
    code, out, err = run_cli("init", str(project))
    assert code == 0, err
    assert 'target = "model.py:build"' in out
    after = (project / "pyproject.toml").read_text(encoding="utf-8")
    assert after.startswith(before)                          # nothing existing is touched
    assert [m.target for m in load_config(project).models] == ["model.py:build"]
    assert tomllib.loads(after)["project"] == tomllib.loads(before)["project"]
    assert "train.py:79" in err and "def build():" in err    # the inline model: how to write a factory
    # a second run adds nothing
    code, out, _ = run_cli("init", str(project))
    assert code == 0 and "already configures" in out
    assert (project / "pyproject.toml").read_text(encoding="utf-8") == after


def test_dry_run_prints_and_writes_nothing(tmp_path, run_cli):
    project = _nanogpt_without_config(tmp_path)
    before = (project / "pyproject.toml").read_bytes()
    code, out, _ = run_cli("init", str(project), "--dry-run")
    assert code == 0 and out.endswith('[[tool.opscan.models]]\ntarget = "model.py:build"\n')
    assert (project / "pyproject.toml").read_bytes() == before


def test_existing_models_are_kept_and_not_repeated(tmp_path, run_cli):
    (tmp_path / "model.py").write_text("def build():\n    return None\n\ndef make_small():\n    return None\n")
    original = ('[tool.opscan]\nfail-on = ["warning"]  # keep this comment\r\n\r\n'
                '[[tool.opscan.models]]\r\ntarget = "model.py:build"\r\nmode = "both"\r\n')
    (tmp_path / "pyproject.toml").write_bytes(original.encode())
    code, out, err = run_cli("init", str(tmp_path))
    assert code == 0, err
    data = (tmp_path / "pyproject.toml").read_bytes()
    assert data.startswith(original.encode()) and b"\n" not in data[len(original):].replace(b"\r\n", b"")
    models = load_config(tmp_path).models
    assert [(m.target, m.mode) for m in models] == [("model.py:build", "both"), ("model.py:make_small", "train")]
    assert load_config(tmp_path).fail_on == ("warning",)


def test_inline_models_array_is_not_rewritten(tmp_path, run_cli):
    (tmp_path / "model.py").write_text("def build():\n    return None\n")
    original = '[tool.opscan]\nmodels = [{target = "other.py:make"}]\n'
    (tmp_path / "pyproject.toml").write_text(original)
    code, _, err = run_cli("init", str(tmp_path))
    assert code == 2 and "pyproject.toml" in err and "by hand" in err
    assert (tmp_path / "pyproject.toml").read_text() == original


def test_without_pyproject_an_opscan_toml_is_written(tmp_path, run_cli):
    (tmp_path / "net.py").write_text("import torch\n\ndef make_net():\n    return torch.nn.Linear(2, 2)\n")
    code, _, err = run_cli("init", str(tmp_path))
    assert code == 0, err
    assert not (tmp_path / "pyproject.toml").exists()
    assert "[[models]]" in (tmp_path / "opscan.toml").read_text()
    # a factory returning a bare model: tried as repo: (opscan makes its inputs; NOTE [factories of a package])
    assert [m.target for m in load_config(tmp_path).models] == ["repo:net.py:make_net"]


def test_model_folder_and_nothing_found(tmp_path, run_cli):
    folder = tmp_path / "llama"
    shutil.copytree(ROOT / "examples" / "models" / "hf" / "llama-tiny", folder)
    code, _, err = run_cli("init", str(folder))
    assert code == 0, err
    assert [m.target for m in load_config(folder).models] == ["hf:."]
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "util.py").write_text("def add(a, b):\n    return a + b\n")
    code, out, err = run_cli("init", str(empty))
    assert code == 1 and out == "" and "no model found" in err and "def build():" in err
    assert "opscan init" not in err                  # the advice names the next step, not this command
    assert not (empty / "opscan.toml").exists()


@pytest.mark.slow
def test_a_folder_of_model_folders_traces_the_first_ones(run_cli):
    """No source and no model configured: the model folders found are traced (the first two, in order)."""
    code, out, err = run_cli(str(ROOT / "examples" / "models" / "hf"), "--format", "json")
    assert code == 0, err
    report = __import__("json").loads(out)
    assert [t["target"] for t in report["traces"]] == ["hf:bert-tiny", "hf:gpt2-tiny"]
    assert "traced with no configuration: hf:bert-tiny: a transformers model folder" in report["notes"]


@pytest.mark.slow
def test_report_of_an_unconfigured_repository_runs_its_training_script_and_lists_its_factory(tmp_path, run_cli):
    # its train.py steps an optimizer at its top level: run first (NOTE [the training command first]),
    # its token files stood in for; the factory is still what `opscan init` proposes
    project = _nanogpt_without_config(tmp_path)
    code, out, err = run_cli(str(project), "--format", "json")
    report = __import__("json").loads(out)
    assert [t["target"] for t in report["traces"]] == ["script:train.py"] and report["traces"][0]["complete"]
    assert report["verdict"]["checked"]["ops"] is True
    assert report["verdict"]["step"] == {"kind": "project", "text": "the training step of `python train.py`",
                                         "command": "python train.py", "why": "", "accepted": False}
    assert any(r["kind"] == "data" and r["subject"].endswith("train.bin") for r in report["traces"][0]["replaced"])
    assert [c["target"] for c in report["discovery"]["candidates"] if c["ready"] and c["kind"] == "factory"] \
        == ["model.py:build"]


def test_nothing_traceable_prints_the_outcome_first_all_on_stderr(tmp_path, run_cli):
    (tmp_path / "net.py").write_text("import torch\n\nclass Net(torch.nn.Module):\n"
                                     "    def __init__(self, hidden):\n        super().__init__()\n")
    code, out, err = run_cli("init", str(tmp_path), "--no-build")   # only read: what a reader sees
    lines = err.splitlines()
    assert code == 1 and out == ""                   # nothing on stdout to land before the details
    assert lines[0].startswith("opscan: no model that can be traced as it is; 1 found")
    assert lines[1].startswith("opscan: not added: net.py:3: Net(hidden) needs constructor arguments")
    assert "see above" not in err and "opscan init" not in err
    assert lines[-1].endswith(f"to [[models]] in {tmp_path / 'opscan.toml'}")   # where it goes
