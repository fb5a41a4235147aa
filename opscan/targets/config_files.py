"""A constructor's config object built from the repository's own config files (child side).

`Model(config)`, `Net(preprocess_config, model_config)`: research code builds its model from an
object its config files hold. `reads(fn, name)` reads, in the constructor's source, what it takes
from the argument (`config.model.n_layer`, `model_config["transformer"]["encoder_layer"]`, and the
same in the classes it hands the argument to); `value_for(fn, name, root)` finds the config, among
the repository's YAML/JSON/TOML files (parsed as data) and its Python config modules
(ml_collections' `get_config()`, yacs' `get_cfg_defaults()` or a module-level `_C = CN()`:
evaluated here, in the contained child only), that holds everything it reads (NOTE [configs from
the repository's config files]).
"""

from __future__ import annotations

import ast
import copy
import inspect
import re
import sys
import textwrap
from pathlib import Path, PurePosixPath

from opscan.index import walk
from opscan.targets import shipped, shrinking

# NOTE [configs from the repository's config files]
# A model whose constructor takes a config object (no config class opscan could build) is built
# from a config the repository ships. What the constructor reads from the argument is read from
# its source: attribute and subscript chains rooted at the parameter (`cfg.model.dim`,
# `cfg["model"]["dim"]`), `.get(key, default)` / `getattr(cfg, key, default)` / `key in cfg` as
# optional reads, followed one class down when the constructor hands the argument (or a part of it:
# `Encoder(cfg.model)`) to another class. Candidate configs: every YAML/JSON/TOML file of the
# repository (MAX_DATA_FILES, breadth first, each at most 1 MiB, parsed as data) and each Python
# config module (a file named like a config or under `configs/`, MAX_PY_CONFIGS) defining
# `get_config()` / `get_cfg_defaults()` / `get_cfg()` / `get_default_config()` with no required
# argument, or a module-level `_C` / `cfg` / `config` / `C` built as a config node; those are
# executed in the contained child only. The config holding every required read wins; among several,
# the one holding the most reads, then the one with the fewest other top-level keys, then the
# smallest-sounding file name. Where no config holds them at its top level, a table inside one does
# (`args.k` and `args.dropout` of `DGCNN(args)`, held by `model:` of `config/extractor/ours.yml`,
# as the training script passes `get_model(cfg.model)`): the shallowest such table, then the same
# order; the words name it (`config/extractor/ours.yml['model']`), an assumption like the rest.
# A plain mapping is given with attribute access too (AttrDict), so `cfg.model.dim` and
# `cfg["model"]["dim"]` both read it; layer counts in it become 2 (as `--layers`).
MAX_DATA_FILES = 300
MAX_PY_CONFIGS = 12
_DATA = (".yaml", ".yml", ".json", ".toml")
_PY_CONFIG_FILE = re.compile(r"(config|cfg|default|hparams|settings)", re.IGNORECASE)
_PY_MAKERS = ("get_config", "get_cfg_defaults", "get_cfg", "get_default_config", "get_defaults")
_PY_NODES = ("_C", "cfg", "config", "C", "__C", "CONFIG", "_CONFIG")
_SKIP_DIRS = {"tests", "test", ".github", "docs", "node_modules"}
_METHODS = {"items", "keys", "values", "copy", "to_dict", "clone", "freeze", "defrost", "merge_from_file",
            "merge_from_list", "update", "pop", "setdefault", "lock", "unlock", "dump"}


WORDS = "the config holding what"   # in the words of a config found here (repository.py notes them)


class AttrDict(dict):
    """A mapping read by key or by attribute (`cfg["model"]["dim"]` and `cfg.model.dim`), nested."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value

    @classmethod
    def of(cls, value):
        if isinstance(value, dict):
            return cls({k: cls.of(v) for k, v in value.items()})
        if isinstance(value, list):
            return [cls.of(v) for v in value]
        return value


def reads(fn, name: str, depth: int = 0) -> tuple[set[tuple[str, ...]], set[tuple[str, ...]]]:
    """(required, optional) key paths the constructor of `fn` (a class, or a function) reads from its
    argument `name` (NOTE [configs from the repository's config files])."""
    func = fn.__init__ if inspect.isclass(fn) else fn
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return set(), set()
    names = getattr(func, "__globals__", {})
    required: set[tuple[str, ...]] = set()
    optional: set[tuple[str, ...]] = set()
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        path, top = _chain(node, parents)
        outer = parents.get(id(top))
        if path and path[-1] == "get" and isinstance(outer, ast.Call) and outer.func is top:
            key = _constant(outer.args[0]) if outer.args else None
            if key is not None:
                optional.add(path[:-1] + (key,))
            continue
        if path and path[-1] in _METHODS:
            path = path[:-1]
        if isinstance(outer, ast.Call) and isinstance(outer.func, ast.Name) \
                and outer.func.id in ("getattr", "hasattr") and len(outer.args) >= 2 and outer.args[0] is top:
            key = _constant(outer.args[1])
            if key is not None:
                (optional if len(outer.args) > 2 or outer.func.id == "hasattr" else required).add(path + (key,))
            continue
        if isinstance(outer, ast.Compare) and outer.comparators and top in outer.comparators:
            key = _constant(outer.left)
            if key is not None:
                optional.add(path + (key,))
            continue
        if isinstance(outer, ast.Call) and top in outer.args + [k.value for k in outer.keywords] and depth < 2:
            callee = _resolve(outer.func, names)
            param = _parameter_at(callee, outer, top) if callee is not None else None
            if param is not None:
                more, maybe = reads(callee, param, depth + 1)
                required |= {path + p for p in more}
                optional |= {path + p for p in maybe}
                continue
        if path:
            required.add(path)
    required = {p for p in required if not any(q != p and q[:len(p)] == p for q in required | optional)}
    return required, optional - required


def _chain(node: ast.AST, parents: dict) -> tuple[tuple[str, ...], ast.AST]:
    """The keys an attribute/subscript chain rooted at `node` reads, and the chain's outermost node."""
    path: list[str] = []
    top = node
    while True:
        up = parents.get(id(top))
        if isinstance(up, ast.Attribute) and up.value is top:
            path.append(up.attr)
        elif isinstance(up, ast.Subscript) and up.value is top and _constant(up.slice) is not None:
            path.append(_constant(up.slice))
        else:
            return tuple(path), top
        top = up


def _constant(node) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _resolve(func: ast.expr, names: dict):
    if isinstance(func, ast.Name):
        found = names.get(func.id)
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        found = getattr(names.get(func.value.id), func.attr, None)
    else:
        return None
    return found if inspect.isclass(found) and not found.__module__.startswith("torch") else None


def _parameter_at(callee, call: ast.Call, top: ast.AST) -> str | None:
    try:
        params = [p for p in inspect.signature(callee).parameters.values()]
    except (TypeError, ValueError):
        return None
    for index, arg in enumerate(call.args):
        if arg is top and index < len(params) and params[index].kind in (params[index].POSITIONAL_ONLY,
                                                                          params[index].POSITIONAL_OR_KEYWORD):
            return params[index].name
    return next((k.arg for k in call.keywords if k.value is top and k.arg), None)


def value_for(fn, name: str, root: Path | None):
    """(config, words) for `fn`'s argument `name` from the repository's config files, else None."""
    if root is None:
        return None
    required, optional = reads(fn, name)
    if not required:
        return None
    best = None
    for label, whole in candidates(root):
        for keys, data in (_tables(whole) if isinstance(whole, dict) else [((), whole)]):
            if not all(_has(data, p) for p in required):
                continue
            held = sum(_has(data, p) for p in optional)
            extra = len(data) - len({p[0] for p in required | optional}) if isinstance(data, dict) else 0
            key = (len(keys), -held, extra, _size_rank(label), label, keys)
            if best is None or key < best[0]:
                best = (key, label + "".join(f"[{k!r}]" for k in keys), data)
    if best is None:
        return None
    _, label, data = best
    config = AttrDict.of(data) if type(data) is dict else data
    cut = [] if not shrinking.enabled() or not isinstance(config, dict) else _shrink(config)
    for words in cut:
        shrinking.noted(words)
    words = f"{name} from {label} ({WORDS} {getattr(fn, '__name__', fn)} reads" + \
        (f"; {', '.join(cut)}" if cut else "") + ")"
    return config, words


def covering(root: Path | None, wanted: set[str]) -> tuple[dict, str] | None:
    """(a copy of the table, where: `configs/unet.yaml["model"]["params"]`) among the repository's
    config files whose keys cover a constructor's required argument names (a model built as
    `Net(**cfg["model"])`), the top level first, then the fewest other keys; else None."""
    if root is None or not wanted:
        return None
    found = []
    for label, data in candidates(root):
        if type(data) is not dict:
            continue
        for keys, table in _tables(data):
            if wanted <= set(table):
                found.append((len(keys), len(set(table) - wanted), _size_rank(label), label, keys, table))
    if not found:
        return None
    *_, label, keys, table = min(found, key=lambda f: f[:4])
    return copy.deepcopy(table), label + "".join(f"[{k!r}]" for k in keys)


def _tables(data: dict, keys: tuple = (), depth: int = 0):
    yield keys, data
    if depth < 3:
        for key, value in data.items():
            if isinstance(key, str) and isinstance(value, dict):
                yield from _tables(value, (*keys, key), depth + 1)


def _shrink(config: dict) -> list[str]:
    try:
        return shipped.shrink_counts(config)
    except Exception:  # noqa: BLE001 - a frozen config node stays as it is
        return []


def _has(data, path: tuple[str, ...]) -> bool:
    for key in path:
        if isinstance(data, dict):
            if key not in data:
                return False
            data = data[key]
        else:
            try:
                data = getattr(data, key)
            except Exception:  # noqa: BLE001 - a config object of user code
                return False
    return True


def _size_rank(label: str) -> tuple[int, str]:
    stem = PurePosixPath(label.split("[")[0].split(":")[0]).stem.lower()
    words = ("debug", "test", "toy", "tiny", "nano", "mini", "small", "base")
    return next((i for i, w in enumerate(words) if w in re.split(r"[-_.]", stem)), len(words)), stem


_CACHE: dict[Path, list] = {}


def candidates(root: Path) -> list[tuple[str, object]]:
    """(label, config) of every config the repository holds: its data files, then its Python config
    modules run here (NOTE [configs from the repository's config files]); read once per process."""
    root = Path(root).resolve()
    if root in _CACHE:
        return _CACHE[root]
    found: list[tuple[str, object]] = []
    py_files: list[Path] = []

    def keep(path: Path) -> bool:
        parts = set(path.relative_to(root).parts[:-1])
        return not parts & _SKIP_DIRS and (path.suffix in _DATA or path.suffix == ".py" and (
            _PY_CONFIG_FILE.search(path.stem) or parts & {"configs", "config", "cfg", "cfgs"}))

    data_files = 0
    for path in walk.files(root, keep, limit=None):
        rel = path.relative_to(root).as_posix()
        if path.suffix == ".py":
            if len(py_files) < MAX_PY_CONFIGS and _defines_config(path):
                py_files.append(path)
            continue
        data_files += 1
        if data_files > MAX_DATA_FILES:
            continue
        data = shipped.read(path)
        if isinstance(data, dict) and data:
            found.append((rel, data))
    for path in py_files:
        found.extend(_python_configs(path, root))
    _CACHE[root] = found
    return found


def _defines_config(path: Path) -> bool:
    """Read statically: does the module define a config maker or a module-level config node?"""
    try:
        if path.stat().st_size > 1 << 20:
            return False
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return False
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in _PY_MAKERS and not _required(node):
            return True
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and any(
                isinstance(t, ast.Name) and t.id in _PY_NODES for t in node.targets):
            return True
    return False


def _required(fn: ast.FunctionDef) -> list[str]:
    args = fn.args.posonlyargs + fn.args.args
    return [a.arg for a in args[:len(args) - len(fn.args.defaults)]]


_LOADER: dict = {}   # "load": how the child imports a repository's file (opscan/targets/repository.py sets it)


def use_loader(load) -> None:
    """Import a repository's Python config modules with `load(path, root)` (repository.py's own import
    of a file, which knows its package), given here so that this module does not import that one."""
    _LOADER["load"] = load


def _python_configs(path: Path, root: Path) -> list[tuple[str, object]]:
    """The configs a Python config module makes, run in this (the contained) process."""
    load = _LOADER.get("load")
    if load is None:
        return []
    rel = path.relative_to(root).as_posix()
    argv = sys.argv
    try:
        sys.argv = [str(path)]   # a config module that parses its command line at import takes its defaults
        module = load(path, root)
    except (Exception, SystemExit):  # noqa: BLE001 - a config module that does not import (a missing package) gives none
        return []
    finally:
        sys.argv = argv
    out = []
    for maker in _PY_MAKERS:
        make = getattr(module, maker, None)
        if callable(make):
            try:
                value = make()
            except (Exception, SystemExit):  # noqa: BLE001, S112 - user code
                continue
            if _mapping_like(value):
                out.append((f"{rel}:{maker}()", value))
    for node in _PY_NODES:
        value = getattr(module, node, None)
        if _mapping_like(value) and not any(v is value for _, v in out):
            out.append((f"{rel}:{node}", value))
    return out


def _mapping_like(value) -> bool:
    return isinstance(value, dict) and bool(value) or hasattr(value, "keys") and hasattr(value, "__getattr__") \
        and not inspect.isclass(value) and not inspect.ismodule(value)
