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
import re
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


def _size_rank(stem: str) -> int:
    lowered = stem.lower()
    return next((i for i, word in enumerate(SMALL) if word in re.split(r"[-_.]", lowered)), len(SMALL))


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
    for name, value in sorted(vars(module).items()):
        if isinstance(value, dict) and value and all(isinstance(k, str) for k in value) and not name.startswith("__"):
            keys = sorted(value, key=lambda k: (_size_rank(k), k))
            return keys[0], name
        if isinstance(value, (list, tuple)) and value and all(isinstance(k, str) for k in value) \
                and re.search(r"(models|variants|archs|names|configs)$", name, re.IGNORECASE):
            keys = sorted(value, key=lambda k: (_size_rank(k), k))
            return keys[0], name
    return None


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


# --- inputs -----------------------------------------------------------------------------------------

def _first_leaf(model: nn.Module):
    for sub in model.modules():
        if isinstance(sub, (nn.Embedding, nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.LSTM, nn.GRU)):
            return sub
    return None


def _size(config, names, default):
    for source in (config, ):
        for key in names:
            value = source.get(key) if isinstance(source, dict) else getattr(source, key, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
            if isinstance(value, (tuple, list)) and value and isinstance(value[-1], int):
                return value[-1]
    return default


def example_inputs(model: nn.Module, config, batch: int | None, seq_len: int | None) -> tuple[tuple, dict]:
    """(args, kwargs) of one forward call: the main input from the first layer and the config,
    targets/labels and timesteps by name; optional arguments left out."""
    b = batch or 2
    leaf = _first_leaf(model)
    if leaf is None and _size(config, ("image_size", "img_size"), 0):
        leaf = nn.Conv2d(_size(config, ("channels", "in_channels", "in_chans", "num_channels"), 3), 1, 1, device="meta")
    if leaf is None:
        raise TargetError(f"{type(model).__name__} has no embedding, linear or convolution layer to size an input from")
    if isinstance(leaf, nn.Embedding):
        t = seq_len or min(_size(config, ("block_size", "max_seq_len", "seq_len", "context_length", "n_ctx",
                                          "max_position_embeddings", "n_positions", "max_len"), 16), 32)
        main = torch.randint(0, leaf.num_embeddings, (b, t))
    elif _size(config, ("image_size", "img_size"), 0) and not isinstance(leaf, (nn.Conv1d, nn.Conv3d)):
        side = _size(config, ("image_size", "img_size"), 32)   # a vision model patchifying its image itself
        channels = leaf.in_channels if isinstance(leaf, nn.Conv2d) else \
            _size(config, ("channels", "in_channels", "in_chans", "num_channels"), 3)
        main = torch.randn(b, channels, side, side)
    elif isinstance(leaf, nn.Conv2d):
        side = _size(config, ("image_size", "img_size", "input_size", "resolution", "sample_size"), 64)
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
    params = _parameters(model.forward)
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
        elif name in ("t", "time", "timestep", "timesteps", "sigma", "sigmas", "noise_level", "times"):
            value = torch.rand(b)
        else:
            raise TargetError(f"{type(model).__name__}.forward needs {name!r}, which opscan cannot make; "
                              "the repository's README or a factory could")
        args.append(value)
    if not params:
        raise TargetError(f"{type(model).__name__}.forward takes no input opscan can name")
    return tuple(args), kwargs
