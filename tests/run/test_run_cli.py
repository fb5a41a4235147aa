"""`opscan run -- python SCRIPT`: the report of `opscan PATH` for an unmodified script's steps."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="module")
def gpt_neuron(tmp_path_factory):
    """`opscan run --format json -- python gpt_train.py` in a project folder (contained child)."""
    pytest.importorskip("torch")
    from opscan.cli import main

    project = tmp_path_factory.mktemp("project")
    (project / "pyproject.toml").write_text('[project]\nname = "tiny-gpt"\nversion = "0"\n')
    shutil.copy(FIXTURES / "gpt_train.py", project / "gpt_train.py")
    out = project / "report.json"
    code = main(["run", "--device", "neuron", "--format", "json", "--output", str(out), "--", "python",
                 str(project / "gpt_train.py"), "--max-iters", "2"])
    return code, json.loads(out.read_text()), project


@pytest.mark.slow
def test_exit_code_is_the_gates(gpt_neuron):
    code, doc, _ = gpt_neuron
    assert doc["findings"], "the script's project is scanned"
    assert all(f["path"] == "gpt_train.py" for f in doc["findings"])
    errors = [f for f in doc["findings"] if f["severity"] == "error"]
    assert code == (1 if errors else 0)


@pytest.mark.slow
def test_ops_are_traced_with_phases_on_the_imitated_device(gpt_neuron):
    _, doc, _ = gpt_neuron
    (trace,) = doc["traces"]
    assert trace["target"] == "script:gpt_train.py" and trace["device"] == "neuron"
    assert trace["complete"] and trace["mode"] == "train"
    phases = {p for op in doc["ops"] for p in op["phases"]}
    assert {"forward", "backward", "optimizer"} <= phases
    names = {op["op"] for op in doc["ops"]}
    # AdamW on the accelerator takes foreach kernels; clipping and GradScaler are in the step
    assert {"aten::_foreach_norm.Scalar", "aten::_amp_update_scale_", "aten::native_dropout"} <= names
    assert all("status" in op for op in doc["ops"])   # checked against the coverage database
    attn = next(op for op in doc["ops"] if op["op"] == "aten::embedding")
    assert any(s["path"] == "gpt_train.py" and s["module"] for s in attn["sources"])


@pytest.mark.slow
def test_host_ops_are_listed_apart(gpt_neuron):
    _, doc, _ = gpt_neuron
    host = {op["op"] for op in doc["host_ops"]}
    assert {"aten::randint", "aten::stack"} <= host   # the batching code runs on the host
    assert "aten::randint" not in {op["op"] for op in doc["ops"]}
    assert all("status" not in op for op in doc["host_ops"])


@pytest.mark.slow
def test_cuda_requests_are_answered_and_reported(gpt_neuron):
    _, doc, _ = gpt_neuron
    notes = "\n".join(doc["notes"])
    assert "torch.cuda.is_available() answered as on the imitated device at gpt_train.py:17" in notes
    assert "autocast('cuda') runs on the imitated device at gpt_train.py:21" in notes
    assert "ended after 1 optimizer step" in notes


def test_an_unanswerable_cuda_call_stops_the_run_at_its_line(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from opscan.trace.run import run_script

    script = tmp_path / "probe.py"
    script.write_text("import torch\nx = torch.ones(2, device='cuda')\n"
                      "props = torch.cuda.get_device_properties(0)\ny = x * 2\n")
    monkeypatch.chdir(tmp_path)
    trace, _ = run_script(str(script), device="neuron", project_root=str(tmp_path))
    assert not trace.complete
    assert "probe.py:3" in trace.stopped_at and "get_device_properties" in trace.stopped_at
    assert "aten::mul.Tensor" not in {u.op for u in trace.ops}


@pytest.mark.parametrize("command, expected", [
    (["--", "python", "train.py", "--lr", "3"], ("train.py", ["--lr", "3"], False, None)),
    (["python3", "-m", "pkg.train", "x"], ("pkg.train", ["x"], True, None)),
    (["torchrun", "--standalone", "--nproc-per-node=4", "train.py", "--b", "2"], ("train.py", ["--b", "2"], False, 4)),
    (["torchrun", "--nproc_per_node", "2", "train.py"], ("train.py", [], False, 2)),
    (["python", "-m", "torch.distributed.run", "--nproc-per-node", "8", "t.py"], ("t.py", [], False, 8)),
    (["train.py"], ("train.py", [], False, None)),
])
def test_commands_are_parsed_as_the_launchers_read_them(command, expected):
    from opscan.commands.run import parse_command

    parsed = parse_command(command)
    assert (parsed["script"], parsed["argv"], parsed["module"], parsed["nproc"]) == expected


def test_no_script_is_a_usage_error(run_cli):
    code, _, err = run_cli("run", "--", "python")
    assert code == 2 and "no script" in err
    code, _, err = run_cli("run", "--", "python", "missing_script.py")
    assert code == 2 and "no such script" in err


def test_a_torchrun_ddp_script_runs_as_rank_0_of_a_fake_process_group(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from opscan.trace.run import run_script

    monkeypatch.chdir(tmp_path)
    trace, notes = run_script(str(FIXTURES / "ddp_train.py"), device="neuron", steps=1, nproc=2,
                              project_root=str(FIXTURES))
    assert trace.complete, trace.stopped_at
    assert "ddp_train.py: rank 0 of 2 on a fake process group" in notes
    ops = {u.op for u in trace.ops}
    assert "c10d::allreduce_" in ops and "aten::_foreach_lerp_.Scalar" in ops


def test_a_trainers_ddp_from_the_distributed_module_is_the_pass_through(tmp_path, monkeypatch):
    """NOTE [a trainer's DistributedDataParallel]: a trainer (Lightning's DDP strategy) binds the class
    from `torch.nn.parallel.distributed` and reads its flags; the real class broadcast fake tensors."""
    pytest.importorskip("torch")
    from opscan.trace.run import run_script

    script = tmp_path / "trainer_ddp.py"
    script.write_text(
        "import torch\n"
        "import torch.distributed as dist\n"
        "from torch.nn.parallel.distributed import DistributedDataParallel\n"
        "dist.init_process_group('nccl')\n"
        "model = torch.nn.Linear(8, 4).cuda()\n"
        "wrapped = DistributedDataParallel(module=model, device_ids=[0], find_unused_parameters=True)\n"
        "assert isinstance(wrapped, torch.nn.parallel.DistributedDataParallel)\n"
        "assert not wrapped.static_graph and wrapped.find_unused_parameters\n"
        "assert wrapped._get_ddp_logging_data().get('can_set_static_graph') is None\n"
        "wrapped.register_comm_hook(None, lambda state, bucket: None)\n"
        "opt = torch.optim.SGD(wrapped.parameters(), lr=0.1)\n"
        "with wrapped.join():\n"
        "    loss = wrapped(torch.randn(2, 8).cuda()).square().mean()\n"
        "loss.backward()\n"
        "opt.step()\n")
    monkeypatch.chdir(tmp_path)
    trace, _ = run_script(str(script), device="neuron", steps=1, nproc=1, project_root=str(tmp_path))
    assert trace.complete, trace.stopped_at
    assert "aten::addmm" in {u.op for u in trace.ops} and trace.steps


@pytest.mark.slow
def test_cuda_spellings_run_on_the_imitated_device_and_compile_runs_eager(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from opscan.trace.run import run_script

    script = tmp_path / "spellings.py"
    script.write_text(
        "import torch\n"
        "model = torch.nn.Linear(4, 2).cuda()\n"
        "model = torch.compile(model)\n"
        "x = torch.randn(3, 4).cuda()\n"
        "assert x.is_cuda and torch.cuda.device_count() == 1\n"
        "with torch.autocast('cuda', dtype=torch.bfloat16):\n"
        "    y = model(x.to(torch.device('cuda')))\n"
        "y.float().sum().backward()\n")
    monkeypatch.chdir(tmp_path)
    trace, notes = run_script(str(script), device="neuron", project_root=str(tmp_path))
    assert trace.complete, trace.stopped_at
    said = "\n".join(notes)
    assert "Module.cuda() runs on the imitated device at spellings.py:2" in said
    assert "torch.compile ran eager" in said and "spellings.py:3" in said
    assert "Tensor.cuda() runs on the imitated device at spellings.py:4" in said
    linear = next(u for u in trace.ops if u.op in ("aten::addmm", "aten::linear"))
    assert "torch.bfloat16" in linear.dtypes and linear.sources[0].path == "spellings.py"
    # Linear's init and randn ran on the host, before .cuda()
    assert {"aten::uniform_", "aten::randn"} <= {u.op for u in trace.host_ops}
