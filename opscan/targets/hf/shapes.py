"""Shapes of generated `hf:` inputs: images, video, cut patches, spectrograms, raw audio."""

from __future__ import annotations

import math

import torch
from torch import nn

from opscan.errors import TargetError

AUDIO_FRAMES = 256        # feature frames of a generated (batch, frames, bins) spectrogram
AUDIO_SAMPLES = 16000     # samples of generated raw audio (1 s at 16 kHz)
FLAT_PATCHES = 8          # patches per side of a generated image for flat-patch vision towers


def field(config, name: str):
    """`config.name`, else the first sub-config's (audio encoders keep num_mel_bins in encoder_config)."""
    try:
        value = getattr(config, name, None)
    except Exception:  # noqa: BLE001 - heterogeneous configs refuse some global reads
        value = None
    if value is not None:
        return value
    for key in sorted(getattr(config, "sub_configs", None) or {}):
        sub = getattr(config, key, None)
        if sub is not None and sub is not config and hasattr(sub, "to_dict"):
            value = field(sub, name)
            if value is not None:
                return value
    return None


def sub_config(config, *names):
    """The first sub-config among `names` (`vision_config`, ...), else the config itself."""
    for name in names:
        sub = getattr(config, name, None)
        if sub is not None and hasattr(sub, "to_dict"):
            return sub
    return config


def int_field(config, *names, default=None):
    """The first positive int among `names` (via `field`; of a list, its last item), else `default`."""
    for name in names:
        value = field(config, name)
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, int) for v in value):
            value = value[-1]
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return default


def layers(model):
    """The model's modules in registration order (none for a stand-in object)."""
    return model.modules() if isinstance(model, nn.Module) else ()


# ----------------------------------------------------------------------------- images and video

def image_size(config, top: bool = False) -> tuple[int, int]:
    size = getattr(config, "image_size", None) if top else None
    if size is None and (not top or sub_config(config, "vision_config") is not config):
        size = field(sub_config(config, "vision_config"), "image_size")
    if size is None and not top:
        size = field(config, "crop_size")
    size = size if size is not None else 224
    if isinstance(size, dict):
        size = (size.get("height", 224), size.get("width", 224))
    size = size if isinstance(size, (tuple, list)) else (size, size)
    return tuple(size[-2:])


def pixels(config, batch: int, gen, top: bool = False):
    """(batch, channels, H, W) images; (batch, frames, channels, H, W) video for a config with frames."""
    vision = sub_config(config, "vision_config")
    if top:
        channels = getattr(config, "num_channels", 3)
        size = image_size(config, top=True)
        frames = getattr(config, "num_frames", None)
    else:
        channels = int_field(vision, "num_channels", "in_channels", "in_chans", default=3)
        size = image_size(config)
        frames = int_field(vision, "num_frames", "frames_per_clip")
    if isinstance(frames, int) and frames > 0:
        return torch.randn(batch, frames, channels, *size, generator=gen)
    return torch.randn(batch, channels, *size, generator=gen)


def video(config, batch: int, gen):
    vision = sub_config(config, "vision_config")
    channels = int_field(vision, "num_channels", "in_channels", default=3)
    frames = int_field(vision, "num_frames", "frames_per_clip", default=8)
    frames = min(frames, 16)
    tubelet = field(vision, "tubelet_size")
    tubelet = tubelet[0] if isinstance(tubelet, (list, tuple)) and tubelet else tubelet
    tubelet = tubelet if isinstance(tubelet, int) and tubelet > 0 else 1
    frames = max(tubelet, frames - frames % tubelet)
    return torch.randn(batch, frames, channels, *image_size(config), generator=gen)


# A vision tower that takes already-cut patches takes one of these with them.
PATCH_GRIDS = ("grid_thw", "image_grid_thw", "spatial_shapes", "pixel_position_ids")
# Integer inputs whose values shape the step: traced with their values (Built.values; NOTE [inputs
# with values] in opscan/trace/device.py).
VALUE_INPUTS = (*PATCH_GRIDS, "merge_sizes", "target_sizes", "image_embeds_position_mask")
GRID_ARGS = (*VALUE_INPUTS, "pixel_attention_mask")


def flat_patches(params: dict) -> bool:
    """Vision towers that take already-cut patches with their grid (Qwen-VL, SigLIP2, Gemma 4)."""
    return any(name in params for name in PATCH_GRIDS)


def patch_width(model, config) -> int:
    """The width of one flattened cut patch: what the first patch embedding takes (C * T * P * P
    for a convolution, whose callers view the rows; in_features for a Linear)."""
    for module in layers(model):
        if isinstance(module, (nn.Conv3d, nn.Conv2d)):
            return module.in_channels * math.prod(module.kernel_size)
        if isinstance(module, nn.Linear):
            return module.in_features
    vision = sub_config(config, "vision_config")
    patch = int_field(vision, "patch_size", default=14)
    return int_field(vision, "num_channels", "in_channels", default=3) * patch * patch


def merge_size(config) -> int:
    return int_field(sub_config(config, "vision_config"), "spatial_merge_size", "merge_size", "merge_kernel_size",
                "pooling_kernel_size", default=2)


def grid_side(config) -> int:
    return 2 * merge_size(config) * max(1, FLAT_PATCHES // (2 * merge_size(config)))


# ----------------------------------------------------------------------------- audio

def features(model, config, batch: int, gen):
    """A spectrogram: Whisper-style (batch, bins, 2 * max_source_positions) when the config gives
    both or the model's first layer is a Conv1d over the bins, else (batch, frames, bins)
    (Conformer / Parakeet / Speech2Text style)."""
    arch = type(model).__name__
    bins = field(config, "num_mel_bins")
    frames = field(config, "max_source_positions")
    if isinstance(bins, int) and (isinstance(frames, int) or _channels_first(model, bins)):
        return torch.randn(batch, bins, chunked(config, 2 * (frames or 1500)), generator=gen)
    if isinstance(bins, int) and _norms_bins(model, bins):
        # a spectrogram image (CLAP): (batch, channels, frames, bins), its first layer a BatchNorm2d over the bins
        channels = int_field(config, "patch_embed_input_channels", default=1)
        return torch.randn(batch, channels, AUDIO_FRAMES, bins, generator=gen)
    if not isinstance(bins, int):
        per_channel, channels = field(config, "input_feat_per_channel"), field(config, "input_channels")
        if isinstance(per_channel, int):
            bins = per_channel * (channels if isinstance(channels, int) else 1)
        else:
            bins = int_field(config, "feature_projection_input_dim", "input_feat_size", "feature_size",
                        "n_mels", "mel_bins")
    if not isinstance(bins, int):
        raise TargetError(f"opscan does not know how many mel bins {arch} takes (no num_mel_bins in its "
                          "config or sub-configs); give input_features with --input NAME:DTYPE[SHAPE]")
    modules = list(layers(model))
    first = next((m for m in modules if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Linear))), None)
    hidden = int_field(config, "hidden_size", "d_model")
    stacks_itself = first is not None and getattr(first, "in_features", 0) == bins * int_field(
        config, "subsampling_factor", default=0)
    if isinstance(first, nn.Linear) and first.in_features % bins == 0 and first.in_features != hidden \
            and not stacks_itself and not any(isinstance(m, nn.Conv2d) for m in modules):
        # no subsampling front end, and a first layer wider than the bins and the hidden size:
        # frames stacked by the feature extractor (Granite Speech, FunASR)
        bins = first.in_features
    return torch.randn(batch, chunked(config, AUDIO_FRAMES), bins, generator=gen)


def chunked(config, frames: int) -> int:
    """Chunked encoders take whole chunks of 2 * n_window frames (Qwen-Omni, Qwen3-ASR)."""
    window = int_field(config, "n_window")
    return 2 * window * max(1, math.ceil(frames / (2 * window))) if window else frames


def _norms_bins(model, bins: int) -> bool:
    """Whether the audio tower's first layer is a BatchNorm2d over the mel bins (CLAP)."""
    for module in layers(model):
        if isinstance(module, nn.BatchNorm2d):
            return module.num_features == bins
    return False


def bins_first(config, spectrogram) -> bool:
    """Whether a generated (batch, a, b) spectrogram is Whisper-style (batch, bins, frames)."""
    bins = field(config, "num_mel_bins")
    return spectrogram.dim() == 3 and spectrogram.shape[1] == bins and spectrogram.shape[2] != bins


def _channels_first(model, bins: int) -> bool:
    """Whether the model's first layer is a Conv1d taking the mel bins as channels (Whisper)."""
    for module in layers(model):
        if isinstance(module, (nn.Conv1d, nn.Conv2d, nn.Linear)):
            return isinstance(module, nn.Conv1d) and module.in_channels == bins
    return False


def waveform(model, config, params: dict, batch: int, seq_len: int | None, gen):
    """Raw audio: (batch, samples) for speech encoders that add the channel themselves (wav2vec2),
    (batch, channels, samples) for codecs and models with a padding mask (EnCodec, DAC, Mimi)."""
    samples = seq_len or AUDIO_SAMPLES
    hop = int_field(config, "hop_length", "samples_per_token")
    if hop:
        samples = hop * max(1, math.ceil(samples / hop))
    channels = int_field(config, "audio_channels", "channels")
    codec = channels is not None or field(config, "codebook_size") is not None or "padding_mask" in params
    if not codec:
        return torch.randn(batch, samples, generator=gen)
    return torch.randn(batch, channels or 1, samples, generator=gen)


WIDTH_KEYS = ("hidden_size", "n_embd", "d_model", "dim")   # what configs call the model's width


def config_width(config) -> int:
    """The width (hidden size) a config states, the top level's or its text config's; 0 when none."""
    for where in (config, getattr(config, "text_config", None)):
        data = where if isinstance(where, dict) else getattr(where, "__dict__", {})
        for key in WIDTH_KEYS:
            value = data.get(key) if isinstance(data, dict) else None
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return 0
