"""The one config.json reader (opscan/targets/folders.py): what `opscan PATH`, `hf:` and `timm:` see."""

from __future__ import annotations

import json

import pytest

from opscan.targets.discovery import direct
from opscan.errors import TargetError
from opscan.targets.folders import HF_FOLDER, TIMM_FOLDER, read_config, remote_code


@pytest.mark.parametrize("data,kind", [
    ({"model_type": "llama"}, HF_FOLDER),
    ({"architectures": ["LlamaForCausalLM"]}, HF_FOLDER),
    ({"architecture": "resnet18", "num_classes": 10}, TIMM_FOLDER),
    ({"hidden_size": 8}, ""),
])
def test_a_folder_is_classified_once_for_every_reader(tmp_path, data, kind):
    (tmp_path / "config.json").write_text(json.dumps(data))
    assert read_config(tmp_path).kind == kind                  # the folder, or
    assert read_config(tmp_path / "config.json").data == data  # its config.json
    found = direct(tmp_path, "m")
    targets = () if found is None else found.traced + tuple(c.target for c in found.refused)
    assert targets == {HF_FOLDER: ("hf:m",), TIMM_FOLDER: ("timm:m",), "": ()}[kind]


@pytest.mark.parametrize("content,what", [
    (b"{not json", "not valid JSON"),
    (b"[1, 2]", "not a JSON object"),
    (b'{"model_type": "\xff"}', "not UTF-8"),
])
def test_an_unreadable_config_is_one_line_naming_it_and_refused_by_discovery(tmp_path, content, what):
    (tmp_path / "config.json").write_bytes(content)
    with pytest.raises(TargetError) as caught:
        read_config(tmp_path)
    assert what in caught.value.message and caught.value.path == str(tmp_path / "config.json")
    # PATH given as a model folder whose config.json cannot be read: no model to trace, and one
    # refusal naming the file and the cause (the gate exits 2 on it, issue 27)
    found = direct(tmp_path, "m")
    assert found is not None and found.traced == ()
    assert [c.target for c in found.refused] == ["hf:m"] and what in found.refused[0].note


def test_a_search_skips_a_config_over_its_size_limit(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "pad": "x" * 200}))
    with pytest.raises(TargetError):
        read_config(tmp_path, max_bytes=100)
    assert read_config(tmp_path).kind == HF_FOLDER


def test_remote_code_names_the_modules_of_auto_map():
    data = {"auto_map": {"AutoConfig": "configuration_x.XConfig", "AutoModel": ["modeling_x.XModel", None]}}
    assert remote_code(data) == "configuration_x.py, modeling_x.py"
    assert remote_code({}) == remote_code({"auto_map": "odd"}) == ""
