"""Writes a transformers architecture's default config as config.json (optionally with fewer layers)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class DefaultConfig:
    """A default config written for tracing: its `hf:` target, and what was changed or went wrong."""

    target: str               # "hf:<config_dir>/<family>[-variant]/<model_type>"
    model_type: str           # the config's model_type (the sub-config's for a text config)
    text: str = ""            # the config.json written (what identifies the model)
    note: str = ""            # e.g. "layers 32 -> 2"
    error: str = ""           # the default config could not be built (nothing written)


# NOTE [shrinking layers]
# The op set of a model does not depend on how many identical layers it stacks, and tracing cost
# grows with depth, so `--layers N` cuts the layer counts below. Some configs make layers differ:
# per-layer lists (layer_types, ...) and "the first k layers are dense" keys. Lists are trimmed so
# that every distinct value they held is kept, and the count stays above any first-k key, so the
# shrunken model still contains every kind of layer. The row notes the change ("layers 32 -> 2").
# A config that places layers some other way (per_layer_config {5: ...}, attn_layer_period,
# mlp_only_layers [...], max_window_layers, ...) is not shrunk at all; its row says so.
# Sub-configs (nested dicts with a model_type: text_config, vision_config, encoder, ...) are shrunk
# by the same rules, each on its own ("text_config.num_hidden_layers 40 -> 2"), unless a
# placement key above them (llava's vision_feature_layer) or in a sibling without a stack of its
# own (molmo2's adapter_config.vision_feature_layer) may name their layers.
# Shrinking also caps position counts at MAX_POSITIONS (see POSITION_KEYS).
LAYER_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers",
              "decoder_layers", "num_decoder_layers", "num_encoder_layers")
FIRST_K_KEYS = ("first_k_dense_replace", "num_dense_layers", "first_k_dense")
# The key of config.json recording the layer counts cut ({"num_hidden_layers": [32, 2], ...}): the
# hf builder reads it back so a trace knows the real model's depth (NOTE [fallback scaling] in
# opscan/assess/assessment.py); transformers keeps an unknown key as a plain config attribute.
SHRUNK_KEY = "opscan_shrunk_layers"
# Keys naming layers that do not place them (multi-token-prediction heads sit outside the stack).
HARMLESS_LAYER_KEYS = ("num_nextn_predict_layers",)
# Backbone configs name the layers whose outputs they return (out_features ["stage12"],
# out_indices [12]): cutting the stack under them makes the config unreadable ("out_features must be
# a subset of stage_names"), so such a config is not shrunk either.
PLACEMENT_KEYS = ("out_features", "out_indices")
# Some models allocate position-sized buffers (causal masks) when built: 163840 positions make a
# 25 GiB mask. The trace uses short sequences, so shrinking also caps the position count.
POSITION_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len")
MAX_POSITIONS = 4096
# Stacks whose layers are sized from their count, so that fewer layers are different layers, which
# no key of the config shows: inkling's vision encoder plans each layer's patch/channel scales from
# n_layers (plan_out_scales; below 6 layers it even takes another code path, one that needs scipy).
PLANNED_STACKS = ("inkling_vision",)


def _structure_key(data: dict) -> str:
    """A key that places layers by index or period (then cutting the stack could change the ops)."""
    counts = {data[k] for k in LAYER_KEYS if isinstance(data.get(k), int)}
    for key in PLACEMENT_KEYS:
        if data.get(key):
            return key
    for key in sorted(data):
        value = data[key]
        if key in LAYER_KEYS or key in FIRST_K_KEYS or key in HARMLESS_LAYER_KEYS:
            continue
        if isinstance(value, dict) and value and all(str(k).isdigit() for k in value) and key != "id2label":
            return key
        if "layer" not in key.lower() or isinstance(value, (bool, float, str)) or value in (None, 0, [], {}):
            continue
        if isinstance(value, list) and len(value) in counts:
            continue  # a per-layer list: trimmed below
        return key
    return ""


def _sub_configs(data: dict) -> list[str]:
    """Keys of the sub-configs in `data` (text_config, vision_config, encoder, ...)."""
    return [k for k in sorted(data) if isinstance(data[k], dict) and "model_type" in data[k]]


def _sibling_placement(data: dict) -> str:
    """A sub-config placing layers it has no stack of (LAYER_KEYS) for: molmo2's adapter_config
    vision_feature_layer [24, 18] picks vision_config layers, so no sibling stack may be cut.
    out_features / out_indices name the config's own stage_names (backbones) and do not count."""
    for name in _sub_configs(data):
        sub = data[name]
        if any(isinstance(sub.get(k), int) and not isinstance(sub.get(k), bool) for k in LAYER_KEYS):
            continue
        structure = _structure_key({k: v for k, v in sub.items() if k not in PLACEMENT_KEYS})
        if structure:
            return f"{name}.{structure}"
    return ""


def shrink(data: dict, layers: int) -> str:
    """`--layers`: cut the layer counts of a config dict in place (NOTE [shrinking layers]), recording
    the counts cut under SHRUNK_KEY; returns a note of the change, or ""."""
    cuts: dict = {}
    note = _shrink(data, layers, cuts=cuts)
    if cuts:   # the real layer counts, for scaling fallback costs back (records.Shrink)
        data[SHRUNK_KEY] = cuts
    return note


def _shrink(data: dict, layers: int, where: str = "", cuts: dict | None = None) -> str:
    """Cut layer counts in `data` and its sub-configs in place; returns a note of the change, or "".
    `cuts` receives each cut as {"where.key": [old, new]} (SHRUNK_KEY)."""
    cuts = {} if cuts is None else cuts
    structure = _structure_key(data)
    if structure:
        return f"not shrunk: layer placement in {where}{structure}"
    if data.get("model_type") in PLANNED_STACKS:
        name = where.rstrip(".") or "config"
        return f"not shrunk: {name} ({data['model_type']}) sizes its layers from their count"
    notes = []
    for key in LAYER_KEYS:
        old = data.get(key)
        if not isinstance(old, int) or isinstance(old, bool) or old <= layers:
            continue
        new = layers
        for first_k in FIRST_K_KEYS:
            value = data.get(first_k)
            if isinstance(value, int) and not isinstance(value, bool):
                new = max(new, value + layers)
        per_layer = [k for k, v in data.items() if isinstance(v, list) and len(v) == old and k != "architectures"]
        for list_key in per_layer:
            new = max(new, len({json.dumps(v, sort_keys=True) for v in data[list_key]}))
        if new >= old:
            continue
        for list_key in per_layer:
            values = data[list_key]
            keys = [json.dumps(v, sort_keys=True) for v in values]
            keep = {keys.index(k) for k in keys}          # first layer of each kind
            for index in range(old):                       # then the earliest others
                if len(keep) >= new:
                    break
                keep.add(index)
            data[list_key] = [values[i] for i in sorted(keep)]
        data[key] = new
        notes.append(f"{where}{key} {old} -> {new}")
        cuts[f"{where}{key}"] = [old, new]
    for key in POSITION_KEYS:
        old = data.get(key)
        if isinstance(old, int) and not isinstance(old, bool) and old > MAX_POSITIONS:
            data[key] = MAX_POSITIONS
            notes.append(f"{where}{key} {old} -> {MAX_POSITIONS}")
    sibling = _sibling_placement(data)
    if sibling:
        notes.append(f"sub-configs not shrunk: layer placement in {where}{sibling}")
    for name in [] if sibling else _sub_configs(data):  # text_config, encoder, ...: the same rules
        notes.append(_shrink(data[name], layers, f"{where}{name}.", cuts))
    return "; ".join(n for n in notes if n)


def _class_config(config, class_name: str):
    """The config `class_name` is built from: `config`, or the sub-config of its config class.

    NOTE [text configs]: a multimodal type (qwen3_5, llama4, emu3) lists its text-only
    ...ForCausalLM in the causal-LM mapping, musicgen its decoder's: such a class is built from
    the sub-config whose class is the model class's `config_class` (text_config, decoder). A
    class whose config class is the composite one (fuyu) gets the whole config.
    """
    import transformers

    try:
        wanted = getattr(getattr(transformers, class_name, None), "config_class", None)
    except Exception:  # noqa: BLE001 - a class needing a missing package (torchaudio): its build says so
        return config, ""
    if not isinstance(wanted, type) or isinstance(config, wanted):
        return config, ""
    for key in sorted(getattr(config, "sub_configs", None) or {}):
        sub = getattr(config, key, None)
        if isinstance(sub, wanted):
            kind = "text config" if key == "text_config" else f"sub-config {key}"
            return sub, f"{kind} {getattr(sub, 'model_type', '') or '?'}"
    return config, ""


# NOTE [required fields]
# Some default configs leave a field None that transformers documents as derived ("head_dim: if
# None, it will default to hidden_size // num_attention_heads"; num_key_value_heads defaults to
# num_attention_heads) while the modeling code uses it as is (ministral, hunyuan, nemotron
# failed to build), also in sub-configs (hunyuan_vl's text_config). opscan applies the documented
# default; the row says so. Causal-LM classes of
# encoder architectures (BertLMHeadModel, ReformerModelWithLMHead, ...) are meant to be used with
# `is_decoder=True` (transformers asks for it), so the causal-LM family sets it. A model that needs
# a language to pick its adapters (xmod: "call set_default_language()") gets the first it lists.
DOCUMENTED_DEFAULTS = (
    ("head_dim", ("hidden_size", "num_attention_heads"), lambda hidden, heads: hidden // heads),
    ("num_key_value_heads", ("num_attention_heads",), lambda heads: heads),
)


def _documented(data: dict, where: str) -> list[str]:
    """Documented defaults for `data` and every sub-config in it (a text_config's head_dim too)."""
    notes = []
    for key, sources, derive in DOCUMENTED_DEFAULTS:
        values = [data.get(k) for k in sources]
        if key in data and data[key] is None and all(isinstance(v, int) and v > 0 for v in values):
            data[key] = derive(*values)
            notes.append(f"{where}{key} None -> {data[key]} (documented default)")
    for name in _sub_configs(data):
        notes.extend(_documented(data[name], f"{where}{name}."))
    return notes


def _required(data: dict, family: str) -> list[str]:
    """Fill documented defaults the config left None (in place); notes of what was set."""
    notes = _documented(data, "")
    languages = data.get("languages")
    if "default_language" in data and data["default_language"] is None and languages:
        # xmod: forward needs a language (or lang_ids) and asks for set_default_language()
        data["default_language"] = list(languages)[0]
        notes.append(f"default_language {data['default_language']}")
    if family == "causal-lm" and data.get("is_decoder") is False:
        data["is_decoder"] = True
        notes.append("is_decoder true")
    return notes


def write_default_config(model_type: str, class_name: str, family: str, config_dir: Path,
                         layers: int | None, dtype: str | None = None) -> DefaultConfig:
    """Write `model_type`'s default config (architectures = [class_name]) to a folder; return its target.

    `family` names the folder (and "causal-lm" sets is_decoder, NOTE [required fields]).
    """
    variant = "".join(f"-{part}" for part in (f"L{layers}" if layers else "", dtype or "") if part)
    folder = config_dir / f"{family}{variant}" / model_type
    try:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING

        config = CONFIG_MAPPING[model_type]()
        data = config.to_dict()
    except Exception as exc:  # noqa: BLE001 - any failure is this model's row, not the run's end
        text = f"default config cannot be built: {type(exc).__name__}: {' '.join(str(exc).split())}"[:300]
        return DefaultConfig(target=f"hf:{folder}", model_type=model_type, error=text)
    config, note = _class_config(config, class_name)
    data = config.to_dict()
    if class_name:
        data["architectures"] = [class_name]
    note = "; ".join(n for n in (note, *_required(data, family)) if n)
    if layers:
        note = "; ".join(n for n in (note, shrink(data, layers)) if n)
    if dtype:
        data["dtype"] = dtype
        note = "; ".join(n for n in (note, f"dtype {dtype}") if n)
    text = json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.json"
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return DefaultConfig(target=f"hf:{folder}", model_type=str(data.get("model_type") or model_type),
                         text=text, note=note)
