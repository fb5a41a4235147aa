"""Config files a repository ships beside its model code (JSON/YAML/TOML), read without importing it.

`covering(folder, wanted)`: the table (the file's top level, or a nested table such as
`config.json["waveglow_config"]`) whose keys cover a constructor's required arguments (NOTE
[constructor arguments from a shipped file]). Used by opscan/targets/discovery.py (parent: ranking, the
words shown) and opscan/targets/construct.py (child: the values).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

# NOTE [constructor arguments from a shipped file]
# A training script often builds its model from a table of a config file beside the code:
# NVIDIA/waveglow's train.py does `WaveGlow(**config["waveglow_config"])` with config.json holding
# `{"train_config": ..., "data_config": ..., "waveglow_config": {"n_mel_channels": 80, "n_flows": 12,
# ..., "WN_config": {...}}}`. When a model class's required constructor arguments cannot all be
# chosen by name, the tables of the JSON/YAML/TOML files beside its file (or in `configs/`) are
# searched, nested ones too (to depth 3): the first file (smallest-sounding name first) holding a
# table whose keys cover the required arguments gives them, its top level first, else the covering
# table with the fewest other keys. Counts named like layers, blocks, flows or depth above 2 become
# 2, in nested tables too (as `--layers` does); other sizes are the repository's own.

_COUNT = re.compile(r"(^|_)(n_?)?(layers?|blocks?|flows?|depth)$", re.IGNORECASE)
MAX_DEPTH = 3


def read(path: Path):
    """The parsed file, or None when it is too large or not a readable JSON/YAML/TOML file."""
    try:
        if path.stat().st_size > 1 << 20:
            return None
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            return json.loads(text)
        if path.suffix == ".toml":
            import tomllib
            return tomllib.loads(text)
        import yaml
        return yaml.safe_load(text)
    except Exception:  # noqa: BLE001 - an unreadable file is simply not a config
        return None


def config_files(folder: Path | None) -> list[Path]:
    """The JSON/YAML/TOML files beside the model code, or in a `configs/`/`config/` folder near it."""
    if folder is None:
        return []
    files = []
    for base in (folder, folder / "configs", folder / "config", folder.parent / "configs"):
        if base.is_dir():
            files.extend(sorted(p for p in base.iterdir() if p.suffix in (".json", ".yaml", ".yml", ".toml")))
    return files


def _tables(data: dict, keys: tuple = (), depth: int = 0):
    yield keys, data
    if depth < MAX_DEPTH:
        for key, value in data.items():
            if isinstance(key, str) and isinstance(value, dict):
                yield from _tables(value, (*keys, key), depth + 1)


def covering(folder: Path | None, wanted: set[str], order=None) -> tuple[dict, str] | None:
    """(a copy of the table, its words: `config.json["waveglow_config"]`) whose keys cover `wanted`
    (NOTE [constructor arguments from a shipped file]); `order`: a sort key for the files."""
    if not wanted:
        return None
    files = config_files(folder)
    for path in sorted(files, key=order) if order else files:
        data = read(path)
        if not isinstance(data, dict):
            continue
        found = [(len(keys) > 0, len(set(table) - wanted), keys, table) for keys, table in _tables(data)
                 if wanted <= set(table)]
        if found:
            _, _, keys, table = min(found, key=lambda f: f[:3])
            return copy.deepcopy(table), path.name + "".join(f"[{json.dumps(k)}]" for k in keys)
    return None


def described(folder: Path | None, wanted: set[str]) -> str:
    """`config.json["waveglow_config"]` (with the counts it cuts: ` (n_flows 12 -> 2)`) for the table
    that covers `wanted`, else "": the words `opscan REPO` shows (NOTE [constructor arguments from a shipped file])."""
    found = covering(folder, wanted)
    if found is None:
        return ""
    cut = shrink_counts(found[0])
    return found[1] + (f" ({', '.join(cut)})" if cut else "")


def shrink_counts(table: dict) -> list[str]:
    """Counts named like layers/blocks/flows/depth above 2 set to 2, in nested tables too; what changed."""
    changed = []
    for key, value in table.items():
        if isinstance(value, dict):
            changed += [f"{key}.{c}" for c in shrink_counts(value)]
        elif isinstance(key, str) and _COUNT.search(key) and isinstance(value, int) \
                and not isinstance(value, bool) and value > 2:
            changed.append(f"{key} {value} -> 2")
            table[key] = 2
    return changed
