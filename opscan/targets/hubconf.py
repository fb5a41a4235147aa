"""torch.hub entry points of a `hubconf.py`, read statically (stdlib ast; nothing imported).

torch.hub treats every public callable attribute of hubconf.py as an entry point: the functions it
defines and the names it imports (`from dinov2.hub.backbones import dinov2_vits14, ...`). Each
becomes a `repo:hubconf.py:ENTRY` recipe (built with `pretrained=False` by
opscan/targets/repository.py), smallest-sounding first (NOTE [hub entry order]).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from opscan.targets.recipes import Recipe
from opscan.targets.registries import variant_rank
from opscan.records import CandidateKind

# NOTE [hub entry order]
# A hubconf lists a family of models; one entry is tried (one recipe per file). Entries that are
# not model builders are left out when their name says so (CLIP's `tokenize`, `available_models`,
# transforms), as are imported modules and `dependencies`. Of the rest: backbones before task heads
# (a name with a head/task word -- `lc`/`linear`/`classifier`, `ld`/`dd`/`depth`, `seg`, `det`,
# `head`, `txt`/`text` -- comes after one without), then the smallest-sounding (variant_rank of
# registries.py, with a size letter glued to a ViT-style family read apart: `vits14` is `vit s 14`,
# so vits < vitb < vitl < vitg), then the name (`dinov2_vits14` before `dinov2_vits14_reg`).
_NOT_MODEL = re.compile(r"token|transform|preprocess|available|list_models|^help$|vocab|download|^load$",
                        re.IGNORECASE)
_TASK = {"lc", "linear", "classifier", "classification", "cls", "head", "heads", "ld", "dd", "depth", "depther",
         "seg", "segmentation", "segmenter", "det", "detection", "detector", "txt", "text"}
_GLUED = re.compile(r"(vit|deit|beit|swin|eva|dit)(xs|xl|[tsbmlhg])(\d+)")


def entry_rank(name: str) -> tuple:
    """Backbones first, then the smallest-sounding, then the name (NOTE [hub entry order])."""
    words = re.split(r"[^a-z0-9]+", name.lower())
    task = any(w in _TASK or w.endswith("txt") for w in words)
    return (task, variant_rank(_GLUED.sub(r"\1_\2_\3", name.lower())), name)


def hubconf_recipes(tree: ast.Module, rel: str, root: Path | None = None) -> list[Recipe]:
    """`repo:hubconf.py:entry` for each public entry point (defined or imported), best first."""
    entries: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            entries.setdefault(node.name, "")
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                shown = alias.asname or alias.name
                if shown.startswith("_") or shown == "dependencies" or alias.name == "*" \
                        or _is_module(root, node.module, alias.name):
                    continue
                entries.setdefault(shown, node.module)
    kept = sorted((n for n in entries if not _NOT_MODEL.search(n)), key=entry_rank)
    out = []
    for index, name in enumerate(kept):
        line = next((n.lineno for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name
                     or isinstance(n, ast.ImportFrom) and any((a.asname or a.name) == name for a in n.names)), 1)
        how = f"torch.hub entry point {name}(pretrained=False)"
        if entries[name]:
            how += f", imported from {entries[name]}"
        out.append(Recipe(f"repo:{rel}:{name}", CandidateKind.HUBCONF, rel, line, how, 600 - index))
    return out


def _is_module(root: Path | None, module: str, name: str) -> bool:
    """`from module import name` imports a module of the repository (a file or a package)."""
    if root is None:
        return False
    base = root.joinpath(*module.split("."))
    return (base / f"{name}.py").is_file() or (base / name / "__init__.py").is_file()
