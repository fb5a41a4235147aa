"""Draws a ParityResult to a PNG or SVG file with matplotlib (the optional `opscan-neuron[plot]` extra)."""

from __future__ import annotations

import math
from pathlib import Path

from opscan.errors import UsageError
from opscan.workflow.parity import ParityResult

FORMATS = {".png": "png", ".svg": "svg"}


def write_plot(result: ParityResult, path: str | Path) -> Path:
    """Plot both loss curves and |delta| with the tolerance line into `path` (.png or .svg)."""
    target = Path(path)
    fmt = FORMATS.get(target.suffix.lower())
    if fmt is None:
        raise UsageError(f"--plot: {target.name!r} must end in .png or .svg")
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install 'opscan-neuron[plot]'") from None
    matplotlib.rcParams["svg.hashsalt"] = "opscan-parity"   # stable ids: same input, same bytes

    steps = [r.step for r in result.rows]
    base = [r.baseline if math.isfinite(r.baseline) else math.nan for r in result.rows]
    cand = [r.candidate if math.isfinite(r.candidate) else math.nan for r in result.rows]
    gaps = [abs(r.delta) if r.delta is not None else math.nan for r in result.rows]
    allowed = [r.allowed if r.allowed is not None else math.nan for r in result.rows]

    fig = Figure(figsize=(8, 6), dpi=100)
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.plot(steps, base, label=f"baseline ({Path(result.baseline.path).name})", color="tab:blue")
    top.plot(steps, cand, label=f"candidate ({Path(result.candidate.path).name})", color="tab:orange",
             linestyle="--")
    top.set_ylabel("loss")
    top.legend(loc="upper right")
    top.set_title(f"opscan parity - drift: {result.drift.kind}")
    bottom.plot(steps, gaps, color="tab:green", marker="." if len(steps) <= 60 else None, label="|delta|")
    bottom.plot(steps, allowed, color="tab:red", linestyle=":", label="tolerance")
    bad = [(r.step, abs(r.delta)) for r in result.rows if not r.ok and r.delta is not None]
    if bad:
        bottom.scatter([s for s, _ in bad], [g for _, g in bad], color="tab:red", zorder=3,
                       label="outside tolerance")
    if result.first_divergence_step is not None:
        for axis in (top, bottom):
            axis.axvline(result.first_divergence_step, color="tab:red", alpha=0.4)
    bottom.set_xlabel("step")
    bottom.set_ylabel("|candidate - baseline|")
    bottom.legend(loc="upper left")
    fig.tight_layout()
    metadata = {"Date": None} if fmt == "svg" else {}
    try:
        fig.savefig(target, format=fmt, metadata=metadata)
    except OSError as exc:
        raise UsageError(f"--plot: cannot write {target}: {exc.strerror or exc}") from None
    return target
