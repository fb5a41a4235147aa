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
