"""A model opscan was given but could not check never passes: exit 2, "could not check", the whole
reason in one line; `--allow-unchecked` asks for the source gate alone (docs/ci.md, "The gate")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ROOT / "examples" / "models" / "hf" / "llama-tiny"


def _folder(tmp_path: Path, content: bytes | dict, name: str = "model") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    data = content if isinstance(content, bytes) else json.dumps(content).encode()
    (folder / "config.json").write_bytes(data)
    return folder


def _run(run_cli, *args) -> tuple[int, dict, list[str]]:
    code, out, err = run_cli(*args, "--in-process", "--format", "json")
    return code, json.loads(out), [line for line in err.splitlines() if line.startswith("opscan: error:")]


def test_truncated_config_json_names_the_parse_error_with_file_and_line(tmp_path, run_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _folder(tmp_path, b'{"model_type": "llama",\n "hidden_size": 16,')
    code, report, errors = _run(run_cli, "model")
    assert code == 2
    assert errors == ["opscan: error: could not check hf:model: model/config.json:2: not valid JSON: "
                      "Expecting property name enclosed in double quotes (column 20)"]
    assert report["verdict"]["unchecked"] == [errors[0].removeprefix("opscan: error: could not check ")]
    assert report["verdict"]["checked"]["ops"] is False and report["traces"] == []


@pytest.mark.slow
def test_random_bytes_are_not_json_and_not_blamed_on_model_code(tmp_path, run_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _folder(tmp_path, bytes(range(200, 256)) * 4)
    code, report, errors = _run(run_cli, "model")
    assert code == 2 and len(errors) == 1
    assert "model/config.json: not valid JSON: not UTF-8" in errors[0] and "model code" not in errors[0]
    code, out, err = run_cli("trace", "hf:model")          # the trace command says the same
    assert code == 2 and "model/config.json: not valid JSON: not UTF-8" in err and "model code" not in err


def test_a_config_json_beside_python_source_is_the_projects_business(tmp_path, run_cli):
    """A broken config.json in a project folder (not a model folder) does not stop the source gate."""
    folder = _folder(tmp_path, b"{ not json")
    (folder / "train.py").write_text("x = 1\n")
    code, report, errors = _run(run_cli, str(folder))
    assert code == 0 and errors == [] and report["verdict"]["unchecked"] == []


@pytest.fixture
def transformers_here():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")


def test_config_that_cannot_build_a_model_exits_2_with_the_whole_reason(tmp_path, run_cli, monkeypatch,
                                                                        transformers_here):
    monkeypatch.chdir(tmp_path)
    config = json.loads((LLAMA / "config.json").read_text())
    config["hidden_size"] = "lots"
    _folder(tmp_path, config)
    code, report, errors = _run(run_cli, "model")
    assert code == 2 and len(errors) == 1
    line = errors[0]
    assert line.startswith("opscan: error: could not check hf:model: model/config.json: ")
    assert "'hidden_size'" in line and "'lots'" in line and "expected int" in line   # the reason, not cut
    assert "\n" not in report["verdict"]["unchecked"][0]
    code, report, errors = _run(run_cli, "model", "--allow-unchecked")
    assert code == 0 and report["verdict"]["unchecked"]          # still reported, no longer failing


def test_unknown_model_type_is_one_line_with_the_closest_names(tmp_path, run_cli, monkeypatch, transformers_here):
    monkeypatch.chdir(tmp_path)
    _folder(tmp_path, {"model_type": "lamma", "hidden_size": 16})
    code, out, err = run_cli("model", "--in-process")
    assert code == 2
    assert len(out) + len(err) < 4000                              # not transformers' whole model list
    (line,) = [line for line in err.splitlines() if "could not check" in line]
    assert "unknown model_type 'lamma'" in line and "closest: llama" in line
    assert "bert" not in line


def test_allow_unchecked_from_the_config(tmp_path, run_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("import torch\nx = torch.zeros(1).to('cuda')\n")
    _folder(tmp_path, b"[1,", name="broken")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.opscan]\n\n[[tool.opscan.models]]\ntarget = "hf:broken"\nmode = "inference"\n')
    code, report, errors = _run(run_cli, ".")
    assert code == 2 and report["findings"]                       # the source is reported all the same
    assert errors[0].startswith("opscan: error: could not check hf:broken: ")
    text = (tmp_path / "pyproject.toml").read_text().replace("[tool.opscan]\n",
                                                             "[tool.opscan]\nallow-unchecked = true\n")
    (tmp_path / "pyproject.toml").write_text(text)
    code, report, errors = _run(run_cli, ".")
    assert code == 1 and report["verdict"]["kind"] == "blocked"     # the source gate alone
