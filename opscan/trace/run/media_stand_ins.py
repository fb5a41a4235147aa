"""Media files a run stands in for (NOTE [stand-ins for data and weights] in stand_ins.py): the images
and audio clips a dataset's manifest (a CSV or JSON list shipped with the project) names but that are
not here. An absent image opens as a synthetic RGB picture, an absent clip reads as four seconds of
synthetic mono audio at 16 kHz (NOTE [the length of a stand-in clip]), in the types each library
returns; the dataset's own code (its transforms, its feature extraction, its padding) runs on them
as on the real files.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from opscan.trace.run.stand_ins import Patches, StandIns

IMAGE_SIDE = 256
RATE = 16_000
# NOTE [the length of a stand-in clip]
# A speech pipeline crops what it reads: a speaker-verification loader trims 0.25 s off each end
# and takes 64 frames of 10 ms (0.64 s) from what is left, keyword and speaker models take 1-3 s
# windows, and a clip shorter than its crop is skipped or fails (`randint(0, -1)`). A stand-in clip
# is 4 s (an assumption, said in the note): longer than those crops, short enough that the host
# feature extraction stays quick.
SECONDS = 4.0


def install(stand_ins: StandIns, patches: Patches) -> dict[str, Callable]:
    """The readers patched when the script (or a library it uses) imports them."""
    return {"PIL.Image": lambda module: _pil(module, stand_ins, patches),
            "cv2": lambda module: _cv2(module, stand_ins, patches),
            "soundfile": lambda module: _soundfile(module, stand_ins, patches),
            "torchaudio": lambda module: _torchaudio(module, stand_ins, patches),
            "librosa": lambda module: _librosa(module, stand_ins, patches)}


def _absent(path, stand_ins: StandIns) -> bool:
    return isinstance(path, (str, os.PathLike)) and stand_ins.answers(path)


def _pixels(size: tuple[int, int] = (IMAGE_SIDE, IMAGE_SIDE)) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, size=(*size, 3), dtype=np.uint8)


# NOTE [the image size an environment declares]
# An image environment of reinforcement learning (a gym.Env that denoises or classifies pictures
# read from files) declares what its observations are: `self.observation_space = Box(shape=(1, 63,
# 63))`, and its actions and networks are built to that size. A stand-in image of the default side
# then fails the environment's own arithmetic (`(1,63,63)` against `(1,256,256)`). So an absent image
# read while a method of an object with an `observation_space` whose shape is an image's (H x W, or
# with a channel axis of 1, 3 or 4 first or last) runs (a frame of the project's code whose `self`
# has one) is made that H x W; said in the note. Any other read keeps IMAGE_SIDE.
def _declared_size(stand_ins: StandIns) -> tuple[int, int] | None:
    import sys

    frame = sys._getframe(2)
    while frame is not None:
        owner = frame.f_locals.get("self") if stand_ins.root and \
            os.path.abspath(frame.f_code.co_filename).startswith(stand_ins.root + os.sep) else None
        space = getattr(owner, "__dict__", {}).get("observation_space") if owner is not None else None
        shape = tuple(getattr(space, "shape", None) or ())
        if len(shape) == 3 and shape[0] in (1, 3, 4) and shape[2] not in (1, 3, 4):
            shape = shape[1:]
        elif len(shape) == 3 and shape[2] in (1, 3, 4):
            shape = shape[:2]
        if len(shape) == 2 and all(isinstance(n, int) and n > 1 for n in shape):
            return int(shape[0]), int(shape[1])
        frame = frame.f_back
    return None


def _image(stand_ins: StandIns) -> tuple[np.ndarray, str, str]:
    """A stand-in image, its `HxW` and why that size (NOTE [the image size an environment declares])."""
    size = _declared_size(stand_ins)
    why = " (the size its environment's observation_space declares)" if size else ""
    size = size or (IMAGE_SIDE, IMAGE_SIDE)
    return _pixels(size), f"{size[0]}x{size[1]}", why


def _wave(rate: int = RATE) -> np.ndarray:
    return (np.random.default_rng(0).standard_normal(int(rate * SECONDS)) * 0.1).astype(np.float32)


def _pil(module, stand_ins: StandIns, patches: Patches) -> None:
    original = module.open

    def open_(fp, *args, **kwargs):
        if _absent(fp, stand_ins):
            pixels, dims, why = _image(stand_ins)
            stand_ins.record("data", "PIL.Image.open", f"a synthetic {dims} RGB image{why} for each absent image "
                             "file (first: " + os.fspath(fp) + ")")
            return module.fromarray(pixels, mode="RGB")
        return original(fp, *args, **kwargs)

    patches.set(module, "open", open_)


def _cv2(module, stand_ins: StandIns, patches: Patches) -> None:
    original = module.imread

    def imread(filename, *args, **kwargs):
        if _absent(filename, stand_ins):
            flags = args[0] if args else kwargs.get("flags", 1)
            gray = flags == getattr(module, "IMREAD_GRAYSCALE", 0)   # `cv2.imread(path, 0)`: one channel
            pixels, dims, why = _image(stand_ins)
            shown = f"{dims} uint8 gray" if gray else f"{dims}x3 uint8 BGR"
            shown += why
            stand_ins.record("data", "cv2.imread", f"a synthetic {shown} image for each absent image file (first: "
                             + os.fspath(filename) + ")")
            return pixels[:, :, 0].copy() if gray else pixels
        return original(filename, *args, **kwargs)

    patches.set(module, "imread", imread)


def _clip(what: str, path, stand_ins: StandIns) -> None:
    stand_ins.record("data", what, f"{SECONDS:g} s (assumed) of synthetic mono audio at {RATE} Hz for each absent "
                     f"clip (first: {os.fspath(path)})")


def _soundfile(module, stand_ins: StandIns, patches: Patches) -> None:
    original = module.read

    def read(file, *args, **kwargs):
        if _absent(file, stand_ins):
            _clip("soundfile.read", file, stand_ins)
            dtype = kwargs.get("dtype", "float64")
            return _wave().astype(dtype if dtype in ("float32", "float64") else "float64"), RATE
        return original(file, *args, **kwargs)

    patches.set(module, "read", read)


def _torchaudio(module, stand_ins: StandIns, patches: Patches) -> None:
    original = getattr(module, "load", None)
    if original is None:
        return

    def load(uri, *args, **kwargs):
        if _absent(uri, stand_ins):
            import torch

            _clip("torchaudio.load", uri, stand_ins)
            return torch.from_numpy(_wave()).unsqueeze(0), RATE
        return original(uri, *args, **kwargs)

    patches.set(module, "load", load)


def _librosa(module, stand_ins: StandIns, patches: Patches) -> None:
    original = module.load

    def load(path, *args, sr=22050, **kwargs):
        if _absent(path, stand_ins):
            rate = sr or RATE
            _clip("librosa.load", path, stand_ins)
            return _wave(rate), rate
        return original(path, *args, sr=sr, **kwargs)

    patches.set(module, "load", load)
