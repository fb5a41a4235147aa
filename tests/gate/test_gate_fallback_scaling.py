"""A trace shrunk by `--layers` scales its fallback costs back to the real model (NOTE [fallback scaling])."""

from __future__ import annotations

import io
import json

import pytest


from tests.support.release import static_release

from opscan.assess import assess, fallback_costs
from opscan.records import Coverage, Draft, ModelTrace, NothingToCheck, OpUsage, Shrink

EAGER_FALLBACK = {"eager": "cpu-fallback", "compile": "unknown", "note": "ops without a kernel run on the CPU"}


@pytest.fixture(scope="module")
def shrunk(tmp_path_factory):
    """A tiny Llama of 8 layers, cut to 2 as `opscan zoo --layers 2` cuts a default config, traced."""
    transformers = pytest.importorskip("transformers")
    from opscan.targets import trace_target
    from opscan.targets.hf.defaults import SHRUNK_KEY, shrink

    data = transformers.LlamaConfig(hidden_size=32, intermediate_size=64, num_attention_heads=4,
                                    num_key_value_heads=2, num_hidden_layers=8, vocab_size=128,
                                    max_position_embeddings=64).to_dict()
    data["architectures"] = ["LlamaForCausalLM"]
    assert shrink(data, 2) == "num_hidden_layers 8 -> 2"
    assert data[SHRUNK_KEY] == {"num_hidden_layers": [8, 2]}       # the real count, for the trace
    folder = tmp_path_factory.mktemp("llama")
    (folder / "config.json").write_text(json.dumps(data), encoding="utf-8")
    trace = trace_target(f"hf:{folder}", mode="train", device="neuron")
    release = static_release({"aten::mm": "native"}, kind="documented", no_kernel=EAGER_FALLBACK)
    return trace, assess(Draft(root="", tool_version="", traces=(trace,), source=NothingToCheck()), release)


@pytest.mark.slow
def test_the_trace_records_its_shrink_and_which_calls_are_inside_the_layers(shrunk):
    trace, _ = shrunk
    # the sequence opscan chooses is no size of the model: min(128, 64 positions) = 64 is 2 x the width 32,
    # so 48 (NOTE [sizes by role] in opscan/trace/roles.py)
    assert trace.shrink == Shrink(layer_list="model.layers", layers=2, real_layers=8, batch=2, seq_len=48,
                                  hidden=32, real_hidden=32, hidden_from="config.json")   # the model's own width
    ops = {u.op: u for u in trace.ops}
    assert ops["aten::silu"].step_layer_calls == ops["aten::silu"].step_calls == 2   # the MLP of each layer
    assert ops["aten::embedding"].step_layer_calls == 0                               # before the layers


@pytest.mark.slow
def test_an_op_inside_the_layers_scales_by_the_layer_ratio_and_one_outside_does_not(shrunk):
    _, report = shrunk
    costs = {f.op: f for f in report.fallbacks}
    silu, embedding = costs["aten::silu"], costs["aten::embedding"]
    assert silu.traced_calls == 2 and silu.traced_bytes > 0
    assert (silu.calls_per_step, silu.syncs_per_step, silu.bytes_per_step) == (
        silu.traced_calls * 4, silu.traced_syncs * 4, silu.traced_bytes * 4)          # 8 real / 2 traced
    assert silu.scaled_by == "layers 2 -> 8 (model.layers)"
    assert (embedding.calls_per_step, embedding.bytes_per_step) == (embedding.traced_calls, embedding.traced_bytes)
    assert embedding.scaled_by == ""
    # the optimizer's foreach calls take every parameter at once: one call, the layers' states scaled
    foreach = costs["aten::_foreach_sqrt"]
    assert foreach.calls_per_step == foreach.traced_calls
    assert foreach.traced_bytes < foreach.bytes_per_step < foreach.traced_bytes * 4


@pytest.mark.slow
def test_every_output_shows_the_scaled_and_the_traced_cost(shrunk):
    _, report = shrunk
    from opscan.reporters import markdown
    from opscan.reporters.json import to_dict

    silu = {o["op"]: o for o in to_dict(report)["ops"]}["aten::silu"]["fallback"]
    assert silu["calls_per_step"] == 4 * silu["traced"]["calls_per_step"]
    assert silu["bytes_per_step"] == 4 * silu["traced"]["bytes_per_step"]
    assert silu["scaled_by"] == "layers 2 -> 8 (model.layers)"
    trace = to_dict(report)["traces"][0]["shrink"]
    assert (trace["layer_list"], trace["layers"], trace["real_layers"]) == ("model.layers", 2, 8)
    out = io.StringIO()
    markdown.render(report, out)
    assert "(scaled back: layers 2 -> 8 (model.layers); as traced" in out.getvalue()
    assert any("scaled back to the real model (layers 2 -> 8 (model.layers))" in d for d in report.verdict.details)
    task = next(t for t in report.tasks if t.kind == "may-fall-back")
    assert "scaled back to the real model (layers 2 -> 8 (model.layers)) they would copy" in task.why
    from rich.console import Console

    from opscan.reporters.terminal import render

    text = io.StringIO()
    render(report, text, Console(file=text, width=160, color_system=None))
    assert "* CPU fallback cost per training step scaled back to the real model (layers 2 -> 8" in text.getvalue()


def test_batch_and_sequence_scale_the_activation_bytes_when_the_real_ones_are_stated():
    usage = OpUsage("aten::sort", 3, ("forward",), ("torch.float32",), modes=("train",), step_calls=3,
                    step_bytes=1000, step_layer_calls=2, step_layer_bytes=100, step_token_bytes=200,
                    step_layer_token_bytes=600)      # fixed: 100
    shrink = Shrink("model.layers", layers=2, real_layers=6, batch=2, seq_len=16, real_batch=4, real_seq_len=64)
    trace = ModelTrace("m", "train", "neuron", (usage,), shrink=shrink)
    (cost,) = fallback_costs((trace,), (Coverage("aten::sort", "device-or-cpu"),))
    # fixed + 3 x layers + 8 x tokens + 3 x 8 x both; calls: 1 outside + 3 x 2 inside
    assert cost.bytes_per_step == 100 + 3 * 100 + 8 * 200 + 24 * 600
    assert (cost.calls_per_step, cost.syncs_per_step, cost.traced_calls, cost.traced_bytes) == (7, 7, 3, 1000)
    assert cost.scaled_by == ("layers 2 -> 6 (model.layers); batch x sequence 2x16 -> 4x64; "
                              "not scaled: width (traced width not found)")
    unshrunk = ModelTrace("m", "train", "neuron", (usage,),
                          shrink=Shrink("model.layers", layers=2, batch=2, seq_len=16))
    (same,) = fallback_costs((unshrunk,), (Coverage("aten::sort", "device-or-cpu"),))
    assert (same.bytes_per_step, same.calls_per_step, same.scaled_by) == (1000, 3, "")


@pytest.mark.slow
def test_a_stated_real_step_size_scales_the_tokens_and_a_model_without_it_is_unchanged(shrunk):
    trace, traced_report = shrunk
    from opscan.config import ModelConfig
    from opscan.pipeline.phases import at_real_size

    assert at_real_size(trace, ModelConfig(target="m.py:build")) is trace                  # nothing stated
    stated = at_real_size(trace, ModelConfig(target="m.py:build", real_batch=8, real_seq_len=256))
    assert (stated.shrink.real_batch, stated.shrink.real_seq_len) == (8, 256)
    assert (stated.shrink.batch, stated.shrink.seq_len, stated.shrink.real_layers) == (2, 48, 8)
    release = static_release({"aten::mm": "native"}, kind="documented", no_kernel=EAGER_FALLBACK)
    report = assess(Draft(root="", tool_version="", traces=(stated,), source=NothingToCheck()), release)
    costs = {f.op: f for f in report.fallbacks}
    before = {f.op: f for f in traced_report.fallbacks}
    embedding = costs["aten::embedding"]
    assert "batch x sequence 2x48 -> 8x256" in embedding.scaled_by
    assert embedding.traced_bytes == before["aten::embedding"].traced_bytes
    assert embedding.bytes_per_step > 4 * embedding.traced_bytes     # its output grows with 21x the tokens
    assert embedding.calls_per_step == embedding.traced_calls        # one call per step at any size
    assert costs["aten::silu"].scaled_by == "layers 2 -> 8 (model.layers); batch x sequence 2x48 -> 8x256"


def test_real_sizes_are_read_from_the_model_table(tmp_path):
    from opscan.config import load_config
    from opscan.errors import ConfigError

    (tmp_path / "pyproject.toml").write_text(
        '[[tool.opscan.models]]\ntarget = "m.py:build"\nreal-layers = 32\nreal-batch = 8\nreal-seq-len = 4096\n',
        encoding="utf-8")
    model = load_config(tmp_path).models[0]
    assert (model.real_layers, model.real_batch, model.real_seq_len) == (32, 8, 4096)
    (tmp_path / "pyproject.toml").write_text(
        '[[tool.opscan.models]]\ntarget = "m.py:build"\nreal-batch = 0\n', encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_config(tmp_path)
    assert any("real-batch" in problem for problem in refused.value.problems)
