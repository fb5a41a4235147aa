"""Constructor arguments and example inputs for a repository's model, with no configuration (child side).

`arguments(fn, module)` fills what a class or factory needs: config classes with defaults
(dataclasses, attrs, pydantic, `__init__` defaults, `get_default_config()`), nested configs, a
variant name from a registry the module defines, config files shipped beside the code, else small
values by parameter name (NAMED). Configs are shrunk as `--layers` does (LAYER_NAMES -> 2).
`example_inputs(model, config)` makes one forward call's inputs from its signature, its first
layer and the config (vocabulary, block/image size, channels). Used by opscan/targets/repository.py.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import re
import sys
from pathlib import Path

import torch
from torch import nn

from opscan.errors import TargetError

from opscan.targets.recipes import named_value   # small values by parameter name
LAYER_NAMES = {"depth", "n_layer", "n_layers", "num_layers", "nlayers", "num_hidden_layers", "num_blocks",
               "n_blocks", "layers"}
CONFIG_ARG = re.compile(r"(config|conf|cfg|args|hparams|params|settings|options)$", re.IGNORECASE)
CONFIG_CLASS = re.compile(r"(Config|Args|Cfg|Params|HParams|Settings|Conf)$")
VARIANT_ARG = re.compile(r"^(name|model_name|variant|arch|model_type|size|config_name|model|version)$")
SMALL = ("nano", "tiny", "mini", "small", "xs", "s", "base", "gpt2", "124m", "t", "b")


def arguments(fn, module, folder: Path | None) -> tuple[dict, list[str]]:
    """(kwargs for `fn`, how each was filled); TargetError naming the argument that could not be."""
    kwargs, how = {}, []
    for name, param in _parameters(fn):
        if name in ("pretrained", "pretrained_backbone", "progress", "download", "load_weights"):
            kwargs[name] = False
            continue
        if param.default is not inspect.Parameter.empty:
            continue
        value, words = fill(name, param.annotation, module, folder)
        kwargs[name] = value
        how.append(words)
    return kwargs, how


def _parameters(fn):
    try:
        sig = inspect.signature(fn.__init__ if inspect.isclass(fn) else fn)
    except (TypeError, ValueError):
        return []
    return [(n, p) for n, p in sig.parameters.items()
            if n != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def fill(name: str, annotation, module, folder: Path | None):
    """A value for one required argument and how it was chosen."""
    cls = _annotation_class(annotation, module)
    if cls is not None and not issubclass(cls, nn.Module) and cls not in (int, float, str, bool):
        return make_config(cls, module, folder)
    part = part_class(name, cls, module)
    if part is not None:
        return make_part(part, module, folder)
    if CONFIG_ARG.search(name) and name != "params":
        errors = []
        for cls in config_classes(module):
            try:
                return make_config(cls, module, folder)
            except TargetError as exc:
                errors.append(str(exc))
        if errors:
            raise TargetError(errors[0])
    if VARIANT_ARG.match(name):
        variant = pick_variant(module)
        if variant is not None:
            return variant[0], f"{name}={variant[0]!r} (the smallest variant of {variant[1]})"
    if named_value(name) is not None:
        return named_value(name), f"{name}={named_value(name)}"
    raise TargetError(f"cannot choose a value for the required argument {name!r}")


# NOTE [wrappers]
# A wrapper takes the model's body as an argument (`TransformerWrapper(attn_layers: AttentionLayers)`,
# `Wrapper(encoder)`). That argument is built first, the same way: from its annotation when it
# names an nn.Module class, else from a class of the module whose name is the argument's
# (`attn_layers` -> AttentionLayers / AttnLayers, `encoder` -> Encoder). torch.nn's own classes
# are never guessed (they need sizes opscan cannot tie to the wrapper's).

def part_class(name: str, cls, module):
    """The nn.Module class to build for a wrapper's argument (NOTE [wrappers]), else None."""
    if cls is not None and issubclass(cls, nn.Module):
        return None if cls.__module__.startswith("torch.") else cls
    wanted = {name.replace("_", "").lower(), name.replace("attn", "attention").replace("_", "").lower()}
    return next((value for value in vars(module).values() if inspect.isclass(value) and issubclass(value, nn.Module)
                 and not value.__module__.startswith("torch.") and value.__name__.lower() in wanted), None)


def make_part(cls, module, folder: Path | None):
    """An instance of the nn.Module class `cls`, its own required arguments filled (a wrapper's body)."""
    if cls in _BUILDING:
        raise TargetError(f"{cls.__name__} takes itself as an argument")
    _BUILDING.add(cls)
    try:
        kwargs, how = arguments(cls, sys.modules.get(cls.__module__, module), folder)
        return cls(**kwargs), f"{cls.__name__}({', '.join(how)})"
    except TargetError:
        raise
    except Exception as exc:  # noqa: BLE001 - user code
        raise TargetError(f"{cls.__name__}(...) failed: {type(exc).__name__}: {exc}".splitlines()[0]) from None
    finally:
        _BUILDING.discard(cls)


_BUILDING: set = set()


def _annotation_class(annotation, module):
    if annotation is inspect.Parameter.empty:
        return None
    if isinstance(annotation, str):
        annotation = getattr(module, annotation.split(".")[-1].strip("'\""), None)
    return annotation if inspect.isclass(annotation) else None


def config_classes(module) -> list[type]:
    """Config-like classes the module defines or imports, those it defines first."""
    found = []
    for value in vars(module).values():
        if inspect.isclass(value) and not issubclass(value, nn.Module) and (
                dataclasses.is_dataclass(value) or hasattr(value, "__attrs_attrs__") or hasattr(value, "model_fields")
                or CONFIG_CLASS.search(value.__name__) or hasattr(value, "get_default_config")):
            found.append(value)
    own = getattr(module, "__name__", "")
    return sorted(found, key=lambda c: (c.__module__ != own, c.__name__))


def make_config(cls, module, folder: Path | None):
    """An instance of config class `cls` (defaults, get_default_config, names, shipped files), shrunk."""
    named = _from_name(cls)
    if named is not None:
        return named
    if hasattr(cls, "get_default_config"):
        config = cls.get_default_config()
        for key, value in list(vars(config).items()):
            if value is None and named_value(key) is not None:
                setattr(config, key, named_value(key))
        return shrink(config), f"{cls.__name__}.get_default_config() (unset sizes filled by name)"
    required = {}
    for name, param in _parameters(cls):
        if param.default is inspect.Parameter.empty:
            required[name] = param.annotation
    if not required:
        try:
            return shrink(cls()), f"{cls.__name__}(): a default for every field"
        except Exception as exc:  # noqa: BLE001 - a config class of user code
            raise TargetError(f"{cls.__name__}() failed: {type(exc).__name__}: {exc}".splitlines()[0]) from None
    shipped = shipped_config(folder, set(required))
    if shipped is not None:
        data, where = shipped
        return shrink(cls(**{k: v for k, v in data.items() if k in _names(cls)})), f"{cls.__name__} from {where}"
    values = {}
    for name, annotation in required.items():
        nested = _annotation_class(annotation, module)
        if nested is not None and nested not in (int, float, str, bool) and not issubclass(nested, nn.Module):
            values[name] = make_config(nested, module, folder)[0]
        elif named_value(name) is not None:
            values[name] = named_value(name)
        else:
            raise TargetError(f"{cls.__name__} needs {name!r}, which has no default and no config file beside it")
    return shrink(cls(**values)), f"{cls.__name__}({', '.join(f'{k}=…' for k in values)}): fields filled by name"


def _from_name(cls):
    """`cls.from_name(NAME)` with the smallest variant of a registry its module defines, else None."""
    maker = getattr(cls, "from_name", None)
    home = sys.modules.get(getattr(cls, "__module__", ""))
    variant = pick_variant(home) if callable(maker) and home is not None else None
    if variant is None:
        return None
    try:
        config = maker(variant[0])
    except Exception as exc:  # noqa: BLE001 - a config class of user code
        raise TargetError(f"{cls.__name__}.from_name({variant[0]!r}) failed: {type(exc).__name__}: {exc}".splitlines()[0]) from None
    return shrink(config), f"{cls.__name__}.from_name({variant[0]!r}) (the smallest variant of {variant[1]})"


def _names(cls) -> set[str]:
    return {n for n, _ in _parameters(cls)}


def shipped_config(folder: Path | None, wanted: set[str]) -> tuple[dict, str] | None:
    """A JSON/YAML/TOML file beside the model code (or in configs/) whose keys cover `wanted`."""
    if folder is None:
        return None
    files = []
    for base in (folder, folder / "configs", folder / "config", folder.parent / "configs"):
        if base.is_dir():
            files.extend(sorted(p for p in base.iterdir() if p.suffix in (".json", ".yaml", ".yml", ".toml")))
    for path in sorted(files, key=lambda p: (_size_rank(p.stem), p.as_posix())):
        data = _read(path)
        if isinstance(data, dict) and wanted <= set(data):
            return data, path.name
    return None


def _size_rank(stem: str) -> float:
    """Smaller first: a size spelled in the name (`pythia-14m`, `llama3_2_1b`, `0.5B`), else a
    small-sounding word (SMALL), else last."""
    millions = size_in_name(stem)
    if millions is not None:
        return math.log10(millions + 1)
    lowered = stem.lower()
    return 10 + next((i for i, word in enumerate(SMALL) if word in re.split(r"[-_.]", lowered)), len(SMALL))


_SIZE = re.compile(r"(?:^|[-_.])(0_\d+|\d+(?:\.\d+)?)([mbk])(?=$|[-_.])", re.IGNORECASE)


def size_in_name(name: str) -> float | None:
    """The parameter count (millions) spelled in a variant's name, e.g. 14 for `pythia-14m`, 500 for `0_5b`."""
    found = _SIZE.findall(name)
    if not found:
        return None
    number, unit = found[-1]
    return float(number.replace("_", ".")) * {"k": 1e-3, "m": 1.0, "b": 1e3}[unit.lower()]


def _read(path: Path):
    try:
        if path.stat().st_size > 1 << 20:
            return None
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            return json.loads(text)
        if path.suffix == ".toml":
            import tomllib
            return tomllib.loads(text)
        import yaml
        return yaml.safe_load(text)
    except Exception:  # noqa: BLE001 - an unreadable file is simply not a config
        return None


def pick_variant(module) -> tuple[str, str] | None:
    """(the smallest-sounding key, the registry's name) of a module-level dict of named variants."""
    items = sorted(vars(module).items(), key=lambda item: (not _REGISTRY.search(item[0]), item[0]))
    for name, value in items:
        if isinstance(value, dict) and value and all(isinstance(k, str) for k in value) and not name.startswith("__"):
            keys = sorted(value, key=lambda k: (_size_rank(k), k))
            return keys[0], name
        if isinstance(value, (list, tuple)) and value and all(isinstance(k, str) for k in value) \
                and re.search(r"(models|variants|archs|names|configs)$", name, re.IGNORECASE):
            keys = sorted(value, key=lambda k: (_size_rank(k), k))
            return keys[0], name
    return None


_REGISTRY = re.compile(r"(config|configs|registry|models|variants|archs|name_to\w*)$", re.IGNORECASE)


def shrink(config):
    """`--layers`-style shrinking: layer counts above 2 become 2 (attributes or dict keys)."""
    items = config.items() if isinstance(config, dict) else list(getattr(config, "__dict__", {}).items())
    for key, value in items:
        if key in LAYER_NAMES and isinstance(value, int) and not isinstance(value, bool) and value > 2:
            if isinstance(config, dict):
                config[key] = 2
            else:
                try:
                    object.__setattr__(config, key, 2)
                except Exception:  # noqa: BLE001 - a frozen or validating config stays as it is
                    pass
    return config


def cut_repeats(model: nn.Module, keep: int = 2) -> int:
    """`--layers`-style shrinking of a built model: each ModuleList / ModuleDict of more than `keep`
    blocks of one type is cut to its first `keep` (NOTE [cutting repeated blocks]); how many were cut."""
    cut = 0
    for sub in list(model.modules()):
        for name, child in list(sub.named_children()):
            if isinstance(child, (nn.ModuleList, nn.ModuleDict)) and len(child) > keep \
                    and len({type(m) for m in child.values()} if isinstance(child, nn.ModuleDict)
                            else {type(m) for m in child}) == 1:
                items = list(child.items()) if isinstance(child, nn.ModuleDict) else list(enumerate(child))
                cut += len(items) - keep
                kept = nn.ModuleDict(dict(items[:keep])) if isinstance(child, nn.ModuleDict) \
                    else nn.ModuleList([m for _, m in items[:keep]])
                setattr(sub, name, kept)
                for attr in ("num_layers", "n_layers", "n_layer", "depth"):
                    if isinstance(getattr(sub, attr, None), int) and getattr(sub, attr) > keep:
                        setattr(sub, attr, keep)
    return cut


# NOTE [cutting repeated blocks]
# A builder with no arguments (torchtune's `llama3_2_1b()`) builds the full depth (on `meta`, so
# no memory). Its ops do not depend on how many identical blocks it repeats, so, as `--layers`
# does for configs, every ModuleList/ModuleDict holding more than two blocks of one class keeps
# its first two (and a `num_layers`-style count beside it follows). Only a model built with no
# argument filled by opscan is cut: one whose sizes opscan chose is already small, and cutting
# it could break what its constructor derived from the depth (x-transformers' layer order).

# --- inputs -----------------------------------------------------------------------------------------

_LEAVES = (nn.Embedding, nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.LSTM, nn.GRU)
IN_NAMES = ("dim_in", "in_dim", "input_dim", "in_features", "in_channels", "input_channels", "d_in", "dim")
IMAGE_NAMES = ("image_size", "img_size")
CHANNEL_NAMES = ("channels", "in_channels", "in_chans", "num_channels", "input_channels")


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
    for sub in model.modules():
        if isinstance(sub, _LEAVES):
            return sub
        if any(p is not None and p.dim() >= 2 for p in sub._parameters.values()) \
                and not any(True for child in sub.children() for _ in child.parameters()):
            return _declared_leaf(model, sub)   # a layer of its own, not a model holding a few tokens
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


def example_inputs(model: nn.Module, config, batch: int | None, seq_len: int | None) -> tuple[tuple, dict]:
    """(args, kwargs) of one forward call: the main input from the first layer and the config (or
    the model's own size attributes), targets/labels and timesteps by name; optional arguments left
    out unless the forward needs them (probe_inputs)."""
    b = batch or 2
    params = _parameters(model.forward)
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
        main = torch.randint(0, leaf.num_embeddings, (b, t))
    elif isinstance(leaf, nn.Conv2d):
        side = side or _size(config, ("input_size", "resolution", "sample_size"), 64, model)
        main = torch.randn(b, leaf.in_channels, side, side)
    elif isinstance(leaf, nn.Conv1d):
        main = torch.randn(b, leaf.in_channels, seq_len or 256)
    elif isinstance(leaf, nn.Conv3d):
        main = torch.randn(b, leaf.in_channels, 4, 32, 32)
    elif isinstance(leaf, (nn.LSTM, nn.GRU)):
        main = torch.randn(b, seq_len or 8, leaf.input_size) if leaf.batch_first else torch.randn(seq_len or 8, b, leaf.input_size)
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
        if index == 0:
            value = main
        elif name in ("targets", "target", "labels", "y", "label", "tgt"):
            value = torch.randint(0, leaf.num_embeddings, main.shape) if main.dtype == torch.long else \
                torch.zeros(b, dtype=torch.long)
        elif name in TIME_NAMES:
            value = torch.rand(b)
        else:
            raise TargetError(f"{type(model).__name__}.forward needs {name!r}, which opscan cannot make; "
                              "the repository's README or a factory could")
        args.append(value)
    if not params:
        raise TargetError(f"{type(model).__name__}.forward takes no input opscan can name")
    return probe_inputs(model, tuple(args), kwargs, config, main)


TIME_NAMES = ("t", "time", "timestep", "timesteps", "sigma", "sigmas", "noise_level", "times")
_IMAGE_ARG = re.compile(r"^(images?|imgs?|pixel_values|pixels|video)$")
_CONTEXT_ARG = re.compile(r"(tokens|context|memory|embeds|embeddings|encoder_hidden_states|cond)$")


# NOTE [optional inputs the forward needs]
# A forward argument with a default of None may still be needed (CoCa's `image_tokens`: text
# alone fails on `None.shape`). The forward is first run on `meta` (a copy of the model with its
# buffers on meta too: no compute, no memory) with the inputs as made; only if that fails, each
# optional argument named like an input (images; tokens, context, memory, embeddings) is added in
# turn, then all of them, and the first set whose meta forward passes is taken. If no set passes
# (a forward that cannot run on meta at all) the inputs stay as made.

def probe_inputs(model: nn.Module, args: tuple, kwargs: dict, config, main: torch.Tensor) -> tuple[tuple, dict]:
    """The inputs, plus the optional ones the forward turns out to need (NOTE above)."""
    extra = {}
    width = _size(config, ("dim", "d_model", "hidden_size", "n_embd", "embed_dim", "image_dim"), 0, model)
    for name, param in _parameters(model.forward)[len(args):]:
        if param.default is not None or name in kwargs:
            continue
        if _IMAGE_ARG.match(name):
            side = _size(config, IMAGE_NAMES, 32, model)
            extra[name] = torch.randn(main.shape[0], _size(config, CHANNEL_NAMES, 3, model), side, side)
        elif _CONTEXT_ARG.search(name) and width:
            extra[name] = torch.randn(main.shape[0], 8, width)
    if not extra or _runs_on_meta(model, args, kwargs):
        return args, kwargs
    for name, value in [*extra.items(), ("", None)]:
        tried = {**kwargs, name: value} if name else {**kwargs, **extra}
        if _runs_on_meta(model, args, tried):
            return args, tried
    return args, kwargs


def _runs_on_meta(model: nn.Module, args: tuple, kwargs: dict) -> bool:
    import copy

    def meta(value):
        return value.to("meta") if isinstance(value, torch.Tensor) else value

    try:
        clone = copy.deepcopy(model).to("meta")
        with torch.no_grad():
            clone(*[meta(a) for a in args], **{k: meta(v) for k, v in kwargs.items()})
    except Exception:  # noqa: BLE001 - any failure of user code means "not with these inputs"
        return False
    return True
