"""Writing a release file: one fixed, diff-friendly layout (one op per line), written atomically."""

from __future__ import annotations

import json
import re
from pathlib import Path

from opscan.errors import DatabaseError

# Top-level keys in the order they are written.
ORDER = ("schema_version", "backend", "release", "title", "released", "device", "dispatch_key",
         "packages", "op_names", "kernel_list", "statuses", "evidence_kinds", "sources", "unlisted", "no_kernel",
         "profile", "environment", "notes", "dtype_narrowing", "dtype_fallbacks", "known_failures", "release_notes",
         "ops")
_ENTRY_ORDER = ("op", "status", "evidence", "confidence", "parts", "since", "note")
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "y", "n"}


def _scalar(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _YAML_WORDS:
        return text
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a YAML double-quoted string


def _flow(mapping: dict, order: tuple[str, ...] | None = None) -> str:
    keys = [k for k in (order or ()) if k in mapping] + [k for k in mapping if k not in (order or ())]
    items = []
    for key in keys:
        value = mapping[key]
        if isinstance(value, (list, tuple)):
            items.append(f"{key}: [{', '.join(_scalar(v) for v in value)}]")
        else:
            items.append(f"{key}: {_scalar(value)}")
    return "{" + ", ".join(items) + "}"


def _block(mapping: dict, indent: str) -> list[str]:
    lines = []
    for key, value in mapping.items():
        if isinstance(value, (list, tuple)):
            lines.append(f"{indent}{key}: [{', '.join(_scalar(v) for v in value)}]")
        elif isinstance(value, dict):
            lines.append(f"{indent}{key}: {_flow(value)}")
        else:
            lines.append(f"{indent}{key}: {_scalar(value)}")
    return lines


def dump(doc: dict, header: str = "") -> str:
    """The YAML text of a release document (a plain dict as the loader reads it)."""
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    for key in ORDER:
        if key not in doc:
            continue
        value = doc[key]
        if key in ("statuses", "evidence_kinds", "unlisted", "no_kernel", "profile", "environment"):
            lines.append(f"{key}:")
            lines.extend(_block(value, "  "))
        elif key == "sources":
            lines.append("sources:")
            for source in value:
                first, *rest = _block(source, "    ")
                lines.append("  - " + first.strip())
                lines.extend(rest)
        elif key in ("packages", "ops", "dtype_narrowing", "dtype_fallbacks", "known_failures", "release_notes"):
            if not value:
                lines.append(f"{key}: []")
                continue
            lines.append(f"{key}:")
            lines.extend(f"  - {_flow(item, _ENTRY_ORDER if key == 'ops' else None)}" for item in value)
        elif key == "notes":
            lines.append("notes:")
            lines.extend(f"  - {_scalar(note)}" for note in value)
        else:
            lines.append(f"{key}: {_scalar(value)}")
    unknown = set(doc) - set(ORDER)
    if unknown:
        raise DatabaseError(f"cannot write unknown keys: {', '.join(sorted(unknown))}")
    return "\n".join(lines) + "\n"


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same folder and os.replace, with the
    mode a new file gets here (or the old file's); a failure is one error naming `path`."""
    from opscan.fsutil import atomic_write

    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text)   # temp file + fsync + os.replace (docs/reliability.md)
    except OSError as exc:
        folder = next((f for f in path.parents if f.exists()), None)
        why = f"{folder} is not a folder" if folder is not None and not folder.is_dir() else exc.strerror or str(exc)
        raise DatabaseError(f"cannot write the release file: {why}", str(path)) from None


def write_checked(doc: dict, out: Path, header: str, made_from: str) -> None:
    """Write the release document to `out` atomically, with the mode a new file gets (or the old
    file's), after proving it loads; every failure is one error naming the user's paths: `out`, and
    `made_from` (the table and the release it extends) when the merged document does not load."""
    from opscan.db.loader import load_text

    text = dump(doc, header)
    try:   # a file opscan cannot load is never written
        load_text(text, out)
    except DatabaseError as exc:
        where = f" at line {exc.line} of the merged file" if exc.line is not None else ""
        raise DatabaseError(f"the merged release does not load{where}: {exc.message}; nothing written",
                            made_from) from None
    write_atomic(out, text)
