"""`opscan trace --fsdp N`: rank 0 of an FSDP2 job on a fake process group (collectives, copy ops)."""

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from opscan.errors import UsageError  # noqa: E402
from opscan.targets import trace_target  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LLAMA = f"hf:{ROOT / 'examples/models/hf/llama-tiny'}"


@pytest.fixture(scope="module")
def plain():
    return trace_target(LLAMA)


@pytest.fixture(scope="module")
def sharded(plain):   # after `plain`: the non-FSDP trace below checks the group left nothing behind
    return trace_target(LLAMA, fsdp=2)


def _ops(trace):
    return {u.op: u for u in trace.ops}


@pytest.mark.slow
def test_collectives_in_their_phases(sharded):
    assert sharded.complete, sharded.stopped_at
    ops = _ops(sharded)
    gather, scatter = ops["c10d::_allgather_base_"], ops["c10d::_reduce_scatter_base_"]
    # all-gather before each block's forward and again (re-gather) before its backward
    assert gather.phases == ("forward", "backward")
    assert scatter.phases == ("backward",)   # gradients are reduce-scattered to the shards
    # 2 decoder layers + root: 3 gathers in forward, the 2 resharded layers again in backward
    assert gather.count == 5 and scatter.count == 3
    for name in ("fsdp::all_gather_copy_in", "fsdp::split_with_sizes_copy", "fsdp::chunk_cat"):
        assert name in ops
    # collectives and FSDP's copy ops are PyTorch's own namespaces, not user kernels
    assert not any(u.custom for u in sharded.ops)


@pytest.mark.slow
def test_superset_of_the_plain_step(plain, sharded):
    assert plain.complete
    missing = set(_ops(plain)) - set(_ops(sharded))
    assert missing == set()
    added = {op.split("::")[0] for op in set(_ops(sharded)) - set(_ops(plain))}
    assert {"c10d", "fsdp"} <= added


@pytest.mark.slow
def test_deterministic_and_group_is_gone(plain, sharded):
    import torch.distributed as dist

    assert not dist.is_initialized()
    again = trace_target(LLAMA)
    assert again.ops == plain.ops          # a later plain trace in this process is unchanged
    assert not any(u.op.startswith(("c10d::", "fsdp::")) for u in again.ops)
    assert not hasattr(torch.neuron, "Stream")   # the stream shim is removed too
    twice = trace_target(LLAMA, fsdp=2)
    assert twice.ops == sharded.ops


def test_root_only_sharding(tmp_path):
    (tmp_path / "mlp.py").write_text(
        "import torch\n"
        "from torch import nn\n\n"
        "class MLP(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.a = nn.Linear(16, 32)\n"
        "        self.b = nn.Linear(32, 4)\n\n"
        "    def forward(self, x):\n"
        "        return self.b(torch.relu(self.a(x))).sum()\n\n"
        "def example_inputs():\n"
        "    return (torch.randn(8, 16),)\n")
    trace = trace_target(f"{tmp_path / 'mlp.py'}:MLP", fsdp=4, project_root=str(tmp_path),
                         inputs=("0:float32[8,16]",))
    assert trace.complete, trace.stopped_at
    ops = _ops(trace)
    assert ops["c10d::_allgather_base_"].count == 1      # the root's one group, gathered once
    assert ops["c10d::_reduce_scatter_base_"].phases == ("backward",)


@pytest.mark.parametrize("value", [0, 1, -3, True, "2"])
def test_bad_world_size_api(value):
    with pytest.raises(UsageError, match="--fsdp"):
        trace_target(LLAMA, fsdp=value)


def test_fsdp_needs_a_device_type():
    with pytest.raises(UsageError, match="--fsdp needs --device"):
        trace_target(LLAMA, fsdp=2, device="meta")


@pytest.mark.parametrize("value", ["0", "1", "-3", "two"])
def test_bad_world_size_cli(run_cli, value):
    code, out, err = run_cli("trace", LLAMA, "--fsdp", value)
    assert code == 2 and "--fsdp" in err and out == ""


@pytest.mark.slow
def test_cli_json_and_coverage(run_cli, tmp_path):
    out_file = tmp_path / "r.json"
    code, _, err = run_cli("trace", LLAMA, "--fsdp", "2", "--backend", "torchneuron==2.33.0",
                           "--format", "json", "--output", str(out_file), "--in-process")
    assert code == 0, err
    ops = {o["op"]: o for o in json.loads(out_file.read_text())["ops"]}
    assert ops["c10d::_reduce_scatter_base_"]["phases"] == ["backward"]
    assert ops["c10d::_allgather_base_"]["custom"] is False
    # the db has no collective entries: not `native`; an op without a kernel runs on the device or
    # falls back to the CPU (the release's `no_kernel` fact, coverage_db/README.md)
    assert ops["c10d::_allgather_base_"]["status"] == "device-or-cpu"
