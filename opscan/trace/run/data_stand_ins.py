"""Datasets a run stands in for (NOTE [stand-ins for data and weights] in stand_ins.py): torchvision's
datasets and folders (torchvision_stand_ins.py, from the table of torchvision_table.py), Hugging Face
`datasets.load_dataset`, numpy token files. Each answers with synthetic samples of the types and
shapes the real one gives.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

import numpy as np

from opscan.trace.run import torchvision_stand_ins
from opscan.trace.run.stand_ins import Patches, StandIns

TOKENS = 1 << 20          # elements of a token file stood in for (a few thousand batches of any block size)
TOKEN_VALUES = 64         # token ids drawn below this: within any vocabulary
FOLDER_CLASSES = 10       # classes of an absent image folder (its count is not written anywhere we may read)
HF_ROWS = 256             # rows per split of a Hugging Face dataset stood in for

SPECIALS = ("<pad>", "<unk>", "<s>", "</s>", "<sos>", "<eos>", "eos", "<start>", "<end>", "<mask>")
VOCABULARY = re.compile(r"(^|[_\-.])(vocab|vocabulary|word2idx|word_to_idx|w2i|token2id|dict|dictionary|"
                        r"tokens?|wordmap|word_map)([_\-.]|$)", re.IGNORECASE)   # not tokenizer.json


def vocabulary() -> dict[str, int]:
    """The stood-in vocabulary (file_stand_ins.py, table_stand_ins.py): special tokens first,
    TOKEN_VALUES entries in all."""
    words = list(SPECIALS) + [f"word{i}" for i in range(len(SPECIALS), TOKEN_VALUES)]
    return {word: i for i, word in enumerate(words)}


def rng() -> np.random.Generator:
    """The stand-ins' own generator: the script's random streams are never drawn from."""
    return np.random.default_rng(0)


def install(stand_ins: StandIns, patches: Patches) -> dict[str, Callable]:
    """numpy's readers patched now; torchvision's and datasets' when the script imports them."""
    _numpy(stand_ins, patches)
    return {"torchvision.datasets": lambda module: torchvision_stand_ins.install(module, stand_ins, patches),
            "datasets": lambda module: _hf_datasets(module, stand_ins, patches)}


# --- numpy token files -------------------------------------------------------------------------

def tokens(dtype, count: int = TOKENS) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return rng().integers(0, TOKEN_VALUES, size=count).astype(dtype)
    if dtype.kind == "f":
        return rng().standard_normal(count).astype(dtype)
    return np.zeros(count, dtype=dtype)


def _numpy(stand_ins: StandIns, patches: Patches) -> None:
    memmap, load, fromfile = np.memmap, np.load, np.fromfile

    class StoodInMemmap(memmap):   # isinstance checks and subclassing keep working on real memmaps
        def __new__(cls, filename, dtype=np.uint8, mode="r+", offset=0, shape=None, order="C"):
            if str(mode).startswith(("r", "c")) and stand_ins.answers(filename):
                count = int(np.prod(shape)) if shape is not None else TOKENS
                stand_ins.record("data", os.fspath(filename),
                                 f"{count} synthetic {np.dtype(dtype).name} values below {TOKEN_VALUES} (np.memmap)")
                data = tokens(dtype, count)
                return data.reshape(shape) if shape is not None else data
            return memmap.__new__(memmap, filename, dtype, mode, offset, shape, order)

    def load_(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and stand_ins.answers(file):
            stand_ins.record("data", os.fspath(file), f"{TOKENS} synthetic int64 token ids below {TOKEN_VALUES} "
                             "(np.load: a token array assumed, its shape is not written here)")
            data = tokens(np.int64)
            return {"arr_0": data} if os.fspath(file).endswith(".npz") else data
        return load(file, *args, **kwargs)

    def fromfile_(file, dtype=float, count=-1, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and stand_ins.answers(file):
            size = count if count and count > 0 else TOKENS
            stand_ins.record("data", os.fspath(file),
                             f"{size} synthetic {np.dtype(dtype).name} values below {TOKEN_VALUES} (np.fromfile)")
            return tokens(dtype, size)
        return fromfile(file, dtype, count, *args, **kwargs)

    patches.set(np, "memmap", StoodInMemmap)
    patches.set(np, "load", load_)
    patches.set(np, "fromfile", fromfile_)


# --- Hugging Face datasets ---------------------------------------------------------------------

PACKAGED = {"csv", "json", "text", "parquet", "arrow", "imagefolder", "audiofolder", "webdataset", "pandas"}
# hub dataset (its name's last part, lower case) -> columns: name -> (kind, classes)
HF_KNOWN: dict[str, dict[str, tuple[str, int]]] = {
    "mnist": {"image": ("image-l-28", 0), "label": ("label", 10)},
    "fashion_mnist": {"image": ("image-l-28", 0), "label": ("label", 10)},
    "cifar10": {"img": ("image-rgb-32", 0), "label": ("label", 10)},
    "cifar100": {"img": ("image-rgb-32", 0), "fine_label": ("label", 100), "coarse_label": ("label", 20)},
    "imdb": {"text": ("text", 0), "label": ("label", 2)},
    "rotten_tomatoes": {"text": ("text", 0), "label": ("label", 2)},
    "ag_news": {"text": ("text", 0), "label": ("label", 4)},
    "yelp_review_full": {"text": ("text", 0), "label": ("label", 5)},
    "emotion": {"text": ("text", 0), "label": ("label", 6)},
    "sst2": {"sentence": ("text", 0), "label": ("label", 2), "idx": ("index", 0)},
    "cola": {"sentence": ("text", 0), "label": ("label", 2), "idx": ("index", 0)},
    "mrpc": {"sentence1": ("text", 0), "sentence2": ("text", 0), "label": ("label", 2), "idx": ("index", 0)},
    "rte": {"sentence1": ("text", 0), "sentence2": ("text", 0), "label": ("label", 2), "idx": ("index", 0)},
    "qnli": {"question": ("text", 0), "sentence": ("text", 0), "label": ("label", 2), "idx": ("index", 0)},
    "mnli": {"premise": ("text", 0), "hypothesis": ("text", 0), "label": ("label", 3), "idx": ("index", 0)},
    "qqp": {"question1": ("text", 0), "question2": ("text", 0), "label": ("label", 2), "idx": ("index", 0)},
}
TEXT_ONLY = ("wikitext", "tiny_shakespeare", "tinyshakespeare", "openwebtext", "bookcorpus", "tinystories", "c4",
             "fineweb", "fineweb-edu", "the_pile", "pile", "oscar", "wikipedia", "lm1b", "ptb_text_only")
WORDS = ("the model reads a short synthetic sentence of common words so that tokenizers see text of a "
         "usual length and the batches have the shapes a real run gives them").split()


def _hf_datasets(module, stand_ins: StandIns, patches: Patches) -> None:
    original = module.load_dataset

    def load_dataset(path=None, name=None, *args, **kwargs):
        files = [kwargs.get("data_dir"), *_files(kwargs.get("data_files"))]
        local = path is not None and not stand_ins.answers(path) and os.path.exists(path)
        packaged = str(path) in PACKAGED
        if local or (packaged and files and not any(stand_ins.answers(f) for f in files if f)):
            return original(path, name, *args, **kwargs)
        columns, how = _hf_columns(str(path), name)
        split = kwargs.get("split")
        made = _hf_dataset(module, columns, split, bool(kwargs.get("streaming")))
        splits = "" if split else " (train, validation, test)"
        label = f"load_dataset({path!r}" + (f", {name!r}" if name else "") + ")"
        stand_ins.record("data", label, f"{HF_ROWS} synthetic rows per split{splits}, columns "
                         f"{', '.join(columns)} ({how})")
        return made

    patches.set(module, "load_dataset", load_dataset)


def _files(data_files) -> list[str]:
    if data_files is None:
        return []
    if isinstance(data_files, (str, os.PathLike)):
        return [os.fspath(data_files)]
    if isinstance(data_files, dict):
        return [f for value in data_files.values() for f in _files(value)]
    return [os.fspath(f) for f in data_files]


def _hf_columns(path: str, name: str | None) -> tuple[dict[str, tuple[str, int]], str]:
    key = path.rstrip("/").rsplit("/", 1)[-1].lower()
    for candidate in (name or "", key):
        if candidate.lower() in HF_KNOWN:
            return HF_KNOWN[candidate.lower()], f"the columns of {candidate}"
    if key in TEXT_ONLY or key.startswith(("wikitext", "tinystories", "fineweb")):
        return {"text": ("text", 0)}, f"the text column of {key}"
    if key == "imagefolder":
        return {"image": ("image-rgb-256", 0), "label": ("label", FOLDER_CLASSES)}, "an image folder's columns"
    if key == "text":
        return {"text": ("text", 0)}, "the text builder's column"
    return {"text": ("text", 0), "label": ("label", 2)}, "columns not known here: text and label assumed"


def _hf_dataset(module, columns: dict[str, tuple[str, int]], split, streaming: bool):
    draw = rng()
    data: dict[str, list] = {}
    for column, (kind, classes) in columns.items():
        if kind == "text":
            data[column] = [" ".join(draw.choice(WORDS, size=int(draw.integers(8, 48)))) for _ in range(HF_ROWS)]
        elif kind == "label":
            data[column] = [int(v) for v in draw.integers(0, classes, size=HF_ROWS)]
        elif kind == "index":
            data[column] = list(range(HF_ROWS))
        else:
            from PIL import Image

            mode, side = kind.split("-")[1], int(kind.split("-")[2])
            channels = (side, side) if mode == "l" else (side, side, 3)
            data[column] = [Image.fromarray(draw.integers(0, 256, size=channels, dtype=np.uint8),
                                            mode="L" if mode == "l" else "RGB") for _ in range(HF_ROWS)]
    features = None
    labels = {c: n for c, (k, n) in columns.items() if k == "label"}
    if labels:
        features = module.Features({c: (module.ClassLabel(num_classes=labels[c]) if c in labels else
                                        module.Value("string") if columns[c][0] == "text" else
                                        module.Value("int64") if columns[c][0] == "index" else module.Image())
                                    for c in columns})
    def one():
        made = module.Dataset.from_dict(data, features=features)
        return made.to_iterable_dataset() if streaming else made
    if split:
        return one()
    kind = module.IterableDatasetDict if streaming else module.DatasetDict
    return kind({"train": one(), "validation": one(), "test": one()})
