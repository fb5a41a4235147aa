"""The model type a hub name reads as (`bert-base-uncased` -> bert), for a `from_pretrained` whose
config is not here (NOTE [a type read from the name]).

NOTE [a type read from the name]
`AutoModel.from_pretrained('bert-base-uncased')` with neither the weights nor the config here: the
class is an Auto class, so only the name can say the architecture. Hub names start, by a strong
convention, with their model type (`bert-base-uncased`, `google/vit-base-patch16-224`,
`facebook/bart-large`, `xlm-roberta-large`, `google/flan-t5-base`). The name's last part (after
its owner's `/`) is split into words (at `-`, `_`, `.`, `/`), and a model type transformers knows
(the keys of its CONFIG_MAPPING, split the same way) matches when its words appear together, in
order, among the name's; the longest match wins (`xlm-roberta` over `roberta`; more letters, then
the earlier place, on a tie). No match, and the architecture stays unknown (the run stops at that
line, as before). The config is then that type's config class with its defaults: an assumption the
report states (the type read from the name, the sizes the class's defaults', which may not be the
checkpoint's: `bert-large-uncased` is built at BERT-base's sizes).
"""

from __future__ import annotations

import os
import re

_WORDS = re.compile(r"[-_./]+")


def _words(text: str) -> tuple[str, ...]:
    return tuple(w for w in _WORDS.split(text.lower()) if w)


def model_type(name, known) -> str | None:
    """The model type of `known` (transformers' model type names) that `name` reads as, or None."""
    last = os.fspath(name).replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    words = _words(last)
    best: tuple | None = None
    for kind in known:
        wanted = _words(kind)
        if not wanted:
            continue
        for start in range(len(words) - len(wanted) + 1):
            if words[start:start + len(wanted)] == wanted:
                key = (len(wanted), len(kind), -start, kind)
                if best is None or key[:3] > best[:3] or (key[:3] == best[:3] and kind < best[3]):
                    best = key
                break
    return best[3] if best else None


def default_config(transformers, name):
    """(the config of the type `name` reads as, built from its defaults; the type), or None (NOTE [a
    type read from the name])."""
    try:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    except ImportError:
        return None
    kind = model_type(name, CONFIG_MAPPING_NAMES)
    if kind is None:
        return None
    try:
        return transformers.AutoConfig.for_model(kind), kind
    except Exception:   # noqa: BLE001 - a config class that needs arguments: the architecture stays unknown
        return None


__all__ = ["default_config", "model_type"]
