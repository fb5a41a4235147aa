"""Inputs opscan generates for hf: models beyond token ids: dual encoders, vision towers that take
cut patches with their grid, audio encoders, time series (docs/trace.md, "Inputs for hf: targets").
Each builds a tiny config of one representative model and traces it."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from opscan.errors import TargetError  # noqa: E402
from opscan.trace import trace_target  # noqa: E402
from opscan.trace.hf import build_hf  # noqa: E402


def _write(tmp_path, config: dict) -> str:
    (tmp_path / "config.json").write_text(json.dumps(config))
    return str(tmp_path)


def _ops(trace) -> set[str]:
    return {u.op for u in trace.ops}


TEXT = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
        "vocab_size": 100, "max_position_embeddings": 16}


def test_a_dual_encoder_gets_text_and_images(tmp_path):
    # CLIPModel scores texts against images: both are needed, sized from each sub-config
    path = _write(tmp_path, {
        "model_type": "clip", "architectures": ["CLIPModel"], "projection_dim": 16,
        "text_config": TEXT,
        "vision_config": {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                          "num_attention_heads": 2, "image_size": 32, "patch_size": 8}})
    built = build_hf(path, batch=None, seq_len=None)
    assert built.kwargs["input_ids"].shape == (2, 16)            # text max_position_embeddings
    assert built.kwargs["pixel_values"].shape == (2, 3, 32, 32)  # vision image_size
    trace = trace_target(f"hf:{path}", mode="inference")
    assert trace.complete, trace.stopped_at
    assert {"aten::convolution", "aten::embedding"} <= _ops(trace)


def test_a_vision_tower_gets_patches_and_their_grid(tmp_path):
    # GLM-4V's vision tower takes cut patches (patches, C * T * P * P) and grid_thw; the grid's
    # values shape the step and are traced with their values, not stand-ins
    path = _write(tmp_path, {
        "model_type": "glm4v_vision", "architectures": ["Glm4vVisionModel"], "depth": 1,
        "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 32,
        "image_size": 28, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2})
    built = build_hf(path, batch=None, seq_len=None)
    assert built.kwargs["grid_thw"].tolist() == [[1, 8, 8], [1, 8, 8]]
    assert built.kwargs["hidden_states"].shape == (128, 3 * 2 * 14 * 14)
    assert built.values == ("grid_thw",)
    trace = trace_target(f"hf:{path}")
    assert trace.complete, trace.stopped_at
    assert "aten::convolution" in _ops(trace)
    assert not [s for s in trace.stand_ins if s.op == "aten::_local_scalar_dense"]


def test_a_conformer_audio_encoder_gets_frames_by_bins(tmp_path):
    # Parakeet takes (batch, frames, mel bins); Whisper-style (batch, bins, frames) stopped it
    path = _write(tmp_path, {
        "model_type": "parakeet_encoder", "architectures": ["ParakeetEncoder"], "hidden_size": 32,
        "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2, "num_mel_bins": 16,
        "subsampling_conv_channels": 8, "conv_kernel_size": 3})
    built = build_hf(path, batch=None, seq_len=None)
    assert built.kwargs["input_features"].shape == (2, 256, 16)
    trace = trace_target(f"hf:{path}")
    assert trace.complete, trace.stopped_at
    assert "aten::convolution" in _ops(trace)


def test_a_time_series_model_gets_past_values(tmp_path):
    # PatchTST's main input: (batch, context_length, num_input_channels)
    path = _write(tmp_path, {
        "model_type": "patchtst", "architectures": ["PatchTSTModel"], "d_model": 32, "ffn_dim": 64,
        "num_hidden_layers": 1, "num_attention_heads": 2, "context_length": 32, "patch_length": 8,
        "patch_stride": 8, "num_input_channels": 3})
    built = build_hf(path, batch=None, seq_len=None)
    assert built.kwargs["past_values"].shape == (2, 32, 3)
    trace = trace_target(f"hf:{path}")
    assert trace.complete, trace.stopped_at
    assert "aten::addmm" in _ops(trace) or "aten::mm" in _ops(trace)


def test_a_required_argument_opscan_cannot_make_is_one_line_naming_it():
    class Tower:
        main_input_name = "pixel_values"

        def forward(self, pixel_values, secret_sauce):
            return None

    from opscan.trace.hfinputs import task_inputs

    config = SimpleNamespace(image_size=8, num_channels=3, vocab_size=10)
    with pytest.raises(TargetError, match="secret_sauce.*--input"):
        task_inputs(Tower(), config, 2, None)
    # an input the user gives with --input need not be made
    assert set(task_inputs(Tower(), config, 2, None, given=("secret_sauce",))) == {"pixel_values"}


def test_a_per_sample_loss_is_summed():
    # DacModel's output.loss is one commitment loss per sample; backward needs a scalar
    from opscan.trace.step import pick_loss

    loss = pick_loss(SimpleNamespace(loss=torch.ones(2, requires_grad=True)))
    assert loss.dim() == 0
