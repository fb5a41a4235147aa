"""Swapping two tensors in place under a fake mode (torch.utils.swap_tensors, the mode's memo kept right).

Shared by the device redirect (a moved Parameter keeps its identity) and lazy modules (a
materialised placeholder becomes the fake tensor in the same object).
"""

from __future__ import annotations

import torch

_SWAP = torch.utils.swap_tensors


def swap(t1, t2) -> None:
    """torch.utils.swap_tensors of two tensors, their fake mode's memo entries dropped first."""
    forget_conversion(t1)
    forget_conversion(t2)
    _SWAP(t1, t2)


def forget_conversion(t) -> None:
    """Drop `t` from its fake mode's memo of converted real tensors (a weak reference to it)."""
    mode = getattr(t, "fake_mode", None)
    converter = getattr(getattr(mode, "fake_tensor_converter", None), "meta_converter", None)
    memo = getattr(converter, "tensor_memo", None)
    if memo is None:
        return
    for key, value in list(memo.items()):
        if value is t:
            del memo[key]
