"""The zoo run: cache look-ups, contained traces on a local pool or a cluster, then rows and op ranking."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, fields
from importlib import metadata

from opscan import __version__
from opscan.config import ModelConfig
from opscan.containment.process import Limits, default_max_memory
from opscan.pipeline.phases import tracer_options
from opscan.records import DeviceProfile, TargetKind
from opscan.zoo.cache import UNCACHED, Cache
from opscan.zoo.jobs import DEFAULT_TRACER, Job, Outcome, trace_job, tracer_spec
from opscan.zoo.results import ROW_FORMAT, OpStat, Row, build_row, op_stats, row_from_dict, row_to_dict
from opscan.zoo.schedule import longest_first
from opscan.zoo.selection import ZooTarget


# Each model is traced in a forkserver child (torch and transformers preloaded once) under these
# limits unless the caller gives others: opscan zoo's --timeout default, and opscan's one
# --max-memory default (3/4 of physical memory, never above an existing limit).
ZOO_TIMEOUT = 300.0


def default_limits() -> Limits:
    return Limits(timeout=ZOO_TIMEOUT, max_memory=default_max_memory(), start_method="forkserver")


@dataclass(frozen=True)
class ZooRun:
    """A finished zoo run: one row per model, the ranked ops, and what it ran with."""

    rows: tuple[Row, ...]
    ops: tuple[OpStat, ...]
    meta: dict = field(default_factory=dict)


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "none"


def toolchain() -> dict[str, str]:
    """The versions a trace depends on (read without importing torch)."""
    return {"opscan": __version__, "torch": _version("torch"), "transformers": _version("transformers")}


def trace_key(target: ZooTarget, options: dict, tracer: str, tools: dict[str, str]) -> str:
    """Cache key of a raw trace: model config, tracer options and toolchain; not the db release."""
    material = json.dumps({"config": target.config_hash or target.target, "target": target.target,
                           "options": options, "tracer": tracer, "tools": tools},
                          sort_keys=True, default=str)
    return hashlib.sha256(material.encode()).hexdigest()[:24]


# What `run_zoo(options=...)` may hold: the ModelConfig fields every model of the run shares
# (mode, batch, seq_len, ...), and the two tracer options that are not a model's configuration.
_MODEL_FIELDS = frozenset(f.name for f in fields(ModelConfig)) - {"target"}
_RUN_FIELDS = frozenset({"device", "profile"})


def job_options(target: ZooTarget, options: dict, tracer: str) -> dict:
    """The tracer options of one target, through `phases.tracer_options` (the one translation of a
    ModelConfig, as for `opscan PATH` and `opscan trace`); the zoo's models belong to no project.
    The default tracer fills unset fields of the default configs the zoo wrote (`model_type` set;
    opscan/targets/hf/repair.py), never of a user's config."""
    unknown = set(options) - _MODEL_FIELDS - _RUN_FIELDS
    if unknown:
        raise ValueError(f"zoo options not understood: {sorted(unknown)}")
    model = ModelConfig(target=target.target, **{k: v for k, v in options.items() if k in _MODEL_FIELDS})
    extra = {k: v for k, v in options.items() if k == "device"}
    if tracer == DEFAULT_TRACER and target.model_type and model.target.kind is TargetKind.HF:
        extra["fill_unset"] = True
    return tracer_options(model, None, options.get("profile"), **extra)


def _local(jobs: list[Job], tracer: str, workers: int, limits: Limits) -> Iterator[Outcome]:
    """A process pool: `workers` threads, each supervising one contained child process at a time."""
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(trace_job, job, tracer, limits) for job in jobs]
        for future in as_completed(futures):
            yield future.result()


def run_zoo(targets: list[ZooTarget], release, *, options: dict | None = None,
            tracer: str | Callable = DEFAULT_TRACER, workers: int = 2, limits: Limits | None = None,
            cache: Cache | None = None, cluster: str | None = None,
            progress: Callable[[int, int, Row], None] | None = None) -> ZooRun:
    """Trace every target in a contained child (or take it from the cache) and judge it against `release`
    (an opscan.db Release; its `key` changes with its content, so an edited release re-judges rows).
    `cluster` is a Dask scheduler address (or "local" for a LocalCluster); None runs locally.
    """
    options = dict(options or {})
    limits = limits or default_limits()
    spec = tracer_spec(tracer)
    tools = toolchain()
    cache = cache or Cache(None, enabled=False)
    start = time.perf_counter()
    rows: dict[str, Row] = {}
    pending: dict[str, tuple[ZooTarget, str]] = {}
    jobs: list[Job] = []
    stats = {"traced": 0, "trace_cache": 0, "row_cache": 0}
    row_key = f"{release.key}-{ROW_FORMAT}"   # rows are judged again when the release or the row changes
    total = len(targets)

    def done(row: Row) -> None:
        rows[row.name] = row
        if progress:
            progress(len(rows), total, row)

    for target in targets:
        if target.error:
            done(build_row(target, None, release))
            continue
        target_options = job_options(target, options, spec)
        key = trace_key(target, target_options, spec, tools)
        cached_row = cache.get_row(key, row_key)
        if cached_row is not None:
            stats["row_cache"] += 1
            done(row_from_dict({**cached_row, "cached": True}))
            continue
        outcome = cache.get_outcome(key)
        if outcome is not None:
            stats["trace_cache"] += 1
            row = build_row(target, outcome, release, cached=True)
            cache.put_row(key, row_key, row_to_dict(row))
            done(row)
            continue
        pending[target.name] = (target, key)
        jobs.append(Job(target.name, target.target, tuple(sorted(target_options.items()))))

    jobs = longest_first(jobs, lambda job: job.name, lambda job: cache.seconds(pending[job.name][1]))
    engine = "local"
    if jobs:
        if cluster:
            from opscan.zoo.cluster import run_on_dask

            outcomes, engine = run_on_dask(jobs, spec, cluster, workers, limits), f"dask ({cluster})"
        else:
            outcomes = _local(jobs, spec, workers, limits)
        for outcome in outcomes:
            target, key = pending[outcome.name]
            stats["traced"] += 1
            cache.put_outcome(key, outcome)
            row = build_row(target, outcome, release)
            if outcome.status not in UNCACHED:
                cache.put_row(key, row_key, row_to_dict(row))
            done(row)

    ordered = tuple(rows[t.name] for t in sorted(targets, key=lambda t: t.name) if t.name in rows)
    shown = {k: (v.name if isinstance(v, DeviceProfile) else v) for k, v in options.items()}   # JSON-able
    meta = {"backend": release.spec, "tools": tools, "options": shown, "workers": workers,
            "engine": engine, "timeout": limits.timeout, "max_memory": limits.max_memory,
            "wall_seconds": round(time.perf_counter() - start, 1), **stats}
    return ZooRun(ordered, tuple(op_stats(list(ordered), release)), meta)
