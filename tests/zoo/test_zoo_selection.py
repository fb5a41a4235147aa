"""Selections: hf families from transformers' mappings, default configs on disk, shrinking, lists, files."""

from __future__ import annotations

import json

import pytest

from opscan.errors import InputError, UsageError
from opscan.targets.hf.defaults import _shrink
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
    monkeypatch.setattr(selection, "family_models",
                        lambda f: dict(sorted(small.items())) if f == "causal-lm" else real(f))
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


def test_layers_shrink_sub_configs_with_the_same_rules(tmp_path):
    # a composite config (glm4v-like): the text sub-config is cut, its per-layer list trimmed
    composite = {"model_type": "tiny_vl", "image_token_id": 5,
                 "text_config": {"model_type": "tiny_text", "num_hidden_layers": 40,
                                 "layer_types": ["full"] * 40, "max_position_embeddings": 32768},
                 "vision_config": {"model_type": "tiny_vision", "depth": 24, "hidden_size": 64}}
    note = _shrink(composite, 2)
    assert note == "text_config.num_hidden_layers 40 -> 2; text_config.max_position_embeddings 32768 -> 4096"
    assert composite["text_config"]["num_hidden_layers"] == 2
    assert composite["text_config"]["layer_types"] == ["full", "full"]
    assert composite["vision_config"]["depth"] == 24           # not a layer count opscan cuts
    glm4v = resolve(["hf:glm4v"], tmp_path, layers=2)[0]      # the real one: 40 text layers
    assert "text_config.num_hidden_layers 40 -> 2" in glm4v.note
    assert json.loads((tmp_path / "base-L2" / "glm4v" / "config.json").read_text())["text_config"][
        "num_hidden_layers"] == 2
    # a sub-config placing layers by index stays whole; its siblings are still cut
    placed = {"model_type": "tiny_audio_lm",
              "text_config": {"model_type": "tiny_text", "num_hidden_layers": 28, "max_window_layers": 21},
              "audio_config": {"model_type": "tiny_audio", "encoder_layers": 32}}
    note = _shrink(placed, 2)
    assert note == "audio_config.encoder_layers 32 -> 2; not shrunk: layer placement in text_config.max_window_layers"
    assert placed["text_config"]["num_hidden_layers"] == 28 and placed["audio_config"]["encoder_layers"] == 2
    # nested deeper (pi0's vlm_config.text_config): the same, with the path in the note
    nested = {"model_type": "tiny_policy",
              "vlm_config": {"model_type": "tiny_vlm",
                             "text_config": {"model_type": "tiny_text", "num_hidden_layers": 18}}}
    assert _shrink(nested, 2) == "vlm_config.text_config.num_hidden_layers 18 -> 2"
    # a placement at the top (llava's vision_feature_layer) may name any sub-config's layers
    top = {"model_type": "tiny_llava", "vision_feature_layer": -2,
           "text_config": {"model_type": "tiny_text", "num_hidden_layers": 32},
           "vision_config": {"model_type": "tiny_vision", "num_hidden_layers": 24}}
    assert _shrink(top, 2) == "not shrunk: layer placement in vision_feature_layer"
    assert top["text_config"]["num_hidden_layers"] == 32 and top["vision_config"]["num_hidden_layers"] == 24
    # a sub-config with no stack of its own placing layers (molmo2's adapter_config) names a
    # sibling's layers: no sibling is cut (a backbone's out_features name its own stages instead)
    sibling = {"model_type": "tiny_molmo",
               "adapter_config": {"model_type": "tiny_adapter", "vision_feature_layer": [24, 18]},
               "vision_config": {"model_type": "tiny_vision", "num_hidden_layers": 25}}
    assert _shrink(sibling, 2) == "sub-configs not shrunk: layer placement in adapter_config.vision_feature_layer"
    assert sibling["vision_config"]["num_hidden_layers"] == 25
    # inkling's vision encoder sizes each layer from the count: no key shows it, so it is named
    planned = {"model_type": "tiny_inkling", "vision_config": {"model_type": "inkling_vision", "n_layers": 24}}
    assert _shrink(planned, 2) == "not shrunk: vision_config (inkling_vision) sizes its layers from their count"
    assert planned["vision_config"]["n_layers"] == 24
    detector = {"model_type": "tiny_dino", "encoder_layers": 6,
                "backbone_config": {"model_type": "tiny_swin", "depths": [2, 2], "out_features": ["stage2"],
                                    "stage_names": ["stem", "stage1", "stage2"]},
                "text_config": {"model_type": "tiny_bert", "num_hidden_layers": 12}}
    assert _shrink(detector, 2) == ("encoder_layers 6 -> 2; not shrunk: layer placement in "
                                    "backbone_config.out_features; text_config.num_hidden_layers 12 -> 2")


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
    from tests.support.release import static_release

    import opscan.db as cov

    monkeypatch.setattr(cov, "load_release", lambda spec=None, db_file=None: static_release({}, "x==1"))
    code, _out, err = run_cli("zoo", "timm:*", "--no-cache")
    assert code == 2 and "timm" in err and "torchvision" in err
