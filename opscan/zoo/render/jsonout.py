"""Zoo JSON: every row, every op with the models that need it, and the run's settings (schema below)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TextIO

from opscan.zoo.render.common import verdict_counts
from opscan.zoo.results import row_to_dict
from opscan.zoo.execution import ZooRun

SCHEMA = "opscan-zoo/2"   # 2: verdicts are the analysis verdict kinds (likely added, incomplete -> unknown)
SCHEMAS_READ = ("opscan-zoo/1", SCHEMA)   # `opscan zoo diff` compares files of either version


def to_dict(run: ZooRun) -> dict:
    return {
        "schema": SCHEMA,
        "meta": run.meta,
        "summary": {"models": len(run.rows), "verdicts": verdict_counts(run)},
        "models": [row_to_dict(row) for row in run.rows],
        "ops": [{**asdict(stat), "models": list(stat.models)} for stat in run.ops],
    }


def render(run: ZooRun, out: TextIO) -> None:
    json.dump(to_dict(run), out, indent=2, sort_keys=True)
    out.write("\n")
