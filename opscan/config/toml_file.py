"""A configuration file's TOML read from its bytes: the document, or why it cannot be read.

Shared by opscan/config/load.py (the walk up to `[tool.opscan]`) and the scan's input findings
(opscan/scan/config_findings.py), so both say the same of one file (NOTE [unreadable config
files] in opscan/config/load.py). Imports nothing of opscan.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

OWN_NAME = "opscan.toml"
_OWN_TABLE = re.compile(r"\btool\s*\.\s*[\"']?opscan\b")


@dataclass(frozen=True)
class ConfigProblem:
    """A configuration file opscan could not read (NOTE [unreadable config files] in config.py)."""

    path: Path          # the file
    line: int           # 1-based; 1 when the cause names no line
    message: str        # the cause ("not valid TOML: ...")
    own: bool           # opscan's own config: opscan.toml, or a pyproject whose text spells `tool.opscan`


def is_own(name: str, text: str) -> bool:
    """Whether a config file of this name and text is opscan's own (an opscan.toml, or a file that
    spells `tool.opscan`, read even where its TOML is broken)."""
    return name == OWN_NAME or bool(_OWN_TABLE.search(text))


def read_toml(path: Path, data: bytes) -> dict | ConfigProblem:
    """The TOML document of `data` (the bytes of `path`), or the problem that keeps it from being read."""
    own = is_own(path.name, data.decode("utf-8", errors="replace"))
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:   # TOML is UTF-8 (tomllib decodes strictly)
        line = data.count(b"\n", 0, exc.start) + 1
        return ConfigProblem(path, line, f"not valid TOML: not UTF-8 (byte 0x{data[exc.start]:02x} at offset "
                             f"{exc.start})", own)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"line (\d+)", str(exc))
        line = int(match[1]) if match else data.count(b"\n") + (not data.endswith(b"\n")) \
            if "end of document" in str(exc) else 1
        return ConfigProblem(path, max(line, 1), f"not valid TOML: {exc}", own)


def read_file(path: Path) -> dict | ConfigProblem:
    """read_toml of the file at `path`; a file that cannot be read is a problem too."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return ConfigProblem(path, 1, f"cannot read: {exc.strerror}", path.name == OWN_NAME)
    return read_toml(path, data)
