"""Example inputs for `hf:` models: from the forward signature, `main_input_name` and the config."""

from __future__ import annotations

import inspect
import math

import torch
from torch import nn

from opscan.errors import TargetError
from opscan.targets.hf.architectures import architecture_inputs, has_layout, model_layout
from opscan.targets.hf.shapes import (GRID_ARGS, bins_first, features, field, flat_patches, grid_side,
                                   int_field, layers, merge_size, patch_width, pixels, sub_config, video,
                                   waveform)

DEFAULT_SEQ_LEN = 128
# NOTE [hf inputs]
# `task_inputs` first makes the main input (`main_input_name`) as it always has, then completes
# the call from the forward signature: every argument without a default gets a value from the
# table `_FILL` (keyed on argument names), and so do a few optional ones a call cannot go without:
# every modality of a model that scores them against each other (a `return_loss` argument: CLIP,
# ALIGN, BLIP, ...) or takes each stream raw or as embeddings (`image_embeds`, `text_embeds`: ViLT,
# BridgeTower, SAM3), the text prompt of an image model with a text_config (InstructBLIP), the
# companions of a generated input (`_GROUPS`, and a cut-patch tower's grid). Sizes come from the
# config and its sub-configs (`shapes.field`) and from the model's first layers (patch widths,
# stacked audio frames, one embedding table per codebook, a BatchNorm2d over the mel bins). Layouts
# that only a model's processor or code gives are the `layout` of its model_type's entry in the one
# architecture table (architectures.ARCHITECTURES, NOTE [one architecture table]; applied to the
# main inputs before the completion, they may replace or drop them). Models that
# already traced keep exactly their inputs: the completion only adds what the call could not do
# without, and layouts exist only for models that did not trace (checked against every default config of
# transformers' base and causal-LM mappings when this was written, and again when layouts were added).


def _params(model) -> dict:
    try:
        return dict(inspect.signature(model.forward).parameters)
    except (AttributeError, TypeError, ValueError):
        return {}


def _required(params: dict) -> list[str]:
    return [name for name, p in params.items() if p.default is inspect.Parameter.empty
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _decoder_inputs(model, config, out: dict, ids) -> dict:
    """An encoder-decoder base model (MarianModel, WhisperModel) without labels gets decoder_input_ids.

    A head makes them from the labels; the base model has no labels and its decoder would get
    neither ids nor embeddings.
    """
    if "labels" in out or not getattr(config, "is_encoder_decoder", False):
        return out
    if "decoder_input_ids" in _params(model):
        out["decoder_input_ids"] = ids.clone()
    return out


def task_inputs(model, config, batch: int, seq_len: int | None, given=()) -> dict:
    """Example inputs for the model's task, with labels when its head computes a loss.

    `given` names the inputs the user gives with --input: opscan does not need to know how to
    make those.
    """
    gen = torch.Generator().manual_seed(0)
    try:
        out = _main_inputs(model, config, batch, seq_len, gen)
    except TargetError:
        if _main_name(model) not in given and not has_layout(config):
            raise
        out = {}
    out = model_layout(model, config, out, batch, seq_len, gen)   # the architecture's layout
    return _complete(model, config, out, batch, seq_len, gen, given)


def _main_name(model) -> str:
    """`main_input_name`; the first of a list (OneFormer: pixel_values and task_inputs)."""
    main = getattr(model, "main_input_name", "input_ids")
    if isinstance(main, (list, tuple)):
        main = main[0] if main else "input_ids"
    if main == "pixel_values" and "input_ids" in (params := _params(model)) and "pixel_values" not in params:
        return "input_ids"   # a text tower that inherits its model's main_input_name (SAM3-LiteText)
    return main if isinstance(main, str) else "input_ids"


def default_length(model, config, start: int) -> int:
    """The sequence length opscan chooses: `start`, or the largest below it that no size of the model
    has (NOTE [sizes by role] in opscan/trace/roles.py: a sequence equal to a model size cannot be told
    apart from it when fallback bytes are scaled)."""
    from opscan.targets.hf.shapes import config_width
    from opscan.trace.roles import distinct_length, model_sizes

    return distinct_length(start, model_sizes(model, config_width(config)))


def _main_inputs(model, config, batch: int, seq_len: int | None, gen) -> dict:
    arch = type(model).__name__
    main = _main_name(model)
    vocab = getattr(config, "vocab_size", None) or 2
    params = _params(model)
    if main == "input_ids" and "input_ids" not in params and _required(params):
        return {}   # a tower whose forward takes no ids (vision encoders): made from its signature
    if main == "input_ids":
        limit = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
        if not isinstance(limit, int) or limit <= 0:   # xlnet says -1: no limit
            text = sub_config(config, "text_config")            # a dual encoder's text tower has one
            limit = int_field(text, "max_position_embeddings") if text is not config else None
        seq = seq_len or default_length(model, config, min(DEFAULT_SEQ_LEN, limit or DEFAULT_SEQ_LEN))
        axial = getattr(config, "axial_pos_shape", None)
        if seq_len is None and getattr(config, "axial_pos_embds", False) and isinstance(axial, (list, tuple)):
            seq = math.prod(axial)   # reformer trains only on sequences of exactly this length
        codebooks = getattr(config, "num_codebooks", None)
        if isinstance(codebooks, int) and codebooks > 1 and arch.endswith("ForCausalLM"):
            # audio decoders (musicgen): one row per codebook, labels (batch, seq, codebooks)
            ids = torch.randint(0, vocab, (batch * codebooks, seq), generator=gen)
            return {"input_ids": ids, "labels": ids.reshape(batch, codebooks, seq).transpose(1, 2).clone()}
        if isinstance(codebooks, int) and codebooks > 1 and _embeds_per_codebook(model, codebooks):
            # their base decoder (MusicgenModel): the same rows, no labels
            return {"input_ids": torch.randint(0, vocab, (batch * codebooks, seq), generator=gen)}
        ids = torch.randint(0, vocab, (batch, seq), generator=gen)
        out = {"input_ids": ids}
        if arch.endswith(("ForCausalLM", "LMHeadModel", "ForMaskedLM", "ForConditionalGeneration")):
            out["labels"] = ids.clone()
        elif arch.endswith("ForSequenceClassification"):
            out["labels"] = torch.randint(0, max(config.num_labels, 1), (batch,), generator=gen)
        elif arch.endswith("ForTokenClassification"):
            out["labels"] = torch.randint(0, max(config.num_labels, 1), (batch, seq), generator=gen)
        return _decoder_inputs(model, config, out, ids)
    if main == "pixel_values":
        if flat_patches(params):
            return {}   # flattened patches with their grid: made from the signature
        out = {"pixel_values": pixels(config, batch, gen, top=True)}
        if arch.endswith("ForImageClassification"):
            out["labels"] = torch.randint(0, max(config.num_labels, 1), (batch,), generator=gen)
        return out
    if main == "input_features":
        out = {"input_features": features(model, config, batch, gen)}
        if arch.endswith("ForConditionalGeneration"):
            out["labels"] = torch.randint(0, vocab, (batch, seq_len or 16), generator=gen)
        decoder_ids = torch.randint(0, vocab, (batch, seq_len or 16), generator=gen)
        return _decoder_inputs(model, config, out, decoder_ids)
    if main == "input_values":
        if "input_values" not in params:
            return {}
        bins = int_field(config, "num_mel_bins")
        if bins and int_field(config, "max_length"):   # a spectrogram (AST): (batch, max_length, bins)
            return {"input_values": torch.randn(batch, int_field(config, "max_length"), bins, generator=gen)}
        out = {"input_values": waveform(model, config, params, batch, seq_len, gen)}
        decoder_ids = torch.randint(0, vocab, (batch, seq_len or 16), generator=gen)
        return _decoder_inputs(model, config, out, decoder_ids)
    if main in _FILL or main in params:
        return {}   # made from the signature (`_complete`)
    raise TargetError(f"opscan does not know which inputs {arch} takes (main input {main!r}); "
                      "give them with --input NAME:DTYPE[SHAPE]")


def _embeds_per_codebook(model, codebooks: int) -> bool:
    """Whether the model embeds ids with one table per codebook (a ModuleList of Embeddings)."""
    return any(isinstance(m, nn.ModuleList) and len(m) == codebooks and all(isinstance(e, nn.Embedding) for e in m)
               for m in layers(model))


# ----------------------------------------------------------------------------- completion

def _text_ids(config, batch: int, seq_len: int | None, gen):
    text = sub_config(config, "text_config", "qformer_config")
    vocab = int_field(text, "vocab_size", default=2)
    limit = int_field(text, "max_position_embeddings", "context_length")
    seq = seq_len or min(16, limit or 16)
    return torch.randint(0, vocab, (batch, seq), generator=gen)


def _complete(model, config, out: dict, batch: int, seq_len: int | None, gen, given=()) -> dict:
    """Add what the forward cannot go without (NOTE [hf inputs]); one TargetError naming what
    opscan cannot make."""
    params = _params(model)
    out = architecture_inputs(model, config, out, batch, seq_len, gen, given)
    wanted = [name for name in _required(params) if name not in out]
    if _main_name(model) == "pixel_values" and "input_ids" in params and "input_ids" not in out \
            and sub_config(config, "text_config") is not config and "input_ids" not in wanted:
        wanted.append("input_ids")   # an image model prompted with text (InstructBLIP, Kosmos-2)
    if "visual_feats" in params and "visual_feats" not in wanted:   # region features (LXMERT)
        wanted.append("visual_feats")
    if _all_modalities(params):
        wanted += [name for name in ("input_ids", "pixel_values", "input_features", "pixel_values_videos")
                   if name in params and name not in out and name not in wanted
                   and _has_modality(config, name)]
    main = _main_name(model)
    if main in params and main not in out and main not in wanted:
        wanted.insert(0, main)
    groups = _GROUPS + ((("pixel_values", "hidden_states") + GRID_ARGS,) if flat_patches(params) else ())
    for group in groups:   # arguments that only make sense together (patches and their grid)
        if any(name in out or name in wanted for name in group):
            wanted += [name for name in group if name in params and name not in out and name not in wanted]
    wanted.sort(key=lambda name: name in ("pixel_attention_mask", "input_features_mask", "audio_mel_mask"))
    missing = []
    for name in [name for name in wanted if name not in given]:
        make = _FILL.get(name)
        value = make(model, config, out, params, batch, seq_len, gen) if make else None
        if value is None:
            missing.append(name)
        else:
            out[name] = value
    if missing:
        arch = type(model).__name__
        raise TargetError(f"opscan does not know how to make {', '.join(missing)} for {arch}; "
                          "give them with --input NAME:DTYPE[SHAPE]")
    return out


def _all_modalities(params: dict) -> bool:
    """A contrastive scorer (a `return_loss` argument), or a model that takes each stream as raw
    input or as embeddings (`image_embeds`, `text_embeds`: ViLT, BridgeTower, SAM3), not merged
    into one sequence."""
    if "return_loss" in params:
        return True
    return "input_ids" in params and "pixel_values" in params \
        and ("image_embeds" in params or "text_embeds" in params)


def _has_modality(config, name: str) -> bool:
    if name == "input_ids":
        return sub_config(config, "text_config") is not config or field(config, "vocab_size") is not None
    if name in ("pixel_values", "pixel_values_videos"):
        return sub_config(config, "vision_config") is not config or field(config, "image_size") is not None
    return sub_config(config, "audio_config") is not config or field(config, "num_mel_bins") is not None


def _fill_ids(model, config, out, params, batch, seq_len, gen):
    return _text_ids(config, batch, seq_len, gen)


def _fill_qformer_ids(model, config, out, params, batch, seq_len, gen):
    vocab = int_field(sub_config(config, "qformer_config"), "vocab_size", default=2)
    return torch.randint(0, vocab, (batch, seq_len or 16), generator=gen)


def _fill_pixels(model, config, out, params, batch, seq_len, gen):
    if flat_patches(params):
        return _fill_flat(model, config, out, params, batch, seq_len, gen)
    return pixels(config, batch, gen)


def _fill_video(model, config, out, params, batch, seq_len, gen):
    return video(config, batch, gen)


def _fill_grid(model, config, out, params, batch, seq_len, gen):
    side = grid_side(config)
    return torch.tensor([[1, side, side]] * batch, dtype=torch.int64)


def _fill_flat(model, config, out, params, batch, seq_len, gen):
    """Flattened patches: (patches, width) packed for a grid_thw tower, (batch, patches, width)
    with spatial_shapes or pixel_position_ids."""
    side = grid_side(config)
    if "spatial_shapes" in params or "pixel_position_ids" in params:   # (batch, patches, width)
        return torch.randn(batch, side * side, patch_width(model, config), generator=gen)
    return torch.randn(batch * side * side, patch_width(model, config), generator=gen)


def _fill_spatial_shapes(model, config, out, params, batch, seq_len, gen):
    side = grid_side(config)
    return torch.tensor([[side, side]] * batch, dtype=torch.int64)


def _fill_patch_positions(model, config, out, params, batch, seq_len, gen):
    """(x, y) of every patch: (batch, patches, 2)."""
    side = grid_side(config)
    rows = [[x, y] for y in range(side) for x in range(side)]
    return torch.tensor([rows] * batch, dtype=torch.int64)


def _fill_patch_mask(model, config, out, params, batch, seq_len, gen):
    images = out.get("pixel_values")
    if images is None:
        return None
    if images.dim() == 3:      # (batch, patches, width)
        return torch.ones(images.shape[:2], dtype=torch.int64)
    return torch.ones(images.shape[0], *images.shape[-2:], dtype=torch.bool)


def _fill_merge_sizes(model, config, out, params, batch, seq_len, gen):
    return torch.tensor([merge_size(config)] * batch, dtype=torch.int64)


def _fill_feature_mask(model, config, out, params, batch, seq_len, gen):
    spectrogram = next((out[k] for k in ("input_features", "audio_mel") if k in out), None)
    if spectrogram is None:
        return None
    frames = spectrogram.shape[1] if spectrogram.dim() == 3 and not bins_first(config, spectrogram) \
        else spectrogram.shape[-1]
    return torch.ones(spectrogram.shape[0], frames, dtype=torch.bool)


def _fill_features(model, config, out, params, batch, seq_len, gen):
    return features(model, config, batch, gen)


def _fill_query_embeds(model, config, out, params, batch, seq_len, gen):
    queries = int_field(config, "num_query_tokens", default=32)
    hidden = int_field(sub_config(config, "qformer_config"), "hidden_size", default=32)
    return torch.randn(batch, queries, hidden, generator=gen)


def _fill_waveform(model, config, out, params, batch, seq_len, gen):
    return waveform(model, config, params, batch, seq_len, gen)


def _fill_hidden_states(model, config, out, params, batch, seq_len, gen):
    if flat_patches(params):
        return _fill_flat(model, config, out, params, batch, seq_len, gen)
    if _main_name(model) == "input_values":   # an audio tokenizer's encoder or decoder
        latents = _fill_latents(model, config, out, params, batch, seq_len, gen)
        if latents is not None and latents.shape[1] > 1:
            return latents
        return waveform(model, config, {"padding_mask": None}, batch, seq_len, gen)
    return None


def _fill_latents(model, config, out, params, batch, seq_len, gen):
    """A codec decoder's latents: (batch, width, frames), width from the decoder's first conv."""
    for module in layers(model):
        if isinstance(module, (nn.Conv1d, nn.ConvTranspose1d)):
            return torch.randn(batch, module.in_channels, 16, generator=gen)
    return None


def _fill_past_values(model, config, out, params, batch, seq_len, gen):
    """A time series: (batch, context, channels), or (batch, context) for univariate forecasters."""
    context = int_field(config, "context_length", default=64)
    if seq_len is None:
        context = min(context, 512)
        lags = field(config, "lags_sequence")
        if isinstance(lags, (list, tuple)) and lags:
            context += max(lags)
    else:
        context = seq_len
    channels = int_field(config, "num_input_channels", "input_size")
    if channels is None:
        return torch.randn(batch, context, generator=gen)
    return torch.randn(batch, context, channels, generator=gen)


def _like_past(name):
    def fill(model, config, out, params, batch, seq_len, gen):
        past = out.get("past_values")
        if past is None:
            return None
        if name == "padding":
            return torch.zeros(past.shape, dtype=past.dtype)
        return torch.ones(past.shape, dtype=past.dtype)
    return fill


def _fill_freq(model, config, out, params, batch, seq_len, gen):
    return torch.zeros(batch, 1, dtype=torch.int64)


def _trajectory(kind):
    """Decision-transformer style trajectories: (batch, steps, dim) from state_dim / act_dim."""
    def fill(model, config, out, params, batch, seq_len, gen):
        steps = min(seq_len or 16, int_field(config, "max_ep_len", default=16))
        if kind == "timesteps":
            return torch.arange(steps).expand(batch, steps).clone()
        if kind == "mask":
            return torch.ones(batch, steps, dtype=torch.int64)
        width = {"states": int_field(config, "state_dim", default=1),
                 "actions": int_field(config, "act_dim", default=1)}.get(kind, 1)
        return torch.randn(batch, steps, width, generator=gen)
    return fill


_GROUPS = (("states", "actions", "rewards", "returns_to_go", "timesteps"),
           ("query_embeds", "encoder_hidden_states"),
           ("visual_feats", "visual_pos"))

def _fill_task_ids(model, config, out, params, batch, seq_len, gen):
    """OneFormer's task prompt: token ids of task_seq_len."""
    vocab = int_field(config, "text_encoder_vocab_size", "vocab_size", default=2)
    return torch.randint(0, vocab, (batch, int_field(config, "task_seq_len", default=16)), generator=gen)


def _fill_encoder_states(model, config, out, params, batch, seq_len, gen):
    """What a Q-Former's cross-attention reads: (batch, 16, encoder_hidden_size)."""
    width = int_field(config, "encoder_hidden_size")
    return torch.randn(batch, 16, width, generator=gen) if width else None


def _fill_region(kind):
    """Detector region features (batch, 16, visual_feat_dim) and their boxes (batch, 16, 4)."""
    def fill(model, config, out, params, batch, seq_len, gen):
        if kind == "pos":
            width = int_field(config, "visual_pos_dim", default=4)
            return torch.rand(batch, 16, width, generator=gen)
        width = int_field(config, "visual_feat_dim")
        return torch.randn(batch, 16, width, generator=gen) if width else None
    return fill


def _fill_embeds(model, config, out, params, batch, seq_len, gen):
    """Embeddings: (batch, seq, hidden_size, else d_model)."""
    hidden = int_field(config, "hidden_size", "d_model")
    return torch.randn(batch, seq_len or 16, hidden, generator=gen) if hidden else None


def _fill_draft(kind):
    """A drafting assistant (MuseGlimmer's): the noise of one block, (batch, block_size, hidden), and
    the target model's states it drafts from, (batch, 16, hidden x the target layers it reads)."""
    def fill(model, config, out, params, batch, seq_len, gen):
        hidden = int_field(config, "hidden_size")
        if not hidden:
            return None
        if kind == "noise":
            return torch.randn(batch, int_field(config, "block_size", default=16), hidden, generator=gen)
        targets = field(config, "target_layer_ids")
        count = len(targets) if isinstance(targets, (list, tuple)) and targets else 1
        return torch.randn(batch, seq_len or 16, hidden * count, generator=gen)
    return fill


_FILL = {
    "input_ids": _fill_ids,
    "inputs": _fill_embeds,             # Perceiver without a preprocessor: already embedded
    "noise_embeds": _fill_draft("noise"),
    "context_hidden_states": _fill_draft("context"),
    "inputs_embeds": _fill_embeds,
    "visual_feats": _fill_region("feats"),
    "visual_pos": _fill_region("pos"),
    "encoder_hidden_states": _fill_encoder_states,
    "task_inputs": _fill_task_ids,
    "qformer_input_ids": _fill_qformer_ids,
    "pixel_values": _fill_pixels,
    "pixel_values_videos": _fill_video,
    "grid_thw": _fill_grid,
    "image_grid_thw": _fill_grid,
    "spatial_shapes": _fill_spatial_shapes,
    "pixel_position_ids": _fill_patch_positions,
    "pixel_attention_mask": _fill_patch_mask,
    "merge_sizes": _fill_merge_sizes,
    "hidden_states": _fill_hidden_states,
    "input_features": _fill_features,
    "input_features_mask": _fill_feature_mask,
    "audio_mel": _fill_features,
    "audio_mel_mask": _fill_feature_mask,
    "input_values": _fill_waveform,
    "query_embeds": _fill_query_embeds,
    "latents": _fill_latents,
    "past_values": _fill_past_values,
    "past_values_padding": _like_past("padding"),
    "past_observed_mask": _like_past("observed"),
    "freq": _fill_freq,
    "states": _trajectory("states"),
    "actions": _trajectory("actions"),
    "rewards": _trajectory("rewards"),
    "returns_to_go": _trajectory("returns"),
    "timesteps": _trajectory("timesteps"),
}
