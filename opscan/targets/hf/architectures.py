"""The one per-architecture table of `hf:` inputs, keyed on model_type (NOTE [one architecture table]).

Each entry: the input layout its processor or code gives (layouts.py), and the inputs it needs
that no rule on argument names can give (the makers below), each with its reason.
"""

from __future__ import annotations

import inspect
import sys
from typing import Callable, NamedTuple

import torch

from opscan.targets.hf import layouts
from opscan.targets.hf.shapes import int_field, pixels, sub_config

# NOTE [one architecture table]
# `inputs.py` completes a call from argument names and the config (its `_FILL` table is keyed on
# argument names and holds for every architecture), and must not change the inputs of models that
# already trace. What only one architecture needs is one entry of `ARCHITECTURES`, keyed on the
# config's `model_type`:
# - `layout`: inputs its processor or code lays out in a way neither the signature nor the config
#   gives (SegGPT's prompt pair, Kosmos-2's image-token slots); applied to the main inputs before
#   the completion, it may replace or drop them (layouts.py);
# - `needs`: inputs a name rule cannot add without changing other models: BROS cannot run without
#   `bbox` while LayoutLM (same argument) traces without it; FastSpeech2 trains only on its four
#   label tensors. A need is added only when the forward takes it, the call does not have it yet,
#   and the user does not give it (--input); each says why.
# Why model_type, not the class name: it is in config.json, so it is known before transformers is
# imported or anything is built; one model_type is one config class, and the sizes the makers read
# come from that config; the zoo's selection, its known transformers bugs (upstream.py), the
# config repair and the default configs (defaults.py) all name architectures by model_type, so one
# key space serves them all. The classes of one model_type share its entry (TvpModel and
# TvpForVideoGrounding); a need whose argument a class's forward does not take is skipped for it
# (Sam2Model, also listed under sam2_video, takes no inference_session). This table replaced one
# keyed on the class name (for the entries below from AudioFlamingo3Encoder to Sam3VideoModel) and
# one keyed on model_type (the layouts); every class that had an entry maps to exactly the
# model_type that replaces it (checked against transformers 5.24.0's auto mappings).


class Need(NamedTuple):
    name: str        # the forward argument
    make: Callable   # make(model, config, out, batch, seq_len, gen) -> value, or None: cannot
    reason: str      # why this architecture needs it (one line)
    values: bool = False   # its values shape the step: to be traced with them (Built.values)


def _ids(out: dict):
    ids = out.get("input_ids")
    return ids if isinstance(ids, torch.Tensor) and ids.dim() == 2 else None


def _boxes(model, config, out, batch, seq_len, gen):
    """A word box per token, (batch, seq, 4) as (x0, y0, x1, y1) normalized to [0, 1] (x0 <= x1,
    y0 <= y1), as BROS and UDOP take them."""
    ids = _ids(out)
    if ids is None:
        return None
    corners = torch.rand(*ids.shape, 2, 2, generator=gen).sort(dim=-2).values   # (.., [lo, hi], [x, y])
    return corners.flatten(-2)                                                  # x0, y0, x1, y1


def _text_types(model, config, out, batch, seq_len, gen):
    """`mm_token_type_ids` of a text-only prompt: 0 for every token (1 marks image tokens)."""
    ids = _ids(out)
    return torch.zeros_like(ids) if ids is not None else None


def _frame_mask(model, config, out, batch, seq_len, gen):
    """Every frame of the (batch, bins, frames) spectrogram is audio: ones (batch, frames)."""
    features = out.get("input_features")
    if not isinstance(features, torch.Tensor) or features.dim() != 3:
        return None
    return torch.ones(features.shape[0], features.shape[-1], dtype=torch.int64)


def _images(model, config, out, batch, seq_len, gen):
    return pixels(config, batch, gen)


def _tvp_video(model, config, out, batch, seq_len, gen):
    """TVP's frames: (batch, num_frames, channels, max_img_size, max_img_size); the visual prompt
    is built at max_img_size and added to them."""
    frames = int_field(config, "num_frames", default=48)
    size = int_field(config, "max_img_size", default=448)
    channels = int_field(sub_config(config, "backbone_config"), "num_channels", default=3)
    return torch.randn(batch, frames, channels, size, size, generator=gen)


# FastSpeech2: each token lasts 1-4 spectrogram frames; the spectrogram is padded with -100 (what
# its loss masks) to the longest utterance of the batch.
def _durations(model, config, out, batch, seq_len, gen):
    ids = _ids(out)
    if ids is None:
        return None
    if "duration_labels" not in out:
        out["duration_labels"] = torch.randint(1, 5, ids.shape, generator=gen)
    return out["duration_labels"]


def _spectrogram(model, config, out, batch, seq_len, gen):
    durations = _durations(model, config, out, batch, seq_len, gen)
    bins = int_field(config, "num_mel_bins")
    if durations is None or bins is None:
        return None
    lengths = durations.sum(dim=1)
    frames = int(lengths.max())
    reduction = int_field(config, "reduction_factor", default=1)
    frames += -frames % reduction
    spectrogram = torch.randn(durations.shape[0], frames, bins, generator=gen)
    spectrogram[torch.arange(frames)[None, :] >= lengths[:, None]] = -100.0
    return spectrogram


def _per_token(model, config, out, batch, seq_len, gen):
    """Token-averaged pitch / energy, normalized: (batch, seq, 1)."""
    ids = _ids(out)
    return torch.randn(*ids.shape, 1, generator=gen) if ids is not None else None


# SAM2-style video trackers take a stateful inference session (frames, prompts, memories) instead
# of tensors. A real run builds it with the processor (`init_video_session`, then
# `add_inputs_to_inference_session`) on the inference device; opscan builds the same state from
# the config: 2 frames of image_size x image_size and one positive point click on object 1 in
# frame 0 (in model input pixels, as the processor scales clicks). The session holds device
# tensors, but inputs are made before the trace's device exists, so it is built at its first use
# in each step (on the model's device, from the frames and click made here) and afresh every
# step: a forward consumes its prompts and stores memories in it.
VIDEO_FRAMES = 2


def _lazy_session(base):
    """A `base` session whose state `build(session)` makes at its first attribute read; `_opscan_reset`
    (a forward pre-hook) drops it, so every step starts from the same prompts."""
    class LazySession(base):
        def __init__(self, build):   # base.__init__ runs in `build`, at the first use
            self.__dict__["_opscan_build"] = build

        def __getattr__(self, name):
            build = self.__dict__.get("_opscan_build")
            if name.startswith("__") or build is None or self.__dict__.get("_opscan_built"):
                raise AttributeError(name)
            self.__dict__["_opscan_built"] = True
            build(self)
            return getattr(self, name)

        def _opscan_reset(self, *args):
            build = self.__dict__["_opscan_build"]
            self.__dict__.clear()
            self.__dict__["_opscan_build"] = build

    LazySession.__name__ = LazySession.__qualname__ = base.__name__
    return LazySession


def _click(session, fake, size, gen):
    """One positive click (label 1) on object 1 in frame 0, at the image centre."""
    obj = session.obj_id_to_idx(1)
    click = torch.tensor([[[[size / 2, size / 2]]]])        # (image, object, points, xy)
    label = torch.tensor([[[1]]], dtype=torch.int32)
    session.add_point_inputs(obj, 0, {"point_coords": fake(click), "point_labels": fake(label)})
    session.obj_with_new_inputs = [1]


def _text_prompt(config):
    """A text prompt as the processor tokenizes it: 32 tokens, the first 4 real (SAM3)."""
    vocab = int_field(sub_config(sub_config(config, "detector_config"), "text_config"), "vocab_size", default=2)
    ids = torch.randint(0, vocab, (1, 32))
    mask = (torch.arange(32) < 4).to(torch.int64)[None, :]

    def prompt(session, fake, size, gen):
        prompt_id = session.add_prompt("object")
        session.prompt_input_ids[prompt_id] = fake(ids).to(session.inference_device)
        session.prompt_attention_masks[prompt_id] = fake(mask).to(session.inference_device)
    return prompt


def _video_session(model, config, out, batch, seq_len, gen):
    name = type(model).__name__.replace("Model", "InferenceSession")
    base = getattr(sys.modules.get(type(model).__module__), name, None)   # the model's own module
    size = int_field(config, "image_size")
    if base is None or size is None:
        return None
    frames = torch.randn(VIDEO_FRAMES, 3, size, size, generator=gen)
    prompt = _text_prompt(config) if hasattr(base, "add_prompt") else _click

    def build(session):
        param = next(iter(model.parameters()), None)
        device = param.device if param is not None else torch.device("cpu")
        mode = getattr(param, "fake_mode", None)     # the trace's FakeTensorMode: frames become fakes
        fake = mode.from_tensor if mode is not None else (lambda tensor: tensor)
        base.__init__(session, video=fake(frames), video_height=size, video_width=size, inference_device=device,
                      inference_state_device=device, video_storage_device=device, dtype=torch.float32)
        prompt(session, fake, size, gen)

    session = _lazy_session(base)(build)
    model.register_forward_pre_hook(session._opscan_reset)
    out.setdefault("frame_idx", 0)
    return session


_BBOX = "its forward cannot run without word boxes"
_SPEECH = ("trains only on all four targets (spectrogram, durations, pitch, energy); the durations "
           "decide the spectrogram length")
_FASTSPEECH = (Need("duration_labels", _durations, _SPEECH, values=True),
               Need("spectrogram_labels", _spectrogram, _SPEECH),
               Need("pitch_labels", _per_token, _SPEECH),
               Need("energy_labels", _per_token, _SPEECH))

_VIDEO_SESSION = (Need("inference_session", _video_session, "a video tracker: its forward takes a stateful "
                        "session of frames and prompts, not tensors"),)
_TVP = (Need("pixel_values", _tvp_video, "text-video grounding: the video tower always runs"),)

class Architecture(NamedTuple):
    layout: Callable | None = None   # layout(model, config, out, batch, seq_len, gen) -> inputs made or
                                     # replaced (a None drops one); layouts.py
    needs: tuple[Need, ...] = ()     # inputs added where the call lacks them


_VIDEO_TRACKER = Architecture(needs=_VIDEO_SESSION)

ARCHITECTURES: dict[str, Architecture] = {
    "bros": Architecture(needs=(Need("bbox", _boxes, _BBOX + " (LayoutLM, same argument, runs without them)"),)),
    "udop": Architecture(needs=(Need("bbox", _boxes, "its horizontal / vertical relative position biases are "
                                                     "computed from word boxes"),)),
    "molmo2": Architecture(needs=(Need("mm_token_type_ids", _text_types, "training requires the token types "
                                                                         "(image tokens attend bidirectionally)"),)),
    "audioflamingo3_encoder": Architecture(needs=(Need("input_features_mask", _frame_mask, "the encoder computes "
                                                       "its frame lengths from the mask and has no default"),)),
    "aimv2": Architecture(needs=(Need("pixel_values", _images, "scores text against images but takes no "
                                                               "`return_loss`: both towers always run"),)),
    "tvp": Architecture(needs=_TVP),
    "fastspeech2_conformer": Architecture(needs=_FASTSPEECH),
    "fastspeech2_conformer_with_hifigan": Architecture(needs=_FASTSPEECH),
    "sam2_video": _VIDEO_TRACKER,
    "sam3_tracker_video": _VIDEO_TRACKER,
    "edgetam_video": _VIDEO_TRACKER,
    "sam3_video": _VIDEO_TRACKER,
    "seggpt": Architecture(layouts.prompt_pair),
    "gemma4_audio": Architecture(layouts.subsampled_bins),
    "pi0": Architecture(layouts.robot_prefix),
    "kosmos-2": Architecture(layouts.image_token_slots),
    "depth_pro": Architecture(layouts.scaled_image),
    "lw_detr": Architecture(layouts.windowed_backbone),
    "rf_detr": Architecture(layouts.windowed_backbone),
    "speecht5": Architecture(layouts.hidden_states_in),
    "voxtral_realtime": Architecture(layouts.audio_per_token),
    "instructblipvideo": Architecture(layouts.frames_of(4)),
    "idefics": Architecture(layouts.frames_of(1, image_mask=True)),
    "csm": Architecture(layouts.codebook_frames(0)),
    "kyutai_speech_to_text": Architecture(layouts.codebook_frames(1)),
    "clvp": Architecture(layouts.conditioning_mel),
    "dia": Architecture(layouts.decoder_channels),
    "qwen3_asr_encoder": Architecture(layouts.bins_by_frames),
    "kimi_k25_vision": Architecture(layouts.patches_as_images),
    "inkling2_vision": Architecture(layouts.merged_patches),
    "minicpm_ocr_vision": Architecture(layouts.packed_strip),
    "minicpmv4_7_vision": Architecture(layouts.packed_strip),
    "efficientloftr": Architecture(layouts.image_pairs),
    "lightglue": Architecture(layouts.image_pairs),
}


def architecture(config) -> Architecture:
    """The table's entry for the config's model_type (an empty one for most)."""
    return ARCHITECTURES.get(getattr(config, "model_type", None), Architecture())


def has_layout(config) -> bool:
    return architecture(config).layout is not None


def model_layout(model, config, out: dict, batch: int, seq_len: int | None, gen) -> dict:
    """`out` with the inputs the architecture's layout makes made or replaced (a None drops
    one); `out` itself for most models."""
    make = architecture(config).layout
    if make is None:
        return out
    made = {**out, **make(model, config, out, batch, seq_len, gen)}
    return {name: value for name, value in made.items() if value is not None}


def value_inputs(model, config) -> tuple[str, ...]:
    """The table's inputs for this model whose values shape the step (FastSpeech2's durations
    decide the spectrogram length): for `Built.values` (NOTE [inputs with values])."""
    return tuple(need.name for need in architecture(config).needs if need.values)


def architecture_inputs(model, config, out: dict, batch: int, seq_len: int | None, gen, given=()) -> dict:
    """Add the inputs the table lists for this architecture that the call lacks (NOTE [one
    architecture table]); `out` is returned, with them."""
    entries = architecture(config).needs
    if not entries:
        return out
    try:
        params = inspect.signature(model.forward).parameters
    except (AttributeError, TypeError, ValueError):
        return out
    for need in entries:
        if need.name in params and need.name not in given and out.get(need.name) is None:
            value = need.make(model, config, out, batch, seq_len, gen)
            if value is not None:
                out[need.name] = value
    return out
