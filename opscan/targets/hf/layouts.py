"""Input layouts of `hf:` architectures that neither the forward signature nor the config give.

The model's processor or its code does: each maker here is the `layout` of one or more entries
of the architecture table (architectures.ARCHITECTURES, keyed on model_type), returning the inputs
it makes or replaces (None drops one); the completion (inputs._complete) then adds what is still
missing. Sizes still come from the config and the first layers (shapes.py). Only models whose
generated inputs did not trace have one (NOTE [hf inputs] in inputs.py).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from opscan.targets.hf.shapes import (AUDIO_FRAMES, FLAT_PATCHES, chunked, field, grid_side, image_size,
                                     int_field, layers, merge_size, pixels, sub_config)


def _first(model, kind):
    return next((m for m in layers(model) if isinstance(m, kind)), None)


def patches_as_images(model, config, out, batch, seq_len, gen):
    """Kimi-K2.5: each cut patch a (C, P, P) image for the Conv2d patch embedding, with grid_thw."""
    conv, side = _first(model, nn.Conv2d), grid_side(config)
    return {"pixel_values": torch.randn(batch * side * side, conv.in_channels, *conv.kernel_size, generator=gen),
            "grid_thw": torch.tensor([[1, side, side]] * batch, dtype=torch.int64)}


def merged_patches(model, config, out, batch, seq_len, gen):
    """Inkling2: one (P * merge, P * merge, C) block per image token; image_grid_thw counts tokens."""
    merge = merge_size(config)
    side = max(1, FLAT_PATCHES // merge)
    block = int_field(config, "patch_size", default=14) * merge
    channels = int_field(config, "num_channels", default=3)
    return {"pixel_values": torch.randn(batch * side * side, block, block, channels, generator=gen),
            "image_grid_thw": torch.tensor([[1, side, side]] * batch, dtype=torch.int64)}


def packed_strip(model, config, out, batch, seq_len, gen):
    """MiniCPM-V (NaViT packing): every image's patches side by side in one (1, C, P, patches * P)
    strip, with each image's patch grid in target_sizes."""
    patch = int_field(config, "patch_size", default=14)
    channels = int_field(config, "num_channels", default=3)
    return {"pixel_values": torch.randn(1, channels, patch, batch * FLAT_PATCHES ** 2 * patch, generator=gen),
            "target_sizes": torch.tensor([[FLAT_PATCHES, FLAT_PATCHES]] * batch, dtype=torch.int32)}


def image_pairs(model, config, out, batch, seq_len, gen):
    """Keypoint matchers (LightGlue, EfficientLoFTR): (batch, 2, C, H, W), one pair per sample."""
    images = out.get("pixel_values")
    if images is None or images.dim() != 4:
        return {}
    return {"pixel_values": torch.randn(images.shape[0], 2, *images.shape[1:], generator=gen)}


def bins_by_frames(model, config, out, batch, seq_len, gen):
    """Qwen3-ASR's encoder: (batch, bins, frames) into a Conv2d front end, whole 2 * n_window chunks."""
    bins = int_field(config, "num_mel_bins", default=128)
    return {"input_features": torch.randn(batch, bins, chunked(config, AUDIO_FRAMES), generator=gen)}


def hidden_states_in(model, config, out, batch, seq_len, gen):
    """SpeechT5's base model has no pre-nets: its encoder and decoder take (batch, seq, hidden_size)."""
    hidden = int_field(config, "hidden_size", default=768)
    return {"input_values": torch.randn(batch, seq_len or 64, hidden, generator=gen),
            "decoder_input_values": torch.randn(batch, 16, hidden, generator=gen)}


def audio_per_token(model, config, out, batch, seq_len, gen):
    """Voxtral Realtime adds one audio embedding to every token: `audio_length_per_tok` mel frames
    per token, Whisper-style (batch, bins, frames)."""
    ids = out.get("input_ids")
    if ids is None:
        return {}
    bins = int_field(sub_config(config, "audio_config"), "num_mel_bins", default=128)
    frames = ids.shape[-1] * int_field(config, "audio_length_per_tok", default=8)
    return {"input_features": torch.randn(ids.shape[0], bins, frames, generator=gen)}


def frames_of(count, image_mask: bool = False):
    """Video / multi-image models that take (batch, frames or images, C, H, W): InstructBLIP-Video
    (4 frames, as its processor samples), IDEFICS (one image per sample, with its
    `image_attention_mask`: `image_mask`)."""
    def make(model, config, out, batch, seq_len, gen):
        images = out.get("pixel_values")
        if images is None:
            images = pixels(config, batch, gen)
        if images.dim() != 4:
            return {}
        made = {"pixel_values": torch.randn(images.shape[0], count, *images.shape[1:], generator=gen)}
        ids = out.get("input_ids")
        if image_mask and ids is not None:
            made["image_attention_mask"] = torch.ones(*ids.shape, count, dtype=torch.int64)
        return made
    return make


def codebook_frames(text: int):
    """Every frame one token per codebook, (batch, seq, num_codebooks), labels like them (CSM); with
    `text` text tokens in front (Kyutai speech-to-text: num_codebooks + 1)."""
    def make(model, config, out, batch, seq_len, gen):
        ids = out.get("input_ids")
        codebooks = int_field(config, "num_codebooks")
        if ids is None or ids.dim() != 2 or not codebooks:
            return {}
        vocab = min(int_field(config, "vocab_size", default=2),
                    int_field(config, "codebook_size", "codebook_vocab_size", default=2 ** 31))
        codes = torch.randint(0, vocab, (*ids.shape, codebooks + text), generator=gen)
        made = {"input_ids": codes}
        if "labels" in out:
            made["labels"] = codes.clone()
        return made
    return make


def conditioning_mel(model, config, out, batch, seq_len, gen):
    """CLVP conditions its speech decoder on a (batch, feature_size, frames) mel spectrogram."""
    bins = int_field(sub_config(config, "decoder_config"), "feature_size", default=80)
    # a contrastive scorer (return_loss): no labels, which its forward would hand to the speech decoder
    return {"input_features": torch.randn(batch, bins, AUDIO_FRAMES, generator=gen), "labels": None}


def decoder_channels(model, config, out, batch, seq_len, gen):
    """Dia: the decoder takes one token per audio channel, (batch, seq, decoder num_channels)."""
    decoder = sub_config(config, "decoder_config")
    channels = int_field(decoder, "num_channels")
    ids = out.get("decoder_input_ids")
    if ids is None or not channels:
        return {}
    vocab = int_field(decoder, "vocab_size", default=2)
    return {"decoder_input_ids": torch.randint(0, vocab, (ids.shape[0], ids.shape[1], channels), generator=gen)}


def scaled_image(model, config, out, batch, seq_len, gen):
    """DepthPro cuts patch_size tiles from the image scaled by each of scaled_images_ratios: the
    smallest scale must still hold one tile (patch_size / min(ratios))."""
    ratios, patch = field(config, "scaled_images_ratios"), int_field(config, "patch_size")
    if not isinstance(ratios, (list, tuple)) or not ratios or not patch:
        return {}
    side, channels = math.ceil(patch / min(ratios)), int_field(config, "num_channels", default=3)
    return {"pixel_values": torch.randn(batch, channels, side, side, generator=gen)}


def windowed_backbone(model, config, out, batch, seq_len, gen):
    """LW-DETR / RF-DETR: the ViT backbone's image_size, rounded so its patch grid splits into the
    windows (`num_windows_side` per side, or `num_windows` per side for RF-DETR's backbone)."""
    backbone = sub_config(config, "backbone_config")
    patch = int_field(backbone, "patch_size", default=16)
    per_side = int_field(backbone, "num_windows_side") or int_field(backbone, "num_windows", default=1)
    step = patch * per_side
    side = step * max(1, math.ceil(int_field(backbone, "image_size", default=224) / step))
    channels = int_field(backbone, "num_channels", default=3)
    return {"pixel_values": torch.randn(batch, channels, side, side, generator=gen)}


def image_token_slots(model, config, out, batch, seq_len, gen):
    """Kosmos-2: the prompt holds `latent_query_num` image-token slots after its first token, marked
    by image_embeds_position_mask."""
    slots = int_field(config, "latent_query_num", default=64)
    vocab = int_field(sub_config(config, "text_config"), "vocab_size", default=2)
    ids = torch.randint(0, vocab, (batch, slots + (seq_len or 16)), generator=gen)
    mask = torch.zeros(ids.shape, dtype=torch.int64)
    mask[:, 1:slots + 1] = 1
    return {"input_ids": ids, "image_embeds_position_mask": mask}


def subsampled_bins(model, config, out, batch, seq_len, gen):
    """Gemma 4's audio tower names no mel bins: two stride-2 convolutions over (frames, bins), then a
    Linear over last-conv channels x bins / 4, so bins = 4 x in_features / last channels."""
    channels = field(config, "subsampling_conv_channels")
    proj = getattr(getattr(model, "subsample_conv_projection", None), "input_proj_linear", None)
    if not isinstance(channels, (list, tuple)) or not channels or not isinstance(proj, nn.Linear):
        return {}
    bins = 4 * proj.in_features // channels[-1]
    return {"input_features": torch.randn(batch, AUDIO_FRAMES, bins, generator=gen)}


def robot_prefix(model, config, out, batch, seq_len, gen):
    """PI0: a PaliGemma prefix (one camera image, its image tokens then 16 text tokens, the camera
    mask) and the action expert's input, (batch, 1 state + chunk_size actions, expert hidden)."""
    vlm = sub_config(config, "vlm_config")
    vision = sub_config(vlm, "vision_config")
    size, patch = int_field(vision, "image_size", default=224), int_field(vision, "patch_size", default=14)
    tokens = (size // patch) ** 2
    ids = torch.randint(0, int_field(vlm, "vocab_size", default=2), (batch, tokens + 16), generator=gen)
    image_token = field(vlm, "image_token_id")
    if isinstance(image_token, int):
        ids[:, :tokens] = image_token
    hidden = int_field(sub_config(config, "dit_config"), "hidden_size", default=1024)
    steps = 1 + int_field(config, "chunk_size", default=50)   # the state, then the action chunk
    return {"action_embeds": torch.randn(batch, steps, hidden, generator=gen),
            "input_ids": ids,
            "pixel_values": torch.randn(batch, 1, int_field(vision, "num_channels", default=3), size, size,
                                        generator=gen),
            "pixel_attention_mask": torch.ones(batch, 1, dtype=torch.bool)}


def prompt_pair(model, config, out, batch, seq_len, gen):
    """SegGPT stacks the prompt above the image: image, prompt image and prompt mask each take half
    of image_size's height."""
    height, width = image_size(config, top=True)
    shape = (batch, int_field(config, "num_channels", default=3), height // 2, width)
    names = ("pixel_values", "prompt_pixel_values", "prompt_masks")
    return {name: torch.randn(shape, generator=gen) for name in names}
