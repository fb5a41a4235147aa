"""Files a run stands in for (NOTE [stand-ins for data and weights] in stand_ins.py) that no dataset
class wraps: `h5py.File` of an absent file, an absent vocabulary file opened with `open()`, and a
relative path absent from the working directory that the script's own folder holds.

NOTE [files opened by the script]
Research code reads its preprocessed data itself: `h5py.File(path, 'r')[key][:]`, `json.load(open(
'vocab.json'))`, `open('data/ind.cora.x', 'rb')`. What each holds is not written anywhere opscan may
read, so each answer states its assumption:
- an absent HDF5 file opens as a file whose every dataset is a 1-D array of synthetic int64 token ids
  below data_stand_ins.TOKEN_VALUES (the common layout of a language model's preprocessed corpus);
  `[:]`, `[i]`, `[a:b]`, `len()`, `.shape`, `.dtype` answer as h5py's do;
- an absent file whose name says it is a vocabulary (`vocab*`, `word2idx*`, `*dict*`, `tokens*`;
  `.json`, `.txt`, `.pkl`/`.pickle`) opens as a vocabulary of TOKEN_VALUES entries: a JSON object or
  pickled dict word -> index (special tokens first), or one word a line; its indices are those the
  token stand-ins draw, so a vocabulary's size and a corpus's token ids agree;
- a relative path absent from the working directory but present under the running script's folder
  is read from there, as the script run from its own folder reads it (a README command written
  from the repository root for a script that reads paths relative to itself);
- any other absent `.txt` file opened in text mode reads as a plain-text corpus (a character- or
  word-level language model's `input.txt`, `tiny_shakespeare.txt`): TEXT_CHARS characters of common
  English words, ten a line, drawn with the stand-ins' own generator (an assumption stated in the
  report: a file of another layout, `user item` pairs, fails at the line that parses it);
- an absent JSON, JSON-lines, pickle or text-table file whose use the code around its `open()`
  shows answers with data of that shape (table_stand_ins.py: NOTE [data shaped by its use]);
any other absent file fails as it would, and the run's stop names it.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import pickle
import sys
from collections.abc import Callable

import numpy as np

from opscan.trace.run.data_stand_ins import TOKEN_VALUES, TOKENS, VOCABULARY, tokens, vocabulary
from opscan.trace.run.table_stand_ins import h5_dimensions, opened
from opscan.trace.run.stand_ins import Patches, StandIns

TEXT_CHARS = 1 << 18   # characters of an absent plain-text corpus stood in for (a few hundred batches)
TEXT_WORDS = ("the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be", "by",
              "on", "not", "he", "she", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an",
              "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there", "been",
              "king", "lord", "love", "time", "day", "night", "world", "man", "good", "now", "well", "come")
VOCABULARY_SUFFIXES = (".json", ".txt", ".pkl", ".pickle", ".vocab")


def install(stand_ins: StandIns, patches: Patches) -> dict[str, Callable]:
    """`open` patched now; h5py when the script imports it."""
    _open(stand_ins, patches)
    return {"h5py": lambda module: _h5py(module, stand_ins, patches)}


def is_vocabulary(path: str) -> bool:
    name = os.path.basename(path)
    return name.lower().endswith(VOCABULARY_SUFFIXES) and bool(VOCABULARY.search(name))


# --- open() ------------------------------------------------------------------------------------

def _open(stand_ins: StandIns, patches: Patches) -> None:
    original = builtins.open

    def open_(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and not any(c in str(mode) for c in "wax+"):
            path = os.fspath(file)
            if isinstance(path, str) and path and stand_ins.answers(path):
                local = _beside_script(path, stand_ins)
                if local:
                    shown = os.path.relpath(local, stand_ins.root) if stand_ins.root else local
                    stand_ins.record("data", path, f"read from {shown} (absent from the working directory; "
                                     "the script's own folder holds it)")
                    return original(local, mode, *args, **kwargs)
                if stand_ins.asked_by_library(sys._getframe(1)):
                    return original(file, mode, *args, **kwargs)   # NOTE [a library's own files]
                if "://" not in path and is_vocabulary(path):
                    stand_ins.record("data", path, f"a synthetic vocabulary of {TOKEN_VALUES} entries (special "
                                     "tokens first; a vocabulary assumed from the file's name)")
                    return _vocabulary_file(path, "b" in str(mode))
                if "://" not in path:   # JSON, JSON lines, pickles, tables: NOTE [data shaped by its use]
                    shaped = opened(path, str(mode), sys._getframe(1), stand_ins)
                    if shaped is not None:
                        return shaped
                if "://" not in path and path.lower().endswith(".txt") and "b" not in str(mode):
                    stand_ins.record("data", path, f"a synthetic plain text of {TEXT_CHARS} characters (English "
                                     "words, lines of ten; a text corpus assumed from the .txt suffix)")
                    return io.StringIO(synthetic_text())
        return original(file, mode, *args, **kwargs)

    patches.set(builtins, "open", open_)


def synthetic_text(chars: int = 0) -> str:
    """TEXT_CHARS characters of English words drawn with the stand-ins' own generator, ten a line."""
    from opscan.trace.run.data_stand_ins import rng

    picks = rng().integers(0, len(TEXT_WORDS), size=(chars or TEXT_CHARS) // 4)
    words = [TEXT_WORDS[i] for i in picks]
    text = "\n".join(" ".join(words[i:i + 10]) for i in range(0, len(words), 10)) + "\n"
    return text[:chars or TEXT_CHARS]


def _beside_script(path: str, stand_ins: StandIns) -> str:
    """`path` under the script's folder when it is relative, absent here and present there."""
    folder = stand_ins.script_dir
    if not folder or os.path.isabs(path) or os.path.exists(path):
        return ""
    candidate = os.path.join(folder, path)
    if os.path.realpath(folder) == os.path.realpath(os.getcwd()) or stand_ins.answers(candidate):
        return ""
    return candidate


def _vocabulary_file(path: str, binary: bool):
    words = vocabulary()
    if path.lower().endswith((".pkl", ".pickle")):
        return io.BytesIO(pickle.dumps(words))
    text = json.dumps(words) if path.lower().endswith(".json") else "".join(f"{w}\n" for w in words)
    return io.BytesIO(text.encode("utf-8")) if binary else io.StringIO(text)


# --- h5py --------------------------------------------------------------------------------------

class StoodInDataset:
    """An HDF5 dataset of synthetic token ids, read as h5py reads one (NOTE [files opened by the script])."""

    def __init__(self, name: str, ndim: int = 1) -> None:
        from opscan.trace.run.media_stand_ins import IMAGE_SIDE

        self.name = name
        # a map indexed in 2 or more dimensions (`target[y0:y1, x0:x1]`): float32, the image stand-in's size
        self._data = tokens(np.int64) if ndim < 2 else \
            np.random.default_rng(0).random((IMAGE_SIDE, IMAGE_SIDE, 3)[:ndim], dtype=np.float32)
        self.attrs: dict = {}

    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    size = property(lambda self: self._data.size)
    ndim = property(lambda self: self._data.ndim)

    def __getitem__(self, index):
        return self._data[()] if index == () or index is Ellipsis else self._data[index]

    def __len__(self) -> int:
        return len(self._data)

    def __array__(self, dtype=None, copy=None):
        return self._data if dtype is None else self._data.astype(dtype)

    def __iter__(self):
        return iter(self._data)

    def read_direct(self, dest, source_sel=None, dest_sel=None) -> None:
        dest[dest_sel if dest_sel is not None else ()] = self._data[source_sel if source_sel is not None else ()]


class StoodInFile:
    """An absent HDF5 file opened for reading: every key is a StoodInDataset."""

    def __init__(self, path: str, dims: dict[str, int] | None = None) -> None:
        self.filename = path
        self.mode = "r"
        self.attrs: dict = {}
        self._datasets: dict[str, StoodInDataset] = {}
        self._dims = dims or {}   # key -> dimensions its use indexes (table_stand_ins.h5_dimensions)

    def __getitem__(self, key) -> StoodInDataset:
        key = str(key)
        if key not in self._datasets:
            self._datasets[key] = StoodInDataset(key, self._dims.get(key, 1))
        return self._datasets[key]

    def get(self, key, default=None):
        return self[key]

    def __contains__(self, key) -> bool:
        return True

    def keys(self):
        return list(self._datasets)

    def __iter__(self):
        return iter(list(self._datasets))

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def _h5py(module, stand_ins: StandIns, patches: Patches) -> None:
    original = module.File

    class File(original):   # isinstance checks keep working on real files
        def __new__(cls, name, mode="r", *args, **kwargs):
            if isinstance(name, (str, os.PathLike)) and mode in (None, "r") and stand_ins.answers(name):
                dims = h5_dimensions(sys._getframe(1), stand_ins.root)
                maps = ", ".join(f"{key!r} a {n}-D float32 map" for key, n in dims.items() if n >= 2)
                stand_ins.record("data", f"h5py.File({os.fspath(name)!r})", (f"{maps} (indexed so where it is read); "
                                 if maps else "") + f"each {'other ' if maps else ''}dataset read as {TOKENS} "
                                 f"synthetic int64 token ids below {TOKEN_VALUES} (a 1-D token array assumed: "
                                 "the file's layout is not written here)")
                return StoodInFile(os.fspath(name), dims)
            return super().__new__(cls)

    patches.set(module, "File", File)
