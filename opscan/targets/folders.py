"""Model folders: the one reader and classifier of a `config.json` (stdlib only: no torch, nothing run).

`opscan PATH` and `opscan init` (opscan/targets/discovery.py) ask it which kind of model folder a path is;
the `hf:` and `timm:` builders read their config through it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from opscan.errors import TargetError

HF_FOLDER = "hf-folder"        # a transformers config (records.CandidateKind.HF_FOLDER): stdlib only here
TIMM_FOLDER = "timm-folder"    # a timm config: `architecture` (records.CandidateKind.TIMM_FOLDER)

NO_TRUST_NOTE = ("config.json asks for remote code (auto_map: {where}); opscan does not run a "
                 "model folder's own Python unless given --trust-remote-code (it then runs in the "
                 "trace's child process)")


@dataclass(frozen=True)
class FolderConfig:
    """A config.json as read: its path, its kind (HF_FOLDER, TIMM_FOLDER or "" for neither), its JSON."""

    path: Path
    kind: str
    data: dict = field(default_factory=dict)


def config_path(path: Path | str) -> Path:
    """The config.json a path names: the path itself, or the config.json in the folder it is."""
    path = Path(path)
    return path / "config.json" if path.is_dir() else path


def kind_of(data: dict) -> str:
    """HF_FOLDER, TIMM_FOLDER or "" for a config.json's JSON object."""
    if isinstance(data.get("model_type"), str) or isinstance(data.get("architectures"), list):
        return HF_FOLDER
    if isinstance(data.get("architecture"), str):
        return TIMM_FOLDER
    return ""


def read_config(path: Path | str, *, max_bytes: int | None = None) -> FolderConfig:
    """Read and classify a config.json (or the one in a folder); one-line TargetErrors naming it.

    `max_bytes`: a bigger file is refused unread (a search over a project's tree).
    """
    path = config_path(path)
    if max_bytes is not None:
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise TargetError(f"cannot read: {exc.strerror}", path=str(path)) from None
        if size > max_bytes:
            raise TargetError(f"larger than {max_bytes} bytes: not read", path=str(path))
    data = read_json(path)
    return FolderConfig(path, kind_of(data), data)


def read_json(path: Path) -> dict:
    """Read a JSON file as a dict, with one-line errors."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TargetError(f"cannot read: {exc.strerror}", path=str(path)) from None
    except json.JSONDecodeError as exc:
        raise TargetError(f"not valid JSON: {exc.msg} (column {exc.colno})",
                          path=str(path), line=exc.lineno) from None
    except UnicodeDecodeError as exc:
        raise TargetError(f"not valid JSON: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
                          f"{exc.start})", path=str(path)) from None
    if not isinstance(data, dict):
        raise TargetError("not a JSON object", path=str(path))
    return data


def remote_code(data: dict) -> str:
    """The modules a config's `auto_map` names ("configuration_x.py, modeling_x.py"), or "" for none."""
    auto_map = data.get("auto_map")
    if not isinstance(auto_map, dict):
        return ""
    return ", ".join(sorted({str(v if isinstance(v, str) else v[0]).split(".")[0] + ".py"
                             for v in auto_map.values() if v}))
