"""Import matchers: CUDA-only libraries, CUDA modules imported by name, compiled extensions.

The unit is the alias, not the statement: `import cupy, flash_attn` is two library hits (one per
top-level package) and `import a_cuda, b_cuda` two extension hits (docs/architecture.md).
"""

from __future__ import annotations

import ast

from opscan.records import Severity
from opscan.scan.context import FileContext

# An import of a matched name (`from torch.cuda import Event`) looks up its fix and severity as
# `<name>#import` (a rule's `fixes` entry for "*#import"), else the rule's default fix.
IMPORT_SUFFIX = "#import"


def check_import(ctx: FileContext, node: ast.Import | ast.ImportFrom, g: bool) -> None:
    if isinstance(node, ast.Import):
        modules = [a.name for a in node.names]
        members: list[str] = []
    else:
        module = ctx.imports.absolute(node)
        modules = [module] if module else []
        members = [f"{module}.{a.name}" if module else a.name for a in node.names]
    local = isinstance(node, ast.ImportFrom) and node.level > 0
    libraries: set[str] = set()   # packages reported as CUDA-only libraries: not extensions as well
    for pats, rule in ctx.c.imports:
        packages: set[str] = set()
        for candidate in modules + members:
            if local or candidate.split(".", 1)[0] in ctx.packages:
                continue   # the scanned project's own code (`import mypkg, cupy` still checks cupy)
            package = candidate.split(".", 1)[0]
            if package not in packages and pats.matches(candidate):
                packages.add(package)
                ctx.hit(rule, node, g, name=candidate, subject=package, unit=package)
        libraries |= packages
    for pats, rule in ctx.c.import_names:   # `import torch.cuda`, `from torch.cuda.amp import X`
        matched = [candidate for candidate in (members if isinstance(node, ast.ImportFrom) else modules)
                   if candidate.split(".", 1)[0] in ctx.c.roots and pats.matches(candidate)]
        if matched:   # one site per statement, as severe as its most severe name (the first of those)
            best = max(matched, key=lambda c: Severity(rule.severity_for(c + IMPORT_SUFFIX)).rank)
            ctx.hit(rule, node, g, name=best, fix_name=best + IMPORT_SUFFIX)
    for regex, relative, rule in ctx.c.extensions:
        leaves: set[str] = set()
        for candidate in modules + members:
            declared = any(candidate == d or candidate.endswith("." + d) for d in ctx.extensions)
            own = local and relative is not None and candidate in members and relative.search(
                candidate.rsplit(".", 1)[-1])
            leaf = candidate.rsplit(".", 1)[-1]
            named = regex is not None and candidate in modules and not local \
                and candidate.split(".", 1)[0] not in ctx.packages | libraries and regex.search(candidate)
            if leaf not in leaves and (declared or own or named):
                leaves.add(leaf)
                ctx.hit(rule, node, g, name=candidate, subject=leaf, unit=leaf)
                if own and not declared and "." in candidate:
                    ctx.member_sources.append(_member(node, candidate))
    if ctx.c.ext_members and not local:   # `import pkg._C as C`, `from pkg import _C` (never torch's own)
        for regex, rule in ctx.c.ext_members:
            for candidate in members + [m for m in modules if "." in m]:
                leaf = candidate.rsplit(".", 1)[-1]
                if "." in candidate and not _torch_own(candidate) and regex.search(leaf):
                    ctx.hit(rule, node, g, name=candidate, subject=leaf, unit=leaf)
                    if not any(candidate == d or candidate.endswith("." + d) for d in ctx.extensions):
                        ctx.member_sources.append(_member(node, candidate))
    for name, full in ctx.bound:   # NOTE [native modules bound by calls]: later calls into them are sites
        bound_rule = ctx.extension_module(full, relative=local)
        if bound_rule is not None:
            ctx.ext_locals[name] = bound_rule


def _member(node: ast.Import | ast.ImportFrom, candidate: str) -> tuple[str, str, int, str]:
    """(module, name, line, local name) of a `_C`-style member import (NOTE [members of Python modules])."""
    module, name = candidate.rsplit(".", 1)
    local = name
    for alias in node.names:
        if isinstance(node, ast.ImportFrom) and candidate.endswith("." + alias.name):
            local = alias.asname or alias.name
        elif isinstance(node, ast.Import) and alias.name == candidate:
            local = alias.asname or alias.name
    return module, name, node.lineno, local


def _torch_own(dotted: str) -> bool:
    """torch's own compiled modules (`torch._C`): OPS205 reports its CUDA parts; not a project extension."""
    return dotted.split(".", 1)[0] == "torch"


CHECKS = {ast.Import: check_import, ast.ImportFrom: check_import}
