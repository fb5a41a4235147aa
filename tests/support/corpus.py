"""The hostile-input corpus of the reliability tests: every odd file a real repository may hold.

Each bad file (CORPUS: bytes, what opscan must do with it) sits next to `good_*.py` files (GOOD)
whose findings are known. Nothing large is committed: the 10 MB file is generated (big_file).
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

# A line that the scanner must report as a hard-coded device (category device-string).
CUDA_LINE = 'x = x.to("cuda")\n'

# file name -> (bytes, what opscan must do with it). "input": a finding of category "input" on
# that file, at `line` when given. "findings": the device-string lines it must report.
def _notebook(cells: list[tuple[str, str]]) -> bytes:
    return json.dumps({
        "cells": [{"cell_type": kind, "metadata": {}, "source": src.splitlines(keepends=True),
                   **({"outputs": [], "execution_count": None} if kind == "code" else {})}
                  for kind, src in cells],
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5,
    }, indent=1).encode()


BIG_LINES = 200_000  # ~10.5 MB below


def big_file() -> bytes:
    """A ~10 MB generated Python module (a constants table) with one device line at its end."""
    row = "    0.123456789012345678901234567890, 0.98765432109876543210987654321,\n"
    body = "TABLE = [\n" + row * (BIG_LINES // 1) + "]\n"
    return (body + CUDA_LINE).encode()


CORPUS: dict[str, tuple[bytes, dict]] = {
    # syntax errors
    "py2_print.py": (b'import torch\nprint "hello"\nx = x.to("cuda")\n', {"input": True, "line": 2}),
    "half_written.py": (b'import torch\ndef train(model:\n    model.to("cuda")\n    for x in\n',
                        {"input": True}),
    # a file spelling no rule token is not parsed (NOTE [pre-check] in scan/file_scan.py): the broken
    # files below carry the CUDA line, so their syntax error is what the scan meets
    "bad_indent.py": (b"def f():\n  x = 1\n    y = 2\n" + CUDA_LINE.encode(), {"input": True, "line": 3}),
    # encodings
    "invalid_utf8.py": (b'import torch\ns = "caf\xe9"\n' + CUDA_LINE.encode(), {"input": True, "line": 2}),
    "latin1_declared.py": ('# -*- coding: latin-1 -*-\ns = "café"\n'.encode("latin-1") + CUDA_LINE.encode(),
                           {"findings": [3]}),
    "cp1252_declared.py": ('# vim: set fileencoding=cp1252 :\ns = "\u20ac"\n'.encode("cp1252") + CUDA_LINE.encode(),
                           {"findings": [3]}),
    "wrong_declared.py": ('# coding: ascii\ns = "café"\n'.encode("utf-8") + CUDA_LINE.encode(),
                          {"input": True, "line": 2}),
    "unknown_codec.py": (b"# -*- coding: klingon -*-\n" + CUDA_LINE.encode(), {"input": True, "line": 1}),
    "utf16_no_decl.py": ("x = 1\n".encode("utf-16"), {"input": True}),
    "bom.py": (b"\xef\xbb\xbf" + CUDA_LINE.encode() + CUDA_LINE.encode(), {"findings": [1, 2], "column": 10}),
    "bom_conflict.py": (b"\xef\xbb\xbf# coding: latin-1\n" + CUDA_LINE.encode(), {"input": True, "line": 1}),
    # line endings
    "crlf.py": (b"import torch\r\n\r\n" + CUDA_LINE.encode().replace(b"\n", b"\r\n"), {"findings": [3]}),
    "mixed_eol.py": (b"import torch\r\nx = 1\n\r\ny = 2\r\n" + CUDA_LINE.encode(), {"findings": [5]}),
    "cr_only.py": (b"import torch\rx = 1\r" + CUDA_LINE.encode().replace(b"\n", b"\r"), {"findings": [3]}),
    "no_final_newline.py": (b"import torch\n" + CUDA_LINE.encode().rstrip(b"\n"), {"findings": [2]}),
    # NUL bytes and binary files
    "nul_byte.py": (b"x = 1\n" + CUDA_LINE.encode() + b"y = '\x00'\n", {"input": True, "line": 3}),
    "binary.py": (bytes(range(256)) * 16, {"input": True}),
    "elf.py": (b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 56 + os.urandom(512), {"input": True}),
    # empty and whitespace-only
    "empty.py": (b"", {"empty": True}),
    "blank.py": (b"\n\n   \n", {"empty": True}),
    "pkg/__init__.py": (b"", {"clean": True}),
    # deep nesting and long lines
    "deep_binop.py": (("x = " + " + ".join(["1"] * 20_000) + "\n").encode() + CUDA_LINE.encode(),
                      {"input": True}),
    "deep_parens.py": (("x = " + "(" * 300 + "1" + ")" * 300 + "\n").encode() + CUDA_LINE.encode(),
                       {"input": True, "line": 1}),
    "deep_lists.py": (("x = " + "[" * 150 + "]" * 150 + "\n").encode() + CUDA_LINE.encode(),
                      {"findings": [2]}),
    "long_boolop.py": (("y = " + " and ".join(["a"] * 20_000) + "\n").encode() + CUDA_LINE.encode(),
                       {"findings": [2]}),
    "deep_calls.py": (("x = a" + ".b()" * 3_000 + "\n").encode() + CUDA_LINE.encode(), {"input": True}),
    "long_line.py": (('s = "' + "a" * 1_000_000 + '"; x = x.to("cuda")\n').encode(),
                     {"findings": [1], "column": 1_000_018}),
    # a directory that looks like a file
    "dir_named.py/inner.py": (CUDA_LINE.encode(), {"findings": [1]}),
}

GOOD = {
    "good_a.py": b'import torch\nmodel = model.cuda()\nx = torch.zeros(3, device="cuda")\n',
    "good_b.py": b'import torch\ntorch.cuda.synchronize()\n',
}


# a project's model.py: one linear layer (the training scripts of tests/pipeline import it)
LINEAR_MODEL = """\
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 2)

        def forward(self, x):
            return self.fc(x)
    """


def write_sources(root: Path, files: dict[str, str]) -> Path:
    """A small project from its files' texts (each dedented, UTF-8)."""
    return write_tree(root, {rel: textwrap.dedent(text).encode("utf-8") for rel, text in files.items()})


def write_tree(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def noise(err: str) -> list[str]:
    """Lines of stderr other than the gate's own reasons (`opscan: fail-on ...`, the exit-1 answer)."""
    return [line for line in err.splitlines() if not line.startswith("opscan: fail-on ")]


def by_path(doc: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for finding in doc.get("findings", []):
        out.setdefault(finding["path"], []).append(finding)
    return out
