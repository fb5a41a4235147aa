"""Reads a loss log (JSON {step: loss}, JSON lines or CSV, detected) into {step: loss}.

Accepted shapes (see docs/workflow.md):

- JSON object ``{"0": 2.31, "10": 1.98}``: keys are integer steps, values the losses;
- JSON array of records ``[{"step": 0, "loss": 2.31}, ...]``;
- JSON lines, one record per line ``{"step": 0, "loss": 2.31}`` (other keys are ignored);
- CSV with a header naming ``step`` and ``loss`` columns (any order, other columns ignored),
  or two headerless columns ``step,loss``.

Losses may be NaN or +/-inf (JSON ``NaN``/``Infinity`` literals, or the strings ``"nan"``,
``"inf"``, ``"-inf"``); anything else that is not a number is an error naming the file and line.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path

from opscan.errors import InputError

_NONFINITE = {"nan": math.nan, "+nan": math.nan, "-nan": math.nan, "inf": math.inf,
              "+inf": math.inf, "infinity": math.inf, "+infinity": math.inf,
              "-inf": -math.inf, "-infinity": -math.inf}


@dataclass(frozen=True)
class LossLog:
    """The losses of one run, by step (steps ascending)."""

    path: str
    format: str                          # "json-object" | "json-array" | "json-lines" | "csv"
    losses: tuple[tuple[int, float], ...]

    def as_dict(self) -> dict[int, float]:
        return dict(self.losses)


def read_loss_log(path: str | Path) -> LossLog:
    """Read the loss log at `path`, detecting its format. Raises InputError naming file and line."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("loss log not found", name) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a loss log file", name) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read loss log: {exc}", name) from None
    return parse_loss_log(text, name)


def parse_loss_log(text: str, name: str = "<loss log>") -> LossLog:
    """Parse loss-log text (see the module docstring for the accepted formats)."""
    stripped = text.strip()
    if not stripped:
        raise InputError("loss log is empty", name)
    if stripped[0] in "{[":
        try:
            doc = json.loads(stripped, object_pairs_hook=_pairs)
        except json.JSONDecodeError as exc:
            first_line = stripped.splitlines()[0].strip()
            if stripped[0] == "{" and first_line.endswith("}") and "\n" in stripped:
                return _json_lines(text, name)
            line = exc.lineno + _leading_lines(text)
            raise InputError(f"not valid JSON: {exc.msg} (column {exc.colno})", name, line) from None
        if isinstance(doc, _Obj):
            if _looks_like_record(doc) and not _has_step_keys(doc):
                return _json_lines(text, name)
            return _json_object(doc, name)
        if isinstance(doc, list):
            return _json_array(doc, name)
        raise InputError("JSON loss log must be an object {step: loss} or a list of records", name)
    return _csv(text, name)


class _Obj(dict):
    """A JSON object that remembers duplicate keys (json silently keeps the last one)."""

    duplicates: tuple[str, ...] = ()


def _pairs(pairs: list[tuple[str, object]]) -> _Obj:
    obj = _Obj()
    dups = []
    for key, value in pairs:
        if key in obj:
            dups.append(key)
        obj[key] = value
    obj.duplicates = tuple(dups)
    return obj


def _leading_lines(text: str) -> int:
    """Blank lines before the first non-blank character (json counts from the stripped text)."""
    head = text[: len(text) - len(text.lstrip())]
    return head.count("\n")


def _looks_like_record(obj: dict) -> bool:
    return "step" in obj and "loss" in obj


def _has_step_keys(obj: dict) -> bool:
    return any(_int_or_none(k) is not None for k in obj)


def _int_or_none(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                return None
            return int(number) if number.is_integer() else None
    return None


def _step(value: object, name: str, line: int | None, where: str = "") -> int:
    step = _int_or_none(value)
    if step is None:
        raise InputError(f"step {value!r}{where} is not an integer", name, line)
    if step < 0:
        raise InputError(f"step {step}{where} is negative", name, line)
    return step


def _loss(value: object, name: str, line: int | None, step: int) -> float:
    if isinstance(value, bool) or value is None:
        raise InputError(f"loss at step {step} is {json.dumps(value)}, expected a number", name, line)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _NONFINITE:
            return _NONFINITE[text]
        try:
            return float(text)
        except ValueError:
            pass
    raise InputError(f"loss at step {step} is {value!r}, expected a number", name, line)


def _finish(found: dict[int, float], name: str, fmt: str) -> LossLog:
    if not found:
        raise InputError("loss log has no steps", name)
    return LossLog(path=name, format=fmt, losses=tuple(sorted(found.items())))


def _add(found: dict[int, float], step: int, loss: float, name: str, line: int | None) -> None:
    if step in found:
        raise InputError(f"step {step} appears twice", name, line)
    found[step] = loss


def _json_object(doc: _Obj, name: str) -> LossLog:
    if doc.duplicates:
        raise InputError(f"step {doc.duplicates[0]!r} appears twice", name)
    found: dict[int, float] = {}
    for key, value in doc.items():
        step = _step(key, name, None, " (a key of the JSON object)")
        _add(found, step, _loss(value, name, None, step), name, None)
    return _finish(found, name, "json-object")


def _json_array(doc: list, name: str) -> LossLog:
    found: dict[int, float] = {}
    for index, item in enumerate(doc):
        if not isinstance(item, dict) or not _looks_like_record(item):
            raise InputError(f"item {index} of the JSON array is not a {{\"step\", \"loss\"}} record", name)
        step = _step(item["step"], name, None, f" (item {index})")
        _add(found, step, _loss(item["loss"], name, None, step), name, None)
    return _finish(found, name, "json-array")


def _json_lines(text: str, name: str) -> LossLog:
    found: dict[int, float] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not a JSON record: {exc.msg}", name, number) from None
        if not isinstance(record, dict) or not _looks_like_record(record):
            raise InputError('JSON lines record needs "step" and "loss" keys', name, number)
        step = _step(record["step"], name, number)
        _add(found, step, _loss(record["loss"], name, number, step), name, number)
    return _finish(found, name, "json-lines")


def _csv(text: str, name: str) -> LossLog:
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t")
        delimiter = dialect.delimiter
    except csv.Error:
        delimiter = ","
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    numbered = [(i, row) for i, row in enumerate(rows, start=1) if any(c.strip() for c in row)]
    if not numbered:
        raise InputError("loss log is empty", name)
    first_no, first = numbered[0]
    header = [c.strip().lower() for c in first]
    if "step" in header and "loss" in header:
        step_col, loss_col = header.index("step"), header.index("loss")
        body = numbered[1:]
    elif len(first) >= 2 and _int_or_none(first[0]) is not None:
        step_col, loss_col = 0, 1
        body = numbered
    else:
        raise InputError(
            "not a loss log: expected JSON {step: loss}, JSON lines with \"step\"/\"loss\", "
            "or CSV with a step,loss header", name, first_no)
    found: dict[int, float] = {}
    width = max(step_col, loss_col) + 1
    for number, row in body:
        if len(row) < width:
            raise InputError(f"CSV row has {len(row)} column(s), expected at least {width}", name, number)
        step = _step(row[step_col], name, number)
        _add(found, step, _loss(row[loss_col], name, number, step), name, number)
    return _finish(found, name, "csv")
