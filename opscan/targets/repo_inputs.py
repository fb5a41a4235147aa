"""Example inputs for a repository's model built with no configuration (child side).

`example_inputs(model, config)` makes one forward call's inputs from its signature, its first
layer (or, for layers holding raw Parameters, the sizes they declare), the config and the model's
own size attributes (vocabulary, block/image size, channels); `probe_inputs` adds the optional
inputs a forward needs all the same, found by running it on `meta`. Used by
opscan/targets/repository.py; constructor arguments are opscan/targets/construct.py's job.
"""

from __future__ import annotations

import copy
import inspect
import re

import torch
from torch import nn

from opscan.errors import TargetError
from opscan.targets.construct import parameters

_LEAVES = (nn.Embedding, nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.LSTM, nn.GRU)
IN_NAMES = ("dim_in", "in_dim", "input_dim", "in_features", "in_channels", "input_channels", "d_in", "dim")
IMAGE_NAMES = ("image_size", "img_size")
CHANNEL_NAMES = ("channels", "in_channels", "in_chans", "num_channels", "input_channels")
# NOTE [points a 1-D model pools over]
# A point-cloud or sequence model over Conv1d layers often pools its whole input with a fixed window
# (`nn.MaxPool1d(num_points)`, PointNet's symmetric function): fewer points than that window give
# an output of size 0. Its input length is the model's own count (`num_points`, `npoints`,
# `points_per_patch`, `seq_len`: a config's or the model's attribute), else the widest MaxPool1d
# window, else 256.
LENGTH_NAMES = ("num_points", "npoints", "n_points", "points_per_patch", "num_point", "seq_len", "sequence_length")


_IDS_ARG = re.compile(r"^(idx|ids|input_ids|token_ids|tokens|tok|text|src|input_tokens)$")


def _first_leaf(model: nn.Module, first_arg: str = ""):
    """The first torch layer that fixes the input's size (an embedding wherever it sits when the
    forward's first argument is named like token ids: `idx`, `input_ids`, `tokens`, ...); for a
    model made of layers holding raw Parameters (NOTE [raw Parameter layers]), a stand-in
    Linear/Conv of the size they declare."""
    if _IDS_ARG.match(first_arg):
        embedding = next((m for m in model.modules() if isinstance(m, nn.Embedding)), None)
        if embedding is not None:
            return embedding
    embedding = _embeds_first_arg(model, first_arg)
    if embedding is not None:
        return embedding
    for sub in model.modules():
        if isinstance(sub, _LEAVES):
            return sub
        if any(p is not None and p.dim() >= 2 for p in sub._parameters.values()) \
                and not any(True for child in sub.children() for _ in child.parameters()):
            return _declared_leaf(model, sub)   # a layer of its own, not a model holding a few tokens
    return None


# NOTE [an input the forward embeds]
# A forward whose first argument has a name that says nothing (`input_tensor`, `x`) may still hand
# it to an embedding (`self.embedding(self.filter_oov(input_tensor, n))`) while a Linear registered
# earlier (an encoder-decoder adapter) is the first layer of `model.modules()`: a float input then
# fails in `aten::embedding` (Long indices expected). The forward's source is read (never run): a
# call `self.NAME(...)` whose arguments hold the first parameter, where `self.NAME` is an
# nn.Embedding, makes that embedding the input's first consumer, so the input is token indices.


def _embeds_first_arg(model: nn.Module, first_arg: str) -> nn.Embedding | None:
    """The model's own nn.Embedding its forward calls on its first argument (NOTE [an input the
    forward embeds]), or None."""
    import ast
    import textwrap

    if not first_arg:
        return None
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(type(model).forward)))
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    calls = sorted((node for node in ast.walk(tree) if isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "self"), key=lambda node: (node.lineno, node.col_offset))
    for call in calls:
        layer = getattr(model, call.func.attr, None) if isinstance(call.func, ast.Attribute) else None
        if not isinstance(layer, nn.Embedding):
            continue
        if any(isinstance(n, ast.Name) and n.id == first_arg for arg in call.args for n in ast.walk(arg)):
            return layer
    return None


# NOTE [raw Parameter layers]
# Some models hold their weights as raw nn.Parameters used through F.linear / F.conv2d (SIREN
# layers, magnitude-preserving convolutions) instead of nn.Linear / nn.Conv2d: a module holding a
# 2-D or larger Parameter and no child with parameters is such a layer (a model that holds a few
# learned tokens beside its torch layers is not). The input size is
# then what the layers declare: the first module (in registration order) that has an input-size
# attribute (`dim_in`, `in_features`, `in_channels`, ...), else the size of the first raw
# Parameter's last dimension; a 4-D Parameter (out, in, kh, kw) means images.

def _declared_leaf(model: nn.Module, holder: nn.Module):
    size = next((value for sub in model.modules() for name in IN_NAMES
                 for value in [getattr(sub, name, None)]
                 if isinstance(value, int) and not isinstance(value, bool) and value > 0), None)
    weight = next(p for p in holder._parameters.values() if p is not None and p.dim() >= 2)
    if weight.dim() == 4:
        return nn.Conv2d(size or weight.shape[1], 1, 1, device="meta")
    return nn.Linear(size or weight.shape[-1], 1, device="meta")


def _size(config, names, default, model: nn.Module | None = None):
    for source in (config, model):
        if source is None:
            continue
        for key in names:
            value = source.get(key) if isinstance(source, dict) else getattr(source, key, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
            if isinstance(value, (tuple, list)) and value and isinstance(value[-1], int):
                return value[-1]
    return default


def example_inputs(model: nn.Module, config, batch: int | None, seq_len: int | None,
                   call=None, kinds: dict | None = None) -> tuple[tuple, dict]:
    """(args, kwargs) of one forward call: the main input from the first layer and the config (or
    the model's own size attributes), targets/labels, timesteps and positions by name; optional
    arguments left out unless the forward needs them (probe_inputs). A required argument whose name
    says nothing is named by the repository's own call (`call`: a call_sites.Call, whose argument at
    that position, `model(x, input_pos)`, names it; `kinds`: how the repository makes a name)."""
    rnn = next((m for m in model.modules() if isinstance(m, nn.RNNBase)), None)
    # NOTE [recurrent state sized by the model]: a model holding its recurrent state sized by its own
    # `batch_size` (`self.hidden = self.init_hidden()`) takes inputs of that batch, time-major when
    # its recurrent layer is (an embedding feeding an `nn.LSTM` without batch_first reads (time, batch))
    b = batch or (_size(config, ("batch_size",), 0, model) if rnn is not None else 0) or 2
    params = passed_on(model, parameters(model.forward))
    leaf = _first_leaf(model, params[0][0] if params else "")
    side = _size(config, IMAGE_NAMES, 0, model)
    channels = _size(config, CHANNEL_NAMES, 0, model)
    if side and (leaf is None or not isinstance(leaf, (nn.Conv1d, nn.Conv3d, nn.Embedding))):
        leaf = nn.Conv2d(channels or (leaf.in_channels if isinstance(leaf, nn.Conv2d) else 3), 1, 1, device="meta")
    if leaf is None:
        raise TargetError(f"{type(model).__name__} has no embedding, linear or convolution layer to size an input from")
    if isinstance(leaf, nn.Embedding):
        t = seq_len or min(_size(config, ("block_size", "max_seq_len", "seq_len", "context_length", "n_ctx",
                                          "max_position_embeddings", "n_positions", "max_len"), 16, model), 32)
        time_major = rnn is not None and not rnn.batch_first
        main = torch.randint(0, leaf.num_embeddings, (t, b) if time_major else (b, t))
    elif isinstance(leaf, nn.Conv2d):
        side = side or _size(config, ("input_size", "resolution", "sample_size"), 0, model) \
            or _size(_holder(model, leaf), IMAGE_NAMES + ("input_size",), 0)
        main = torch.randn(b, leaf.in_channels, side or 64, side or 64)
        if not side and len([p for _, p in params if p.default is inspect.Parameter.empty]) == 1:
            main = _side_that_runs(model, main)   # NOTE [an image side the model's layers fix]
    elif isinstance(leaf, nn.Conv1d):   # NOTE [points a 1-D model pools over]
        length = seq_len or _size(config, LENGTH_NAMES, 0, model) or max(
            (m.kernel_size if isinstance(m.kernel_size, int) else m.kernel_size[0]
             for m in model.modules() if isinstance(m, nn.MaxPool1d)), default=0)
        main = torch.randn(b, leaf.in_channels, length or 256)
    elif isinstance(leaf, nn.Conv3d):
        main = torch.randn(b, leaf.in_channels, 4, 32, 32)
    elif isinstance(leaf, (nn.LSTM, nn.GRU)):
        main = torch.randn(b, seq_len or 8, leaf.input_size) if leaf.batch_first \
            else torch.randn(seq_len or 8, b, leaf.input_size)
    elif any(re.search(r"Attention|Attn|Attend|Transformer", type(m).__name__) for m in model.modules()):
        main = torch.randn(b, seq_len or 16, leaf.in_features)   # a sequence of features
    else:
        main = torch.randn(b, leaf.in_features)
    args, kwargs = [], {}
    for index, (name, param) in enumerate(params):
        if param.default is not inspect.Parameter.empty:
            if name in ("targets", "target", "labels") and main.dtype == torch.long:
                kwargs[name] = torch.randint(0, leaf.num_embeddings, main.shape)
            continue
        value = main if index == 0 else named_input(name, main, model, config, leaf, kinds, param.annotation)
        said = call.args[index] if call is not None and index < len(call.args) else ""
        if value is None and said:
            value = named_input(said, main, model, config, leaf, kinds, param.annotation)
        if value is None:
            raise TargetError(f"{type(model).__name__}.forward needs {name!r}, which opscan cannot make; "
                              "the repository's README or a factory could")
        args.append(value)
    if not params:
        raise TargetError(f"{type(model).__name__}.forward takes no input opscan can name")
    return probe_inputs(model, tuple(args), kwargs, config, main)


# NOTE [an image side the model's layers fix]
# A convolutional model that flattens its last feature map into a Linear fixes its input side: the
# Atari policy network's `nn.Linear(64 * 7 * 7, 512)` after three strided convolutions takes 84x84
# frames only, and the default 64x64 stops at that Linear. When nothing names the side (config,
# attributes) and the forward takes one input, the default side is tried first on `meta` (no
# compute); only when it fails are the common sides tried, smallest first, and the first the
# forward runs with is taken. A model the default fits is never changed.
_SIDES = (32, 28, 84, 96, 128, 224, 256)


def _side_that_runs(model: nn.Module, main: torch.Tensor) -> torch.Tensor:
    if runs_on_meta(model, (main,), {}, uncopyable=True):
        return main
    for side in _SIDES:
        tried = torch.randn(*main.shape[:2], side, side)
        if runs_on_meta(model, (tried,), {}):
            return tried
    return main


def passed_on(model: nn.Module, params: list) -> list:
    """The forward's parameters; for `forward(self, *args, is_training=False, **kwargs)`, which names
    none it requires, those of the method it passes `*args` on to (`self.forward_features(*args,
    **kwargs)`: `x`, `masks=None`), the forward's own keyword ones left out."""
    try:
        signature = inspect.signature(model.forward)
    except (TypeError, ValueError):
        return params
    if not any(p.kind == p.VAR_POSITIONAL for p in signature.parameters.values()) \
            or any(p.default is inspect.Parameter.empty for _, p in params):
        return params
    try:
        source = inspect.getsource(type(model).forward)
    except (OSError, TypeError):
        return params
    called = re.search(r"self\.(\w+)\(\s*\*\w+", source)
    target = getattr(model, called.group(1), None) if called else None
    return parameters(target) if callable(target) and parameters(target) else params


_POSITIONS = re.compile(r"^(input_pos|pos|positions?|position_ids|pos_ids|input_positions|start_pos|offset)$")


def named_input(name: str, main: torch.Tensor, model: nn.Module, config, leaf, kinds: dict | None = None,
                annotation=inspect.Parameter.empty):
    """A forward input by its name, else None: targets/labels (matching token ids, else class labels
    in [0, num_classes)), timesteps `(B,)`, positions: an `int` annotation gets 0, else
    `torch.arange(T)`, as `(B, T)` for `position_ids`/`pos_ids` or when the repository makes it 2-D
    (`kinds[name] == "arange2d"`), `(T,)` otherwise (gpt-fast's `input_pos`)."""
    b = main.shape[0]
    if name in ("targets", "target", "labels", "y", "label", "tgt"):
        return torch.randint(0, leaf.num_embeddings, main.shape) if main.dtype == torch.long \
            and isinstance(leaf, nn.Embedding) else torch.randint(0, _classes(config, model), (b,))
    if name in TIME_NAMES:
        return torch.rand(b)
    if _POSITIONS.match(name):
        if annotation is int or annotation == "int":
            return 0
        t = main.shape[1] if main.dim() >= 2 else main.shape[0]
        kind = (kinds or {}).get(name) or ("arange2d" if name in ("position_ids", "pos_ids") else "arange")
        return torch.arange(t).repeat(b, 1) if kind == "arange2d" else torch.arange(t)
    return None


def _holder(model: nn.Module, leaf: nn.Module) -> nn.Module | None:
    """The module that holds `leaf` as a direct child (a patch embedder holding its Conv2d, which
    declares the image size it was built for: timm's `PatchEmbed.img_size`), else None."""
    return next((m for m in model.modules() if any(c is leaf for c in m.children())), None)


CLASS_NAMES = ("num_classes", "n_classes", "num_labels", "n_class")


def _classes(config, model: nn.Module) -> int:
    """How many classes a label input ranges over: the config's or the model's count, else the first
    of its modules that declares one (DiT's label embedder), else 1 (label 0)."""
    found = _size(config, CLASS_NAMES, 0, model)
    return found or next((n for m in model.modules() for n in [_size(None, CLASS_NAMES, 0, m)] if n), 1)


TIME_NAMES = ("t", "time", "timestep", "timesteps", "sigma", "sigmas", "noise_level", "times")
_IMAGE_ARG = re.compile(r"^(images?|imgs?|pixel_values|pixels|video)$")
_CONTEXT_ARG = re.compile(r"(tokens|context|memory|embeds|embeddings|encoder_hidden_states|cond)$")
_TARGET_ARG = re.compile(r"^(targets?|labels?|target_\w+|tgt\w*|captions?)$")
_LENGTH_NAMES = ("max_length", "max_len", "max_seq_len", "seq_len", "max_seq_length")


# NOTE [optional inputs the forward needs]
# A forward argument with a default of None may still be needed (CoCa's `image_tokens`: text
# alone fails on `None.shape`). The forward is first run on `meta` (a copy of the model with its
# buffers on meta too: no compute, no memory) with the inputs as made; only if that fails, each
# optional argument named like an input (images; tokens, context, memory, embeddings) is added in
# turn, then all of them, and the first set whose meta forward passes is taken. If no set passes
# (a forward that cannot run on meta at all) the inputs stay as made. Targets a decoder embeds in
# train mode (`forward(vid_feats, target_variable=None)`, `self.embedding(targets)`: a captioning
# model's teacher forcing) are such an input too: token indices below the first embedding's size,
# (batch, its holder's `max_length` / `max_len`, else 16).

def probe_inputs(model: nn.Module, args: tuple, kwargs: dict, config, main: torch.Tensor) -> tuple[tuple, dict]:
    """The inputs, plus the optional ones the forward turns out to need (NOTE above)."""
    extra = {}
    width = _size(config, ("dim", "d_model", "hidden_size", "n_embd", "embed_dim", "image_dim"), 0, model)
    for name, param in parameters(model.forward)[len(args):]:
        if param.default is not None or name in kwargs:
            continue
        if _IMAGE_ARG.match(name):
            side = _size(config, IMAGE_NAMES, 32, model)
            extra[name] = torch.randn(main.shape[0], _size(config, CHANNEL_NAMES, 3, model), side, side)
        elif _CONTEXT_ARG.search(name) and width:
            extra[name] = torch.randn(main.shape[0], 8, width)
        elif _TARGET_ARG.match(name) and (targets := _embedded_targets(model, main.shape[0])) is not None:
            extra[name] = targets
    if not extra or runs_on_meta(model, args, kwargs):
        return args, kwargs
    for name, value in [*extra.items(), ("", None)]:
        tried = {**kwargs, name: value} if name else {**kwargs, **extra}
        if runs_on_meta(model, args, tried):
            return args, tried
    return args, kwargs


def _embedded_targets(model: nn.Module, batch: int) -> torch.Tensor | None:
    """Token indices for targets the model embeds (NOTE [optional inputs the forward needs]), else None."""
    holder = next((m for m in model.modules() if any(isinstance(c, nn.Embedding) for c in m.children())), None)
    if holder is None:
        return None
    embedding = next(c for c in holder.children() if isinstance(c, nn.Embedding))
    return torch.randint(0, embedding.num_embeddings, (batch, _size(None, _LENGTH_NAMES, 16, holder)))


def runs_on_meta(model: nn.Module, args: tuple, kwargs: dict, uncopyable: bool = False) -> bool:
    """Whether the forward runs on `meta` with these inputs (a copy of the model: no compute); a
    model that cannot be copied answers `uncopyable`."""
    def meta(value):
        return value.to("meta") if isinstance(value, torch.Tensor) else value

    try:
        clone = copy.deepcopy(model).to("meta")
    except Exception:  # noqa: BLE001 - user modules that cannot be copied: the forward was not tried
        return uncopyable
    try:
        with torch.no_grad():
            clone(*[meta(a) for a in args], **{k: meta(v) for k, v in kwargs.items()})
    except Exception:  # noqa: BLE001 - any failure of user code means "not with these inputs"
        return False
    return True
