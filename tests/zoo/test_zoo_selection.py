"""Selections: hf families from transformers' mappings, default configs on disk, shrinking, lists, files."""

from __future__ import annotations

import json

import pytest

from opscan.errors import InputError, UsageError
from opscan.zoo.hfconfig import _shrink
from opscan.zoo.selection import resolve


def test_causal_lm_is_every_entry_of_the_transformers_mapping():
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_MAPPING_NAMES,
    )

    from opscan.zoo.selection import family_models

    assert list(family_models("causal-lm")) == sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
    assert family_models("causal-lm")["llama"] == "LlamaForCausalLM"
    assert list(family_models("*")) == sorted(MODEL_MAPPING_NAMES)


def test_default_configs_are_written_once_per_family(tmp_path, monkeypatch):
    from opscan.zoo import selection

    small = {"gpt2": "GPT2LMHeadModel", "llama": "LlamaForCausalLM", "gemma4_assistant": "Gemma4AssistantForCausalLM"}
    real = selection.family_models
    monkeypatch.setattr(selection, "family_models", lambda f: dict(sorted(small.items())) if f == "causal-lm" else real(f))
    targets = resolve(["hf:causal-lm", "hf:llama"], tmp_path)
    assert [t.name for t in targets] == ["gemma4_assistant", "gpt2", "llama (causal-lm)", "llama (base)"]
    llama = targets[2]
    assert llama.target == f"hf:{tmp_path / 'causal-lm' / 'llama'}"
    config = json.loads((tmp_path / "causal-lm" / "llama" / "config.json").read_text())
    assert config["model_type"] == "llama" and config["architectures"] == ["LlamaForCausalLM"]
    assert json.loads((tmp_path / "base" / "llama" / "config.json").read_text())["architectures"] == ["LlamaModel"]
    # a default config that cannot be built is a target carrying its error, not an exception
    assert targets[0].error.startswith("default config cannot be built") and not targets[0].config_hash
    again = resolve(["hf:causal-lm", "hf:llama"], tmp_path)
    assert [t.config_hash for t in again] == [t.config_hash for t in targets]


def test_layers_shrink_keeps_every_kind_of_layer(tmp_path):
    data = {"num_hidden_layers": 8, "layer_types": ["full", "sliding"] * 4, "first_k_dense_replace": 1}
    note = _shrink(data, 2)
    assert data["num_hidden_layers"] == 3          # first dense layer + 2
    assert data["layer_types"] == ["full", "sliding", "full"]
    assert note == "num_hidden_layers 8 -> 3"
    data = {"num_hidden_layers": 4, "layer_types": ["a", "b", "c", "d"]}
    assert _shrink(data, 2) == "num_hidden_layers 4 -> 4" or data["num_hidden_layers"] == 4
    assert data["layer_types"] == ["a", "b", "c", "d"]
    placed = {"num_hidden_layers": 30, "per_layer_config": {"5": {"sliding": False}}}
    assert _shrink(placed, 2) == "not shrunk: layer placement in per_layer_config"
    assert placed["num_hidden_layers"] == 30
    periodic = {"num_hidden_layers": 32, "attn_layer_period": 8, "max_position_embeddings": 262144}
    assert _shrink(periodic, 2).startswith("not shrunk") and periodic["max_position_embeddings"] == 262144
    backbone = {"num_hidden_layers": 12, "out_features": ["stage12"], "out_indices": [12],
                "stage_names": ["stem"] + [f"stage{i}" for i in range(1, 13)]}   # beit, dinov2
    assert _shrink(backbone, 2) == "not shrunk: layer placement in out_features"
    assert backbone["num_hidden_layers"] == 12
    unused = {"num_hidden_layers": 12, "out_features": None, "out_indices": None}
    assert _shrink(unused, 2) == "num_hidden_layers 12 -> 2"
    capped = {"num_hidden_layers": 61, "max_position_embeddings": 163840, "layer_norm_eps": 1e-6}
    assert _shrink(capped, 2) == "num_hidden_layers 61 -> 2; max_position_embeddings 163840 -> 4096"
    targets = resolve(["hf:gpt2"], tmp_path, layers=2)
    assert targets[0].note == "n_layer 12 -> 2"
    assert json.loads((tmp_path / "base-L2" / "gpt2" / "config.json").read_text())["n_layer"] == 2
    bf16 = resolve(["hf:gpt2"], tmp_path, layers=2, dtype="bfloat16")[0]
    assert bf16.note == "n_layer 12 -> 2; dtype bfloat16"
    assert json.loads((tmp_path / "base-L2-bfloat16" / "gpt2" / "config.json").read_text())["dtype"] == "bfloat16"


def test_explicit_lists_and_target_files(tmp_path):
    model = tmp_path / "net.py"
    model.write_text("class Net: pass\n")
    listing = tmp_path / "models.txt"
    listing.write_text(f"# my models\n{model}:Net\n\npkg.mod:Thing  # trailing comment\n")
    targets = resolve([f"@{listing}", "pkg.mod:Thing,other.mod:X"], tmp_path)
    assert [t.name for t in targets] == [f"{model}:Net", "pkg.mod:Thing", "other.mod:X"]
    before = targets[0].config_hash
    model.write_text("class Net:\n    x = 1\n")
    assert resolve([f"{model}:Net"], tmp_path)[0].config_hash != before  # edited source, new key


def test_bad_selections_are_clear_errors(tmp_path):
    with pytest.raises(UsageError, match="hf:causal-lm"):
        resolve(["hf:no-such-family"], tmp_path)
    with pytest.raises(UsageError, match="timm"):
        resolve(["timm:*"], tmp_path)  # timm does not import with this torch
    with pytest.raises(InputError, match="cannot read"):
        resolve(["@" + str(tmp_path / "missing.txt")], tmp_path)
    with pytest.raises(UsageError, match="cannot understand"):
        resolve(["llama"], tmp_path)


def test_timm_error_from_the_command(run_cli, monkeypatch):
    import opscan.zoo.coverage as cov
    from opscan.zoo.results import StaticCoverage

    monkeypatch.setattr(cov, "load_coverage", lambda spec=None, db_file=None: StaticCoverage("x==1", {}))
    code, _out, err = run_cli("zoo", "timm:*", "--no-cache")
    assert code == 2 and "timm" in err and "torchvision" in err
