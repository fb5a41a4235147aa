"""How a repository's factory function is called with no configuration, read statically (stdlib ast).

`returns_example(fn)`: the factory returns `(model, example_inputs)` itself (the contract of a
`FILE:NAME` target, docs/trace.md); otherwise `opscan REPO` tries it as `repo:FILE:NAME`, loaded as
its package imports it, its inputs made by opscan (NOTE [factories of a package]).
`defaults_function(tree, fn)`: a function of the same file, with no required argument, returning a
dict literal whose keys cover the factory's required arguments (NOTE [arguments from a defaults
function]). Used by opscan/targets/discovery.py (parent) and opscan/targets/construct.py (child).
"""

from __future__ import annotations

import ast

# NOTE [factories of a package]
# A factory whose arguments have defaults (`create_model(model_name='mnasnet_100', pretrained=None)`)
# often lives in a package and imports its siblings relatively (`from .config import ...`): loaded
# as a standalone file it fails ("attempted relative import with no known parent package"), and a
# factory returning the bare model has no inputs a `FILE:NAME` target could use. Unless it
# returns `(model, example_inputs)` itself, `opscan REPO` tries it as `repo:FILE:NAME`: imported as
# its package imports it (the package root by the `__init__.py` chain on sys.path, the dotted
# name), `pretrained=False`, its inputs made from the model (repo_inputs.py), a tuple it returns
# read for its first nn.Module (`create_model_and_diffusion` returns `(model, diffusion)`).

# NOTE [arguments from a defaults function]
# Training repositories keep their defaults beside the factory: improved-diffusion's
# `create_model_and_diffusion(image_size, class_cond, learn_sigma, ...)` is called by its scripts as
# `create_model_and_diffusion(**model_and_diffusion_defaults())`, where the second returns
# `dict(image_size=64, num_channels=128, ...)`. A factory whose required arguments are all keys of
# the dict literal (`{...}` or `dict(k=v, ...)`) that a no-argument function of its file returns
# is called with that dict (the keys it accepts), layer-like counts above 2 cut to 2.


def required(fn: ast.FunctionDef) -> list[str]:
    """The factory's required argument names, in order (no default; `self`/*args/**kwargs aside)."""
    args = fn.args
    positional = args.posonlyargs + args.args
    out = [a.arg for a in positional[: len(positional) - len(args.defaults)]]
    return out + [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None]


def returned_keys(fn: ast.FunctionDef) -> set[str] | None:
    """The keys of the dict literal `fn` returns (`return {"a": 1}` / `return dict(a=1)`), else None."""
    keys: set[str] | None = None
    for node in ast.walk(fn):
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        value = node.value
        if isinstance(value, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                                               for k in value.keys):
            found = {k.value for k in value.keys}
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict" \
                and not value.args and all(k.arg for k in value.keywords):
            found = {k.arg for k in value.keywords}
        else:
            return None
        keys = found if keys is None else keys & found
    return keys


def defaults_function(tree: ast.Module, fn: ast.FunctionDef) -> str | None:
    """The name of a no-argument function of the file whose returned dict literal covers `fn`'s
    required arguments (NOTE [arguments from a defaults function]), the fewest extra keys first."""
    wanted = set(required(fn)) - {"self"}
    if not wanted:
        return None
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node is not fn and not required(node):
            keys = returned_keys(node)
            if keys is not None and wanted <= keys:
                found.append((len(keys - wanted), node.lineno, node.name))
    return min(found)[2] if found else None


def returns_example(fn: ast.FunctionDef) -> bool:
    """True when `fn` returns `(model, example)` with the example spelled as a dict/tuple/list (or
    `dict(...)`), takes `batch`/`seq_len`, or returns nothing but None: a `FILE:NAME` target as it
    is (NOTE [factories of a package])."""
    if {a.arg for a in fn.args.args + fn.args.kwonlyargs} & {"batch", "seq_len"}:
        return True   # sizes its example inputs by the parameters opscan passes (docs/trace.md)
    values = [n.value for n in ast.walk(fn) if isinstance(n, ast.Return)]
    if not any(v is not None and not (isinstance(v, ast.Constant) and v.value is None) for v in values):
        return True   # returns nothing: nothing to gain from opscan's inputs
    for value in values:
        if isinstance(value, ast.Tuple) and len(value.elts) == 2:
            second = value.elts[1]
            if isinstance(second, (ast.Dict, ast.Tuple, ast.List)) or isinstance(second, ast.Call) \
                    and isinstance(second.func, ast.Name) and second.func.id in ("dict", "tuple", "list"):
                return True
    return False
