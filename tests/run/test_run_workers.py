"""Training started in worker processes (NOTE [training in worker processes] in
opscan/trace/run/workers.py): in a run of the project's training command the first worker that
trains runs in the run's own process, the others are not started."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from opscan.trace.run.workers import Workers, imitated, trains  # noqa: E402

REPOS = Path(__file__).parent / "repos"


def _train(rank, log):
    log.append(("train", rank))
    torch.zeros(1, requires_grad=True).sum().backward()


def _wait(log):
    log.append(("wait",))


def test_the_first_training_worker_runs_here_and_no_other_starts():
    import multiprocessing

    import torch.multiprocessing as mp

    log: list = []
    workers = Workers()
    with imitated(workers):
        procs = [mp.Process(target=_wait, args=(log,))]
        procs += [multiprocessing.Process(target=_train, args=(rank, log)) for rank in range(3)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        assert not any(p.is_alive() for p in procs)
    assert log == [("train", 0)]
    assert trains(_train) and not trains(_wait)
    assert [n.split(" (")[0] for n in workers.notes()] == [
        "worker process `_train` run in the main process",
        "worker processes not started: `_wait`, `_train` x2"]
    assert mp.Process is multiprocessing.process.BaseProcess or mp.Process.__module__ != __name__


def test_spawn_runs_one_worker_with_rank_zero():
    log: list = []
    workers = Workers()
    with imitated(workers):
        import torch.multiprocessing as mp

        mp.spawn(_train, args=(log,), nprocs=4)
    assert log == [("train", 0)] and workers.notes()[1].endswith("`_train` x3")


class _Manager:
    def train(self, log):
        torch.zeros(1, requires_grad=True).sum().backward()
        log.append(("trained",))


def _main(rank, manager, log):   # the backward pass is in a trainer method, not in this source
    log.append(("main", rank))
    manager.train(log)


def test_spawn_runs_rank_zero_even_when_its_training_is_in_a_method_it_calls():
    log: list = []
    workers = Workers()
    with imitated(workers):
        import torch.multiprocessing as mp

        mp.spawn(_main, args=(_Manager(), log), nprocs=2, join=True)
    assert not trains(_main) and log == [("main", 0), ("trained",)]
    assert workers.notes()[1].endswith("`_main`")


@pytest.mark.slow
def test_an_a3c_style_script_is_traced_through_its_training_worker(tmp_path):
    from opscan.trace.run import run_script

    shutil.copytree(REPOS / "worker_script", tmp_path / "repo")
    root = tmp_path / "repo"
    trace, notes = run_script(str(root / "main.py"), ["--num-processes", "4"], project_root=str(root),
                              cwd=str(root), stand_ins=True, device="cpu")
    assert trace.complete and trace.steps == 1, trace.stopped_at
    ops = {u.op for u in trace.ops}
    assert {"aten::multinomial", "aten::_log_softmax"} <= ops and trace.mode == "train"
    assert any("`train` run in the main process" in n for n in notes)
    assert any(n.endswith("not started: `evaluate`") for n in notes)   # the run ended in the first worker's step
