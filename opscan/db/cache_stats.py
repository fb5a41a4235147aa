"""The compilation cache counters of a live TorchNeuron install, read around `db probe --report`.

NOTE [cache counters]
TorchNeuron compiles each eager op to a NEFF and caches it under the op, its input shapes and
dtypes; its pre-release source exposes the counters as the private
`torch_neuronx._C._get_compilation_cache_stats()` (counters including `persistent_hits` and
`persistent_misses`; shared neuron-facts: torchneuron-devsnapshot-2026-04-21.yaml,
`compilation.cache_stats_api`). A release may not have it, so reading is optional: absent module or
function -> None, and the probe says so. The counters are read before and after the replay; their
difference is what the replay compiled (misses) and found cached (hits) on this install, printed
beside the compile counts the report forecasts (`compile` in its JSON, docs/compile.md), so the
forecast can be set against the hardware. The replay runs the report's ops on sample shapes
(NOTE [model replay]), not the model's: its misses check the per-op caching the forecast counts
(one compile per new op + shapes + dtypes), not the model's own total.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

MODULE, FUNCTION = "torch_neuronx._C", "_get_compilation_cache_stats"


def read_counters() -> dict[str, int] | None:
    """The numeric counters of the compilation cache, or None when this install has none."""
    try:
        module = importlib.import_module(MODULE)
    except Exception:  # noqa: BLE001 - no TorchNeuron here, or one that does not import: no counters
        return None
    stats = getattr(module, FUNCTION, None)
    if not callable(stats):
        return None
    try:
        raw = stats()
        items = raw.items() if isinstance(raw, dict) else vars(raw).items()
    except Exception:  # noqa: BLE001 - a private API: any failure means no counters
        return None
    return {str(k): int(v) for k, v in sorted(items) if isinstance(v, (int, float)) and not isinstance(v, bool)}


def difference(before: dict[str, int] | None, after: dict[str, int] | None) -> dict[str, int] | None:
    """after - before per counter (counters present in both), or None when either is missing."""
    if before is None or after is None:
        return None
    return {k: after[k] - before[k] for k in sorted(after) if k in before}


def forecast(report: Path) -> list[tuple[str, int]]:
    """(what, compiles) the report's JSON forecasts: `compile.estimate.counts` (NOTE [compile counts]
    in opscan/assess/compile_check.py: the first step's eager signatures, a later step's new ones, the
    torch.compile graphs); a report written without an estimate: the first step's signatures."""
    try:
        doc = json.loads(Path(report).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    section = doc.get("compile") if isinstance(doc, dict) else None
    if not isinstance(section, dict):
        return []
    estimate = section.get("estimate")
    if isinstance(estimate, dict):
        return [(str(item.get("what", "")), item["compiles"]) for item in estimate.get("counts") or ()
                if isinstance(item, dict) and isinstance(item.get("compiles"), int)]
    steps = section.get("steps")
    if isinstance(steps, list) and steps and isinstance(steps[0], dict) \
            and isinstance(steps[0].get("signatures"), list):
        return [("eager signatures in the first step", len(steps[0]["signatures"]))]
    return []


def counted_replay(report: Path, import_module: str | None, name: str | None, release: str | None):
    """The replay of `db probe --report` with the cache counters read before and after it, in the
    process the backend runs in (the contained child): (doc, seconds per op, before, after)."""
    from opscan.db.replay import replay

    before = read_counters()
    doc, per_op = replay(report, import_module, name=name, release=release)
    after = read_counters() if before is not None else None
    return doc, per_op, before, after


def lines(before, after, forecast_counts) -> list[str]:
    """What `db probe --report` prints about the cache (NOTE [cache counters])."""
    if before is None or after is None:
        out = [f"compilation cache counters: not available on this install ({MODULE}.{FUNCTION} not found)"]
    else:
        diff = difference(before, after)
        said = ", ".join(f"{k} {v:+d}" for k, v in diff.items()) or "no numeric counter"
        out = [f"compilation cache counters during the replay ({MODULE}.{FUNCTION}): {said}"]
    if forecast_counts:
        out.append("the report forecasts: " + ", ".join(f"{n} {what}" for what, n in forecast_counts)
                   + " (the replay runs sample shapes: its misses check per-signature caching, not the model's total)")
    return out


__all__ = ["FUNCTION", "MODULE", "counted_replay", "difference", "forecast", "lines", "read_counters"]
