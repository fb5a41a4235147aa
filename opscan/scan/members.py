"""`_C`-style imports of names that Python modules of the scanned tree define: not compiled extensions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from opscan.scan.rules import RuleSet

# NOTE [members of Python modules]
# `from .defaults import _C` names a package's compiled `_C` by the convention OPS305 follows, yet in
# a detectron-style project `defaults.py` is a Python module and `_C` its config object. The file's
# scan cannot tell (it is pure of its own bytes), so it records each such import as (module, name)
# (`FileResult.members`); over the whole result, an import whose module is a Python file of the
# tree (`pkg/config/defaults.py`, also under `src/`), or whose name is one (`pkg/_C.py`), is no
# compiled extension: that file's extension findings on it (the import's OPS305 at its line, and
# the OPS310 calls through the local name it binds) are dropped. A stat per such import, so warm
# runs stay as fast.
def python_members(results: list[Any], rules: RuleSet, exists: Callable[[str], bool]) -> list[Any]:
    """NOTE [members of Python modules]: drop extension findings on names Python modules of the tree define."""
    if not any(r.members for r in results):
        return results
    compiled = rules.compiled
    import_rules = {rule.id for *_, rule in compiled.extensions} | {rule.id for _, rule in compiled.ext_members}
    call_rules = {rule.id for *_, rule in compiled.ext_calls} | {rule.id for _, rule in compiled.ext_member_calls}
    out: list[Any] = []
    for result in results:
        imports: set[tuple[int, str]] = set()
        locals_: set[str] = set()
        for module, name, line, local in result.members:
            base = module.replace(".", "/")
            files = (f"{base}.py", f"{base}/{name}.py", f"{base}/{name}/__init__.py")
            if any(exists(prefix + f) for prefix in ("", "src/") for f in files):
                imports.add((line, name))
                locals_.add(local)
        if imports:
            kept = [(f, r) for f, r in zip(result.findings, result.requires or [()] * len(result.findings))
                    if not (f.rule in import_rules and (f.location.line, f.subject) in imports
                            or f.rule in call_rules and f.subject in locals_)]
            result = replace(result, findings=tuple(f for f, _ in kept), requires=tuple(r for _, r in kept))
        out.append(result)
    return out
