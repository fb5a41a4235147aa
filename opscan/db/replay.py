"""`opscan db probe --report`: replay a report's ops with its dtypes on the live backend into a release file."""

from __future__ import annotations

import importlib
import json
import time
from pathlib import Path

from opscan.db.probe import SampleResult, fallback_row, probe, run_samples
from opscan.records import Status
from opscan.errors import UsageError

# NOTE [model replay]
# A report's JSON (`opscan PATH --format json`, docs/json.md) lists every traced op with the dtypes
# of the tensors its calls took or returned (`ops[].dtypes`), but not their shapes. So each op is
# replayed per dtype on the sample inputs of opscan/db/samples.py (small shapes, several variants,
# NOTE [probe samples]) -- the op and dtypes exactly the model's, the shapes shrunk to samples --
# on the live backend and on the CPU, and compared (probe.run_samples). The release file is the
# probe's (issue 36): every registered kernel (`native`, medium: registered, not run) and its
# no-kernel answer (`kernel_list: complete`), so that re-checking the model with it (`opscan PATH
# --db FILE`, which traces again and may decompose an op differently, or look up a composite's
# parts) never calls a registered op it did not replay `unknown`; the model's ops replace those
# entries with what the replay measured:
#   - every dtype matched the CPU: `native`, high, evidence `probe` + `samples` (compared: true),
#     which the verdict accepts for `ready`;
#   - fell back for every dtype: `cpu-fallback`; for some: `limited`, the dtypes in the note;
#   - wrong or narrowed results: `limited` with the measured error, plus a `known_failures` row
#     per (op, dtype), so that `opscan PATH --db FILE` is not `ready` and names the op;
#   - ran but nothing comparable (random ops), or no sample accepted: `native` on the `probe`
#     evidence alone (not compared: `likely`), or `unknown`.
# Ops outside `aten::` (custom kernels) are not replayed: they stay unlisted (`unknown`).
DEFAULT_DTYPE = "float32"


def report_ops(path: Path) -> dict[str, tuple[str, ...]]:
    """op -> dtypes (without "torch.") of every traced aten op in a report's JSON."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--report {path}: cannot read it as a report's JSON ({exc})") from None
    ops = doc.get("ops") if isinstance(doc, dict) else None
    if not isinstance(ops, list):
        raise UsageError(f"--report {path}: no `ops` list (write it with `opscan PATH --format json`)")
    import torch

    out: dict[str, tuple[str, ...]] = {}
    for item in ops:
        op = item.get("op", "") if isinstance(item, dict) else ""
        if not op.startswith("aten::"):
            continue
        names = [str(d).removeprefix("torch.") for d in item.get("dtypes") or ()]
        dtypes = tuple(sorted({d for d in names if isinstance(getattr(torch, d, None), torch.dtype)}))
        out[op] = dtypes or (DEFAULT_DTYPE,)
    if not out:
        raise UsageError(f"--report {path}: the report traced no aten op (trace a model first)")
    return dict(sorted(out.items()))


def replay(report: Path, import_module: str | None = None, name: str | None = None,
           release: str | None = None, today: str | None = None) -> tuple[dict, float]:
    """(the release document of the report's ops replayed on this backend, seconds per op)."""
    ops = report_ops(report)
    doc = probe(import_module, samples=False, name=name, release=release, today=today)
    import torch

    device = torch._C._get_privateuse1_backend_name()
    module = importlib.import_module(import_module) if import_module else None
    start = time.perf_counter()
    results = {op: run_samples([op], device, dtypes, module).get(op) for op, dtypes in ops.items()}
    per_op = (time.perf_counter() - start) / len(ops)
    probe_source = doc["sources"][0]
    sources = [probe_source, {
        "id": "samples", "kind": "probed", "compared": True, "date": probe_source["date"],
        "install": probe_source["install"],
        "text": f"the ops of {report.name} replayed per traced dtype on sample inputs on "
                f"{probe_source['text'].removeprefix('probed on ')} and compared with the CPU"}]
    entries, failures = {e["op"]: e for e in doc["ops"]}, []
    counts: dict[str, int] = {}
    for op, dtypes in ops.items():
        entry, rows = _entry(op, dtypes, results[op])
        entries[op] = entry
        failures.extend(rows)
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    doc.update(
        title=doc["title"].replace(", probed ", f", {report.name} replayed "),
        sources=sources, ops=[entries[op] for op in sorted(entries)],
        notes=[f"The {len(ops)} aten ops of {report.name} replayed on sample inputs (NOTE [model replay] "
               "in opscan/db/replay.py: the report's dtypes, sample shapes) and compared with the CPU: "
               + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + "; every other registered "
               "kernel is listed as the probe read it (registered, not run).",
               *doc["notes"][:2],
               f"Replay time: {per_op:.3f} s per op on this install."])
    if failures:
        doc["known_failures"] = sorted(failures, key=lambda f: (f["packet"], f["dtype"]))
    fallbacks = [fallback_row(op, results[op]) for op in sorted(ops)
                 if Status(entries[op]["status"]) is Status.LIMITED]
    if any(fallbacks):   # per dtype, so a model calling it with one of them gets it as cpu-fallback
        doc["dtype_fallbacks"] = [row for row in fallbacks if row]
    return doc, per_op



def _entry(op: str, dtypes: tuple[str, ...], result: SampleResult | None) -> tuple[dict, list[dict]]:
    """The release entry of one replayed op and its known-failure rows (NOTE [model replay])."""
    base = {"op": op, "evidence": ["probe", "samples"]}
    if result is None:
        return {"op": op, "status": "unknown", "evidence": ["probe"], "confidence": "low",
                "note": f"no sample input was accepted for {', '.join(dtypes)}: not replayed"}, []
    if result.fell_back and not result.ran:
        return dict(base, status="cpu-fallback", confidence="high",
                    note=f"fell back to CPU for {', '.join(result.fell_back)}"), []
    bad = {**{d: f"wrong results ({e} vs CPU)" for d, e in result.wrong.items()},
           **{d: f"computed at lower precision ({e} vs CPU)" for d, e in result.narrowed.items()}}
    problems = [f"falls back to CPU for {', '.join(result.fell_back)}"] if result.fell_back else []
    problems += [f"{d}: {what}" for d, what in sorted(bad.items())]
    packet = op.removeprefix("aten::").partition(".")[0]
    rows = [{"packet": f"aten::{packet}", "dtype": d, "ops": [op], "evidence": ["samples"],
             "tests": [f"opscan db probe --report ({op}, {d})"], "reasons": [what]}
            for d, what in sorted(bad.items())]
    if problems:
        return dict(base, status="limited", confidence="high", note="; ".join(problems)), rows
    if result.matched and set(result.matched) == set(result.ran):
        return dict(base, status="native", confidence="high"), []
    return {"op": op, "status": "native", "evidence": ["probe"], "confidence": "medium",
            "note": "ran on the device; no result could be compared with the CPU"}, []
