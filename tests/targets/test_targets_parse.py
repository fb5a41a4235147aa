"""A target string is parsed once, by one parser, into a Target (NOTE [targets parsed once] in
opscan/records/target.py): each kind with its parts, one line naming a bad string, and the record is
its string wherever it is written."""

from __future__ import annotations

import json
import pickle

import pytest

from opscan.config import Config, ModelConfig
from opscan.config.load import load_config
from opscan.errors import ConfigError, TargetError, UsageError
from opscan.pipeline.analyse import with_models
from opscan.records import Target, TargetKind
from opscan.targets.project_code import built_by


@pytest.mark.parametrize("text,kind,spec,where,name", [
    ("hf:models/llama", TargetKind.HF, "models/llama", "", ""),
    ("timm:resnet18", TargetKind.TIMM, "resnet18", "", ""),
    ("pt2:out/model.pt2", TargetKind.EXPORT, "out/model.pt2", "", ""),
    ("script:train.py", TargetKind.SCRIPT, "train.py", "", ""),
    ("repo:models/gpt.py:GPT", TargetKind.REPO, "models/gpt.py:GPT", "models/gpt.py", "GPT"),
    ("repo:README.md#2", TargetKind.REPO, "README.md#2", "", ""),
    ("repo:tests/test_m.py::test_forward", TargetKind.REPO, "tests/test_m.py::test_forward", "", ""),
    ("src/model.py:build", TargetKind.FILE, "src/model.py:build", "src/model.py", "build"),
    ("torchvision.models:resnet18", TargetKind.MODULE, "torchvision.models:resnet18", "torchvision.models",
     "resnet18"),
])
def test_each_kind_is_parsed_into_its_parts(text, kind, spec, where, name):
    target = Target.parse(text)
    assert (target.kind, target.spec, target.where, target.name) == (kind, spec, where, name)
    assert target.is_file is (kind is TargetKind.FILE)


@pytest.mark.parametrize("text", ["model.py", "", "hf:", "timm:  ", ":build", "model.py:"])
def test_a_bad_string_is_one_line_naming_it(text):
    with pytest.raises(ValueError) as caught:
        Target.parse(text)
    message = str(caught.value)
    assert message.startswith(f"bad target {text!r}: ") and "\n" not in message
    assert Target.of(text) is None


def test_a_target_is_its_string_in_every_output():
    target = Target.parse("hf:models/llama")
    assert target == "hf:models/llama" and f"{target}" == "hf:models/llama" and str(target) == "hf:models/llama"
    assert json.dumps({"target": target}) == '{"target": "hf:models/llama"}'
    assert {"hf:models/llama": 1}[target] == 1
    assert pickle.loads(pickle.dumps(target)).kind is TargetKind.HF
    assert Target.parse(target) is target   # parsed once: a Target passed down is not parsed again
    with pytest.raises(AttributeError):
        target.kind = TargetKind.TIMM   # type: ignore[misc]


def test_the_edges_parse_and_name_a_bad_target(tmp_path):
    assert ModelConfig(target="model.py:build").target.kind is TargetKind.FILE
    with pytest.raises(UsageError, match="--model: bad target 'model.py'"):
        with_models(Config(root=tmp_path), ["model.py"], None)
    (tmp_path / "pyproject.toml").write_text('[[tool.opscan.models]]\ntarget = "hf:"\n')
    with pytest.raises(ConfigError) as bad:
        load_config(tmp_path)
    assert [p for p in bad.value.problems if "bad target 'hf:': nothing after 'hf:'" in p] and \
        all("\n" not in p for p in bad.value.problems)
    from opscan.targets.loader import parse_target
    with pytest.raises(TargetError, match="bad target 'nothing'"):
        parse_target("nothing")


def test_what_building_a_target_runs_is_read_from_its_kind():
    assert built_by("hf:models/llama") == "" and built_by("pt2:m.pt2") == "" and built_by("timm:resnet18") == ""
    assert built_by("hf:models/c", trust_remote_code=True) == \
        "built by running the remote code of models/c (trust-remote-code)"
    assert built_by("repo:README.md#2") == "built by running README.md block 2"
    assert built_by("src/model.py:build") == "built by importing src/model.py and calling build"
    assert built_by("not a target") == ""
