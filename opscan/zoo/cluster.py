"""The cluster path: the same contained traces, scheduled by Dask distributed (optional extra)."""

from __future__ import annotations

import os
from collections.abc import Iterator

from opscan.errors import UsageError
from opscan.zoo.jobs import Job, Outcome, trace_job
from opscan.containment.outcome import TraceStatus

ENV_VAR = "DASK_SCHEDULER_ADDRESS"


def address_from_env() -> str | None:
    """The scheduler address Dask itself reads, if set."""
    return os.environ.get(ENV_VAR) or None


def run_on_dask(jobs: list[Job], tracer: str, address: str, workers: int, limits) -> Iterator[Outcome]:
    """Submit one task per model; each task traces in a child process of the worker (containment holds).

    `address` is a scheduler address (tcp://host:8786) or "local" to start a loopback LocalCluster
    with `workers` single-threaded worker processes.
    """
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError as exc:
        raise UsageError("--cluster needs Dask distributed: pip install 'opscan-neuron[cluster]'") from exc
    cluster = None
    if address == "local":
        cluster = LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None)
        client = Client(cluster)
    else:
        import dask

        try:
            client = Client(address, timeout=dask.config.get("distributed.comm.timeouts.connect"))
        except (OSError, TimeoutError) as exc:
            raise UsageError(f"cannot reach the Dask scheduler at {address}: {exc}") from exc
    try:
        futures = client.map(trace_job, jobs, tracer=tracer, limits=limits, pure=False,
                             key=[f"opscan-zoo-{i}-{job.name}" for i, job in enumerate(jobs)])
        names = {future.key: job.name for future, job in zip(futures, jobs)}
        for future in as_completed(futures):
            try:
                yield future.result()
            except Exception as exc:  # noqa: BLE001 - a lost worker is this model's row
                yield Outcome(names[future.key], TraceStatus.CRASH, None,
                              f"cluster task failed: {type(exc).__name__}: {exc}"[:300])
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
