"""Pretrained weights a model's constructor asks for, answered on the model path with the model's own
initialisation (NOTE [pretrained weights on the model path]).

NOTE [pretrained weights on the model path]
A research model often builds a pretrained backbone inside its own constructor:
`self.image_model = models.resnet50(pretrained=True)`, then replaces its head. Nothing is
downloaded, and the model path used to refuse the whole model there ("opscan does not download
weights"). The trace needs shapes, not values, and its weights are empty (on `meta`) anyway: so
`torch.hub.load_state_dict_from_url` (what torchvision's `weights=` / `pretrained=True` and
`model_zoo.load_url` call) answers with an empty state dict that `Module.load_state_dict` takes as
"keep your own" (strict or not), and the built model's `retried` note names each URL answered, as
the run of a training command names its weight stand-ins (docs/run.md, "Stand-ins"). A file
download (`download_url_to_file`, a hub repository's code) is still refused.
"""

from __future__ import annotations

import contextlib
import os
import sys

from torch import nn


_BINDERS = ("torchvision._internally_replaced_utils", "torchvision.models._api")


class AbsentWeights(dict):
    """An empty state dict standing for weights that were not downloaded."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url


@contextlib.contextmanager
def answered():
    """Pretrained downloads answered with AbsentWeights for the block; yields the URLs answered."""
    import torch.hub

    urls: list[str] = []

    def load_state_dict_from_url(url, *args, **kwargs):
        urls.append(os.path.basename(str(url)) or str(url))
        return AbsentWeights(str(url))

    original = nn.Module.load_state_dict

    def load_state_dict(self, state_dict, *args, **kwargs):
        if isinstance(state_dict, AbsentWeights):
            from torch.nn.modules.module import _IncompatibleKeys

            return _IncompatibleKeys([], [])
        return original(self, state_dict, *args, **kwargs)

    # torchvision binds the function when it is first imported: its modules already loaded are
    # answered too (a repository imported after this block begins binds the answer itself)
    owners = [torch.hub, *(sys.modules[name] for name in _BINDERS if name in sys.modules)]
    saved = [(owner, getattr(owner, "load_state_dict_from_url", None)) for owner in owners]
    for owner in owners:
        owner.load_state_dict_from_url = load_state_dict_from_url
    nn.Module.load_state_dict = load_state_dict   # type: ignore[method-assign]
    try:
        yield urls
    finally:
        for owner, value in saved:
            owner.load_state_dict_from_url = value
        nn.Module.load_state_dict = original   # type: ignore[method-assign]


def note(urls: list[str]) -> str:
    """The `retried` words for the weights answered ("" for none)."""
    if not urls:
        return ""
    shown = ", ".join(dict.fromkeys(urls))
    return f"pretrained weights not downloaded ({shown}): the model keeps its own initialisation"
