"""torchvision's datasets a run stands in for (NOTE [stand-ins for data and weights] in stand_ins.py).

NOTE [torchvision's datasets]
Each class of torchvision_table.ROWS, absent, outside the project or asked to download, answers with
synthetic samples of the types and shapes the real one gives: the classes that keep their samples in
attributes (`mnist`, `cifar`, `chw`, `folder`) get those attributes, built as the class builds them, so
its own `__getitem__`, `__len__` and transforms run as in a real run; the classes that read a file per
sample (`sample`) answer `__getitem__` with a synthetic PIL image of the row's size and a target of the
row's kind, through the dataset's own transforms. The table, not code per class, says what a sample is.
A dataset present in the project is read as it is.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable

import numpy as np

from opscan.trace.run.stand_ins import SAMPLES, Patches, StandIns
from opscan.trace.run.torchvision_table import ROWS, Row

CAPTIONS = 5
WORDS = "a person rides a bike along the road near some trees on a sunny day".split()
_MARK = "_opscan_stood_in"


def rng() -> np.random.Generator:
    """The stand-ins' own generator: the script's random streams are never drawn from."""
    return np.random.default_rng(0)


def install(module, stand_ins: StandIns, patches: Patches) -> None:
    for name, row in ROWS.items():
        cls = getattr(module, name, None)
        if cls is None or "__init__" not in vars(cls):
            continue
        patches.set(cls, "__init__", _dataset_init(cls.__init__, name, row, stand_ins))
        if row.layout == "sample":
            patches.set(cls, "__getitem__", _getitem(cls.__getitem__, row))
            patches.set(cls, "__len__", _len(cls.__len__))


def _dataset_init(original: Callable, name: str, row: Row, stand_ins: StandIns) -> Callable:
    signature = inspect.signature(original)

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        given = dict(bound.arguments)
        given.update(given.pop("kwargs", {}) or {})
        root = given.get("root")
        if not stand_ins.answers(root):
            if "download" in bound.arguments:
                bound.arguments["download"] = False   # never downloaded: present, or stood in for below
            try:
                original(*bound.args, **bound.kwargs)
                return
            except (RuntimeError, OSError, ValueError):   # incomplete or unreadable: stood in for
                pass
        what = _fill(self, given, row)
        label = type(self).__name__ + (f" {os.fspath(root)}" if row.layout == "folder" and root is not None else "")
        stand_ins.record("data", label, what)

    return __init__


def describe(row: Row) -> str:
    channels = 1 if row.mode == "L" else 3
    size = f"{'~' if row.varies else ''}{channels}x{row.height}x{row.width}"
    target = {"class": f"{row.classes} classes", "celeba": f"{row.classes} binary attributes (per target_type)",
              "captions": f"{CAPTIONS} synthetic captions each", "mask": f"masks of {row.classes} classes"}[row.target]
    return f"{SAMPLES} synthetic {size} uint8 images, {target} (source: {row.source})"


def _fill(dataset, given: dict, row: Row) -> str:
    """Set the attributes the dataset's class reads its samples from, synthetic; what they are."""
    from torchvision.datasets.vision import VisionDataset

    root = given.get("root")
    VisionDataset.__init__(dataset, root, transform=given.get("transform"),
                           target_transform=given.get("target_transform"))
    draw = rng()
    labels = draw.integers(0, max(row.classes, 1), size=SAMPLES)
    kind = describe(row)
    side, channels = row.height, 1 if row.mode == "L" else 3
    if row.layout == "sample":
        setattr(dataset, _MARK, (row, given))
        return kind
    if row.layout == "mnist":
        import torch

        dataset.train = given.get("train", True)
        dataset.data = torch.from_numpy(draw.integers(0, 256, size=(SAMPLES, side, side), dtype=np.uint8))
        dataset.targets = torch.from_numpy(labels.astype(np.int64))
        return kind
    if row.layout == "cifar":
        dataset.train = given.get("train", True)
        dataset.data = draw.integers(0, 256, size=(SAMPLES, side, side, channels), dtype=np.uint8)
        dataset.targets = [int(v) for v in labels]
        dataset.classes = [f"class_{i}" for i in range(row.classes)]
        dataset.class_to_idx = {c: i for i, c in enumerate(dataset.classes)}
        return kind
    if row.layout == "chw":
        dataset.split = given.get("split", "train")
        dataset.data = draw.integers(0, 256, size=(SAMPLES, channels, side, side), dtype=np.uint8)
        dataset.labels = labels.astype(np.int64)
        dataset.classes = [f"class_{i}" for i in range(row.classes)]
        return kind
    # an image folder: samples named as in the folder, each image made when the loader reads it
    names = [f"class_{i}" for i in range(row.classes)]
    folder = os.fspath(root) if root is not None else ""
    own = _own_loader(given.get("loader"))
    extensions = given.get("extensions")
    suffix = (extensions if isinstance(extensions, str) else (list(extensions or ()) or [".jpg"])[0]) if own else ".jpg"
    suffix = suffix if suffix.startswith(".") else f".{suffix}"
    dataset.classes = names
    dataset.class_to_idx = {c: i for i, c in enumerate(names)}
    dataset.samples = [(os.path.join(folder, names[int(y)], f"{n}{suffix}"), int(y)) for n, y in enumerate(labels)]
    dataset.targets = [s[1] for s in dataset.samples]
    dataset.imgs = dataset.samples
    dataset.extensions = extensions
    dataset.loader = own or _image_loader(side)
    if own:   # NOTE [a folder read by the script's own loader]
        kind = (f"{SAMPLES} samples named *{suffix} in {row.classes} classes (source: {row.source}), each read "
                "by the dataset's own loader (an absent file answered by its reader's stand-in)")
    if "split" in given:   # ImageNet
        dataset.split = given.get("split")
        dataset.wnids, dataset.wnid_to_idx = names, dataset.class_to_idx
    return kind


# NOTE [a folder read by the script's own loader]
# `DatasetFolder(root, loader=own_loader, extensions=(".flac", ".wav"))` names its samples by those
# extensions and reads each with the script's loader: audio features, a `.npy` array, an image.
# Standing in with synthetic PIL images would hand the script's collate something it never gets (a
# PIL image where its loader returns arrays). So a folder dataset given its own loader keeps it: its
# synthetic samples are named with the first extension given, and the loader reads each absent file
# through the reader's own stand-in (librosa, soundfile, PIL, cv2: media_stand_ins.py), or fails as
# the real one would on a format no stand-in knows. torchvision's default loader keeps the table's
# synthetic images.


def _own_loader(loader) -> Callable | None:
    """The loader a folder dataset was given, when it is the script's own (not torchvision's default)."""
    if not callable(loader):
        return None
    from torchvision.datasets import folder

    return None if loader in (folder.default_loader, folder.pil_loader, folder.accimage_loader) else loader


def _image_loader(side: int) -> Callable:
    from PIL import Image

    draw = rng()

    def load(path):
        return Image.fromarray(draw.integers(0, 256, size=(side, side, 3), dtype=np.uint8), mode="RGB")

    return load


def _getitem(original: Callable, row: Row) -> Callable:
    def __getitem__(self, index):
        marked = self.__dict__.get(_MARK)
        if marked is None:
            return original(self, index)
        return _sample(self, index, *marked)

    return __getitem__


def _len(original: Callable) -> Callable:
    def __len__(self):
        return SAMPLES if _MARK in self.__dict__ else original(self)

    return __len__


def _sample(dataset, index: int, row: Row, given: dict):
    """One synthetic (image, target) of `row`, through the dataset's transforms."""
    import torch
    from PIL import Image

    if not -SAMPLES <= int(index) < SAMPLES:
        raise IndexError(index)
    draw = np.random.default_rng(int(index) % SAMPLES)
    shape = (row.height, row.width) if row.mode == "L" else (row.height, row.width, 3)
    image = Image.fromarray(draw.integers(0, 256, size=shape, dtype=np.uint8), mode=row.mode)
    target: object
    if row.target == "celeba":
        kinds = given.get("target_type", "attr")
        parts = []
        for kind in [kinds] if isinstance(kinds, str) else list(kinds):
            sizes = {"attr": row.classes, "bbox": 4, "landmarks": 10}
            parts.append(torch.tensor(int(draw.integers(0, 10177))) if kind == "identity" else
                         torch.from_numpy(draw.integers(0, 2, size=sizes.get(kind, row.classes)).astype(np.int64)))
        target = (tuple(parts) if len(parts) > 1 else parts[0]) if parts else None
    elif row.target == "captions":
        target = [" ".join(draw.choice(WORDS, size=8)) for _ in range(CAPTIONS)]
    elif row.target == "mask":
        target = Image.fromarray(draw.integers(0, row.classes, size=(row.height, row.width), dtype=np.uint8), mode="L")
    else:
        target = int(draw.integers(0, row.classes))
    if getattr(dataset, "transforms", None) is not None and row.target == "mask":
        return dataset.transforms(image, target)
    if getattr(dataset, "transform", None) is not None:
        image = dataset.transform(image)
    if target is not None and getattr(dataset, "target_transform", None) is not None:
        target = dataset.target_transform(target)
    return image, target
