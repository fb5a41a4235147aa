"""A model's constructor arguments as the project's training script writes them (child side; the
scripts are read with ast, never run).

NOTE [arguments as the training script builds it]
A model class whose every argument has a default is not always the model the team trains: the
training script passes what selects its parts (`FPNet(enc_blk_nums=[2, 2, 4, 8], middle_blk_num=12,
backbone='NAFNet')`), and the defaults may build a model that cannot run (`backbone=None` leaves
`self.backbone` unset, so its forward fails). When a training script of the project
(train_scripts.scripts: the files that call `.backward()` and step an optimizer, best first) calls
the class or factory, anywhere in the file (a Trainer method included), under its own name or the
name it is imported as, the literal arguments of its first such call are taken: keywords naming a
parameter, positionals in the parameters' order; an argument that is not a literal (`cfg.width`,
`args.depth`) is left to the other ways of filling it (construct.py). The sizes are then the
script's, not opscan's: a built model is cut as one built from its defaults (`--layers`, retried
unshrunk when cutting breaks it), and `pretrained` stays False. The report says where the
arguments were read ("arguments as train.py:28 builds it").
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from opscan.index import ProjectIndex
from opscan.targets import train_scripts

WORDS = "as the training script builds it"   # in the words of the arguments found here
_CACHE: dict[Path, list[tuple[str, ast.Module]]] = {}


def written_arguments(fn, parameters: list[tuple[str, inspect.Parameter]],
                      root: Path | None) -> tuple[dict, str] | None:
    """(kwargs, words) from the first call of `fn` in the project's training scripts whose arguments
    include a literal (NOTE [arguments as the training script builds it]), else None."""
    name = getattr(fn, "__name__", "")
    home = getattr(fn, "__module__", "") or ""
    if root is None or not name:
        return None
    names = [n for n, _ in parameters]
    for rel, tree in _scripts(Path(root)):
        local = _local_name(tree, name, home)
        if local is None:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or _called(node.func) != local:
                continue
            kwargs = _literals(node, names)
            if kwargs:
                shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
                return kwargs, f"{name}({shown}): arguments {WORDS} ({rel}:{node.lineno})"
    return None


def _scripts(root: Path) -> list[tuple[str, ast.Module]]:
    root = root.resolve()
    if root not in _CACHE:
        _CACHE[root] = [(s.rel, s.tree) for s in train_scripts.scripts(ProjectIndex(root))]
    return _CACHE[root]


def _local_name(tree: ast.Module, name: str, home: str) -> str | None:
    """The name the script calls `name` by: its own class or function, or an import of it from a
    module that may be its home (`from models.FPNet import FPNet as Net`); None when it has neither."""
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.name == name:
            return name
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module and not _may_be_home(module, home):
                continue
            for alias in node.names:
                if alias.name == name:
                    return alias.asname or name
    return None


def _may_be_home(module: str, home: str) -> bool:
    """`from models.FPNet import X` for a class of `models.FPNet` (its module, a package above it, or
    the same file loaded under another dotted name)."""
    if not home:
        return True
    tail = home.rsplit(".", 1)[-1].removeprefix("opscan_repo_")
    last = module.rsplit(".", 1)[-1]
    return home == module or home.endswith("." + module) or home.startswith(module + ".") or \
        last == tail or home.endswith("_" + module.replace(".", "_"))


def _called(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    return None


def _literals(call: ast.Call, names: list[str]) -> dict:
    out: dict = {}
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred) or index >= len(names):
            break
        value = _literal(arg)
        if value is not _NOT:
            out[names[index]] = value
    for keyword in call.keywords:
        if keyword.arg in names:
            value = _literal(keyword.value)
            if value is not _NOT:
                out[keyword.arg] = value
    return out


_NOT = object()


def _literal(node: ast.expr):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT
