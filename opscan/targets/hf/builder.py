"""`hf:PATH` targets: a transformers model built from a local config.json (read by ../folders.py), with task inputs."""

from __future__ import annotations

import contextlib
import difflib
import functools
import os
from pathlib import Path

import torch

from opscan.errors import TargetError
from opscan.records import Shrink
from opscan.targets.empty import build_empty
from opscan.targets.folders import NO_TRUST_NOTE, config_path, read_config, remote_code
from opscan.targets.hf.architectures import value_inputs
from opscan.targets.hf.defaults import SHRUNK_KEY
from opscan.targets.hf.inputs import task_inputs
from opscan.targets.hf.shapes import VALUE_INPUTS, WIDTH_KEYS, config_width  # noqa: F401 - WIDTH_KEYS re-exported
from opscan.trace.spec import Built

DEFAULT_BATCH = 2

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
    path = config_path(path_text)
    if not path.is_file():
        raise TargetError("no config.json here (hf: takes a local config.json or its folder; "
                          "nothing is downloaded)", path=str(path))
    data = read_config(path).data
    model_type = data.get("model_type")
    if not model_type:
        raise TargetError("config has no 'model_type'", path=str(path))
    transformers = _transformers()
    if data.get("auto_map"):
        if not trust_remote_code:
            raise TargetError(NO_TRUST_NOTE.format(where=remote_code(data)), path=str(path))
        try:
            config = transformers.AutoConfig.from_pretrained(str(path.parent), trust_remote_code=True,
                                                             local_files_only=True)
        except Exception as exc:  # noqa: BLE001 - the folder's own code failed
            raise TargetError(f"the folder's configuration code failed: {one_line(exc)}", path=str(path)) from None
        return config, path
    known = sorted(transformers.CONFIG_MAPPING.keys())
    if model_type not in known:   # one line with the closest names, not transformers' whole list
        close = difflib.get_close_matches(str(model_type), known, n=3, cutoff=0.6)
        hint = f"; closest: {', '.join(close)}" if close else ""
        raise TargetError(f"unknown model_type {model_type!r}: transformers {transformers.__version__} has no "
                          f"config class of that name{hint}", path=str(path))
    data = {k: v for k, v in data.items() if k != "model_type"}
    try:
        config = transformers.AutoConfig.for_model(model_type, **data)
    except Exception as exc:  # noqa: BLE001 - transformers' own config classes (no project code) reject a value
        raise TargetError(f"transformers {transformers.__version__} cannot build a {model_type} config from "
                          f"it: {one_line(exc)}", path=str(path)) from None
    return config, path


def one_line(exc: BaseException) -> str:
    """The exception's class and whole message on one line (never cut: the reason is often last)."""
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


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
             trust_remote_code: bool = False, given: tuple[str, ...] = ()) -> Built:
    """Build the config's architecture with empty weights and generate inputs for its task.

    `given`: the names of the inputs the user gives with --input (they need not be generated).
    """
    config, path = load_config(path_text, trust_remote_code)
    cls = _model_class(config, path)
    make = cls.from_config if hasattr(cls, "from_config") else cls
    if getattr(config, "auto_map", None):
        make = functools.partial(cls.from_config, trust_remote_code=True)
    with default_dtype(config_dtype(config)):
        try:
            model = build_empty(lambda: make(config))
        except Exception as exc:  # noqa: BLE001 - report any construction failure as one line
            raise TargetError(f"building {cls.__name__} failed: {one_line(exc)}", path=str(path)) from None
    kwargs = task_inputs(model, config, batch or DEFAULT_BATCH, seq_len, given)
    # serving computes no loss; seq2seq heads still need labels to make their decoder inputs
    seq2seq = getattr(config, "is_encoder_decoder", False)
    train_only = () if seq2seq else ("labels",)
    extra = value_inputs(model, config)   # per architecture (opscan/targets/hf/architectures.py)
    values = tuple(name for name in kwargs if name in VALUE_INPUTS or name in extra)
    axial = seq_len is None and getattr(config, "axial_pos_embds", False)   # reformer: one length only
    resized = None if axial else (lambda length: task_inputs(model, config, batch or DEFAULT_BATCH, length, given))
    return Built(model, kwargs=kwargs, description=f"hf:{path_text}", train_only=train_only, values=values,
                 shrink=traced_size(config, kwargs), resized=resized)


def traced_size(config, kwargs: dict) -> Shrink:
    """The traced batch and sequence length (of `input_ids`) and, for a config whose layers the zoo
    cut (SHRUNK_KEY), the real and traced layer count of its main stack (the top level's, else the
    text config's, else the first cut); the width the config states, traced and real alike (the
    folder's config.json is the model's own: nothing but the layer count is cut)."""
    ids = kwargs.get("input_ids")
    batch, seq = tuple(ids.shape) if isinstance(ids, torch.Tensor) and ids.dim() == 2 else (0, 0)
    cuts = getattr(config, SHRUNK_KEY, None)
    cut = [0, 0]
    if isinstance(cuts, dict) and cuts:
        key = next((k for k in cuts if "." not in k), next((k for k in cuts if k.startswith("text_config.")),
                                                          next(iter(cuts))))
        if isinstance(cuts[key], list) and len(cuts[key]) == 2:
            cut = cuts[key]
    width = config_width(config)   # the model's own config: its width is the real one (only layers are cut)
    return Shrink(layers=int(cut[1]), real_layers=int(cut[0]), batch=int(batch), seq_len=int(seq),
                  hidden=width, real_hidden=width, hidden_from="config.json" if width else "")


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
