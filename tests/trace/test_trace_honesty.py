"""Honesty: opscan's fake trace vs a real one-step CPU training run recorded under a dispatch mode.

Every model here is a tiny inline config from examples/models/hf/, built with random weights. With
--device cpu the fake trace must report exactly the real op set. With --device neuron (the
default) the differences must be exactly the listed, explained, device-dependent ones.
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.support.trace_recorder import real_step_ops  # noqa: E402

from opscan.targets import trace_target  # noqa: E402

pytestmark = pytest.mark.slow
SEQ_LEN = 16

HF = Path(__file__).resolve().parents[2] / "examples" / "models" / "hf"
MODELS = ("llama-tiny", "mixtral-tiny", "gpt2-tiny", "bert-tiny", "t5-tiny", "vit-tiny",
          "resnet-tiny", "mamba-tiny")

# Why a neuron trace differs from a real CPU step. Each reason names a device-dependent choice.
STEP_COUNTER = "AdamW's step counters live on the CPU even on an accelerator: not the backend's ops"
SDPA = ("SDPA: CPU picks its flash kernel in C++; a PrivateUse1 backend gets the math path "
        "(profile sdpa_policy)")
SILU = ("silu_backward has a CompositeImplicitAutograd fallback: without a backend kernel "
        "(profile native_ops) it decomposes")
DROPOUT = "dropout: PrivateUse1 passes the fused-kernel check (native_dropout); CPU uses bernoulli_"
SHIM = ("torch.tensor(data, device=X) is built on the CPU and copied to X (_to_copy); "
        "on the CPU itself no copy is made")
SETITEM = "t[...] = python_scalar: CPU fills from a 0-dim CPU tensor (fill_.Tensor)"

_COMMON_REAL = {"aten::_foreach_add_.Tensor": STEP_COUNTER, "aten::_local_scalar_dense": STEP_COUNTER,
                "aten::lift_fresh": STEP_COUNTER}
_SDPA_FAKE = {"aten::_safe_softmax": SDPA, "aten::_softmax_backward_data": SDPA, "aten::bmm": SDPA}
_SDPA_MASK_FAKE = {"aten::ones": SDPA, "aten::scalar_tensor": SDPA, "aten::tril": SDPA,
                   "aten::where.self": SDPA}
_SDPA_REAL = {"aten::_scaled_dot_product_flash_attention_for_cpu": SDPA,
              "aten::_scaled_dot_product_flash_attention_for_cpu_backward": SDPA}
_SILU_FAKE = {"aten::add.Scalar": SILU, "aten::empty_like": SILU, "aten::fill_.Scalar": SILU,
              "aten::sigmoid": SILU, "aten::sub_.Tensor": SILU}
_DROPOUT_FAKE = {"aten::native_dropout": DROPOUT, "aten::native_dropout_backward": DROPOUT}
_DROPOUT_REAL = {"aten::bernoulli_.float": DROPOUT, "aten::div_.Scalar": DROPOUT,
                 "aten::empty_like": DROPOUT}

# model -> (only in the fake neuron trace, only in the real CPU run), each op with its reason.
NEURON_DIFFERENCES = {
    "llama-tiny": ({**_SDPA_FAKE, **_SDPA_MASK_FAKE, "aten::squeeze.dim": SDPA, **_SILU_FAKE},
                   {**_COMMON_REAL, **_SDPA_REAL, "aten::silu_backward": SILU}),
    "mixtral-tiny": ({"aten::_safe_softmax": SDPA, "aten::bmm": SDPA, **_SDPA_MASK_FAKE,
                      **{k: v for k, v in _SILU_FAKE.items() if k != "aten::empty_like"}},
                     {**_COMMON_REAL, **_SDPA_REAL, "aten::silu_backward": SILU}),
    "gpt2-tiny": ({**_DROPOUT_FAKE, "aten::_to_copy": SHIM}, {**_COMMON_REAL, **_DROPOUT_REAL}),
    "bert-tiny": (dict(_DROPOUT_FAKE), {**_COMMON_REAL, **_DROPOUT_REAL, "aten::mul.Tensor": DROPOUT}),
    "t5-tiny": (dict(_DROPOUT_FAKE), {**_COMMON_REAL, **_DROPOUT_REAL, "aten::fill_.Tensor": SETITEM}),
    "vit-tiny": ({**_SDPA_FAKE, "aten::_unsafe_view": SDPA, "aten::clone": SDPA, "aten::mul.Scalar": SDPA},
                 {**_COMMON_REAL, **_SDPA_REAL}),
    "resnet-tiny": ({}, dict(_COMMON_REAL)),
    "mamba-tiny": (dict(_SILU_FAKE), {**_COMMON_REAL, "aten::silu_backward": SILU}),
}


@pytest.fixture(scope="module", params=MODELS)
def model_runs(request):
    name = request.param
    return name, real_step_ops(HF / name, SEQ_LEN)


def fake_ops(name: str, device: str) -> tuple[set[str], object]:
    trace = trace_target(f"hf:{HF / name}", mode="train", device=device, batch=2, seq_len=SEQ_LEN)
    return {u.op for u in trace.ops}, trace


def test_fake_trace_on_cpu_matches_a_real_cpu_step(model_runs):
    name, real = model_runs
    fake, trace = fake_ops(name, "cpu")
    assert trace.complete, trace.stopped_at
    assert fake == real, (sorted(fake - real), sorted(real - fake))


def test_neuron_trace_differs_only_by_explained_device_choices(model_runs):
    name, real = model_runs
    fake, trace = fake_ops(name, "neuron")
    assert trace.complete, trace.stopped_at
    only_fake, only_real = NEURON_DIFFERENCES[name]
    assert (fake - real, real - fake) == (set(only_fake), set(only_real))


def test_the_trace_keeps_the_bytes_each_op_reads_and_writes_in_the_training_step():
    # NOTE [fallback cost]: what a CPU fallback of the op would copy to the host and back per step.
    # gpt2-tiny: wte [256, 64] and wpe [128, 64] float32, ids [2, 16] and positions [1, 16] int64.
    trace = trace_target(f"hf:{HF / 'gpt2-tiny'}", mode="train", device="cpu", batch=2, seq_len=SEQ_LEN)
    embedding = next(u for u in trace.ops if u.op == "aten::embedding")
    wte = 256 * 64 * 4 + 2 * 16 * 8 + 2 * 16 * 64 * 4
    wpe = 128 * 64 * 4 + 1 * 16 * 8 + 1 * 16 * 64 * 4
    assert (embedding.step_calls, embedding.step_bytes) == (2, wte + wpe)
    # the source lines per dtype: every dtype the op was called with has its calls' lines
    assert [d for d, _ in embedding.dtype_sources] == list(embedding.dtypes)
    assert all(found for _, found in embedding.dtype_sources)
    inference = trace_target(f"hf:{HF / 'gpt2-tiny'}", mode="inference", device="cpu", batch=2, seq_len=SEQ_LEN)
    assert all(u.step_bytes == 0 and u.step_calls == 0 for u in inference.ops)   # no training step traced
