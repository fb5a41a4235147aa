"""One traced step: forward, loss, backward and optimizer step (train) or a no_grad forward."""

from __future__ import annotations

import contextlib
import inspect

import torch
from torch import nn
from torch.utils._pytree import tree_leaves

from opscan.errors import UsageError

OPTIMIZER_IMPLS = ("foreach", "fused", "for-loop")


def optimizer_names() -> dict[str, type]:
    """torch.optim's optimizers by lower-case name (adamw, adam, sgd, ...)."""
    out = {}
    for name in dir(torch.optim):
        obj = getattr(torch.optim, name)
        if inspect.isclass(obj) and issubclass(obj, torch.optim.Optimizer) and obj is not torch.optim.Optimizer:
            out[name.lower()] = obj
    return out


def make_optimizer(name: str, impl: str | None, params) -> torch.optim.Optimizer:
    """Build the optimizer with its implementation chosen explicitly.

    NOTE [optimizer implementation]
    On fake parameters torch.optim silently falls back to the for-loop implementation (it checks
    `type(p)`), so the choice is made here as it is on a real accelerator: foreach by default.
    """
    classes = optimizer_names()
    cls = classes.get(name.lower())
    if cls is None:
        raise UsageError(f"unknown --optimizer {name!r} (known: {', '.join(sorted(classes))})")
    params = list(params)
    accepted = set(inspect.signature(cls.__init__).parameters)
    kwargs = {}
    if "lr" in accepted and cls in (torch.optim.SGD,):
        kwargs["lr"] = 0.01
    impl = impl or ("foreach" if "foreach" in accepted else None)
    if impl == "foreach":
        if "foreach" not in accepted:
            raise UsageError(f"--optimizer {name} has no foreach implementation")
        kwargs["foreach"] = True
    elif impl == "fused":
        if "fused" not in accepted:
            raise UsageError(f"--optimizer {name} has no fused implementation")
        kwargs["fused"] = True
    elif impl == "for-loop":
        if "foreach" in accepted:
            kwargs["foreach"] = False
    elif impl is not None:
        raise UsageError(f"unknown --optimizer-impl {impl!r} (known: {', '.join(OPTIMIZER_IMPLS)})")
    return cls(params, **kwargs)


def pick_loss(output, labels=None):
    """The loss of a model output (see docs/trace.md, "Loss").

    A scalar tensor is the loss; else `.loss` / `["loss"]` when present and not None (summed when
    it is not a scalar); with labels (timm targets) the cross-entropy of the logits; else the sum
    of `.sum()` of every floating-point output tensor that requires grad.
    """
    if isinstance(output, torch.Tensor) and output.dim() == 0:
        return output
    loss = getattr(output, "loss", None)
    if loss is None and isinstance(output, dict):
        loss = output.get("loss")
    if isinstance(loss, torch.Tensor):
        return loss if loss.dim() == 0 else loss.sum()   # a per-sample loss (DAC's commitment loss)
    if labels is not None and isinstance(output, torch.Tensor):
        return nn.functional.cross_entropy(output, labels)
    parts = [t.sum() for t in tree_leaves(_plain(output))
             if isinstance(t, torch.Tensor) and t.is_floating_point() and t.requires_grad]
    if not parts:
        return None
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def _plain(output):
    """ModelOutput-like objects as tuples, so pytree can walk them."""
    if hasattr(output, "to_tuple"):
        return output.to_tuple()
    return output


def autocast(device: str, amp: str | None):
    """The autocast context for --amp (forward and loss only, as in a training loop)."""
    if amp is None:
        return contextlib.nullcontext()
    dtype = {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
             "fp16": torch.float16, "float16": torch.float16}.get(amp)
    if dtype is None:
        raise UsageError(f"unknown --amp {amp!r} (known: bf16, fp16)")
    return torch.autocast(device_type=device, dtype=dtype)
