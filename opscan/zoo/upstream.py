"""Known transformers bugs that stop a zoo row, each with a one-line reproduction without opscan.

NOTE [classified stops]
Every zoo row that does not trace completely gets a stop class (opscan/zoo/results.py, NOTE
[stop classes]); a transformers bug is one listed here: the row's class is `transformers-bug` and
its error gains "transformers X bug: WHAT; reproduce: CODE". An entry applies only to the default
configs the zoo writes and to the transformers version it was checked against;
tests/zoo/test_zoo_upstream.py runs every reproduction and fails once transformers fixes one
(then the entry goes). The reproductions build on the `meta` device (no memory) or
use tiny configs, so they run in seconds without opscan.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata

CHECKED = "5.24.0"   # the transformers version the entries below were reproduced with


@dataclass(frozen=True)
class UpstreamBug:
    model_type: str     # the `model_type` of the config the row traces
    stage: str          # "config" (default config raises), "build" (constructor), "step" (forward)
    error: str          # the exception class the reproduction raises
    what: str           # one line: what is wrong in transformers
    repro: str          # Python code (one line, imports included) that raises `error`


_META = "import torch, transformers as t; torch.set_default_device('meta'); "
_CPU = "import torch, transformers as t; "

BUGS = (
    UpstreamBug("gemma4_assistant", "config", "StrictDataclassClassValidationError",
                "the default config fails its own validator (hidden_size_per_layer_input)",
                "import transformers as t; t.Gemma4AssistantConfig()"),
    UpstreamBug("dots1", "build", "TypeError", "the default config leaves n_routed_experts None",
                _META + "t.Dots1ForCausalLM(t.Dots1Config())"),
    UpstreamBug("lfm2_moe", "build", "TypeError", "the default config leaves layer_types None",
                _META + "t.Lfm2MoeForCausalLM(t.Lfm2MoeConfig())"),
    UpstreamBug("cohere_compass_text", "build", "KeyError",
                "the default text config has no RoPE parameters for full_attention layers",
                _META + "t.CohereCompassForCausalLM(t.CohereCompassTextConfig())"),
    UpstreamBug("cohere_compass", "build", "KeyError",
                "the default config's text config has no RoPE parameters for full_attention layers",
                _META + "t.CohereCompassModel(t.CohereCompassConfig())"),
    UpstreamBug("qwen4_exp", "build", "TypeError",
                "the default config's text config leaves the indexer sizes (indexer_budget, ...) None",
                _META + "t.Qwen4ExpModel(t.Qwen4ExpConfig())"),
    UpstreamBug("dbrx", "build", "AttributeError", "DbrxAttention reads attn_config.rope_theta, "
                "which the default DbrxAttentionConfig lacks", _META + "t.DbrxForCausalLM(t.DbrxConfig())"),
    UpstreamBug("qwen4_exp_text", "build", "TypeError",
                "the default text config leaves the indexer sizes (indexer_budget, ...) None",
                _META + "t.Qwen4ExpForCausalLM(t.Qwen4ExpTextConfig())"),
    UpstreamBug("deepseek_v2", "step", "TypeError",
                "the default config leaves num_experts_per_tok None (topk k=None)",
                _CPU + "t.DeepseekV2ForCausalLM(t.DeepseekV2Config(num_hidden_layers=2, first_k_dense_replace=1, "
                "hidden_size=64, intermediate_size=64, moe_intermediate_size=32, num_attention_heads=4, "
                "num_key_value_heads=4, vocab_size=100, kv_lora_rank=16, qk_rope_head_dim=8, "
                "qk_nope_head_dim=8, v_head_dim=16))(torch.tensor([[1, 2, 3]]))"),
    UpstreamBug("git", "step", "ValueError",
                "without pixel_values the loss still skips num_image_tokens positions (batch size 0)",
                _CPU + "t.GitForCausalLM(t.GitConfig(num_hidden_layers=1, hidden_size=64, num_attention_heads=4, "
                "intermediate_size=64, vocab_size=100))(input_ids=torch.tensor([[1, 2, 3]]), "
                "labels=torch.tensor([[1, 2, 3]]))"),
    UpstreamBug("blt", "step", "AttributeError",
                "the model's forward builds DynamicCache(config=BltConfig), which reads num_hidden_layers, "
                "a field BltConfig does not have", "import transformers as t; t.DynamicCache(config=t.BltConfig())"),
    UpstreamBug("gemma4_unified_assistant", "step", "ValueError",
                "the causal-LM mapping lists a draft model that cannot run without its target "
                "model's shared_kv_states",
                _META + "t.Gemma4UnifiedAssistantForCausalLM(t.Gemma4UnifiedAssistantConfig())"
                "(torch.tensor([[1, 2, 3]]))"),
)

# Base architectures (`opscan zoo 'hf:*'`) whose default config transformers cannot build.
_BASE = (
    ("autoformer", "AutoformerModel", "ValueError", "the default config leaves prediction_length None, "
     "which the model requires"),
    ("informer", "InformerModel", "ValueError", "the default config leaves prediction_length None, "
     "which the model requires"),
    ("time_series_transformer", "TimeSeriesTransformerModel", "ValueError",
     "the default config leaves prediction_length None, which the model requires"),
    ("aya_vision", "AyaVisionModel", "ValueError", "the default vision config's hidden size (1152) is not "
     "divisible by its head count (14)"),
    ("chameleon", "ChameleonModel", "AttributeError", "the default config leaves vocabulary_map None, "
     "which the model reads with .get"),
    ("emu3", "Emu3Model", "AttributeError", "the default config leaves vocabulary_map None, which the "
     "model reads with .get"),
    ("deepseek_ocr2", "DeepseekOcr2Model", "TypeError", "the default text config leaves mlp_layer_types None"),
    ("diffusion_gemma", "DiffusionGemmaModel", "TypeError", "the default text config leaves num_experts "
     "None (torch.empty(None, ...)), and with it filled, the routing top-k"),
    ("esm", "EsmModel", "TypeError", "the default config leaves vocab_size None, and pad_token_id, which "
     "its forward compares input ids with"),
    ("granite4_vision", "Granite4VisionModel", "TypeError", "the default config leaves deepstack_layer_map None"),
    ("pp_ocrv6_medium_det", "PPOCRV6MediumDetModel", "TypeError",
     "the default config leaves intraclass_block_config None"),
    ("moonshine_streaming", "MoonshineStreamingModel", "AttributeError",
     "the model reads num_key_value_heads, which its config does not have"),
    ("t5gemma2_encoder", "T5Gemma2Encoder", "AttributeError",
     "the encoder reads dropout_rate, which its text config does not have"),
)
BUGS += tuple(UpstreamBug(model_type, "build", error, what,
                          _META + f"t.{cls}(t.AutoConfig.for_model('{model_type}'))")
              for model_type, cls, error, what in _BASE)
BUGS += (UpstreamBug("llama4", "step", "AttributeError",
                     "Llama4ForConditionalGeneration.forward reads image_outputs from its language model's "
                     "output, which has none",
                     _CPU + "t.Llama4ForConditionalGeneration(t.Llama4Config(text_config=dict(num_hidden_layers=1, "
                     "hidden_size=32, intermediate_size=32, intermediate_size_mlp=32, num_attention_heads=4, "
                     "num_key_value_heads=2, head_dim=8, vocab_size=100, num_local_experts=2), "
                     "vision_config=dict(num_hidden_layers=1, hidden_size=32, intermediate_size=32, "
                     "num_attention_heads=4, vision_output_dim=32, projector_input_dim=32, "
                     "projector_output_dim=32)))(input_ids=torch.tensor([[1, 2, 3]]))"),
         UpstreamBug("bark", "step", "TypeError", "MODEL_MAPPING_NAMES lists BarkModel, which defines no forward "
                     "(it only generates): there is no step to trace",
                     _META + "t.BarkModel(t.BarkConfig())(input_ids=torch.tensor([[1]]))"),
         UpstreamBug("glm_image_vqmodel", "step", "TypeError", "MODEL_MAPPING_NAMES lists GlmImageVQVAE, which "
                     "defines no forward (only encode): there is no step to trace",
                     _META + "t.GlmImageVQVAE(t.AutoConfig.for_model('glm_image_vqmodel'))"
                     "(input_ids=torch.tensor([[1]]))"),
         UpstreamBug("voxtral_realtime_text", "build", "AttributeError",
                     "MODEL_MAPPING_NAMES lists VoxtralRealtimeTextModel, which transformers does not define",
                     "import transformers as t; t.VoxtralRealtimeTextModel"),)


def installed() -> str:
    try:
        return metadata.version("transformers")
    except metadata.PackageNotFoundError:
        return ""


def known(model_type: str, stage: str) -> UpstreamBug | None:
    """The known bug for this config's model type at this stage, for the installed transformers."""
    if installed() != CHECKED:
        return None
    return next((b for b in BUGS if b.model_type == model_type and b.stage == stage), None)


def explain(bug: UpstreamBug) -> str:
    """The text a row's error gains."""
    return f"transformers {CHECKED} bug: {bug.what}; reproduce: python -c \"{bug.repro}\""
