"""Helpers for the coverage-db tests: a small valid release document, written with opscan's writer."""

from __future__ import annotations

import copy
from pathlib import Path

from opscan.db.writer import dump
from opscan.records import EVIDENCE_KINDS, STATUSES

BASE = {
    "schema_version": 1, "backend": "testline", "release": "1.0.0", "title": "a test release",
    "released": "2026-01-01", "device": "neuron", "dispatch_key": "PrivateUse1",
    "packages": [{"name": "test-backend", "version": "1.0.0", "torch": "2.13"}],
    "op_names": "overload", "kernel_list": "complete",
    "statuses": dict(STATUSES), "evidence_kinds": dict(EVIDENCE_KINDS),
    "sources": [{"id": "probe", "kind": "probed", "text": "probed on test-backend 1.0.0",
                 "install": "test-backend 1.0.0 / torch 2.13.0", "date": "2026-01-01"},
                {"id": "guess", "kind": "inferred", "text": "opscan guessed"}],
    "unlisted": {"status": "cpu-fallback", "evidence": ["probe"], "confidence": "high",
                 "note": "no kernel; catch-all fallback"},
    "ops": [
        {"op": "aten::add.out", "status": "native", "evidence": ["probe"], "confidence": "high"},
        {"op": "aten::empty.memory_format", "status": "native", "evidence": ["probe"], "confidence": "high"},
        {"op": "aten::mm", "status": "native", "evidence": ["probe"], "confidence": "high"},
        {"op": "aten::relu", "status": "limited", "evidence": ["probe"], "confidence": "high",
         "note": "falls back for float64"},
    ],
}


def doc(**changes) -> dict:
    """A copy of BASE with top-level keys replaced."""
    out = copy.deepcopy(BASE)
    out.update(changes)
    return out


def write(tmp_path: Path, document: dict | None = None, name: str = "rel.yaml") -> Path:
    """Write `document` (default BASE) with opscan's writer and return the path."""
    path = tmp_path / name
    path.write_text(dump(document or BASE), encoding="utf-8")
    return path
