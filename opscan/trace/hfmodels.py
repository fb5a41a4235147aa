"""Inputs some `hf:` architectures need that no rule on argument names can give (NOTE [per-architecture inputs])."""

from __future__ import annotations

import inspect
import sys
from typing import Callable, NamedTuple

import torch

from opscan.trace.hfshapes import int_field, pixels, sub_config

# NOTE [per-architecture inputs]
# `hfinputs` completes a call from argument names and the config, and must not change the inputs
# of models that already trace. Some architectures need an input that a name rule cannot add
# without changing others: BROS cannot run without `bbox` while LayoutLM (same argument) traces
# without it; FastSpeech2 trains only on its four label tensors. `TABLE` lists them, keyed on the
# model class name or the config's `model_type`, each input with the reason it is needed; a
# key matches only its architecture, so no other model's inputs change. An input is added only
# when the forward takes it, the call does not have it yet, and the user does not give it.


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

TABLE: dict[str, tuple[Need, ...]] = {
    "bros": (Need("bbox", _boxes, _BBOX + " (LayoutLM, same argument, runs without them)"),),
    "udop": (Need("bbox", _boxes, "its horizontal / vertical relative position biases are "
                                  "computed from word boxes"),),
    "molmo2": (Need("mm_token_type_ids", _text_types, "training requires the token types "
                                                      "(image tokens attend bidirectionally)"),),
    "AudioFlamingo3Encoder": (Need("input_features_mask", _frame_mask, "the encoder computes its "
                                   "frame lengths from the mask and has no default"),),
    "Aimv2Model": (Need("pixel_values", _images, "scores text against images but takes no "
                                                "`return_loss`: both towers always run"),),
    "TvpModel": _TVP,
    "TvpForVideoGrounding": _TVP,
    "FastSpeech2ConformerModel": _FASTSPEECH,
    "FastSpeech2ConformerWithHifiGan": _FASTSPEECH,
    "Sam2VideoModel": _VIDEO_SESSION,
    "Sam3TrackerVideoModel": _VIDEO_SESSION,
    "EdgeTamVideoModel": _VIDEO_SESSION,
    "Sam3VideoModel": _VIDEO_SESSION,
}


def needs(model, config) -> tuple[Need, ...]:
    """The table's entries for this model: its class name's, then its config model_type's."""
    keys = (type(model).__name__, getattr(config, "model_type", None))
    return tuple(need for key in dict.fromkeys(keys) if key in TABLE for need in TABLE[key])


def value_inputs(model, config) -> tuple[str, ...]:
    """The table's inputs for this model whose values shape the step (FastSpeech2's durations
    decide the spectrogram length): for `Built.values` (NOTE [inputs with values])."""
    return tuple(need.name for need in needs(model, config) if need.values)


def architecture_inputs(model, config, out: dict, batch: int, seq_len: int | None, gen, given=()) -> dict:
    """Add the inputs `TABLE` lists for this architecture that the call lacks (NOTE [per-architecture
    inputs]); `out` is returned, with them."""
    entries = needs(model, config)
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
