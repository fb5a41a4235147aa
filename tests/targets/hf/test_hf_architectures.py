"""Inputs opscan gives a few hf: architectures from its per-architecture table (opscan/targets/hf/architectures.py,
docs/trace.md "Inputs some architectures need"): word boxes, token types, masks, the second modality,
speech targets, a video session. Each builds a tiny config inline and traces it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.support.hf_tiny import TEXT, op_names as _ops, write_config as _write  # noqa: E402
from opscan.targets import trace_target  # noqa: E402
from opscan.targets.hf.builder import build_hf  # noqa: E402
from opscan.targets.hf.architectures import ARCHITECTURES, value_inputs  # noqa: E402


def _valid_boxes(bbox, ids):
    assert bbox.shape == (*ids.shape, 4) and bbox.is_floating_point()
    assert bbox.min() >= 0 and bbox.max() <= 1
    assert (bbox[..., 0] <= bbox[..., 2]).all() and (bbox[..., 1] <= bbox[..., 3]).all()


@pytest.mark.slow
def test_bros_gets_word_boxes_and_layoutlm_keeps_its_inputs(tmp_path):
    # BROS cannot run without bbox ("You have to specify bbox"); its relative box embedding is
    # sinusoidal (sin / cos of box deltas). LayoutLM takes the same argument optionally and keeps
    # tracing without it: the table matches BROS only.
    path = _write(tmp_path / "bros", {"model_type": "bros", "architectures": ["BrosModel"], **TEXT,
                                      "hidden_size": 64})
    built = build_hf(path, batch=None, seq_len=None)
    _valid_boxes(built.kwargs["bbox"], built.kwargs["input_ids"])
    trace = trace_target(f"hf:{path}")
    assert trace.complete, trace.stopped_at
    assert {"aten::sin", "aten::cos"} <= _ops(trace)

    layoutlm = _write(tmp_path / "layoutlm", {"model_type": "layoutlm", "architectures": ["LayoutLMModel"],
                                              **TEXT})
    assert "bbox" not in build_hf(layoutlm, batch=None, seq_len=None).kwargs


@pytest.mark.slow
def test_udop_gets_word_boxes_for_its_position_biases(tmp_path):
    # "Bbox is required for horizontal relative position bias"
    path = _write(tmp_path, {"model_type": "udop", "architectures": ["UdopModel"], "d_model": 32, "d_kv": 8,
                             "d_ff": 64, "num_layers": 1, "num_decoder_layers": 1, "num_heads": 2,
                             "vocab_size": 100, "image_size": 32, "patch_size": 16})
    built = build_hf(path, batch=None, seq_len=None)
    _valid_boxes(built.kwargs["bbox"], built.kwargs["input_ids"])
    trace = trace_target(f"hf:{path}")
    assert trace.complete, trace.stopped_at
    assert "aten::embedding" in _ops(trace)


@pytest.mark.slow
def test_molmo2_trains_with_its_token_types(tmp_path):
    # "`mm_token_type_ids` is required as a model input when training": a text-only prompt's are 0
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
              "num_key_value_heads": 2, "head_dim": 16, "patch_size": 14, "num_position_embeddings": 16}
    path = _write(tmp_path, {
        "model_type": "molmo2", "architectures": ["Molmo2Model"],
        "text_config": {**TEXT, "num_key_value_heads": 2, "head_dim": 16, "additional_vocab_size": 8},
        "vision_config": vision,
        "adapter_config": {"hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
                           "num_key_value_heads": 2, "head_dim": 16, "text_hidden_size": 32,
                           "vision_feature_layer": [-1]}})
    built = build_hf(path, batch=None, seq_len=None)
    types = built.kwargs["mm_token_type_ids"]
    assert types.shape == built.kwargs["input_ids"].shape and not types.any()
    trace = trace_target(f"hf:{path}")
    assert trace.complete, trace.stopped_at
    assert "aten::embedding_dense_backward" in _ops(trace)


@pytest.mark.slow
def test_an_audio_encoder_gets_its_frame_mask(tmp_path):
    # AudioFlamingo3's encoder reads its frame lengths from input_features_mask (no default)
    path = _write(tmp_path, {"model_type": "audioflamingo3_encoder", "architectures": ["AudioFlamingo3Encoder"],
                             "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                             "num_attention_heads": 2, "num_mel_bins": 16, "max_source_positions": 32})
    built = build_hf(path, batch=None, seq_len=None)
    features, mask = built.kwargs["input_features"], built.kwargs["input_features_mask"]
    assert mask.shape == (2, features.shape[-1]) and bool((mask == 1).all())
    trace = trace_target(f"hf:{path}")
    assert trace.complete, trace.stopped_at
    assert "aten::convolution" in _ops(trace)


@pytest.mark.slow
def test_aimv2_gets_images_with_its_text(tmp_path):
    # Aimv2Model scores texts against images without a `return_loss` argument: both towers run
    path = _write(tmp_path, {"model_type": "aimv2", "architectures": ["Aimv2Model"], "projection_dim": 16,
                             "text_config": {**TEXT, "eos_token_id": 1},
                             "vision_config": {"hidden_size": 32, "intermediate_size": 64,
                                               "num_hidden_layers": 1, "num_attention_heads": 2,
                                               "image_size": 32, "patch_size": 8}})
    built = build_hf(path, batch=None, seq_len=None)
    assert built.kwargs["pixel_values"].shape == (2, 3, 32, 32)
    trace = trace_target(f"hf:{path}")
    assert trace.complete, trace.stopped_at
    assert "aten::convolution" in _ops(trace)


TVP = {"model_type": "tvp", "architectures": ["TvpModel"], **TEXT, "max_position_embeddings": 32,
       "max_img_size": 64, "num_frames": 2, "visual_prompt_size": 8,
       "backbone_config": {"model_type": "resnet", "embedding_size": 8, "hidden_sizes": [8, 8, 8, 16],
                           "depths": [1, 1, 1, 1], "layer_type": "basic", "out_features": ["stage4"]}}


@pytest.mark.slow
def test_tvp_gets_its_video_frames(tmp_path):
    # TVP grounds text in a video: (batch, num_frames, 3, max_img_size, max_img_size). Batch 1:
    # transformers' TVP views its column position embeddings as (batch, ...), which holds for one
    # video only (batch 2 stops at that view, modeling_tvp.py)
    path = _write(tmp_path, TVP)
    built = build_hf(path, batch=1, seq_len=None)
    assert built.kwargs["pixel_values"].shape == (1, 2, 3, 64, 64)
    trace = trace_target(f"hf:{path}", batch=1)
    assert trace.complete, trace.stopped_at
    assert "aten::convolution" in _ops(trace)


FASTSPEECH = {"model_type": "fastspeech2_conformer", "architectures": ["FastSpeech2ConformerModel"],
              "hidden_size": 32, "vocab_size": 50, "num_mel_bins": 8, "encoder_num_attention_heads": 2,
              "decoder_num_attention_heads": 2, "encoder_layers": 1, "decoder_layers": 1,
              "encoder_linear_units": 32, "decoder_linear_units": 32, "speech_decoder_postnet_layers": 1,
              "speech_decoder_postnet_units": 16, "duration_predictor_layers": 1,
              "duration_predictor_channels": 16, "pitch_predictor_layers": 1, "pitch_predictor_channels": 16,
              "energy_predictor_layers": 1, "energy_predictor_channels": 16, "max_source_positions": 64}


@pytest.mark.slow
def test_fastspeech2_gets_consistent_speech_targets(tmp_path):
    # training needs all four targets; the spectrogram is as long as the longest utterance (the
    # durations' row sums) and padded with -100, what its loss masks
    path = _write(tmp_path, FASTSPEECH)
    kwargs = build_hf(path, batch=None, seq_len=None).kwargs
    ids, durations = kwargs["input_ids"], kwargs["duration_labels"]
    assert durations.shape == ids.shape and durations.dtype == torch.int64
    assert durations.min() >= 1 and durations.max() <= 4
    lengths = durations.sum(dim=1)
    spectrogram = kwargs["spectrogram_labels"]
    assert spectrogram.shape == (2, int(lengths.max()), 8)
    for row, length in enumerate(lengths.tolist()):
        assert bool((spectrogram[row, length:] == -100).all()) and bool((spectrogram[row, :length] != -100).all())
    assert kwargs["pitch_labels"].shape == kwargs["energy_labels"].shape == (*ids.shape, 1)
    model = build_hf(path, batch=None, seq_len=None).model
    assert value_inputs(model, model.config) == ("duration_labels",)   # keyed on its model_type


@pytest.mark.slow
def test_fastspeech2_trains_on_its_targets(tmp_path):
    # the durations decide the spectrogram length: they are traced with their values (Built.values)
    path = _write(tmp_path, FASTSPEECH)
    assert build_hf(path, batch=None, seq_len=None).values == ("duration_labels",)
    trace = trace_target(f"hf:{path}")
    assert trace.complete, trace.stopped_at
    assert "aten::repeat_interleave.Tensor" in _ops(trace)


SAM2_VIDEO = {"model_type": "sam2_video", "architectures": ["Sam2VideoModel"], "image_size": 128,
              "vision_config": {"backbone_config": {"model_type": "sam2_hiera_det_model", "hidden_size": 8,
                                                    "num_attention_heads": 1, "blocks_per_stage": [1, 1, 2, 1],
                                                    "embed_dim_per_stage": [8, 16, 32, 64],
                                                    "num_attention_heads_per_stage": [1, 1, 1, 1],
                                                    "window_size_per_stage": [4, 4, 4, 4],
                                                    "global_attention_blocks": [3], "image_size": [128, 128],
                                                    "window_positional_embedding_background_size": [4, 4]},
                                "backbone_channel_list": [64, 32, 16, 8], "fpn_hidden_size": 32,
                                "backbone_feature_sizes": [[32, 32], [16, 16], [8, 8]]},
              "prompt_encoder_config": {"hidden_size": 32, "image_size": 128, "mask_input_channels": 4},
              "mask_decoder_config": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                                      "mlp_dim": 64, "iou_head_hidden_dim": 32},
              "memory_attention_hidden_size": 32, "memory_attention_num_layers": 1,
              "memory_attention_num_attention_heads": 1, "memory_attention_feed_forward_hidden_size": 64,
              "memory_encoder_hidden_size": 32, "memory_encoder_output_channels": 16,
              "mask_downsampler_embed_dim": 32, "memory_fuser_embed_dim": 32,
              "memory_fuser_intermediate_dim": 64, "memory_attention_rope_feat_sizes": [8, 8]}


@pytest.mark.slow
def test_a_video_tracker_gets_an_inference_session(tmp_path):
    # Sam2VideoModel's forward takes a Sam2VideoInferenceSession (frames + a click), not tensors;
    # it runs under torch.inference_mode: an inference trace
    path = _write(tmp_path, SAM2_VIDEO)
    built = build_hf(path, batch=None, seq_len=None)
    session = built.kwargs["inference_session"]
    assert type(session).__name__ == "Sam2VideoInferenceSession" and built.kwargs["frame_idx"] == 0
    trace = trace_target(f"hf:{path}", mode="inference")
    assert trace.complete, trace.stopped_at
    # the click's positional encoding (sin) and the mask decoder's upscaling run; under its
    # torch.inference_mode the upscaling reaches the backend as aten::convolution, as outside it
    # (recorder.py, NOTE [inference mode])
    assert {"aten::sin", "aten::convolution"} <= _ops(trace)
    assert "aten::conv_transpose2d.input" not in _ops(trace)
    # its forward has no training path: transformers' own error, not a missing input
    trace = trace_target(f"hf:{path}")
    assert not trace.complete and "object_score_logits" in trace.stopped_at


def test_the_table_lists_a_reason_for_every_input():
    for key, entry in ARCHITECTURES.items():
        assert entry.layout or entry.needs, key
        for need in entry.needs:
            assert need.name and need.reason and "\n" not in need.reason, key


def test_the_table_is_keyed_on_model_types():
    """One key space (NOTE [one architecture table]): every key is a transformers model_type."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    assert sorted(set(ARCHITECTURES) - set(CONFIG_MAPPING_NAMES)) == []
