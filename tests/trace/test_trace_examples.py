"""What `trace_target` captures on the example models: modes, phases, sources, stand-ins, stops."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from opscan.records import PHASES, DeviceProfile
from opscan.targets import trace_target

pytestmark = pytest.mark.slow


def ops(trace) -> dict:
    return {u.op: u for u in trace.ops}


@pytest.fixture(scope="module")
def encoder_both(repo_root_path):
    return trace_target("examples/models/encoder.py:make_encoder", mode="both",
                        project_root=str(repo_root_path))


@pytest.fixture(scope="module")
def repo_root_path():
    from pathlib import Path
    return Path(__file__).resolve().parents[2]


def test_transformer_encoder_fast_path_only_in_inference(encoder_both):
    seen = ops(encoder_both)
    assert seen["aten::_transformer_encoder_layer_fwd"].modes == ("inference",)
    assert seen["aten::native_layer_norm_backward"].modes == ("train",)
    assert seen["aten::addmm"].modes == ("inference", "train")
    assert encoder_both.mode == "both" and encoder_both.complete


def test_ops_are_sorted_with_canonical_names_and_phases_in_order(encoder_both):
    names = [u.op for u in encoder_both.ops]
    assert names == sorted(names)
    assert not any(n.endswith(".default") or n.startswith(("prim::", "profiler::")) for n in names)
    for usage in encoder_both.ops:
        assert list(usage.phases) == [p for p in PHASES if p in usage.phases]
        assert list(usage.dtypes) == sorted(usage.dtypes)
        assert len(usage.sources) <= 5 and list(usage.sources) == sorted(usage.sources)


def test_train_step_phases_sources_and_module_paths(repo_root_path):
    trace = trace_target("examples/models/mlp.py:make_mlp", project_root=str(repo_root_path))
    seen = ops(trace)
    assert seen["aten::gelu"].phases == ("forward",)
    assert seen["aten::gelu_backward"].phases == ("backward",)
    assert seen["aten::mse_loss"].phases == ("forward",)
    assert "optimizer" in seen["aten::_foreach_lerp_.Scalar"].phases
    gelu = seen["aten::gelu"].sources[0]
    assert (gelu.path, gelu.line, gelu.module) == ("examples/models/mlp.py", 17, "mlp.act")
    # backward ops point back at the forward line that created them
    assert seen["aten::gelu_backward"].sources[0].line == 17
    assert seen["aten::gelu"].dtypes == ("torch.float32",)


def test_optimizer_implementations(repo_root_path):
    root = str(repo_root_path)
    fused = ops(trace_target("examples/models/mlp.py:make_mlp", optimizer_impl="fused", project_root=root))
    loop = ops(trace_target("examples/models/mlp.py:make_mlp", optimizer_impl="for-loop", project_root=root))
    sgd = ops(trace_target("examples/models/mlp.py:make_mlp", optimizer="sgd", project_root=root))
    assert "aten::_fused_adamw_" in fused and "aten::_foreach_lerp_.Scalar" not in fused
    # fused keeps AdamW's step counters on the device: their increment is the backend's op
    assert "aten::_foreach_add_.Scalar" in fused
    assert not any(o.startswith(("aten::_foreach", "aten::_fused")) for o in loop)
    assert "aten::lerp_.Scalar" in loop
    assert "aten::_foreach_add_.List" in sgd or "aten::_foreach_add_.Scalar" in sgd


def test_amp_bf16_shows_casts_and_bf16_compute(repo_root_path):
    seen = ops(trace_target("examples/models/mlp.py:make_mlp", amp="bf16", project_root=str(repo_root_path)))
    assert "torch.bfloat16" in seen["aten::addmm"].dtypes
    assert "aten::_to_copy" in seen


def test_data_dependent_ops_get_counted_stand_ins(repo_root_path):
    trace = trace_target("examples/models/data_dependent.py:make_router", project_root=str(repo_root_path))
    assert trace.complete
    kinds = {(s.op, s.kind): s for s in trace.stand_ins}
    nonzero = kinds[("aten::nonzero", "dynamic-shape")]
    assert nonzero.count == 4 and nonzero.source.line == 17
    assert nonzero.source.path == "examples/models/data_dependent.py"
    item = kinds[("aten::_local_scalar_dense", "item")]
    assert item.source.line == 21 and item.value == "1.0"
    assert "aten::index_add" in ops(trace)       # every expert ran on the upper-bound rows


def test_custom_op_with_fake_kernel_is_reported_as_custom(repo_root_path):
    trace = trace_target("examples/models/custom_ops.py:make_with_fake", project_root=str(repo_root_path))
    seen = ops(trace)
    assert trace.complete
    assert seen["opscan_examples::scaled_tanh"].custom
    assert not seen["aten::addmm"].custom


def test_custom_op_without_fake_kernel_stops_with_partial_list(repo_root_path):
    trace = trace_target("examples/models/custom_ops.py:make_without_fake", project_root=str(repo_root_path))
    assert not trace.complete
    assert trace.stopped_at.startswith("opscan_examples::opaque_gelu at examples/models/custom_ops.py:56: ")
    assert "register_fake" in trace.stop_hint
    seen = ops(trace)
    assert "aten::addmm" in seen                  # captured before the stop
    assert seen["opscan_examples::opaque_gelu"].custom
    assert "aten::mm" not in seen                 # nothing after it (no backward)


def test_device_branches_follow_the_imitated_device(repo_root_path):
    root = str(repo_root_path)
    neuron = ops(trace_target("examples/models/device_branch.py:make_device_branch", project_root=root))
    cpu = ops(trace_target("examples/models/device_branch.py:make_device_branch", device="cpu",
                           project_root=root))
    meta = ops(trace_target("examples/models/device_branch.py:make_device_branch", device="meta",
                            project_root=root))
    assert "aten::tanh" in neuron and "aten::sigmoid" not in neuron
    assert "aten::sigmoid" in cpu and "aten::tanh" not in cpu
    assert "aten::sigmoid" in meta


def test_profile_native_ops_stop_the_decomposition(repo_root_path):
    target = "hf:" + str(repo_root_path / "examples/models/hf/llama-tiny")
    plain = ops(trace_target(target, seq_len=16))
    profiled = ops(trace_target(target, seq_len=16, profile=DeviceProfile(
        name="test", native_ops=("aten::silu_backward",), sdpa_policy="overrideable")))
    assert "aten::silu_backward" not in plain and "aten::sigmoid" in plain
    assert "aten::silu_backward" in profiled and "aten::sigmoid" not in profiled
    assert "aten::_scaled_dot_product_fused_attention_overrideable" in profiled
    assert "aten::_scaled_dot_product_fused_attention_overrideable_backward" in profiled
    assert "aten::_safe_softmax" in plain and "aten::_safe_softmax" not in profiled
    # the default profile is restored for the next trace
    assert ops(trace_target(target, seq_len=16)).keys() == plain.keys()


def test_same_input_same_trace(repo_root_path):
    a = trace_target("examples/models/encoder.py:make_encoder", project_root=str(repo_root_path))
    b = trace_target("examples/models/encoder.py:make_encoder", project_root=str(repo_root_path))
    assert a.ops == b.ops and a.stand_ins == b.stand_ins


def test_value_dependent_loop_stops_with_a_clear_message(repo_root_path):
    trace = trace_target("examples/models/data_dependent.py:make_halving", project_root=str(repo_root_path))
    assert not trace.complete
    assert trace.stopped_at.startswith("aten::_local_scalar_dense at examples/models/data_dependent.py:38: ")
    assert "data-dependent loop" in trace.stopped_at and trace.stop_hint
    assert "aten::addmm" in ops(trace)            # the forward before the loop is kept


def test_input_ids_override_resizes_generated_labels(repo_root_path):
    target = "hf:" + str(repo_root_path / "examples/models/hf/gpt2-tiny")
    trace = trace_target(target, inputs=("input_ids:int64[1,24]",), device="cpu")
    assert trace.complete, trace.stopped_at
    assert "aten::nll_loss_forward" in ops(trace)


def test_inference_of_an_hf_model_computes_no_loss(repo_root_path):
    target = "hf:" + str(repo_root_path / "examples/models/hf/gpt2-tiny")
    seen = ops(trace_target(target, mode="both", seq_len=8, device="cpu"))
    assert seen["aten::nll_loss_forward"].modes == ("train",)
    assert seen["aten::embedding"].modes == ("inference", "train")
