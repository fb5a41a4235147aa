"""One traced step: forward, loss, backward and optimizer step (train) or a no_grad forward."""

from __future__ import annotations

import ast
import contextlib
import inspect
from dataclasses import replace

import torch
from torch import nn
from torch.utils._pytree import tree_leaves

from opscan.errors import UsageError
from opscan.records import StepPart, StepPartKind, TrainStep

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


# --- the step a training script constructs (NOTE [the step read from the training script] in
# opscan/targets/train_step.py): applied in place of the stand-in parts ----------------------------

def planned_amp(plan: TrainStep | None) -> str | None:
    """The autocast dtype the plan's script uses ("bfloat16" / "float16"), else None."""
    part = plan.part(StepPartKind.AMP) if plan is not None else None
    return part.name if part is not None and part.name in ("bfloat16", "float16") else None


def planned_optimizer(plan: TrainStep | None, name: str, impl: str | None, params):
    """(optimizer, its StepPart): the plan's torch.optim class and implementation when it has one that
    torch.optim knows, else `name` / `impl` (opscan's stand-in, or the configured optimizer)."""
    part = plan.part(StepPartKind.OPTIMIZER) if plan is not None else None
    why = ""
    if part is not None and part.name.lower() in optimizer_names():
        chosen = part.detail if part.detail in OPTIMIZER_IMPLS else None
        try:
            opt = make_optimizer(part.name, chosen, params)
        except UsageError as exc:   # e.g. fused asked of an optimizer without it
            why = str(exc)
        else:
            said = part.detail if chosen else "; ".join(d for d in (part.detail, _impl_of(opt)) if d)
            return opt, replace(part, detail=said)
    elif part is not None:
        why = "not a torch.optim optimizer"
    opt = make_optimizer(name, impl, params)
    traced = f"{type(opt).__name__} ({_impl_of(opt)})"
    if part is not None:
        return opt, replace(part, detail=f"{why}: {traced} traced instead", applied=False)
    return opt, StepPart(StepPartKind.OPTIMIZER, type(opt).__name__, _impl_of(opt))


def _impl_of(opt) -> str:
    group = opt.param_groups[0] if opt.param_groups else {}
    return "fused" if group.get("fused") else "foreach" if group.get("foreach") else "for-loop"


def planned_loss(output, labels, plan: TrainStep | None):
    """(loss, its StepPart): the plan's loss applied to the model's output (NOTE [the script's loss
    on the model's output]); the model's own loss when it returns one; else `pick_loss` (stand-in)."""
    part = plan.part(StepPartKind.LOSS) if plan is not None else None
    own = _own_loss(output)
    if own is not None:   # traced in the model's forward; the script backpropagates it
        said = "the model's own loss (it returns a scalar or .loss)"
        if plan is not None and plan.backward:
            also = f"the script's {part.name} ({part.source}) not applied again" if part is not None else ""
            return own, StepPart(StepPartKind.LOSS, said, also or "the script calls backward on it", plan.backward)
        return own, StepPart(StepPartKind.LOSS, said)
    if part is not None and part.name in _TARGETS:
        logits = _logits(output)
        if logits is not None:
            loss = _scripted(part, logits, labels)
            if loss.dim():   # reduction='none': the script reduces it itself (`loss.mean()`)
                return loss.mean(), replace(part, detail="; ".join(d for d in (part.detail, "then .mean()") if d))
            return loss, part
        part = replace(part, detail="no floating-point output of two or more dimensions to apply it to",
                       applied=False)
    loss = pick_loss(output, labels)
    name = "cross_entropy with opscan's labels" if labels is not None and isinstance(output, torch.Tensor) \
        else "sum of the outputs"
    return loss, part if part is not None else StepPart(StepPartKind.LOSS, name)


# NOTE [the script's loss on the model's output]
# A script computes its loss from what the model returns (`logits = model(x); loss =
# F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))`). The logits are the output, or its
# first floating-point tensor of two or more dimensions (a tuple's, a dict's, `.logits`). A class
# loss (cross_entropy, nll_loss) reads the class dimension last (`(B, C)`, `(B, T, V)` flattened to
# `(B*T, V)`), except for 4-D outputs, where it is the second (`(B, C, H, W)` segmentation maps); its
# targets are zeros of the other dimensions (values do not matter on fake tensors), or the
# builder's labels when their shape fits. Any other loss compares the output with a tensor of its
# own shape. The literal keywords the script gives (label_smoothing, ignore_index, ...) are passed.
_TARGETS = {"cross_entropy": "class", "nll_loss": "class", "mse_loss": "same", "l1_loss": "same",
            "smooth_l1_loss": "same", "huber_loss": "same", "binary_cross_entropy_with_logits": "same",
            "binary_cross_entropy": "same", "kl_div": "same"}


def _own_loss(output):
    if isinstance(output, torch.Tensor) and output.dim() == 0:
        return output
    loss = getattr(output, "loss", None)
    if loss is None and isinstance(output, dict):
        loss = output.get("loss")
    if isinstance(loss, torch.Tensor):
        return loss if loss.dim() == 0 else loss.sum()
    if isinstance(output, (tuple, list)):   # `logits, loss = model(x, y)`: a scalar that requires grad
        scalars = [t for t in output if isinstance(t, torch.Tensor) and t.dim() == 0 and t.requires_grad
                   and t.is_floating_point()]
        if len(scalars) == 1:
            return scalars[0]
    return None


def _logits(output):
    if isinstance(output, torch.Tensor):
        return output if output.is_floating_point() and output.dim() >= 2 else None
    found = getattr(output, "logits", None)
    if isinstance(found, torch.Tensor) and found.is_floating_point():
        return found
    return next((t for t in tree_leaves(_plain(output)) if isinstance(t, torch.Tensor)
                 and t.is_floating_point() and t.dim() >= 2 and t.requires_grad), None)


def _scripted(part: StepPart, logits, labels):
    kind = _TARGETS[part.name]
    func = getattr(nn.functional, part.name)
    keywords = _literal_keywords(part.detail)
    if kind == "same":
        return func(logits, torch.zeros_like(logits), **keywords)
    if logits.dim() == 4:
        target_shape, flat = (logits.shape[0], *logits.shape[2:]), logits
    else:
        flat = logits.reshape(-1, logits.shape[-1])
        target_shape = (flat.shape[0],)
    if isinstance(labels, torch.Tensor) and tuple(labels.shape) == tuple(target_shape):
        target = labels
    else:
        target = torch.zeros(target_shape, dtype=torch.long, device=logits.device)
    return func(flat, target, **keywords)


def _literal_keywords(detail: str) -> dict:
    out = {}
    for word in detail.split(", "):
        key, eq, value = word.partition("=")
        if eq and key in ("label_smoothing", "ignore_index", "reduction", "beta", "delta"):
            try:
                out[key] = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                continue
    return out


def planned_clip(plan: TrainStep | None, params) -> StepPart | None:
    """Clip the gradients of `params` as the plan's script does (after backward, before the step)."""
    part = plan.part(StepPartKind.CLIP) if plan is not None else None
    if part is None:
        return None
    key, _, value = part.detail.partition(" ")[0].partition("=")
    try:
        limit = float(value)
    except ValueError:
        limit = 1.0
    if part.name == "clip_grad_value_":
        nn.utils.clip_grad_value_(params, limit)
    else:
        nn.utils.clip_grad_norm_(params, limit)
    return part
