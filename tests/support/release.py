"""A coverage release written from a plain op -> status dict, for tests that need a small db.Release.

The Release is the one coverage protocol (opscan/db/release.py): tests build a real one through
opscan's own writer and strict loader instead of a stand-in object.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from opscan.db import load_file
from opscan.db.release import Release
from opscan.db.writer import dump
from opscan.records import EVIDENCE_KINDS, STATUSES

SOURCE_TEXT = {"probed": "probed on fakeneuron 1.0", "source-snapshot": "fakeneuron source tree",
               "documented": "fakeneuron docs", "inferred": "opscan guessed"}


SOURCE_FIELDS = {"probed": {"install": "fakeneuron 1.0 / torch 2.13.0", "date": "2026-01-01", "compared": True},
                 "source-snapshot": {"repo": "fakeneuron", "commit": "0" * 40},
                 "documented": {"url": "https://example.org/fakeneuron", "date": "2026-01-01"}, "inferred": {}}


def static_release(statuses: dict[str, str], spec: str = "fakeneuron==1.0", *, default: str = "unknown",
                   kind: str = "source-snapshot", confidence: str = "high", parts: dict | None = None,
                   folder: Path | None = None, no_kernel: dict | None = None) -> Release:
    """A release listing `statuses` (ops not listed: `default`), every entry backed by one source of `kind`.

    A `composite` op expands into `parts[op]` (default: the first op listed `native`), as the
    loader requires; a `limited` op gets a note. `no_kernel` is the file's `no_kernel:` rule (its
    evidence defaults to the one source).
    """
    backend, release = spec.split("==")
    source = {"id": "src", "kind": kind, "text": SOURCE_TEXT[kind], **SOURCE_FIELDS[kind]}
    native = sorted(op for op, status in statuses.items() if status == "native")

    def entry(op: str, status: str) -> dict:
        item = {"op": op, "status": status, "evidence": ["src"], "confidence": confidence}
        if status == "composite":
            item["parts"] = list((parts or {}).get(op) or native[:1])
        if status == "limited":
            item["note"] = "limited in this test release"
        return item
    document = {
        "schema_version": 1, "backend": backend, "release": release, "title": f"test release {spec}",
        "released": "2026-01-01", "device": "neuron", "dispatch_key": "PrivateUse1",
        "op_names": "overload", "kernel_list": "partial",
        "statuses": dict(STATUSES), "evidence_kinds": dict(EVIDENCE_KINDS), "sources": [source],
        "unlisted": {"status": default, "evidence": ["src"], "confidence": "low", "note": "not listed"},
        "ops": [entry(op, status) for op, status in sorted(statuses.items())],
    }
    if no_kernel is not None:
        document["no_kernel"] = {"evidence": ["src"], **no_kernel}
    folder = Path(folder or tempfile.mkdtemp(prefix="opscan-release-"))
    path = folder / f"{backend}-{release}.yaml"
    path.write_text(dump(document), encoding="utf-8")
    return load_file(path)
