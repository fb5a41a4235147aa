"""Gaps the causal-LM zoo found: constants moved to the imitated device, huge constructors, fp32 MoE."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from opscan.targets import trace_target  # noqa: E402
from opscan.targets.empty import LARGE_BYTES, LargeOnMeta, build_empty  # noqa: E402

TINY_MISTRAL = {
    "model_type": "mistral", "architectures": ["MistralForCausalLM"], "vocab_size": 128,
    "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4,
    "num_key_value_heads": 2, "max_position_embeddings": 256, "sliding_window": 64,
}


def write_config(folder, config):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return f"hf:{folder}"


def op_names(trace):
    return {u.op for u in trace.ops}


def test_sliding_window_cache_traces_on_neuron(tmp_path):
    # transformers' DynamicSlidingWindowLayer moves a torch.tensor(sliding_window) constant to the
    # model's device; fake mode used to run that copy for real and stop at aten::empty_strided
    trace = trace_target(write_config(tmp_path / "mistral", TINY_MISTRAL), mode="train")
    assert trace.complete, trace.stopped_at
    assert {"aten::_to_copy", "aten::mm", "aten::_foreach_add_.Scalar"} <= op_names(trace)


CONSTANTS_MODEL = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        window = torch.tensor(3, dtype=torch.long).to(x.device)     # constant moved to the device
        listed = x[..., [-2]]                                          # index tensor from a list
        like = torch.zeros_like(torch.tensor(2.0), device=x.device)  # *_like with a device
        made = torch.tensor([1.0, 2.0], device=x.device)              # torch.tensor(device=)
        steps = int(window.item())                                     # a stand-in value
        y = self.proj(x) * listed + like + made.sum()
        return y.sum() * steps
'''


def test_constants_moved_to_imitated_device_do_not_stop_the_trace(tmp_path):
    (tmp_path / "consts.py").write_text(CONSTANTS_MODEL)
    trace = trace_target(f"{tmp_path}/consts.py:Net", inputs=("x:float32[2,8]",))
    assert trace.complete, trace.stopped_at
    assert {"aten::_to_copy", "aten::index.Tensor", "aten::addmm"} <= op_names(trace)
    # the moved constant has no known value on the device: its .item() is a counted stand-in
    line = next(i for i, text in enumerate(CONSTANTS_MODEL.splitlines(), 1) if "window.item()" in text)
    assert [(s.op, s.source.line) for s in trace.stand_ins] == [("aten::_local_scalar_dense", line)]


def test_large_factories_go_to_meta_small_ones_stay_real():
    with LargeOnMeta() as mode:
        small = torch.linspace(0, 0.1, 4)
        drop = [x.item() for x in small]                   # timm-style init-time .item()
        zeros = torch.zeros(3)
        big = torch.empty(LARGE_BYTES // 4)                # float32: exactly LARGE_BYTES
        big_tuple = torch.zeros((LARGE_BYTES // 2, 1), dtype=torch.float16)
        full = torch.full((LARGE_BYTES // 8, 2), 1.0)
        under = torch.ones(LARGE_BYTES // 4 - 1)
        pinned = torch.empty(LARGE_BYTES // 4, device="meta")
    assert len(drop) == 4 and zeros.device.type == "cpu" and under.device.type == "cpu"
    assert {big.device.type, big_tuple.device.type, full.device.type, pinned.device.type} == {"meta"}
    assert mode.redirected == 3


def test_build_retries_without_meta_when_init_code_needs_real_values():
    from torch import nn

    class NeedsValues(nn.Module):
        def __init__(self):
            super().__init__()
            table = torch.zeros(LARGE_BYTES // 4) + torch.linspace(0, 1, LARGE_BYTES // 4)
            self.register_buffer("table", table[:4].clone())
            self.proj = nn.Linear(4, 4)

    model = build_empty(NeedsValues)
    assert model.table.device.type == "cpu" and model.table[-1].item() > 0
    assert model.proj.weight.device.type == "meta"


HUGE_MODEL = '''
import torch
from torch import nn


class Huge(nn.Module):
    """vocab 10M x hidden 8192: 320 GB of fp32 weights in the embedding and again in the head."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10_000_000, 8192)
        self.norm = nn.LayerNorm(8192)
        self.head = nn.Linear(8192, 10_000_000, bias=False)

    def forward(self, ids):
        return self.head(self.norm(self.embed(ids))).float().logsumexp(-1).mean()
'''

MEASURE = '''
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, 6 * 2**30))
from opscan.targets import trace_target
trace = trace_target(sys.argv[1], inputs=("ids:int64[1,16]",))
# VmHWM: this process's own peak RSS. ru_maxrss would keep the high-water mark of the pytest
# process it was forked from (Linux carries it across exec), gigabytes late in a full run.
try:
    status = open("/proc/self/status").read()
    peak = next(int(l.split()[1]) for l in status.splitlines() if l.startswith("VmHWM:")) * 1024
except (OSError, StopIteration):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"complete": trace.complete, "stopped_at": trace.stopped_at, "peak": peak,
                  "ops": sorted(u.op for u in trace.ops)}))
'''


@pytest.mark.slow
def test_huge_embedding_builds_and_traces_in_small_memory(tmp_path):
    (tmp_path / "huge.py").write_text(HUGE_MODEL)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(MEASURE), f"{tmp_path}/huge.py:Huge"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["complete"], result["stopped_at"]
    assert "aten::embedding_dense_backward" in result["ops"] and "aten::mm" in result["ops"]
    assert result["peak"] < 2 * 2**30  # 640 GB of parameters, AdamW state included: none of it real


def test_grouped_mm_in_fp32_traces_with_the_supplied_fake_kernel(tmp_path, repo_root):
    """PyTorch's fake kernel of aten::_grouped_mm wants bf16; opscan supplies one (opscan/trace/fakes.py),
    so an fp32 MoE traces completely and the trace says which fake kernel was supplied."""
    config = json.loads((Path(repo_root) / "examples/models/hf/mixtral-tiny/config.json").read_text())
    config["dtype"] = "float32"
    trace = trace_target(write_config(tmp_path / "mixtral", config), mode="inference")
    assert trace.complete, trace.stopped_at
    assert trace.supplied_fakes == ("aten::_grouped_mm",)
    assert "aten::_grouped_mm" in op_names(trace)  # still recorded as dispatched
