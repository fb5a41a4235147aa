"""The smallest variant of a model family, by its name (`pythia-14m`, `llama3_2_1b`, `tiny`): how a
repository build picks one config of a registry or shipped files (construct.py, child side)."""

from __future__ import annotations

import math
import re


SMALL = ("nano", "tiny", "mini", "small", "xs", "s", "base", "gpt2", "124m", "t", "b")


def size_rank(stem: str) -> float:
    """Smaller first: a size spelled in the name (`pythia-14m`, `llama3_2_1b`, `0.5B`), else a
    small-sounding word (SMALL), else last."""
    if stem.lower().startswith(("debug", "test", "toy")):
        return -1.0
    millions = size_in_name(stem)
    if millions is not None:
        return math.log10(millions + 1)
    lowered = stem.lower()
    return 10 + next((i for i, word in enumerate(SMALL) if word in re.split(r"[-_.]", lowered)), len(SMALL))


_SIZE = re.compile(r"(?:^|[-_.])(0_\d+|\d+(?:\.\d+)?)([mb])(?=$|[-_.])", re.IGNORECASE)


def size_in_name(name: str) -> float | None:
    """The parameter count (millions) spelled in a variant's name, e.g. 14 for `pythia-14m`, 500 for `0_5b`
    (`4k`, `32K` are context lengths, not sizes; so is a later `1M`)."""
    found = _SIZE.findall(name)
    if not found:
        return None
    number, unit = found[0]   # the first: `Qwen2.5-14B-Instruct-1M` is 14B (1M is its context)
    return float(number.replace("_", ".")) * {"m": 1.0, "b": 1e3}[unit.lower()]


def pick_variant(module) -> tuple[str, str] | None:
    """(the smallest-sounding key, the registry's name) of a module-level dict of named variants."""
    items = sorted(vars(module).items(), key=lambda item: (not _REGISTRY.search(item[0]), item[0]))
    for name, value in items:
        if isinstance(value, dict) and value and all(isinstance(k, str) for k in value) and not name.startswith("__"):
            keys = sorted(value, key=lambda k: (size_rank(k), k))
            return keys[0], name
        if isinstance(value, (list, tuple)) and value and all(isinstance(k, str) for k in value) \
                and re.search(r"(models|variants|archs|names|configs)$", name, re.IGNORECASE):
            keys = sorted(value, key=lambda k: (size_rank(k), k))
            return keys[0], name
    return None


_REGISTRY = re.compile(r"(config|configs|registry|models|variants|archs|name_to\w*)$", re.IGNORECASE)
