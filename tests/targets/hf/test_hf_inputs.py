"""Inputs opscan generates for hf: models beyond token ids: dual encoders, vision towers that take
cut patches with their grid, audio encoders, time series (docs/trace.md, "Inputs for hf: targets").
Each builds a tiny config of one representative model and traces it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.support.hf_tiny import TEXT, op_names as _ops, write_config as _write  # noqa: E402
from opscan.errors import TargetError  # noqa: E402
from opscan.targets import trace_target  # noqa: E402
from opscan.targets.hf.builder import build_hf  # noqa: E402


def test_a_dual_encoder_gets_text_and_images(tmp_path):
    # CLIPModel scores texts against images: both are needed, sized from each sub-config
    path = _write(tmp_path, {
        "model_type": "clip", "architectures": ["CLIPModel"], "projection_dim": 16,
        "text_config": TEXT,
        "vision_config": {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                          "num_attention_heads": 2, "image_size": 32, "patch_size": 8}})
    built = build_hf(path, batch=None, seq_len=None)
    # the text max_position_embeddings, 16, is a size of the model: the largest length below it that
    # none has (NOTE [sizes by role] in opscan/trace/roles.py)
    assert built.kwargs["input_ids"].shape == (2, 15)
    assert built.kwargs["pixel_values"].shape == (2, 3, 32, 32)  # vision image_size
    trace = trace_target(f"hf:{path}", mode="inference")
    assert trace.complete, trace.stopped_at
    assert {"aten::convolution", "aten::embedding"} <= _ops(trace)


@pytest.mark.slow
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


@pytest.mark.slow
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

    from opscan.targets.hf.inputs import task_inputs

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


# ----------------------------------------------------------------------------- layouts per model type
# (the layouts of architectures.ARCHITECTURES) and the rules that cover several models

@pytest.mark.slow
def test_a_tower_whose_conv_takes_each_patch_as_an_image_gets_patch_images(tmp_path):
    # Kimi-K2.5's vision tower runs its Conv2d on every cut patch: (patches, C, P, P) with grid_thw
    path = _write(tmp_path, {
        "model_type": "kimi_k25_vision", "architectures": ["Kimi_K25VisionModel"], "hidden_size": 32,
        "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2, "patch_size": 4,
        "pos_emb_height": 8, "pos_emb_width": 8, "merge_kernel_size": [2, 2],
        "rope_parameters": {"rope_type": "axial", "rope_theta": 10000.0}})
    built = build_hf(path, batch=None, seq_len=None)
    assert built.kwargs["pixel_values"].shape == (128, 3, 4, 4)
    assert built.kwargs["grid_thw"].tolist() == [[1, 8, 8], [1, 8, 8]]
    trace = trace_target(f"hf:{path}")
    assert trace.complete, trace.stopped_at
    assert "aten::convolution" in _ops(trace)


def test_a_packed_navit_tower_gets_one_strip_and_its_target_sizes(tmp_path):
    # MiniCPM-V's tower takes every image's patches side by side, (1, C, P, patches * P), and
    # target_sizes (traced with its values: the position ids are made from them)
    path = _write(tmp_path, {
        "model_type": "minicpm_ocr_vision", "architectures": ["MiniCPMOcrVisionModel"], "hidden_size": 32,
        "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2, "patch_size": 4,
        "image_size": 32, "insert_layer_id": -1})
    built = build_hf(path, batch=None, seq_len=None)
    assert built.kwargs["pixel_values"].shape == (1, 3, 4, 2 * 64 * 4)
    assert built.kwargs["target_sizes"].tolist() == [[8, 8], [8, 8]]
    assert built.values == ("target_sizes",)
    trace = trace_target(f"hf:{path}")
    assert trace.complete, trace.stopped_at


def test_a_base_audio_decoder_with_one_embedding_per_codebook_gets_a_row_per_codebook(tmp_path):
    # MusicgenModel embeds with one table per codebook: input_ids (batch * num_codebooks, seq)
    path = _write(tmp_path, {
        "model_type": "musicgen_decoder", "architectures": ["MusicgenModel"], "hidden_size": 32,
        "ffn_dim": 64, "num_hidden_layers": 1, "num_attention_heads": 2, "vocab_size": 64,
        "num_codebooks": 4, "max_position_embeddings": 32})
    built = build_hf(path, batch=None, seq_len=None)
    assert built.kwargs["input_ids"].shape == (8, 16)   # 32 positions = the width 32: a length no size has
    assert "labels" not in built.kwargs
    trace = trace_target(f"hf:{path}")
    assert trace.complete, trace.stopped_at


@pytest.mark.slow
def test_a_spectrogram_image_model_gets_4d_features(tmp_path):
    # CLAP's audio tower starts with a BatchNorm2d over the mel bins: (batch, 1, frames, bins)
    path = _write(tmp_path, {
        "model_type": "clap", "architectures": ["ClapModel"], "projection_dim": 16,
        "text_config": {**TEXT, "max_position_embeddings": 40},
        "audio_config": {"num_mel_bins": 16, "spec_size": 64, "patch_size": 4, "patch_stride": [4, 4],
                         "hidden_size": 32, "patch_embeds_hidden_size": 16, "depths": [1, 1],
                         "num_attention_heads": [2, 4], "window_size": 4, "projection_dim": 16}})
    built = build_hf(path, batch=None, seq_len=None)
    assert built.kwargs["input_features"].shape == (2, 1, 256, 16)
    trace = trace_target(f"hf:{path}", mode="inference")
    assert trace.complete, trace.stopped_at
    assert "aten::_native_batch_norm_legit_no_training" in _ops(trace) or \
        any("batch_norm" in op for op in _ops(trace))


@pytest.mark.slow
def test_a_chunked_encoder_gets_bins_by_whole_chunks_and_a_mask_over_frames(tmp_path):
    # Qwen3-ASR's encoder: (batch, bins, frames), frames a multiple of 2 * n_window; its mask
    # (batch, frames)
    path = _write(tmp_path, {
        "model_type": "qwen3_asr_encoder", "architectures": ["Qwen3ASREncoder"], "d_model": 32,
        "encoder_layers": 1, "encoder_attention_heads": 2, "encoder_ffn_dim": 64, "num_mel_bins": 16,
        "downsample_hidden_size": 8, "output_dim": 32, "n_window": 50, "n_window_infer": 100})
    built = build_hf(path, batch=None, seq_len=None)
    assert built.kwargs["input_features"].shape == (2, 16, 300)
    assert built.kwargs["input_features_mask"].shape == (2, 300)
    trace = trace_target(f"hf:{path}")
    assert trace.complete, trace.stopped_at


def test_a_text_tower_that_inherits_an_image_main_input_gets_ids(tmp_path):
    # SAM3-LiteText's text model says main_input_name "pixel_values" (its parent's) but takes input_ids
    path = _write(tmp_path, {
        "model_type": "sam3_lite_text_text_model", "architectures": ["Sam3LiteTextTextModel"],
        "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
        "vocab_size": 100, "max_position_embeddings": 16, "projection_dim": 16})
    built = build_hf(path, batch=None, seq_len=None)
    assert set(built.kwargs) == {"input_ids"}
    trace = trace_target(f"hf:{path}")
    assert trace.complete, trace.stopped_at
    assert "aten::embedding" in _ops(trace)


def test_an_embedded_main_input_gets_the_model_width(tmp_path):
    # PerceiverModel without a preprocessor: `inputs` (batch, seq, d_model)
    path = _write(tmp_path, {
        "model_type": "perceiver", "architectures": ["PerceiverModel"], "num_latents": 8, "d_latents": 32,
        "d_model": 24, "num_blocks": 1, "num_self_attends_per_block": 1, "num_self_attention_heads": 2,
        "num_cross_attention_heads": 2, "vocab_size": 100, "max_position_embeddings": 16})
    built = build_hf(path, batch=None, seq_len=None)
    assert built.kwargs["inputs"].shape == (2, 16, 24)
    trace = trace_target(f"hf:{path}")
    assert trace.complete, trace.stopped_at


def test_an_image_pair_matcher_gets_pairs(tmp_path):
    # EfficientLoFTR matches two images per sample: (batch, 2, C, H, W)
    path = _write(tmp_path, {"model_type": "efficientloftr", "architectures": ["EfficientLoFTRModel"]})
    from opscan.targets.hf.inputs import task_inputs
    from opscan.targets.hf.builder import load_config

    config, _ = load_config(path)
    made = task_inputs(SimpleNamespace(main_input_name="pixel_values", forward=lambda pixel_values: None),
                       config, 2, None)
    assert made["pixel_values"].shape == (2, 2, 3, 224, 224)


@pytest.mark.slow
def test_a_prompted_segmenter_gets_image_prompt_and_mask_of_half_height(tmp_path):
    # SegGPT stacks the prompt above the image: each is (batch, C, image_size[0] / 2, image_size[1])
    path = _write(tmp_path, {
        "model_type": "seggpt", "architectures": ["SegGptModel"], "hidden_size": 32, "num_hidden_layers": 2,
        "num_attention_heads": 2, "image_size": [32, 16], "patch_size": 4, "pretrain_image_size": 16,
        "decoder_hidden_size": 8, "mlp_dim": 64, "intermediate_hidden_state_indices": [0, 1],
        "merge_index": 0})
    built = build_hf(path, batch=None, seq_len=None)
    for name in ("pixel_values", "prompt_pixel_values", "prompt_masks"):
        assert built.kwargs[name].shape == (2, 3, 16, 16)
    trace = trace_target(f"hf:{path}")
    assert trace.complete, trace.stopped_at
