"""Absent data files answered with data shaped by their use (NOTE [stand-ins for data and weights] in
stand_ins.py): JSON, JSON lines, pickles, text tables read line by line, `np.loadtxt` /
`np.genfromtxt` and `pd.read_csv` of a file that is not here.

NOTE [data shaped by its use]
Research code reads its preprocessed data itself (`json.load(open('data/caption.json'))`,
`pickle.load(f)` of a list of SMILES strings, `for line in open(p): src, tgt = line.split('\\t')`,
`np.loadtxt('readings.txt')`), and what the file holds is written nowhere but in the code that reads
it. So the code is read (data_shapes.py: the project's own source, with `ast`, never run) from the
load site through the function around it and, for `self.x`, the class: string subscripts make a dict
with those keys (`item['caption']`), keys formatted from an int (`'video%i' % ix`) a dict of RECORDS
such keys, iteration, integer indices and `len` a list of RECORDS records (nested lists hold INNER),
`line.split(sep)` unpacked into k names (or indexed up to k-1) a line of k columns (a list reached
through keys alone holds RECORDS: `data['annotations']`), `int(x)` /
`float(x)` / a numeric comparison numbers, a value joined into a path (`os.path.join(root,
item['file'])`) a file name the image stand-ins answer, a name that says vocabulary (`word_to_ix`)
the stood-in vocabulary, a value handed to a tensor constructor numbers (NOTE [numbers handed to a
tensor] in data_shapes.py), and anything else a short text of the stood-in vocabulary's words. The
answer is serialised in the format its reader takes (JSON text, JSON lines, a pickle, a delimited
text table) and the report states the assumption with the lines it was read from
("data/caption.json: assumed {'video%d' % i: {'final_captions': [[str, ...], ...]}} (json.load),
read from dataloader.py:26, 63"). Where no use is readable (the value is handed to a function of a
library, or the file is read whole with `read()`), nothing is made up: an absent `.txt` read whole
stays the plain-text stand-in of file_stand_ins.py, anything else fails at its own line and the stop
names the file. A file of another layout than the one assumed fails where the code parses it (its
line in the stop reason). Real files, inside the project, are always read as they are.
"""

from __future__ import annotations

import ast
import io
import json
import os
import pickle
import sys
from collections.abc import Callable

import numpy as np

from opscan.trace.run import data_shapes
from opscan.trace.run.data_shapes import Reader, Shape
from opscan.trace.run.data_stand_ins import SPECIALS, TOKEN_VALUES, vocabulary
from opscan.trace.run.stand_ins import SAMPLES, Patches, StandIns

RECORDS = 256    # records of a list (or keys of a formatted-key dict) stood in for
INNER = 4        # elements of a list inside a record (captions of a video, tokens of a field)
COLUMNS = 8      # columns of a table whose width its use does not say (an assumption, stated)
_JSON = ("json", "ujson", "orjson", "simplejson")
_PICKLE = ("pickle", "pkl", "cPickle", "pk", "cpickle", "dill", "joblib")


def install(stand_ins: StandIns, patches: Patches) -> dict[str, Callable]:
    """numpy's text readers patched now; pandas' when the script imports it (open(): file_stand_ins.py)."""
    _numpy(stand_ins, patches)
    return {"pandas": lambda module: _pandas(module, stand_ins, patches),
            "gzip": lambda module: _compressed(module, stand_ins, patches),
            "bz2": lambda module: _compressed(module, stand_ins, patches)}


def _compressed(module, stand_ins: StandIns, patches: Patches) -> None:
    """`gzip.open` / `bz2.open` of an absent file: answered as `open()` of it (the file's content,
    uncompressed, shaped by its use)."""
    original = module.open

    def open_(filename, mode="rb", *args, **kwargs):
        frame = sys._getframe(1)
        if isinstance(filename, (str, os.PathLike)) and not any(c in str(mode) for c in "wax+") \
                and stand_ins.answers(filename) and not stand_ins.asked_by_library(frame):
            shaped = opened(os.fspath(filename), str(mode).replace("t", "") if "t" in str(mode) else "rb",
                            frame, stand_ins)
            if shaped is not None:
                return shaped
        return original(filename, mode, *args, **kwargs)

    patches.set(module, "open", open_)


def opened(path: str, mode: str, frame, stand_ins: StandIns):
    """A file object for the absent `path` the project's code at `frame` opens, shaped by how that code
    uses it (NOTE [data shaped by its use]); None when its use is not readable."""
    where = (frame.f_code.co_filename, frame.f_lineno)
    stack = callers(frame, stand_ins.root)
    found = data_shapes.call_at(*where, ("open",), stand_ins.root, stack) or \
        data_shapes.call_at(*where, ("<with>",), stand_ins.root, stack)   # `with opener(path) as f`
    if found is None:
        return None
    call, reader = found
    form, shape = _file_use(call, reader, 0)
    if shape.kind == "sized":   # the loaded value itself only sized: records
        shape.kind = "list"
    binary = "b" in mode
    if not form or not shape.known() or (form == "pickle" and not binary):   # text and JSON: bytes too
        return None
    if form == "lines":
        if shape.item is None or shape.item.kind in ("", "str"):
            return None   # lines read as plain text: file_stand_ins.py's text stand-in, when a .txt
        text = "".join(_line(shape.item, i) + "\n" for i in range(RECORDS))
    elif form == "json":
        text = json.dumps(make(shape))
    else:
        data = pickle.dumps(make(shape))
        _record(stand_ins, path, form, shape, reader)
        return io.BytesIO(data)
    _record(stand_ins, path, form, shape, reader)
    return io.BytesIO(text.encode("utf-8")) if binary else io.StringIO(text)


def callers(frame, root: str, most: int = 24) -> tuple[tuple[str, int], ...]:
    """(file, line) of the project's frames that called `frame`'s function, innermost first: a
    loading helper's value is shaped by the caller this run came from."""
    found: list[tuple[str, int]] = []
    current = getattr(frame, "f_back", None)
    while current is not None and len(found) < most:
        name = current.f_code.co_filename
        if root and os.path.abspath(name).startswith(root + os.sep):
            found.append((name, current.f_lineno))
        current = current.f_back
    return tuple(found)


def _record(stand_ins: StandIns, path: str, form: str, shape: Shape, reader: Reader) -> None:
    how = {"json": "json.load", "pickle": "pickle.load", "lines": "read line by line"}[form]
    described = (f"{RECORDS} lines of {shape.item.describe()}" if form == "lines" and shape.item is not None
                 else _counted(shape))
    stand_ins.record("data", path, f"assumed {described} ({how}), read from {_lines(reader, shape)}")


def _counted(shape: Shape) -> str:
    if shape.kind == "list" and shape.item is not None:
        return f"a list of {RECORDS} {shape.item.describe()} records"
    return shape.describe()


def _lines(reader: Reader, shape: Shape) -> str:
    """"loader.py:4, 9; train.py:41": the lines the shape was read from, by file."""
    seen: set[tuple[str, int]] = set()

    def walk(s: Shape | None) -> None:
        if s is None:
            return
        seen.update(s.lines)
        for sub in (*s.keys.values(), *s.templates.values(), *s.columns, s.item):
            walk(sub)
    walk(shape)
    files: dict[str, list[int]] = {}
    for name, line in sorted(seen):
        if line:
            files.setdefault(name, []).append(line)
    return "; ".join(f"{name}:" + ", ".join(map(str, lines)) for name, lines in files.items()) or reader.filename


# --- the file object's use -----------------------------------------------------------------------

def _file_use(node: ast.AST, reader: Reader, depth: int) -> tuple[str, Shape]:
    """How the file object `node` is read: ("json" | "pickle" | "lines", the shape of what is read)."""
    parent = reader.parent(node)
    if parent is None or depth > 4:
        return "", Shape()
    if isinstance(parent, ast.Call) and node in parent.args:
        func = parent.func
        owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
        name = data_shapes.called(parent)
        if name == "load" and owner in _JSON:
            return "json", reader.used(parent)
        if name == "load" and owner in _PICKLE:
            return "pickle", reader.used(parent)
        if name == "reader" and owner == "csv":
            rows = reader.used(parent)
            if rows.item is not None:
                rows.item = Shape("row", sep=",", columns=rows.item.columns, lines=rows.item.lines)
            return "lines", rows
        if name in ("enumerate", "tqdm", "iter", "list"):
            return "lines", reader.used(node)
        return "", Shape()
    if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node:
        return "lines", reader.used(node)
    if isinstance(parent, ast.Attribute) and parent.value is node and parent.attr == "readlines":
        call = reader.parent(parent)
        return ("lines", reader.used(call)) if call is not None else ("", Shape())
    target = None
    if isinstance(parent, ast.withitem):
        target, body = parent.optional_vars, reader.parent(parent)
    elif isinstance(parent, ast.Assign) and len(parent.targets) == 1:
        target, body = parent.targets[0], reader.scope(parent)
    if isinstance(target, ast.Name) and body is not None:
        # the uses after this assignment, in order: `f = open(a); x = pickle.load(f); f = open(b)` reads each
        after = (getattr(parent, "end_lineno", 0) or 0, getattr(parent, "end_col_offset", 0) or 0)
        uses = sorted((use for use in ast.walk(body) if isinstance(use, ast.Name) and use.id == target.id
                       and isinstance(use.ctx, ast.Load) and (use.lineno, use.col_offset) >= after),
                      key=lambda use: (use.lineno, use.col_offset))
        for use in uses:
            form, shape = _file_use(use, reader, depth + 1)
            if form:
                return form, shape
    return "", Shape()


# --- synthetic values --------------------------------------------------------------------------

def make(shape: Shape, index: int = 0, count: int = RECORDS):
    """A value of `shape` (the index-th of its kind: values differ between records)."""
    kind = shape.kind
    if kind == "dict":
        if shape.vocabulary and not shape.keys:
            return vocabulary()
        made = {key: make(sub, index, count) for key, sub in shape.keys.items()}   # {'annotations': [RECORDS]}
        for template, sub in shape.templates.items():
            made.update({template % i: make(sub, i, INNER) for i in range(count)})
        return made
    if kind == "list":
        if shape.item is None and shape.columns:
            return [make(column, index, INNER) for column in shape.columns]
        if shape.item is not None and shape.columns:   # items, at least as many as its slices reach
            count = max(count, len(shape.columns))
        return [make(shape.item or Shape(), i, INNER) for i in range(count)]
    if kind == "json":
        return make(shape.item or Shape("dict"), index)
    if kind == "row":
        return _line(shape, index)
    if shape.tensor in data_shapes.SEQUENCE_TENSORS and kind in ("int", "float"):   # NOTE [numbers handed to a tensor]
        return [_leaf(kind, index * INNER + i) for i in range(INNER)]
    return _leaf(kind, index)


def _leaf(kind: str, index: int, words: int = 4):
    if kind == "int":
        return index % TOKEN_VALUES
    if kind == "float":
        return round(float(np.random.default_rng(index).standard_normal()), 4)
    if kind == "path":
        return f"{index:06d}.jpg"
    if kind == "word":
        return f"word{SPECIALS and len(SPECIALS) + index % (TOKEN_VALUES - len(SPECIALS))}"
    first = len(SPECIALS)
    return " ".join(f"word{first + (index * 7 + j * 13) % (TOKEN_VALUES - first)}" for j in range(words))


def _line(shape: Shape, index: int) -> str:
    """One text line: a JSON record, a row of columns, or a short text."""
    if shape.kind == "json":
        return json.dumps(make(shape, index))
    if shape.kind != "row":
        return _leaf("str", index)
    sep = shape.sep if shape.sep is not None else " "
    cells = [_leaf(column.kind, index, words=1 if sep.isspace() or not sep else 4)
             for column in (shape.columns or [Shape("str")])]
    return sep.join(str(cell) for cell in cells)


def h5_dimensions(frame, root: str = "") -> dict[str, int]:
    """Key -> the dimensions the code indexes it in, for an h5py.File opened at `frame`."""
    shape, _ = _table_shape(frame, ("File",), root)
    if shape.kind != "dict":
        return {}
    return {key: _depth(sub) for key, sub in shape.keys.items()}


def _depth(shape: Shape) -> int:
    depth = 0
    while shape.kind == "list":
        depth, shape = depth + 1, shape.item or Shape()
    return depth


# --- numpy and pandas readers ------------------------------------------------------------------

def _table_shape(frame, names: tuple[str, ...], root: str = "") -> tuple[Shape, Reader | None]:
    found = data_shapes.call_at(frame.f_code.co_filename, frame.f_lineno, names, root,
                                callers(frame, root)) if frame is not None else None
    if found is None:
        return Shape(), None
    call, reader = found
    return reader.used(call), reader


def _numpy(stand_ins: StandIns, patches: Patches) -> None:
    for name in ("loadtxt", "genfromtxt"):
        patches.set(np, name, _numpy_reader(getattr(np, name), name, stand_ins))


def _numpy_reader(original: Callable, name: str, stand_ins: StandIns) -> Callable:
    def read(fname, *args, **kwargs):
        frame = sys._getframe(1)
        if not isinstance(fname, (str, os.PathLike)) or not stand_ins.answers(fname) \
                or stand_ins.asked_by_library(frame):
            return original(fname, *args, **kwargs)
        shape, reader = _table_shape(frame, (name,), stand_ins.root)
        dtype = np.dtype(kwargs.get("dtype") or float)
        usecols = kwargs.get("usecols")
        width = len(usecols) if isinstance(usecols, (list, tuple)) else \
            len(shape.item.columns) if shape.item is not None and shape.item.columns else 0
        data = np.random.default_rng(0).standard_normal((SAMPLES, width) if width else SAMPLES)
        data = np.abs(data * 8).astype(dtype) if dtype.kind in "iu" else data.astype(dtype)
        if kwargs.get("unpack") and width:
            data = data.T
        told = f"{width} columns, read from {_lines(reader, shape)}" if width and reader else \
            "one column: its width is not used where the code reads it"
        stand_ins.record("data", os.fspath(fname), f"{SAMPLES} synthetic rows of {dtype.name} values ({told}; "
                         f"np.{name})")
        return data
    return read


def _pandas(module, stand_ins: StandIns, patches: Patches) -> None:
    for name in ("read_csv", "read_table"):
        original = getattr(module, name, None)
        if original is not None:
            patches.set(module, name, _pandas_reader(module, original, name, stand_ins))


def _pandas_reader(module, original: Callable, name: str, stand_ins: StandIns) -> Callable:
    def read(filepath_or_buffer, *args, **kwargs):
        frame = sys._getframe(1)
        path = filepath_or_buffer
        if not isinstance(path, (str, os.PathLike)) or not stand_ins.answers(path) \
                or stand_ins.asked_by_library(frame):
            return original(filepath_or_buffer, *args, **kwargs)
        shape, reader = _table_shape(frame, (name,), stand_ins.root)
        names = kwargs.get("names") or kwargs.get("usecols")
        columns = list(names) if isinstance(names, (list, tuple)) else list(shape.keys) or \
            [f"c{i}" for i in range(COLUMNS)]
        rows = SAMPLES
        data = {}
        for i, column in enumerate(columns):
            kind = shape.keys[column].kind if column in shape.keys else "float"
            data[column] = [_leaf(kind, r) for r in range(rows)] if kind in ("str", "path") else \
                np.random.default_rng(i).standard_normal(rows).astype(np.float32 if kind == "float" else np.float64)
            if kind == "int":
                data[column] = np.arange(rows) % 64
        made = module.DataFrame(data)
        where = f", read from {_lines(reader, shape)}" if reader is not None and shape.keys else \
            f" ({COLUMNS} float columns assumed: no column is named where the code reads it)" if not names else ""
        stand_ins.record("data", os.fspath(path), f"{rows} synthetic rows, columns {', '.join(map(str, columns))}"
                         f"{where} (pd.{name})")
        return made
    return read
