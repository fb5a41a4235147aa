"""Availability checks that guard CUDA-only work keep their CUDA check (NOTE [guards that protect
CUDA-only code]); the name family records which lines each check guards (`ctx.guards`)."""

from __future__ import annotations

from dataclasses import replace

from opscan.scan.context import FileContext, Hit, lines_text
from opscan.records import Category

GUARD_SUFFIX = "#guards-cuda-only"


def finish(ctx: FileContext) -> None:
    """NOTE [guards that protect CUDA-only code]: `if torch.cuda.is_available():` whose block
    holds CUDA-only work (an API without a device-agnostic equivalent, a CUDA setting, a kernel,
    a CUDA-only library) must stay a CUDA check; replacing it by `torch.accelerator.is_available()`
    would run that work on a Neuron device. Such a check gets the fix (and severity) of the
    `<name>#guards-cuda-only` entry of its rule's `fixes`, naming what it protects."""
    if not ctx.guards:
        return
    out = []
    for hit in ctx.hits:
        span = ctx.guards.get(id(hit.node))
        key = f"{hit.name}{GUARD_SUFFIX}"
        if span is not None and hit.rule.fix_for(key)[0] != hit.rule.fix_for(hit.name)[0]:
            inside = sorted({h.name or h.value for h in ctx.hits
                             if h is not hit and span[0] <= getattr(h.node, "lineno", 0) <= span[1]
                             and _cuda_only(h)})
            if inside:
                shown = ", ".join(f"`{n}`" for n in inside[:3]) + (", ..." if len(inside) > 3 else "")
                hit = replace(hit, fix_name=key, value=f"{shown} ({lines_text(*span)})")
        out.append(hit)
    ctx.hits = out


def _cuda_only(hit: Hit) -> bool:
    """Whether a hit is work that only CUDA can do: a kernel, a CUDA-only library, a CUDA setting, or
    a CUDA API that has no device-agnostic replacement opscan can apply (its rule's `autofix`)."""
    rule = hit.rule
    if rule.category in (Category.CUSTOM_KERNEL, Category.CUDA_ONLY_LIB):
        return True
    if rule.category is not Category.CUDA_API or \
            hit.name.endswith((".is_available", ".is_initialized", ".device_count")):
        return False
    # a CUDA API is device-agnostic work when its rule's automatic fix rewrites it to an equivalent
    return rule.autofix is None or rule.autofix.safety != "safe" or not rule.autofix.covers(hit.name)
