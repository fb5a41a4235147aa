"""Registries of model functions, read statically (stdlib ast; nothing runs): the repository's own
named models, the smallest first.

Two forms, both one `repo-factory` recipe per registry (recipes.Recipe; built by
opscan/targets/repository.py as any factory with no required argument, `pretrained=False`,
repeated blocks cut to 2):

- a module-level dict (or list/tuple) whose values are functions of the file that build a model,
  or model classes: DiT's `DiT_models = {'DiT-XL/2': DiT_XL_2, ..., 'DiT-S/8': DiT_S_8}` with
  `def DiT_S_8(**kwargs): return DiT(depth=12, hidden_size=384, patch_size=8, num_heads=6, **kwargs)`;
- functions registered by a decorator (`@register_model`, `@register`, `@MODELS.register_module()`)
  that build a model (timm's `def vit_tiny_patch16_224(pretrained=False, **kwargs)`).

A function "builds a model" when it returns something and calls a model class of the repository,
passes one to a call (`build_model_with_cfg(VisionTransformer, ...)`), or calls another function
of its file that builds one (NOTE [registries of model functions]).
"""

from __future__ import annotations

import ast
import re

from opscan.targets.factories import required
from opscan.targets.recipes import Recipe
from opscan.records import CandidateKind

REGISTRY_SCORE = 590      # just below the repository's own examples and sized builders (NOTE [main model])

# NOTE [registries of model functions]
# A repository that names its model variants gathers them: in a registry (a dict of name -> model
# function, or a list of functions) or by a registering decorator. Those functions take no required
# argument and declare no return type, and the class they build is then no "root" (they build it),
# so neither the builder nor the class recipe sees it. One recipe per registry is made: the variant
# that sounds smallest (variant_rank: a size spelled in millions/billions first, `14m` < `1b`; else
# the smallest size word of the name: debug/test/toy < nano < tiny < mini/xs < small/s < base/b <
# medium/m < large/l < xl < xxl < huge/h < giant/g; a name with no size word sits between base and
# medium; ties by the name, so `DiT-S/2` before `DiT-S/4` and `DiT-S/8`). Ops do not depend on the
# size, and the built model is shrunk anyway; the smallest is the cheapest to build.

_WORDS = {"debug": -1, "test": -1, "toy": -1, "nano": 0, "pico": 0, "femto": 0, "tiny": 1, "t": 1, "mini": 2,
          "xs": 2, "small": 3, "s": 3, "base": 4, "b": 4, "medium": 5, "m": 5, "large": 6, "l": 6, "xl": 7,
          "xxl": 8, "huge": 9, "h": 9, "giant": 10, "g": 10}
_NO_WORD = 4.5
_MILLIONS = re.compile(r"(?:^|[^a-z0-9])(\d+(?:[._]\d+)?)([mb])(?=$|[^a-z0-9])")


def variant_rank(name: str) -> tuple:
    """Smaller first (NOTE [registries of model functions]); deterministic."""
    lowered = name.lower()
    spelled = _MILLIONS.search(lowered)
    if spelled:
        number = float(spelled.group(1).replace("_", "."))
        return (0, number * (1000 if spelled.group(2) == "b" else 1), name)
    words = [w for w in re.split(r"[^a-z0-9]+", lowered) if w in _WORDS]
    return (1, min((_WORDS[w] for w in words), default=_NO_WORD), name)


def model_builders(tree: ast.Module, classes: set[str]) -> set[str]:
    """Names of the file's top-level functions that build a model (module docstring), to a fixed point."""
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    building: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, fn in functions.items():
            if name in building or not any(isinstance(r, ast.Return) and r.value is not None for r in ast.walk(fn)):
                continue
            for call in (c for c in ast.walk(fn) if isinstance(c, ast.Call)):
                callee = _last(call.func)
                if callee in classes or callee in building and callee != name or any(
                        isinstance(a, ast.Name) and a.id in classes for a in call.args):
                    building.add(name)
                    changed = True
                    break
    return building


def registry_recipes(tree: ast.Module, rel: str, classes: set[str]) -> list[Recipe]:
    """`repo:FILE:FUNCTION` for the smallest variant of each registry of model functions in the file,
    and of its decorator-registered model functions (NOTE [registries of model functions])."""
    builders = model_builders(tree, classes)
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    usable = {name for name in builders if not required(functions[name]) and not name.startswith("_")}
    out = []
    for node in tree.body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        entries = _entries(node.value)
        if not names or len(entries) < 2 or not all(v in usable or v in classes for _k, v in entries):
            continue
        key, value = min(entries, key=lambda kv: variant_rank(kv[0]))
        if value in classes:
            continue   # a registry of classes: the class recipes build them (their constructor filled)
        fn = functions[value]
        shown = f"[{key!r}]" if key != value else ""
        out.append(Recipe(f"repo:{rel}:{value}", CandidateKind.REPO_FACTORY, rel, fn.lineno,
                          f"{value}({_call_words(fn)}): the smallest variant of the registry {names[0]}{shown} of "
                          f"{len(entries)} model functions (repeated blocks cut to 2)", REGISTRY_SCORE))
    registered = [functions[n] for n in sorted(usable) if any(_registers(d) for d in functions[n].decorator_list)]
    if len(registered) >= 1:
        fn = min(registered, key=lambda f: variant_rank(f.name))
        decorator = next(ast.unparse(d) for d in fn.decorator_list if _registers(d))
        out.append(Recipe(f"repo:{rel}:{fn.name}", CandidateKind.REPO_FACTORY, rel, fn.lineno,
                          f"{fn.name}({_call_words(fn)}): the smallest of {len(registered)} model functions "
                          f"registered by @{decorator} (repeated blocks cut to 2)", REGISTRY_SCORE))
    unique: dict[str, Recipe] = {}
    for recipe in out:
        unique.setdefault(recipe.target, recipe)
    return list(unique.values())


def _entries(value: ast.AST) -> list[tuple[str, str]]:
    """(name, function or class name) of a registry literal: a dict of string keys to names, or a
    list/tuple of names; [] for anything else."""
    if isinstance(value, ast.Dict) and value.keys and all(
            isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys) \
            and all(isinstance(v, ast.Name) for v in value.values):
        return [(k.value, v.id) for k, v in zip(value.keys, value.values)]
    if isinstance(value, (ast.List, ast.Tuple)) and value.elts and all(isinstance(e, ast.Name) for e in value.elts):
        return [(e.id, e.id) for e in value.elts]
    return []


def _registers(decorator: ast.AST) -> bool:
    """`@register_model`, `@register`, `@MODELS.register_module()`, `@registry.register("name")`."""
    return "register" in _last(decorator.func if isinstance(decorator, ast.Call) else decorator).lower()


def _call_words(fn: ast.FunctionDef) -> str:
    named = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
    return "pretrained=False" if "pretrained" in named else ""


def _last(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""
