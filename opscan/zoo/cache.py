"""On-disk cache: raw traces keyed by model and toolchain; coverage rows keyed by trace and db release."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

from opscan.records import (
    CompileForecast,
    CompileStep,
    ModelTrace,
    NewSignature,
    OpSource,
    OpUsage,
    Shrink,
    StandIn,
    VaryingOp,
    split_stop,
)
from opscan.zoo.jobs import Outcome

# 2: traces carry supplied_fakes; older traces stopped where opscan now supplies a kernel
# 3: outcomes carry error_types, rows their stop class; stand-ins for boolean masks, all() and split sizes
# 4: tracer options built by phases.tracer_options (as for `opscan PATH`): every option spelt out,
#    so every trace key changed; older entries are not read
CACHE_FORMAT = 4
# Outcomes that depend on the limits or the machine's load are traced again on the next run.
UNCACHED = frozenset({"timeout", "out-of-memory", "crash"})


def default_dir() -> Path:
    """$OPSCAN_CACHE_DIR/zoo, else $XDG_CACHE_HOME/opscan/zoo, else ~/.cache/opscan/zoo."""
    if os.environ.get("OPSCAN_CACHE_DIR"):
        return Path(os.environ["OPSCAN_CACHE_DIR"]) / "zoo"
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "opscan" / "zoo"


def trace_to_dict(trace: ModelTrace) -> dict:
    """A JSON-able dict of a ModelTrace (round-trips through trace_from_dict)."""
    return asdict(trace)


def _source(data: dict | None) -> OpSource | None:
    return OpSource(**data) if data else None


def trace_from_dict(data: dict) -> ModelTrace:
    """Rebuild a ModelTrace from trace_to_dict's output."""
    ops = tuple(OpUsage(**{**u, "phases": tuple(u["phases"]), "dtypes": tuple(u["dtypes"]),
                           "modes": tuple(u["modes"]),
                           "sources": tuple(_source(s) for s in u["sources"]),
                           "step_shape_bytes": tuple(tuple(row) for row in u.get("step_shape_bytes", ())),
                           "dtype_sources": tuple((d, tuple(_source(s) for s in found))
                                                  for d, found in u.get("dtype_sources", ()))}) for u in data["ops"])
    stand_ins = tuple(StandIn(**{**s, "source": _source(s.get("source"))}) for s in data["stand_ins"])
    shrink = Shrink(**data["shrink"]) if data.get("shrink") else None
    if "stop_hint" not in data:   # cached before the hint had its own field (NOTE [stop and hint])
        data = {**data, **dict(zip(("stopped_at", "stop_hint"), split_stop(data.get("stopped_at", ""))))}
    return ModelTrace(**{**data, "ops": ops, "stand_ins": stand_ins, "shrink": shrink,
                         "supplied_fakes": tuple(data.get("supplied_fakes", ())),
                         "compile": _compile(data.get("compile"))})


def _compile(data: dict | None) -> CompileForecast | None:
    """A trace's compile forecast from its dict (None in traces cached before it)."""
    if not data:
        return None
    steps = tuple(CompileStep(
        signatures=tuple(step["signatures"]), host_signatures=tuple(step["host_signatures"]),
        phases=tuple((phase, count) for phase, count in step["phases"]),
        new=tuple(NewSignature(**{**n, "phases": tuple(n["phases"]), "source": _source(n["source"]),
                                  "origin": _source(n["origin"])}) for n in step["new"]))
        for step in data["steps"])
    varying = tuple(VaryingOp(**{**v, "origin": _source(v["origin"]),
                                 "sources": tuple(_source(s) for s in v["sources"]),
                                 "steps": tuple(v["steps"])}) for v in data["varying"])
    return CompileForecast(steps, varying, data.get("likely_new", 0))


class Cache:
    """Two layers under one folder: traces/ (expensive, db-independent) and rows/ (per db release)."""

    def __init__(self, root: Path | None, enabled: bool = True) -> None:
        self.root = Path(root) if root else default_dir()
        self.enabled = enabled

    def _read(self, path: Path, always: bool = False) -> dict | None:
        if not (self.enabled or always) or not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # a torn or foreign file is a miss, never an error
        return data if data.get("cache_format") == CACHE_FORMAT else None

    def _write(self, path: Path, data: dict) -> None:
        if not self.enabled:
            return
        from opscan.fsutil import atomic_write

        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"cache_format": CACHE_FORMAT, **data}, sort_keys=True))

    def get_outcome(self, key: str) -> Outcome | None:
        data = self._read(self.root / "traces" / f"{key}.json")
        if data is None:
            return None
        trace = trace_from_dict(data["trace"]) if data.get("trace") else None
        return Outcome(data["name"], data["status"], trace, data["error"], data["seconds"],
                       tuple(data.get("error_types", ())))

    def seconds(self, key: str) -> float | None:
        """How long the cached trace under `key` took, if one is kept; read even when the cache is
        disabled (it only orders the run: NOTE [longest first] in opscan/zoo/schedule.py)."""
        data = self._read(self.root / "traces" / f"{key}.json", always=True)
        value = data.get("seconds") if data else None
        return float(value) if isinstance(value, (int, float)) else None

    def put_outcome(self, key: str, outcome: Outcome) -> None:
        if outcome.status in UNCACHED:
            return
        self._write(self.root / "traces" / f"{key}.json", {
            "name": outcome.name, "status": outcome.status, "error": outcome.error,
            "seconds": outcome.seconds, "error_types": list(outcome.error_types),
            "trace": trace_to_dict(outcome.trace) if outcome.trace else None})

    def get_row(self, key: str, release_key: str) -> dict | None:
        data = self._read(self.root / "rows" / f"{key}-{release_key}.json")
        return data.get("row") if data else None

    def put_row(self, key: str, release_key: str, row: dict) -> None:
        self._write(self.root / "rows" / f"{key}-{release_key}.json", {"row": row})
