"""Default configs that leave a field their model needs unset (opscan/targets/hf/repair.py, NOTE [unset fields])."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from opscan.errors import TargetError
from opscan.targets.hf.repair import Read, donor
from opscan.zoo.jobs import DEFAULT_TRACER
from opscan.zoo.execution import job_options
from opscan.zoo.selection import ZooTarget
from opscan.zoo.tracing import trace_model

TRAIN = {"mode": "train", "device": "neuron"}
SMALL = {"num_hidden_layers": 2, "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4,
         "num_key_value_heads": 4, "vocab_size": 64, "max_position_embeddings": 64, "head_dim": 8}
# dots1 as transformers 5.24 defaults it: no expert counts (None), which its model code multiplies
DOTS1 = {**SMALL, "model_type": "dots1", "architectures": ["Dots1ForCausalLM"], "first_k_dense_replace": 1,
         "moe_intermediate_size": 16, "n_routed_experts": None, "n_shared_experts": None,
         "num_experts_per_tok": None}


def _config(tmp_path, name: str, data: dict) -> str:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(data), encoding="utf-8")
    return f"hf:{folder}"


def _ops(trace) -> set[str]:
    return {u.op for u in trace.ops}


@pytest.mark.slow
def test_the_unset_fields_a_build_and_step_need_are_filled_and_the_trace_says_so(tmp_path):
    target = _config(tmp_path, "dots1", DOTS1)
    with pytest.raises(TargetError, match="building Dots1ForCausalLM failed: TypeError"):
        trace_model(target, **TRAIN)                      # as a user's config: traced as given
    trace = trace_model(target, fill_unset=True, **TRAIN)
    assert trace.complete and trace.target == target
    for filled in ("Dots1Config.n_routed_experts -> 128", "Dots1Config.n_shared_experts -> 1",
                   "Dots1Config.num_experts_per_tok -> 8"):
        assert filled in trace.retried
    assert "the most common value, in" in trace.retried
    assert "unfilled, the build failed: building Dots1ForCausalLM failed: TypeError" in trace.retried
    assert "pad_token_id" not in trace.retried            # ids are never filled
    # the filled trace is the trace of the config with those values written in
    given = _config(tmp_path, "given", {**DOTS1, "n_routed_experts": 128, "n_shared_experts": 1,
                                        "num_experts_per_tok": 8})
    plain = trace_model(given, **TRAIN)
    assert plain.complete and not plain.retried
    assert _ops(trace) == _ops(plain) and "aten::topk" in _ops(trace)


def test_rope_parameters_missing_for_a_listed_layer_type_get_the_documented_default(tmp_path):
    data = {**SMALL, "model_type": "cohere_compass_text", "architectures": ["CohereCompassForCausalLM"],
            "rope_parameters": {}, "layer_types": ["full_attention", "full_attention"]}
    target = _config(tmp_path, "compass", data)
    with pytest.raises(TargetError, match="KeyError: 'full_attention'"):
        trace_model(target, **TRAIN)
    trace = trace_model(target, fill_unset=True, **TRAIN)
    assert trace.complete
    assert "rope_parameters['full_attention'] -> default RoPE, rope_theta 10000" in trace.retried
    assert {"aten::cos", "aten::sin"} <= _ops(trace)


@pytest.mark.slow
def test_a_fill_that_does_not_complete_the_trace_is_not_kept(tmp_path):
    # dbrx: its attention config lacks rope_theta (filled: documented default), then its step
    # clamps with clip_qkv None, which has no known value: the row keeps the original failure
    data = {"model_type": "dbrx", "architectures": ["DbrxForCausalLM"], "d_model": 32, "n_heads": 4,
            "n_layers": 2, "max_seq_len": 64, "vocab_size": 64,
            "attn_config": {"kv_n_heads": 2, "clip_qkv": None},
            "ffn_config": {"ffn_hidden_size": 32, "moe_num_experts": 2, "moe_top_k": 1}}
    target = _config(tmp_path, "dbrx", data)
    with pytest.raises(TargetError, match="has no attribute 'rope_theta'"):
        trace_model(target, fill_unset=True, **TRAIN)


def test_only_counts_with_a_known_value_are_filled():
    assert donor(Read("LlamaConfig", "pad_token_id", False)) is None       # None means "no padding"
    assert donor(Read("LlamaConfig", "image_token_index", False)) is None
    assert donor(Read("LlamaConfig", "no_such_field_anywhere", False)) is None
    assert donor(Read("LlamaConfig", "num_experts_per_tok", True)) is None  # missing: only documented defaults
    fill = donor(Read("DbrxAttentionConfig", "rope_theta", True))
    assert fill.value == 10000.0 and "documented" in fill.source
    fill = donor(Read("DeepseekV2Config", "num_experts_per_tok", False))
    assert fill.value == 8 and "most common value" in fill.source


def test_only_the_default_configs_the_zoo_writes_are_filled():
    default = ZooTarget("dots1", "hf:/c/dots1", "causal-lm", model_type="dots1")
    own = ZooTarget("mine", "hf:/mine/config.json", "file")
    assert job_options(default, {"mode": "train"}, DEFAULT_TRACER)["fill_unset"] is True
    assert "fill_unset" not in job_options(own, {"mode": "train"}, DEFAULT_TRACER)
    assert "fill_unset" not in job_options(default, {"mode": "train"}, "my_tracer:trace")


def test_documented_defaults_are_applied_in_the_config_and_its_sub_configs(tmp_path):
    from opscan.targets.hf.defaults import write_default_config

    # ministral leaves head_dim None at the top, hunyuan_vl in its text_config: both are
    # documented as hidden_size // num_attention_heads, and both models use them as they are
    top = write_default_config("ministral", "MinistralForCausalLM", "causal-lm", tmp_path, None)
    data = json.loads((tmp_path / "causal-lm" / "ministral" / "config.json").read_text())
    assert data["head_dim"] == data["hidden_size"] // data["num_attention_heads"]
    assert f"head_dim None -> {data['head_dim']} (documented default)" in top.note
    sub = write_default_config("hunyuan_vl", "HunYuanVLModel", "base", tmp_path, None)
    text = json.loads((tmp_path / "base" / "hunyuan_vl" / "config.json").read_text())["text_config"]
    assert text["head_dim"] == text["hidden_size"] // text["num_attention_heads"]
    assert f"text_config.head_dim None -> {text['head_dim']} (documented default)" in sub.note
