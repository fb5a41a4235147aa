"""Constructor arguments for a repository's model, with no configuration (child side).

`arguments(fn, module)` fills what a class or factory needs: config classes with defaults
(dataclasses, attrs, pydantic, `__init__` defaults, `get_default_config()`), nested configs, a
variant name from a registry the module defines, config files shipped beside the code, else small
values by parameter name (NAMED). Configs are shrunk as `--layers` does, and a built model whose
sizes opscan chose none of has its repeated blocks cut: shrinking.py's job; the smallest variant
of a registry is variants.py's, the retries of a broken constraint constraints.py's. Inputs are
opscan/targets/repo_inputs.py's job. Used by opscan/targets/repository.py.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import sys
import textwrap
from pathlib import Path

from torch import nn

from opscan.errors import TargetError
from opscan.targets import config_files, factories, script_calls, script_options, shipped, shrinking, variants
from opscan.targets.built_arguments import built_arguments
from opscan.targets.recipes import CONFIG_ARG, named_value  # config-like names; small values by name
CONFIG_CLASS = re.compile(r"(Config|Args|Cfg|Params|HParams|Settings|Conf)$")
VARIANT_ARG = re.compile(r"^(name|model_name|variant|arch|model_type|size|config_name|model|version)$")


def arguments(fn, module, folder: Path | None, root: Path | None = None) -> tuple[dict, list[str]]:
    """(kwargs for `fn`, how each was filled); TargetError naming the argument that could not be.
    `root`: the repository, whose config files may hold a config argument (config_files.py)."""
    kwargs, how = {}, []
    built = built_arguments(fn, root, parameters(fn))   # NOTE [the model the command built] (built_models.py)
    given = sibling_defaults(fn, module) if built is None else None   # NOTE [arguments from a defaults function]
    if built is not None:
        kwargs, words = built
        how.append(words)
    elif given is not None:
        kwargs, words = given
        how.append(words)
    else:   # NOTE [arguments as the training script builds it] in script_calls.py
        written = script_calls.written_arguments(fn, parameters(fn), root)
        if written is not None:
            kwargs, words = dict(written[0]), written[1]
            how.append(words)
    for name, param in parameters(fn) + forwarded(fn):
        if name in ("pretrained", "pretrained_backbone", "progress", "download", "load_weights"):
            kwargs[name] = False
            continue
        if param.default is not inspect.Parameter.empty or name in kwargs:
            continue
        if inspect.isclass(fn) and CONFIG_ARG.search(name) and callable(getattr(fn, "get_default_config", None)):
            value, words = own_default_config(fn)
            kwargs[name] = value
            how.append(words)
            continue
        annotated = _annotation_class(_own_nested(fn, param.annotation), module)
        found = config_files.value_for(fn, name, root) if annotated is None else None
        if found is None and annotated is None:   # NOTE [options from the training script's parser]
            found = script_options.value_for(fn, name, root)
        if found is not None:   # NOTE [configs from the repository's config files] in config_files.py
            kwargs[name], words = found
            how.append(words)
            continue
        try:
            value, words = fill(name, _own_nested(fn, param.annotation), module, folder)
        except TargetError:
            table = shipped_arguments(fn, folder, root)
            if table is None:
                raise
            return {**{k: v for k, v in kwargs.items() if v is False}, **table[0]}, [table[1]]
        kwargs[name] = value
        how.append(words)
    return kwargs, how


def shipped_arguments(cls, folder: Path | None, root: Path | None = None) -> tuple[dict, str] | None:
    """(kwargs, words) for a model class's required constructor arguments from a table of a config
    file beside its code (NOTE [constructor arguments from a shipped file] in shipped.py), else of any
    config file of the repository `root` (config_files.covering), else None."""
    if not inspect.isclass(cls):
        return None
    names = dict(parameters(cls))
    required = {n for n, p in names.items() if p.default is inspect.Parameter.empty}
    found = shipped.covering(folder, required, order=lambda p: (variants.size_rank(p.stem), p.as_posix()))
    place = "a config file beside it"
    if found is None:
        found = config_files.covering(root, required)
        place = f"a config file of the repository ({config_files.WORDS} it takes by name)"
    if found is None:
        return None
    table, where = found
    cut = shipped.shrink_counts(table) if shrinking.enabled() else []
    for words in cut:
        shrinking.noted(words)
    words = f"{cls.__name__}(**{where}): constructor arguments from {place}"
    return {k: v for k, v in table.items() if k in names}, words + (f" ({', '.join(cut)})" if cut else "")


def sibling_defaults(fn, module) -> tuple[dict, str] | None:
    """(kwargs, words) from the no-argument function of `fn`'s file whose returned dict covers its
    required arguments (NOTE [arguments from a defaults function] in factories.py), else None."""
    if inspect.isclass(fn) or not inspect.isfunction(fn) or \
            all(p.default is not inspect.Parameter.empty for _, p in parameters(fn)):
        return None
    home = sys.modules.get(getattr(fn, "__module__", ""), module)
    try:
        tree = ast.parse(Path(inspect.getsourcefile(fn) or "").read_bytes())
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    node = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == fn.__name__), None)
    name = factories.defaults_function(tree, node) if node is not None else None
    maker = getattr(home, name, None) if name else None
    if not callable(maker):
        return None
    try:
        values = maker()
    except Exception as exc:  # noqa: BLE001 - user code
        raise TargetError(f"{name}() failed: {type(exc).__name__}: {exc}".splitlines()[0]) from None
    if not isinstance(values, dict):
        return None
    accepts = dict(parameters(fn))
    anything = any(p.kind == p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values())
    kwargs = shrinking.shrink({k: v for k, v in values.items() if k in accepts or anything})
    return kwargs, f"{fn.__name__}(**{name}())"


def from_script(how: list[str]) -> bool:
    """True when the only arguments opscan gave are the training script's own (script_calls): the
    sizes are the script's, so the built model is cut as one built from its defaults."""
    return bool(how) and all(script_calls.WORDS in w for w in how)


def from_defaults(how: list[str]) -> bool:
    """True when `arguments` took the kwargs from a defaults function (sibling_defaults)."""
    return bool(how) and "(**" in how[0] and how[0].endswith("())")


def own_default_config(owner):
    """`Owner.get_default_config()` of the model class itself (minGPT's `GPT.get_default_config()`):
    unset (None) sizes filled by name; a variant field (`model_type`) is cleared when opscan filled
    the sizes it would otherwise choose (NOTE [own default config])."""
    try:
        config = owner.get_default_config()
    except Exception as exc:  # noqa: BLE001 - user code
        raise TargetError(f"{owner.__name__}.get_default_config() failed: {type(exc).__name__}: {exc}"
                          .splitlines()[0]) from None
    fields = config if isinstance(config, dict) else getattr(config, "__dict__", {})
    filled = [k for k, v in list(fields.items()) if v is None and named_value(k) is not None]
    for key in filled:
        shrinking.set_field(config, key, named_value(key))
    cleared = [k for k, v in list(fields.items()) if filled and VARIANT_ARG.match(k) and isinstance(v, str)
               and set(filled) & (shrinking.LAYER_NAMES | _SIZE_FIELDS)]
    for key in cleared:
        shrinking.set_field(config, key, None)
    words = f"{owner.__name__}.get_default_config()"
    if filled:
        words += f" ({', '.join(f'{k}={named_value(k)}' for k in filled)} by name"
        words += f"; {', '.join(cleared)} cleared)" if cleared else ")"
    return shrinking.shrink(config), words


# NOTE [own default config]
# minGPT-style models keep their defaults on the model class (`GPT.get_default_config()` returns a
# CfgNode with `model_type='gpt'` and `n_layer=None, n_head=None, n_embd=None, vocab_size=None`):
# the user sets either a named variant or the sizes. opscan fills every unset size by name; then a
# string variant field would ask for a second, conflicting choice, so it is cleared (the sizes win).
_SIZE_FIELDS = {"n_head", "n_heads", "heads", "num_heads", "n_embd", "dim", "d_model", "hidden_size", "embed_dim"}


def _own_nested(fn, annotation):
    """A model class's own nested config class for an inherited annotation: `Llama3Model(config:
    Decoder.Config)` is built with `Llama3Model.Config`, the subclass it declares."""
    if inspect.isclass(fn) and inspect.isclass(annotation):
        own = getattr(fn, annotation.__name__, None)
        if inspect.isclass(own) and own is not annotation and issubclass(own, annotation):
            return own
    return annotation


# NOTE [forwarded arguments]
# A variant of a model class often takes a few arguments of its own and passes the rest on:
# `SuperResModel(UNetModel).__init__(self, in_channels, *args, **kwargs)` calls
# `super().__init__(in_channels * 2, *args, **kwargs)`; a model may pass its `**kwargs` on to the
# body it builds instead (`PerceiverLM(*, dim, num_tokens, max_seq_len, **kwargs)` builds
# `PerceiverIO(dim=dim, ..., **kwargs)`). Its signature names only its own arguments; the required
# ones of the class its `**kwargs` go to (`model_channels`, ...; `depth`) are filled too, by name as
# for any class, and passed by keyword through its `**kwargs` (so the retries of NOTE [constructor
# constraints] can vary them). Those the call already gives (its positionals before `*args`, its
# explicit keywords, read from the constructor's source; for a base whose source cannot be read,
# the subclass's own positionals) are not; nor positional-only ones, nor anything when the class
# takes no `**kwargs`. A class that forwards in turn is followed.

def forwarded(cls) -> list:
    """(name, inspect.Parameter) of the constructor a class's `**kwargs` are passed on to (its base's,
    or a class it builds) that are not given already (NOTE [forwarded arguments])."""
    init = vars(cls).get("__init__") if inspect.isclass(cls) else None
    try:
        own = inspect.signature(init).parameters if init is not None else {}
    except (TypeError, ValueError):
        return []
    if not any(p.kind == p.VAR_KEYWORD for p in own.values()):
        return []
    base = next((b for b in cls.__mro__[1:] if "__init__" in vars(b)), object)
    callee, given, keywords = _forwarding_call(init, own, base)
    if callee is None or callee is object or callee is cls or callee.__module__.startswith("torch."):
        return []
    names = [(n, p) for n, p in parameters(callee) + forwarded(callee) if n not in own and n not in keywords]
    positional = [n for n, p in parameters(callee) if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [(n, p) for n, p in names if n not in positional[:given] and p.kind != p.POSITIONAL_ONLY]


def _forwarding_call(init, own, base) -> tuple:
    """(the class the `__init__` passes its `**kwargs` to, how many positionals and which keywords
    the call gives besides): from its source; else its base, given the subclass's own positionals."""
    kwarg = next(n for n, p in own.items() if p.kind == p.VAR_KEYWORD)
    fallback = base, len([p for p in own.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]) - 1, set()
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
    except (OSError, TypeError, SyntaxError):
        return fallback
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call) or not any(k.arg is None and isinstance(k.value, ast.Name)
                                                     and k.value.id == kwarg for k in call.keywords):
            continue
        args = call.args
        if isinstance(call.func, ast.Attribute) and call.func.attr == "__init__":
            callee = base
            args = args[1:] if not isinstance(call.func.value, ast.Call) else args   # Base.__init__(self, ...)
        else:
            callee = _resolve(call.func, getattr(init, "__globals__", {}))
            if not inspect.isclass(callee):
                continue
        given = next((i for i, a in enumerate(args) if isinstance(a, ast.Starred)), len(args))
        return callee, given, {k.arg for k in call.keywords if k.arg}
    return None, 0, set()


def _resolve(func: ast.expr, names: dict):
    """The object a call's `Name` or `module.Name` names in `names` (a function's globals), else None."""
    if isinstance(func, ast.Name):
        return names.get(func.id)
    if isinstance(func, ast.Attribute):
        owner = _resolve(func.value, names)
        return getattr(owner, func.attr, None) if owner is not None else None
    return None


def parameters(fn):
    """(name, inspect.Parameter) of `fn` (a class: its __init__), without self, *args and **kwargs."""
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
        variant = variants.pick_variant(module)
        if variant is not None:
            return variant[0], f"{name}={variant[0]!r} (the smallest variant of {variant[1]})"
    if named_value(name) is not None:
        return named_value(name), f"{name}={named_value(name)}"
    raise TargetError(f"cannot choose a value for the required argument {name!r}")


# NOTE [wrappers]
# A wrapper takes the model's body as an argument (`TransformerWrapper(attn_layers: AttentionLayers)`,
# `Wrapper(encoder)`). That argument is built first, the same way: from its annotation when it
# names an nn.Module class, else from a class of the module (or of its package, which re-exports its
# siblings) whose name is the argument's (`attn_layers` -> AttentionLayers / AttnLayers, `encoder`
# -> Encoder), else the one class there whose name starts with it (`encoder` -> EncoderRNN, when no
# other does). torch.nn's own classes are never guessed (they need sizes opscan cannot tie to the
# wrapper's).

def part_class(name: str, cls, module):
    """The nn.Module class to build for a wrapper's argument (NOTE [wrappers]), else None."""
    if cls is not None and issubclass(cls, nn.Module):
        return None if cls.__module__.startswith("torch.") else cls
    wanted = {name.replace("_", "").lower(), name.replace("attn", "attention").replace("_", "").lower()}
    package = sys.modules.get(module.__name__.rpartition(".")[0]) if "." in module.__name__ else None
    classes = [value for owner in (module, package) if owner is not None for value in vars(owner).values()
               if inspect.isclass(value) and issubclass(value, nn.Module) and not value.__module__.startswith("torch.")]
    exact = next((value for value in classes if value.__name__.lower() in wanted), None)
    if exact is not None or len(name) < 5:
        return exact
    # `encoder` -> EncoderRNN, re-exported by the wrapper's package (`from .EncoderRNN import EncoderRNN`)
    prefixed = sorted({value for value in classes if value.__name__.lower().startswith(tuple(wanted))},
                      key=lambda value: value.__name__)
    return prefixed[0] if len(prefixed) == 1 else None


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
        return shrinking.shrink(config), f"{cls.__name__}.get_default_config() (unset sizes filled by name)"
    required = {}
    for name, param in parameters(cls):
        if param.default is inspect.Parameter.empty:
            required[name] = param.annotation
    if required:
        registered = registry_config(cls)
        if registered is not None:
            return registered
    if not required:
        try:
            return shrinking.shrink(cls()), f"{cls.__name__}(): a default for every field"
        except Exception as exc:  # noqa: BLE001 - a config class of user code
            raise TargetError(f"{cls.__name__}() failed: {type(exc).__name__}: {exc}".splitlines()[0]) from None
    shipped = shipped_config(folder, set(required))
    if shipped is not None:
        data, where = shipped
        config = shrinking.shrink(cls(**{k: v for k, v in data.items() if k in _names(cls)}))
        return config, f"{cls.__name__} from {where}"
    values = {}
    for name, annotation in required.items():
        nested = _annotation_class(annotation, module)
        if nested is not None and nested not in (int, float, str, bool) and not issubclass(nested, nn.Module):
            values[name] = make_config(nested, module, folder)[0]
        elif named_value(name) is not None:
            values[name] = named_value(name)
        else:
            raise TargetError(f"{cls.__name__} needs {name!r}, which has no default and no config file beside it")
    filled = ", ".join(f"{k}=…" for k in values)
    return shrinking.shrink(cls(**values)), f"{cls.__name__}({filled}): fields filled by name"


def _from_name(cls):
    """`cls.from_name(NAME)` with the smallest variant of a registry its module defines, else None."""
    maker = getattr(cls, "from_name", None)
    home = sys.modules.get(getattr(cls, "__module__", ""))
    variant = variants.pick_variant(home) if callable(maker) and home is not None else None
    if variant is None:
        return None
    try:
        config = maker(variant[0])
    except Exception as exc:  # noqa: BLE001 - a config class of user code
        raise TargetError(f"{cls.__name__}.from_name({variant[0]!r}) failed: {type(exc).__name__}: {exc}"
                          .splitlines()[0]) from None
    return shrinking.shrink(config), f"{cls.__name__}.from_name({variant[0]!r}) (the smallest variant of {variant[1]})"


# NOTE [registries of configs]
# Training repositories name their model variants in a registry beside the model: a module-level
# dict whose values are config instances or functions returning one (torchtitan's
# `llama3_configs = {"debugmodel": _debugmodel, "1B": _1b, ...}`, each `-> Llama3Model.Config`).
# A config class with fields that have no default is built from such a registry when one is found
# in its module, its package or a sibling module already imported: the debug-sounding variant
# first, else the smallest (SMALL, sizes spelled in names). A function's required arguments get
# the default another function of its module gives the same name (`model_registry(flavor,
# attn_backend="flex")`), else a small value by name. Repeated layer configs are cut to 2.

def registry_config(cls):
    """(config, words) from a registry of named variants of `cls` (NOTE [registries of configs]), else None."""
    home = getattr(cls, "__module__", "")
    package = home.rpartition(".")[0]
    modules = [sys.modules[n] for n in sorted(sys.modules) if n == home or n == package
               or package and n.startswith(package + ".") and n.count(".") == home.count(".")]
    for module in sorted(modules, key=lambda m: (m.__name__ != home, m.__name__ != package, m.__name__)):
        for reg_name, registry in sorted(vars(module).items()):
            if not isinstance(registry, dict) or not registry or not all(isinstance(k, str) for k in registry):
                continue
            if not all(isinstance(v, cls) or callable(v) and _returns(v, cls) for v in registry.values()):
                continue
            key = min(registry, key=lambda k: (variants.size_rank(k), k))
            value = registry[key]
            try:
                config = value if isinstance(value, cls) else value(**_call_defaults(value, module))
            except TargetError:
                raise
            except Exception as exc:  # noqa: BLE001 - user code
                raise TargetError(f"{reg_name}[{key!r}] failed: {type(exc).__name__}: {exc}".splitlines()[0]) from None
            return shrinking.shrink(config), f"{cls.__qualname__} from the registry {reg_name}[{key!r}]"
    return None


def _returns(fn, cls) -> bool:
    try:
        hint = inspect.signature(fn).return_annotation
    except (TypeError, ValueError):
        return False
    if isinstance(hint, str):
        return hint.split("[")[0].strip("'\"") in (cls.__qualname__, cls.__name__) \
            or hint.endswith("." + cls.__qualname__)
    return inspect.isclass(hint) and issubclass(hint, cls)


def _call_defaults(fn, module) -> dict:
    """Values for `fn`'s required arguments: the default another function of `module` gives the same
    name, else a small value by name; TargetError naming the one that has neither."""
    out = {}
    for name, param in parameters(fn):
        if param.default is not inspect.Parameter.empty:
            continue
        same = [p.default for f in vars(module).values() if inspect.isfunction(f) and f is not fn
                for n, p in parameters(f) if n == name and p.default not in (inspect.Parameter.empty, None)]
        if same:
            out[name] = same[0]
        elif named_value(name) is not None:
            out[name] = named_value(name)
        else:
            raise TargetError(f"cannot choose a value for {fn.__name__}'s required argument {name!r}")
    return out


def _names(cls) -> set[str]:
    return {n for n, _ in parameters(cls)}


def shipped_config(folder: Path | None, wanted: set[str]) -> tuple[dict, str] | None:
    """A JSON/YAML/TOML file beside the model code (or in configs/) whose keys cover `wanted`."""
    if folder is None:
        return None
    files = []
    for base in (folder, folder / "configs", folder / "config", folder.parent / "configs"):
        if base.is_dir():
            files.extend(sorted(p for p in base.iterdir() if p.suffix in (".json", ".yaml", ".yml", ".toml")))
    for path in sorted(files, key=lambda p: (variants.size_rank(p.stem), p.as_posix())):
        data = _read(path)
        if isinstance(data, dict) and wanted <= set(data):
            return data, path.name
    return None


def _read(path: Path):
    return shipped.read(path)
