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

CHECKED = "5.25.0"   # the transformers version the entries below were reproduced with


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

# Base architectures whose default config builds but fails its forward on plain text input_ids.
_GLM_ROPE = ("the default text config's rotary dimension (head_dim 128, no partial_rotary_factor: 64 "
             "frequencies) does not fit the rotary embedding's default mrope_section [8, 12, 12] (32): "
             "split_with_sizes fails")
_GLM_MOE_ROPE = ("the default text config's rotary dimension (no head_dim: 4096 // 96 heads = 42, "
                 "partial_rotary_factor 0.5: 11 frequencies) does not fit the rotary embedding's default "
                 "mrope_section [8, 12, 12] (32): split_with_sizes fails")
_BASE_STEP = (
    ("glm4v", "Glm4vModel", "RuntimeError", _GLM_ROPE),
    ("glm46v", "Glm46VModel", "RuntimeError", _GLM_ROPE),
    ("glmga", "Glm46VModel", "RuntimeError", _GLM_ROPE),
    ("glm4v_text", "Glm4vTextModel", "RuntimeError", _GLM_ROPE),
    ("glm_image", "GlmImageModel", "RuntimeError", _GLM_ROPE),
    ("glm_image_text", "GlmImageTextModel", "RuntimeError", _GLM_ROPE),
    ("glm4v_moe", "Glm4vMoeModel", "RuntimeError", _GLM_MOE_ROPE),
    ("glm4v_moe_text", "Glm4vMoeTextModel", "RuntimeError", _GLM_MOE_ROPE),
)
BUGS += tuple(UpstreamBug(model_type, "step", error, what,
                          _META + f"t.{cls}(t.AutoConfig.for_model('{model_type}'))"
                          "(input_ids=torch.tensor([[1, 2, 3]]))")
              for model_type, cls, error, what in _BASE_STEP)
# hunyuan_vl: head_dim None fails the build; with its documented default (hidden_size // heads, which
# the zoo applies: opscan/targets/hf/defaults.py) the forward fails on the unset mrope_section.
_HUNYUAN_ROPE = ("the default text config sets no rope_parameters['mrope_section'], and the rotary "
                 "embedding's forward takes len() of it (the text model itself allows it unset)")
BUGS += (UpstreamBug("hunyuan_vl", "step", "TypeError", _HUNYUAN_ROPE,
                     _META + "t.HunYuanVLModel(t.HunYuanVLConfig(text_config=dict(head_dim=128)))"
                     "(input_ids=torch.tensor([[1, 2, 3]]))"),
         UpstreamBug("hunyuan_vl_text", "step", "TypeError", _HUNYUAN_ROPE,
                     _META + "t.HunYuanVLTextModel(t.HunYuanVLTextConfig(head_dim=128))"
                     "(input_ids=torch.tensor([[1, 2, 3]]))"))
# blip-2 / instructblip: the image placeholder mask is `input_ids == config.image_token_id`; with the
# default None that is the bool False, and .unsqueeze fails (tiny sizes: the defaults are 4B parameters).
_BLIP_TINY = ("vision_config=dict(hidden_size=32, intermediate_size=32, num_hidden_layers=1, num_attention_heads=4, "
              "image_size=32, patch_size=16), qformer_config=dict(hidden_size=32, num_hidden_layers=1, "
              "num_attention_heads=4, intermediate_size=32, encoder_hidden_size=32, vocab_size=100), "
              "text_config=dict(model_type='opt', hidden_size=32, ffn_dim=32, num_hidden_layers=1, "
              "num_attention_heads=4, vocab_size=100, word_embed_proj_dim=32), num_query_tokens=2")
_BLIP_WHAT = ("the default config leaves image_token_index None, which the forward compares input ids "
              "with (input_ids == None is False: 'bool' object has no attribute 'unsqueeze')")
BUGS += (UpstreamBug("blip-2", "step", "AttributeError", _BLIP_WHAT,
                     _CPU + f"t.Blip2Model(t.Blip2Config({_BLIP_TINY}))(pixel_values=torch.zeros(1, 3, 32, 32), "
                     "input_ids=torch.tensor([[1, 2, 3]]))"),
         UpstreamBug("instructblip", "step", "AttributeError", _BLIP_WHAT,
                     _CPU + f"t.InstructBlipModel(t.InstructBlipConfig({_BLIP_TINY}))"
                     "(pixel_values=torch.zeros(1, 3, 32, 32), qformer_input_ids=torch.tensor([[1, 2, 3]]), "
                     "input_ids=torch.tensor([[1, 2, 3]]))"))
BUGS += (UpstreamBug("bark", "step", "TypeError", "MODEL_MAPPING_NAMES lists BarkModel, which defines no forward "
                     "(it only generates): there is no step to trace",
                     _META + "t.BarkModel(t.BarkConfig())(input_ids=torch.tensor([[1]]))"),
         UpstreamBug("glm_image_vqmodel", "step", "TypeError", "MODEL_MAPPING_NAMES lists GlmImageVQVAE, which "
                     "defines no forward (only encode): there is no step to trace",
                     _META + "t.GlmImageVQVAE(t.AutoConfig.for_model('glm_image_vqmodel'))"
                     "(input_ids=torch.tensor([[1]]))"),
         UpstreamBug("voxtral_realtime_text", "build", "AttributeError",
                     "MODEL_MAPPING_NAMES lists VoxtralRealtimeTextModel, which transformers does not define",
                     "import transformers as t; t.VoxtralRealtimeTextModel"),)
# SAM2-style video trackers (a session of 2 frames and one click, on the meta device): the forward
# reads current_out['object_score_logits'], which _run_single_frame_inference stores only when not
# self.training, so a train-mode forward always fails (in eval mode the same call runs).
_VIDEO_WHAT = ("in train mode the forward reads current_out['object_score_logits'], which "
               "_run_single_frame_inference stores only when not self.training (KeyError)")
_VIDEO_REPRO = ("m = t.{0}Model(t.{0}Config()).train(); n = m.config.image_size; s = t.{0}InferenceSession("
                "video=torch.zeros(2, 3, n, n), video_height=n, video_width=n, inference_device='meta', "
                "inference_state_device='meta', video_storage_device='meta', dtype=torch.float32); "
                "s.add_point_inputs(s.obj_id_to_idx(1), 0, dict(point_coords=torch.zeros(1, 1, 1, 2), "
                "point_labels=torch.ones(1, 1, 1, dtype=torch.int32))); s.obj_with_new_inputs = [1]; m(s, frame_idx=0)")
BUGS += tuple(UpstreamBug(model_type, "step", "KeyError", _VIDEO_WHAT, _META + _VIDEO_REPRO.format(name))
              for model_type, name in (("sam2_video", "Sam2Video"), ("sam3_tracker_video", "Sam3TrackerVideo"),
                                       ("edgetam_video", "EdgeTamVideo")))
BUGS += (UpstreamBug("tvp", "step", "RuntimeError",
                     "TvpVisualInputEmbedding.add_2d_positional_embeddings views the column position embeddings "
                     "(width, hidden) as (batch_size, 1, width, hidden): a batch of more than one video fails",
                     _META + "t.TvpModel(t.TvpConfig())(input_ids=torch.tensor([[1, 2, 3], [1, 2, 3]]), "
                     "pixel_values=torch.zeros(2, 48, 3, 448, 448))"),
         UpstreamBug("instructblipvideo", "step", "AttributeError",
                     "the default config leaves video_token_index None, which the forward compares input ids "
                     "with (input_ids == None is False: 'bool' object has no attribute 'unsqueeze')",
                     _CPU + f"t.InstructBlipVideoModel(t.InstructBlipVideoConfig({_BLIP_TINY}))"
                     "(pixel_values=torch.zeros(1, 2, 3, 32, 32), qformer_input_ids=torch.tensor([[1, 2, 3]]), "
                     "input_ids=torch.tensor([[1, 2, 3]]))"),
         UpstreamBug("qwen3_omni_moe_thinker", "step", "RuntimeError",
                     "the default text config sets no head_dim and 28 heads for hidden_size 2048 (not a whole "
                     "head size): attention heads get 2048 // 28 = 73 dimensions, the rotary embedding 74",
                     _META + "t.Qwen3OmniMoeThinkerModel(t.AutoConfig.for_model('qwen3_omni_moe_thinker'))"
                     "(input_ids=torch.tensor([[1, 2, 3]]))"))

# Image models whose default config cannot run a forward (CPU, one 64 x 64 image).
_IMAGE_STEP = (
    ("lw_detr", "LwDetr", "ValueError", "the default config's projector_scale_factors is [] (no feature "
     "levels), and the forward concatenates the features of every level: torch.cat of no tensors"),
    ("pp_ocrv6_small_det", "PPOCRV6SmallDet", "RuntimeError", "the default config's backbone (pp_lcnet_v4) "
     "returns only its last stage (out_features ['stage4'], 384 channels), but the neck takes one feature "
     "map per layer_list_out_channels entry ([12, 18, 42, 360]): its first convolution gets 384 channels, "
     "not 12"),
    ("uvdoc", "UVDoc", "RuntimeError", "the default backbone config returns only its last stage "
     "(out_features ['stage6'], 128 channels), but the head's bridge connector takes all 6 stages "
     "concatenated (768 channels)"),
)
BUGS += tuple(UpstreamBug(model_type, "step", error, what,
                          _CPU + f"t.{name}Model(t.{name}Config())(pixel_values=torch.zeros(1, 3, 64, 64))")
              for model_type, name, error, what in _IMAGE_STEP)


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
