"""`opscan run --device cpu` lists the ops a real CPU run of the same unmodified script dispatches.

Each fixture script is run twice: for real on the CPU by the benchmark recorder
(benchmarks/accuracy/run_real_record.py), and on fake tensors by the engine of `opscan run`; their op-overload
sets must agree to Jaccard >= 0.95 (docs/run.md, "How it is tested").
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _real_recorder():
    spec = importlib.util.spec_from_file_location("run_real_record",
                                                  ROOT / "benchmarks" / "accuracy" / "run_real_record.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def token_file(tmp_path) -> Path:
    """A small raw uint16 token file, as nanoGPT-style data preparation writes it."""
    import numpy as np

    path = tmp_path / "train.bin"
    np.random.default_rng(0).integers(0, 100, size=600).astype(np.uint16).tofile(path)
    return path


def _scripts(token_file: Path) -> dict[str, list[str]]:
    return {"gpt_train.py": ["--max-iters", "3"], "gan_train.py": [], "sgd_loop.py": [],
            "tokens_train.py": ["--data", str(token_file)], "seeded_workers.py": ["--epochs", "2"],
            "lazy_train.py": [], "infinite_loader.py": [], "sparse_graph.py": []}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gpt_train.py", "gan_train.py", "sgd_loop.py", "tokens_train.py",
                                  "seeded_workers.py", "lazy_train.py", "infinite_loader.py", "sparse_graph.py"])
def test_fake_cpu_run_dispatches_the_ops_of_a_real_cpu_run(name, token_file, tmp_path, monkeypatch):
    from opscan.trace.run import run_script

    monkeypatch.chdir(tmp_path)   # the scripts may write files: keep them out of the checkout
    argv = _scripts(token_file)[name]
    script = str(FIXTURES / name)
    recorder = _real_recorder()
    real = recorder.record(script, argv, steps=1)
    trace, _ = run_script(script, argv, device="cpu", steps=1, project_root=str(FIXTURES))
    fake = {u.op for u in trace.ops} | {u.op for u in trace.host_ops}
    assert trace.complete, trace.stopped_at
    assert len(real) >= 20   # the script really ran a training step
    score = recorder.jaccard(real, fake)
    assert score >= 0.95, (sorted(real - fake), sorted(fake - real))
    assert trace.host_ops == ()   # on --device cpu the host is the device: every op is checked


def test_the_run_ends_after_n_steps_of_each_optimizer(tmp_path, monkeypatch):
    from opscan.trace.run import run_script

    monkeypatch.chdir(tmp_path)
    trace, notes = run_script(str(FIXTURES / "gan_train.py"), device="cpu", steps=1, project_root=str(FIXTURES))
    assert "2 optimizer steps of 2 optimizers" in notes[0]
    assert trace.mode == "train" and trace.complete
    phases = {p for u in trace.ops for p in u.phases}
    assert {"forward", "backward", "optimizer"} <= phases
    adam = [u for u in trace.ops if u.op.startswith("aten::addcdiv") or u.op.startswith("aten::_foreach_addcdiv")]
    assert adam and all(u.phases == ("optimizer",) for u in adam)


def test_a_script_without_torch_optim_runs_to_its_end(tmp_path, monkeypatch):
    from opscan.trace.run import run_script

    monkeypatch.chdir(tmp_path)
    trace, notes = run_script(str(FIXTURES / "sgd_loop.py"), device="cpu", steps=1, project_root=str(FIXTURES))
    assert "ran to its end" in notes[0] and "no torch.optim optimizer" in notes[0]
    sub = next(u for u in trace.ops if u.op == "aten::sub_.Tensor")
    assert sub.phases == ("optimizer",)   # the hand-written update follows backward
    # its weights are host tensors made by randn and zeros, which keep their values on the CPU (NOTE
    # [host values]): acc.item() is computed, as in a real run, not a stand-in
    assert not any(s.op == "aten::_local_scalar_dense" for s in trace.stand_ins)


@pytest.mark.slow
def test_a_loop_that_stand_ins_never_end_has_its_exit_forced(tmp_path, monkeypatch):
    """`if loss < 1e-3: break` on a `.item()` stand-in: where the run would stop (StandInLoop), the
    stand-in at that line becomes 0.0, the loop ends and the script's last lines run (NOTE [forced
    loop exits]); the threshold is lowered so the test stays quick."""
    from opscan.trace import recorder as recorders
    from opscan.trace.run import run_script

    monkeypatch.chdir(tmp_path)
    script = str(FIXTURES / "converge_loop.py")
    real = _real_recorder().record(script, [], steps=None)
    monkeypatch.setattr(recorders, "MAX_STAND_INS_PER_SITE", 20)
    trace, notes = run_script(script, device="cpu", steps=None, project_root=str(FIXTURES))
    fake = {u.op for u in trace.ops}
    assert trace.complete, trace.stopped_at
    assert _real_recorder().jaccard(real, fake) >= 0.95, (sorted(real - fake), sorted(fake - real))
    assert "aten::unbind.int" in fake   # the weights printed after the loop
    line = next(i for i, text in enumerate(Path(script).read_text().splitlines(), 1) if ".item()" in text)
    forced = [s for s in trace.stand_ins if s.kind == "loop-exit"]
    assert [(s.source.line, s.count) for s in forced] == [(line, 1)]
    assert forced[0].value.startswith("0.0")
    assert any(f"loop exit forced at converge_loop.py:{line} after 20 iterations" in n for n in notes), notes


def test_a_loop_that_the_forced_exit_does_not_end_still_stops(tmp_path, monkeypatch):
    from opscan.trace import recorder as recorders
    from opscan.trace.run import run_script

    script = tmp_path / "forever.py"
    script.write_text("import torch\nw = torch.nn.Linear(2, 1)\nwhile True:\n"
                      "    acc = w(torch.ones(1, 2)).sum().item()\n    if acc > 2.0:\n        break\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(recorders, "MAX_STAND_INS_PER_SITE", 20)
    trace, _ = run_script(str(script), device="cpu", steps=None, project_root=str(tmp_path))
    assert not trace.complete and "StandInLoop" in trace.stopped_at
