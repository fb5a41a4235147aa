"""Stops the causal-LM zoo found and opscan now traces through (issue 16): boolean-mask indexing,
`all()` checks, split sizes made of stand-ins, caches that break a step, blank import errors.
Each is checked against a real one-step CPU run where a model is involved."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from tests.support.trace_recorder import Recorder  # noqa: E402

from opscan.errors import TargetError  # noqa: E402
from opscan.targets import trace_target  # noqa: E402

MASKS = '''
import torch
from torch import nn


class Net(nn.Module):
    """xmod-style adapters: rows picked by a boolean mask, processed, written back."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, ids):
        out = torch.zeros_like(x)
        mask = ids == 0
        out[mask] = self.proj(x[mask])
        return out.sum()
'''

CHECKS = '''
import torch
from torch import nn


class Net(nn.Module):
    """A value check a healthy run passes (isfinite().all()) and torch.distributions' validation."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        if not torch.isfinite(h).all():
            h = h.nan_to_num()
        probs = torch.distributions.Categorical(logits=h)
        return (probs.entropy() + h.sum(-1)).sum()
'''

CACHED = '''
import torch
from torch import nn


class Net(nn.Module):
    """A recurrent cache updated in place breaks backward (xlstm); without the cache the step runs."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, use_cache=True):
        h = torch.sigmoid(self.proj(x))
        if use_cache:
            h.mul_(2)     # sigmoid saved its output for backward
        return h.sum()
'''

BROKEN = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, use_cache=True):
        if use_cache:
            raise ValueError("the cache cannot be built for this config")
        return self.proj(x).view(3, -1).sum()      # 2 x 8 values: a shape error of its own
'''


def _module(tmp_path, name, text):
    (tmp_path / f"{name}.py").write_text(text)
    return f"{tmp_path}/{name}.py:Net"


def _real_ops(model, *args) -> set[str]:
    optimizer = torch.optim.AdamW(model.parameters(), foreach=True)
    recorder = Recorder()
    with recorder:
        model(*args).backward()
        optimizer.step()
    return recorder.ops


def test_boolean_mask_indexing_is_a_stand_in_and_matches_a_real_step(tmp_path):
    target = _module(tmp_path, "masks", MASKS)
    trace = trace_target(target, device="cpu", inputs=("0:float32[4,8]", "1:int64[4]"))
    assert trace.complete, trace.stopped_at
    assert [(s.op, s.kind, s.value) for s in trace.stand_ins] == [
        ("aten::index.Tensor", "dynamic-shape", "upper bound 4 rows (boolean mask)")]
    import importlib.util

    spec = importlib.util.spec_from_file_location("masks", tmp_path / "masks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    real = _real_ops(module.Net(), torch.randn(4, 8), torch.zeros(4, dtype=torch.long))
    fake = {u.op for u in trace.ops}
    assert fake == real, (sorted(fake - real), sorted(real - fake))
    # on the meta device the same stand-in serves
    meta = trace_target(target, device="meta", inputs=("0:float32[4,8]", "1:int64[4]"))
    assert meta.complete, meta.stopped_at


def test_all_checks_see_the_value_of_a_healthy_run(tmp_path):
    trace = trace_target(_module(tmp_path, "checks", CHECKS), inputs=("x:float32[4,8]",))
    assert trace.complete, trace.stopped_at   # Categorical's validation raised on a False stand-in
    values = {s.value for s in trace.stand_ins if s.op == "aten::_local_scalar_dense"}
    assert values == {"True (all)"}
    assert "aten::nan_to_num" not in {u.op for u in trace.ops}   # the branch a healthy run does not take


def test_a_stop_that_the_cache_causes_is_traced_again_without_it(tmp_path):
    trace = trace_target(_module(tmp_path, "cached", CACHED), inputs=("x:float32[2,8]",))
    assert trace.complete, trace.stopped_at
    assert trace.retried.startswith("use_cache=False (with its cache the step stopped: ")
    assert "inplace operation" in trace.retried


def test_when_both_steps_stop_both_stops_are_given(tmp_path):
    trace = trace_target(_module(tmp_path, "broken", BROKEN), inputs=("x:float32[2,8]",))
    assert not trace.complete and trace.retried == "use_cache=False"
    assert trace.stopped_at.startswith("with its cache: ") and "; with use_cache=False: aten::view" in trace.stopped_at
    assert "aten::addmm" in {u.op for u in trace.ops}   # the ops of the step without the cache


@pytest.mark.slow
def test_a_head_that_passes_use_cache_through_kwargs_is_retried(tmp_path):
    # GraniteMoeHybridForCausalLM.forward has no use_cache parameter, its base model has; with only
    # mamba layers its cache refuses the attention-layer calls (get_seq_length in transformers 5.24,
    # get_mask_sizes in 5.25): the step is traced again without it
    pytest.importorskip("transformers")
    config = {"model_type": "granitemoehybrid", "architectures": ["GraniteMoeHybridForCausalLM"],
              "num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 4, "vocab_size": 100, "mamba_n_heads": 4, "mamba_d_head": 32,
              "mamba_d_state": 16, "layer_types": ["mamba", "mamba"], "num_local_experts": 2}
    (tmp_path / "config.json").write_text(json.dumps(config))
    trace = trace_target(f"hf:{tmp_path}", seq_len=16)
    assert trace.complete, trace.stopped_at
    assert trace.retried.startswith("use_cache=False (with its cache the step stopped: ")
    assert "cache_utils.py" in trace.retried   # the stop is the cache's, named by its line


@pytest.mark.slow
def test_split_sizes_from_stand_ins_are_scaled_and_match_a_real_step(tmp_path):
    # JetMoe splits tokens by expert_size.tolist(): stand-ins (1 each) that do not add up
    pytest.importorskip("transformers")
    from opscan.targets.hf.builder import _model_class, load_config, task_inputs

    config = {"model_type": "jetmoe", "architectures": ["JetMoeForCausalLM"], "num_hidden_layers": 1,
              "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 4, "kv_channels": 16,
              "intermediate_size": 64, "vocab_size": 100}
    (tmp_path / "config.json").write_text(json.dumps(config))
    trace = trace_target(f"hf:{tmp_path}", device="cpu", batch=2, seq_len=16)
    assert trace.complete, trace.stopped_at
    split = ("aten::split_with_sizes", "split-sizes", "scaled to 64 rows")   # 32 tokens x top-2
    assert split in {(s.op, s.kind, s.value) for s in trace.stand_ins}
    torch.manual_seed(0)
    hf_config, path = load_config(str(tmp_path))
    model = _model_class(hf_config, path)(hf_config)
    model.train()
    inputs = task_inputs(model, hf_config, 2, 16)
    optimizer = torch.optim.AdamW(model.parameters(), foreach=True)
    recorder = Recorder()
    with recorder:
        model(**inputs).loss.backward()
        optimizer.step()
    fake = {u.op for u in trace.ops}
    # Tensor.tolist() of a fake tensor dispatches unbind + one .item() per element; a real tensor's
    # tolist() reads its memory without dispatching anything
    assert fake - recorder.ops == {"aten::unbind.int"} and recorder.ops - fake == set()


def test_a_blank_first_line_does_not_hide_the_error(tmp_path):
    # transformers' requires_backends raises ImportError("\nTimmWrapperModel requires the timm library ...")
    (tmp_path / "needs.py").write_text(
        "def build():\n    raise ImportError('\\nFooModel requires the foo library but it was not found')\n")
    with pytest.raises(TargetError, match="FooModel requires the foo library"):
        trace_target(f"{tmp_path}/needs.py:build")


def test_speech_inputs_find_num_mel_bins_in_a_sub_config():
    # canary, cohere_asr: the mel bins live in the encoder's sub-config
    from types import SimpleNamespace

    from opscan.targets.hf.builder import task_inputs

    encoder = SimpleNamespace(num_mel_bins=80, max_source_positions=None, to_dict=dict)
    config = SimpleNamespace(sub_configs={"encoder_config": object}, encoder_config=encoder, vocab_size=10)
    model = SimpleNamespace(main_input_name="input_features")
    # without max_source_positions or a Conv1d over the bins: (batch, frames, bins), as Parakeet takes
    assert task_inputs(model, config, 2, None)["input_features"].shape == (2, 256, 80)
    with pytest.raises(TargetError, match="num_mel_bins"):
        task_inputs(model, SimpleNamespace(vocab_size=10), 2, None)


def test_an_encoder_decoder_base_model_gets_decoder_inputs():
    # MarianModel, WhisperModel: no head makes decoder_input_ids from labels, so opscan gives them
    from types import SimpleNamespace

    from opscan.targets.hf.builder import task_inputs

    class Base:
        main_input_name = "input_ids"

        def forward(self, input_ids=None, decoder_input_ids=None):
            return None

    class MarianMTModelLike(Base):   # a head: labels, from which it makes its decoder inputs
        pass

    Base.__name__, MarianMTModelLike.__name__ = "MarianModel", "MarianForConditionalGeneration"
    seq2seq = SimpleNamespace(vocab_size=10, max_position_embeddings=8, is_encoder_decoder=True)
    base = task_inputs(Base(), seq2seq, 2, None)
    assert set(base) == {"input_ids", "decoder_input_ids"} and base["decoder_input_ids"].shape == (2, 8)
    assert set(task_inputs(MarianMTModelLike(), seq2seq, 2, None)) == {"input_ids", "labels"}
    decoder_only = SimpleNamespace(vocab_size=10, max_position_embeddings=8, is_encoder_decoder=False)
    assert set(task_inputs(Base(), decoder_only, 2, None)) == {"input_ids"}
