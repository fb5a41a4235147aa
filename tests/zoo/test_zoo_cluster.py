"""The cluster path: a Dask LocalCluster on loopback, with per-model containment inside the worker."""

from __future__ import annotations

import pytest
from tests.support.release import static_release
from tests.support.zoo_fakes import FAKE_TRACER, STATUSES

from opscan.containment.process import Limits
from opscan.zoo.execution import run_zoo
from opscan.zoo.selection import ZooTarget

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def scheduler():
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp",
                                       host="127.0.0.1", dashboard_address=None)
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


def _targets(*names: str) -> list[ZooTarget]:
    return [ZooTarget(name=n, target=n, family="test", config_hash=n) for n in names]


@pytest.mark.slow
def test_cluster_rows_match_local_and_a_segfault_does_not_kill_the_worker(scheduler):
    cov = static_release(STATUSES, "fakeneuron==1.0")
    limits = Limits(timeout=2, max_memory=None, start_method="forkserver")
    names = ("fake:alpha", "fake:beta", "fake:segfault", "fake:hang")
    remote = run_zoo(_targets(*names), cov, tracer=FAKE_TRACER, workers=2, limits=limits, cluster=scheduler)
    local = run_zoo(_targets(*names), cov, tracer=FAKE_TRACER, workers=2, limits=limits)
    assert remote.meta["engine"].startswith("dask")
    assert [(r.name, r.status, r.verdict, r.ops) for r in remote.rows] == \
           [(r.name, r.status, r.verdict, r.ops) for r in local.rows]
    assert {r.name: r.status for r in remote.rows}["fake:segfault"] == "crash"
    # the worker (a thread of this very process) survived: it still runs work
    again = run_zoo(_targets("fake:gamma"), cov, tracer=FAKE_TRACER, limits=limits, cluster=scheduler)
    assert again.rows[0].verdict == "unknown"   # an incomplete trace is not proven


@pytest.mark.slow
def test_cluster_address_from_environment(scheduler, monkeypatch, run_cli, tmp_path):
    import opscan.db as cov

    monkeypatch.setattr(cov, "load_release", lambda spec=None, db_file=None: static_release(STATUSES, "x==1"))
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", scheduler)
    code, out, _err = run_cli("zoo", "fake:alpha", "--tracer", FAKE_TRACER, "--no-cache", "--quiet")
    assert code == 0
    assert f"engine dask ({scheduler})" in " ".join(out.split())


def test_unreachable_scheduler_is_a_usage_error(run_cli, monkeypatch):
    import opscan.db as cov

    monkeypatch.setattr(cov, "load_release", lambda spec=None, db_file=None: static_release(STATUSES, "x==1"))
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code, _out, err = run_cli("zoo", "fake:alpha", "--tracer", FAKE_TRACER, "--no-cache", "--quiet",
                                 "--cluster", "tcp://127.0.0.1:9")
    assert code == 2
    assert "Dask scheduler" in err


@pytest.mark.slow
def test_local_process_cluster_isolates_inside_daemonic_workers(run_cli, monkeypatch, tmp_path):
    """`--cluster local`: real (daemonic) worker processes; a segfault is a row, the run goes on."""
    import json

    import opscan.db as cov

    monkeypatch.setattr(cov, "load_release", lambda spec=None, db_file=None: static_release(STATUSES, "x==1"))
    out = tmp_path / "zoo.json"
    code, _, err = run_cli("zoo", "fake:alpha,fake:segfault,fake:beta", "--tracer", FAKE_TRACER, "--no-cache",
                           "--quiet", "--cluster", "local", "--workers", "1", "--json", str(out))
    assert code == 0, err
    data = json.loads(out.read_text())
    assert {m["name"]: m["status"] for m in data["models"]} == {
        "fake:alpha": "ok", "fake:beta": "ok", "fake:segfault": "crash"}
    assert data["meta"]["engine"] == "dask (local)"
