"""`hf:PATH` targets: a transformers model built from a local config.json, with task inputs."""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import os
from pathlib import Path

import torch

from opscan.errors import TargetError
from opscan.trace.targets import Built, build_empty, first_line, read_json

DEFAULT_BATCH = 2
DEFAULT_SEQ_LEN = 128

# Architecture-name endings -> the auto class used when the architecture is not importable.
_AUTO = (
    ("ForCausalLM", "AutoModelForCausalLM"),
    ("LMHeadModel", "AutoModelForCausalLM"),
    ("ForMaskedLM", "AutoModelForMaskedLM"),
    ("ForConditionalGeneration", "AutoModelForSeq2SeqLM"),
    ("ForSequenceClassification", "AutoModelForSequenceClassification"),
    ("ForTokenClassification", "AutoModelForTokenClassification"),
    ("ForImageClassification", "AutoModelForImageClassification"),
)


def _transformers():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import transformers
    except ImportError:
        raise TargetError("hf: targets need transformers: pip install 'opscan-neuron[hf]'") from None
    return transformers


def load_config(path_text: str, trust_remote_code: bool = False):
    """The transformers config for `config.json` (or a folder holding one), read offline.

    A config with `auto_map` (the folder's own configuration/modeling code) is refused unless
    `trust_remote_code`; with it, transformers imports that code (in the trace's child process).
    """
    path = Path(path_text)
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        raise TargetError("no config.json here (hf: takes a local config.json or its folder; "
                          "nothing is downloaded)", path=str(path))
    data = read_json(path)
    model_type = data.get("model_type")
    if not model_type:
        raise TargetError("config has no 'model_type'", path=str(path))
    transformers = _transformers()
    if data.get("auto_map"):
        if not trust_remote_code:
            from opscan.discover import NO_TRUST_NOTE

            where = ", ".join(sorted({str(v if isinstance(v, str) else v[0]).split(".")[0] + ".py"
                                      for v in data["auto_map"].values() if v}))
            raise TargetError(NO_TRUST_NOTE.format(where=where), path=str(path))
        try:
            config = transformers.AutoConfig.from_pretrained(str(path.parent), trust_remote_code=True,
                                                             local_files_only=True)
        except Exception as exc:  # noqa: BLE001 - the folder's own code failed
            raise TargetError(f"the folder's configuration code failed: {type(exc).__name__}: {first_line(exc)}"
                              .splitlines()[0], path=str(path)) from None
        return config, path
    data = {k: v for k, v in data.items() if k != "model_type"}
    try:
        config = transformers.AutoConfig.for_model(model_type, **data)
    except (ValueError, KeyError) as exc:
        raise TargetError(f"transformers {transformers.__version__} cannot read this config: {first_line(exc)}"
                          .splitlines()[0], path=str(path)) from None
    return config, path


def _model_class(config, path: Path):
    transformers = _transformers()
    archs = getattr(config, "architectures", None) or []
    auto_map = getattr(config, "auto_map", None) or {}
    if auto_map:   # remote code (trusted by the caller): the auto class that maps to it
        wanted = next((auto for ending, auto in _AUTO if archs and archs[0].endswith(ending)), "AutoModel")
        name = wanted if wanted in auto_map else next((k for k in sorted(auto_map) if k.startswith("AutoModel")), "")
        if not name:
            raise TargetError("auto_map names no AutoModel class", path=str(path))
        return getattr(transformers, name)
    if archs:
        arch = archs[0]
        cls = getattr(transformers, arch, None)
        if cls is not None:
            return cls
        for ending, auto in _AUTO:
            if arch.endswith(ending):
                return getattr(transformers, auto)
        raise TargetError(f"transformers {transformers.__version__} has no architecture {arch!r}",
                          path=str(path))
    return transformers.AutoModel


def build_hf(path_text: str, *, batch: int | None, seq_len: int | None,
             trust_remote_code: bool = False) -> Built:
    """Build the config's architecture with empty weights and generate inputs for its task."""
    config, path = load_config(path_text, trust_remote_code)
    cls = _model_class(config, path)
    make = cls.from_config if hasattr(cls, "from_config") else cls
    if getattr(config, "auto_map", None):
        make = functools.partial(cls.from_config, trust_remote_code=True)
    with default_dtype(config_dtype(config)):
        try:
            model = build_empty(lambda: make(config))
        except Exception as exc:  # noqa: BLE001 - report any construction failure as one line
            raise TargetError(f"building {cls.__name__} failed: {type(exc).__name__}: {first_line(exc)}"
                              .splitlines()[0], path=str(path)) from None
    kwargs = task_inputs(model, config, batch or DEFAULT_BATCH, seq_len)
    # serving computes no loss; seq2seq heads still need labels to make their decoder inputs
    seq2seq = getattr(config, "is_encoder_decoder", False)
    train_only = () if seq2seq else ("labels",)
    return Built(model, kwargs=kwargs, description=f"hf:{path_text}", train_only=train_only)


def config_dtype(config):
    """The floating dtype the config asks for (`dtype` / `torch_dtype`), or None for float32."""
    value = config.dtype if hasattr(config, "dtype") else getattr(config, "torch_dtype", None)
    if isinstance(value, str):
        value = getattr(torch, value, None)
    return value if isinstance(value, torch.dtype) and value.is_floating_point else None


@contextlib.contextmanager
def default_dtype(dtype):
    """Build parameters in `dtype`, as transformers' from_pretrained(dtype=...) does."""
    if dtype is None:
        yield
        return
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def _field(config, name: str):
    """`config.name`, else the first sub-config's (audio encoders keep num_mel_bins in encoder_config)."""
    try:
        value = getattr(config, name, None)
    except Exception:  # noqa: BLE001 - heterogeneous configs refuse some global reads
        value = None
    if value is not None:
        return value
    for key in sorted(getattr(config, "sub_configs", None) or {}):
        sub = getattr(config, key, None)
        if sub is not None and sub is not config and hasattr(sub, "to_dict"):
            value = _field(sub, name)
            if value is not None:
                return value
    return None


def _decoder_inputs(model, config, out: dict, ids) -> dict:
    """An encoder-decoder base model (MarianModel, WhisperModel) without labels gets decoder_input_ids.

    A head makes them from the labels; the base model has no labels and its decoder would get
    neither ids nor embeddings.
    """
    if "labels" in out or not getattr(config, "is_encoder_decoder", False):
        return out
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return out
    if "decoder_input_ids" in params:
        out["decoder_input_ids"] = ids.clone()
    return out


def task_inputs(model, config, batch: int, seq_len: int | None) -> dict:
    """Example inputs for the model's task, with labels when its head computes a loss."""
    arch = type(model).__name__
    main = getattr(model, "main_input_name", "input_ids")
    vocab = getattr(config, "vocab_size", None) or 2
    gen = torch.Generator().manual_seed(0)
    if main == "input_ids":
        limit = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
        if not isinstance(limit, int) or limit <= 0:
            limit = None  # xlnet says -1: no limit
        seq = seq_len or min(DEFAULT_SEQ_LEN, limit or DEFAULT_SEQ_LEN)
        axial = getattr(config, "axial_pos_shape", None)
        if seq_len is None and getattr(config, "axial_pos_embds", False) and isinstance(axial, (list, tuple)):
            seq = math.prod(axial)   # reformer trains only on sequences of exactly this length
        codebooks = getattr(config, "num_codebooks", None)
        if isinstance(codebooks, int) and codebooks > 1 and arch.endswith("ForCausalLM"):
            # audio decoders (musicgen): one row per codebook, labels (batch, seq, codebooks)
            ids = torch.randint(0, vocab, (batch * codebooks, seq), generator=gen)
            return {"input_ids": ids, "labels": ids.reshape(batch, codebooks, seq).transpose(1, 2).clone()}
        ids = torch.randint(0, vocab, (batch, seq), generator=gen)
        out = {"input_ids": ids}
        if arch.endswith(("ForCausalLM", "LMHeadModel", "ForMaskedLM", "ForConditionalGeneration")):
            out["labels"] = ids.clone()
        elif arch.endswith("ForSequenceClassification"):
            out["labels"] = torch.randint(0, max(config.num_labels, 1), (batch,), generator=gen)
        elif arch.endswith("ForTokenClassification"):
            out["labels"] = torch.randint(0, max(config.num_labels, 1), (batch, seq), generator=gen)
        return _decoder_inputs(model, config, out, ids)
    if main == "pixel_values":
        size = getattr(config, "image_size", 224)
        size = size if isinstance(size, (tuple, list)) else (size, size)
        channels = getattr(config, "num_channels", 3)
        out = {"pixel_values": torch.randn(batch, channels, *size[-2:], generator=gen)}
        if arch.endswith("ForImageClassification"):
            out["labels"] = torch.randint(0, max(config.num_labels, 1), (batch,), generator=gen)
        return out
    if main == "input_features":
        frames = 2 * (_field(config, "max_source_positions") or 1500)
        bins = _field(config, "num_mel_bins")
        if not isinstance(bins, int):
            raise TargetError(f"opscan does not know how many mel bins {arch} takes (no num_mel_bins in its "
                              "config or sub-configs); give input_features with --input NAME:DTYPE[SHAPE]")
        out = {"input_features": torch.randn(batch, bins, frames, generator=gen)}
        if arch.endswith("ForConditionalGeneration"):
            out["labels"] = torch.randint(0, vocab, (batch, seq_len or 16), generator=gen)
        decoder_ids = torch.randint(0, vocab, (batch, seq_len or 16), generator=gen)
        return _decoder_inputs(model, config, out, decoder_ids)
    if main == "input_values":
        return {"input_values": torch.randn(batch, seq_len or 16000, generator=gen)}
    raise TargetError(f"opscan does not know which inputs {arch} takes (main input {main!r}); "
                      "give them with --input NAME:DTYPE[SHAPE]")
