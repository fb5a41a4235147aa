"""The training step a project's training script constructs, read statically (stdlib ast; nothing runs).

`read_step(tree, rel, imports)` reads the loss, the optimizer (its class and fused/foreach), autocast
(AMP, GradScaler) and gradient clipping a training script builds, each with the line it is built at,
as a `TrainStep` record (opscan/records/trace.py). The trace's child applies it instead of opscan's
stand-in step (opscan/trace/step.py `planned_*`), and the report names what it took and from where.
"""

from __future__ import annotations

import ast

from opscan.index.resolver import Imports
from opscan.records import StepPart, StepPartKind, TrainStep

# NOTE [the step read from the training script]
# Without a training command that can run (issue 42, part A), the model path traces a step of its
# own: the output summed, AdamW with foreach kernels. A team pays for *its* step: a fused AdamW is
# another kernel (`_fused_adamw_`) than the foreach one, cross-entropy dispatches `nll_loss_forward`,
# autocast adds casts and bf16 kernels, clipping adds a norm over every gradient. So the training
# script (opscan/targets/train_scripts.py says which) is read for the calls that make each part:
# - loss: a call of a torch.nn.functional loss (`F.cross_entropy(...)`) or a torch.nn loss class
#   (`nn.CrossEntropyLoss()`), the one in a function that calls `.backward()` first;
# - optimizer: a torch.optim class (`AdamW(model.parameters(), lr=..., fused=True)`), with `fused` /
#   `foreach` when the keyword is a literal (else as on the real device: foreach, said so);
# - amp: `torch.autocast` / `torch.amp.autocast` / `torch.cuda.amp.autocast` with a literal dtype (a
#   dtype that is no literal is assumed bfloat16, float16 under a GradScaler; said so);
# - clip: `clip_grad_norm_` / `clip_grad_value_` (torch.nn.utils, or a launcher's method), with a
#   literal max norm (else 1.0, said so).
# Only names resolved through the file's imports count (a local `F` is not torch.nn.functional).
# A part read from a file the script builds its optimizer in (a model's `configure_optimizers`)
# names that file. What the child could not apply stays in the record with `applied=False`.

LOSSES = {   # functional name -> what its target is: class indices ("class") or a tensor like the input ("same")
    "cross_entropy": "class", "nll_loss": "class", "mse_loss": "same", "l1_loss": "same",
    "smooth_l1_loss": "same", "huber_loss": "same", "binary_cross_entropy_with_logits": "same",
    "binary_cross_entropy": "same", "kl_div": "same",
}
LOSS_CLASSES = {"CrossEntropyLoss": "cross_entropy", "NLLLoss": "nll_loss", "MSELoss": "mse_loss",
                "L1Loss": "l1_loss", "SmoothL1Loss": "smooth_l1_loss", "HuberLoss": "huber_loss",
                "BCEWithLogitsLoss": "binary_cross_entropy_with_logits", "BCELoss": "binary_cross_entropy",
                "KLDivLoss": "kl_div"}
_FUNCTIONAL = ("torch.nn.functional.",)
_NN = ("torch.nn.",)
_AUTOCAST = {"torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast", "torch.amp.autocast_mode.autocast",
             "torch.cpu.amp.autocast"}
_SCALER = {"torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.GradScaler"}
_DTYPES = {"bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "half": "float16", "fp16": "float16"}
_CLIPS = ("clip_grad_norm_", "clip_grad_value_")
_LOSS_KEYWORDS = {"label_smoothing", "ignore_index", "reduction", "beta", "delta"}


def read_step(tree: ast.Module, rel: str, imports: Imports) -> TrainStep:
    """The parts of the training step `tree` (the script at `rel`) constructs, each with its line."""
    found: dict[str, StepPart] = {}
    for call, _ in _calls(tree):   # the training function's calls first: its loss wins
        name = imports.resolve(call.func) or ""
        part = _loss(call, name) or _optimizer(call, name) or _amp(call, name) or _clip(call, name)
        if part is not None and part.part not in found:
            found[part.part] = StepPart(part.part, part.name, part.detail, f"{rel}:{call.lineno}")
    scaler = next((c for c, _ in _calls(tree) if (imports.resolve(c.func) or "") in _SCALER), None)
    if scaler is not None:
        amp = found.get("amp")
        said = "GradScaler (its unscale and update ops are not traced)"
        if amp is None:
            found[StepPartKind.AMP] = StepPart(StepPartKind.AMP, "float16",
                                               f"{said}; no autocast read: float16 assumed", f"{rel}:{scaler.lineno}")
        else:
            found[StepPartKind.AMP] = StepPart(StepPartKind.AMP, amp.name,
                                               "; ".join(d for d in (amp.detail, said) if d), amp.source)
    backward = next((c.lineno for c, _ in _calls(tree) if isinstance(c.func, ast.Attribute)
                     and c.func.attr == "backward"), None)
    return TrainStep(script=rel, parts=tuple(found[p] for p in ("loss", "optimizer", "amp", "clip") if p in found),
                     backward=f"{rel}:{backward}" if backward is not None else "")


def merged(first: TrainStep, more: TrainStep) -> TrainStep:
    """`first` with the optimizer taken from `more` when it has none (a model's `configure_optimizers`:
    the file the script builds its optimizer in); a loss there is the model's own, traced in its forward."""
    have = {p.part for p in first.parts}
    parts = first.parts + tuple(p for p in more.parts if p.part not in have and p.part == StepPartKind.OPTIMIZER)
    order = ("loss", "optimizer", "amp", "clip")
    return TrainStep(first.script, tuple(sorted(parts, key=lambda p: order.index(p.part))), first.backward)


def _calls(tree: ast.Module):
    """(call, whether it sits in a function that calls `.backward()`), the training function's first."""
    training: list[ast.Call] = []
    rest: list[ast.Call] = []
    backward_in: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "backward"
                for c in ast.walk(node)):
            backward_in.add(id(node))
    seen: set[int] = set()
    for node in ast.walk(tree):
        if id(node) in backward_in:
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and id(call) not in seen:
                    seen.add(id(call))
                    training.append(call)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and id(node) not in seen:
            rest.append(node)
    by_line = sorted(training, key=lambda c: (c.lineno, c.col_offset))
    return [(c, True) for c in by_line] + [(c, False) for c in sorted(rest, key=lambda c: (c.lineno, c.col_offset))]


def _loss(call: ast.Call, name: str) -> StepPart | None:
    last = name.rpartition(".")[2]
    if name.startswith(_FUNCTIONAL) and last in LOSSES:
        return StepPart(StepPartKind.LOSS, last, _keywords(call))
    if name.startswith(_NN) and last in LOSS_CLASSES:
        return StepPart(StepPartKind.LOSS, LOSS_CLASSES[last], _keywords(call, f"nn.{last}"))
    return None


def _keywords(call: ast.Call, prefix: str = "") -> str:
    """The literal keywords of a loss the child passes on (`label_smoothing=0.1`), as text."""
    said = [f"{k.arg}={k.value.value!r}" for k in call.keywords
            if k.arg in _LOSS_KEYWORDS and isinstance(k.value, ast.Constant)]
    return ", ".join(([prefix] if prefix else []) + said)


def _optimizer(call: ast.Call, name: str) -> StepPart | None:
    if not name.startswith("torch.optim.") or name.count(".") != 2:
        return None
    cls = name.rpartition(".")[2]
    if not cls[:1].isupper() or cls in ("Optimizer",):
        return None
    for impl in ("fused", "foreach"):
        value = next((k.value for k in call.keywords if k.arg == impl), None)
        if isinstance(value, ast.Constant) and value.value is True:
            return StepPart(StepPartKind.OPTIMIZER, cls, impl)
        if value is not None and not isinstance(value, ast.Constant):
            return StepPart(StepPartKind.OPTIMIZER, cls, f"{impl}={ast.unparse(value)} is no literal: foreach assumed")
    if any(k.arg is None for k in call.keywords):   # **extra_args: what it holds is not read
        spread = next(ast.unparse(k.value) for k in call.keywords if k.arg is None)
        return StepPart(StepPartKind.OPTIMIZER, cls, f"**{spread} is no literal: foreach assumed")
    return StepPart(StepPartKind.OPTIMIZER, cls)


def _amp(call: ast.Call, name: str) -> StepPart | None:
    if name not in _AUTOCAST:
        return None
    value = next((k.value for k in call.keywords if k.arg == "dtype"), None)
    if value is None and len(call.args) > 1 and name in ("torch.autocast", "torch.amp.autocast"):
        value = call.args[1]
    if value is None:   # autocast on CUDA defaults to float16
        return StepPart(StepPartKind.AMP, "float16", "autocast's default dtype on CUDA")
    word = ast.unparse(value).rpartition(".")[2]
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        word = value.value
    dtype = _DTYPES.get(word)
    if dtype is None:
        return StepPart(StepPartKind.AMP, "bfloat16", f"dtype={ast.unparse(value)} is no literal: bfloat16 assumed")
    return StepPart(StepPartKind.AMP, dtype)


def _clip(call: ast.Call, name: str) -> StepPart | None:
    last = name.rpartition(".")[2] if name else (call.func.attr if isinstance(call.func, ast.Attribute) else "")
    if last not in _CLIPS or name and not name.startswith("torch.nn.utils"):
        return None
    value = next((k.value for k in call.keywords if k.arg in ("max_norm", "clip_value")), None)
    if value is None and len(call.args) > 1:
        value = call.args[1]
    key = "max_norm" if last == "clip_grad_norm_" else "clip_value"
    if isinstance(value, ast.Constant) and isinstance(value.value, (int, float)) and not isinstance(value.value, bool):
        return StepPart(StepPartKind.CLIP, last, f"{key}={float(value.value)}")
    said = f"{key}={ast.unparse(value)} is no literal: 1.0 assumed" if value is not None else f"{key}=1.0 assumed"
    return StepPart(StepPartKind.CLIP, last, said)
