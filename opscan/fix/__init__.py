"""`opscan fix`: format-preserving rewrites (libcst codemods) of the findings whose rules declare one.

Public API:
    fix_source(text, findings, rules, unsafe=False, probe=None) -> SourceFix   (pure, one module)
    fix_paths(targets, config_for, unsafe=False, write=True, probe=None) -> FixRun
    SiteOutcome, SourceFix, FileFix, FixRun                                   (results)

The scan finds the sites first (fast, stdlib ast); libcst parses only the files that have a
fixable finding, and each codemod rewrites exactly the node a finding points at. See docs/fix.md.
The names are loaded on first use: the scan imports `opscan.fix.preview` (the fixable mark) on
every run, warm ones too, and must not load libcst for it (fix/scope.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opscan.fix.files import FileFix, FixRun, fix_paths
    from opscan.fix.module import SiteOutcome, SourceFix, fix_source

__all__ = ["FileFix", "FixRun", "SiteOutcome", "SourceFix", "fix_paths", "fix_source"]

def __getattr__(name: str) -> Any:
    """The public names, imported from their modules when first asked for."""
    if name in ("FileFix", "FixRun", "fix_paths"):
        from opscan.fix import files

        return getattr(files, name)
    if name in ("SiteOutcome", "SourceFix", "fix_source"):
        from opscan.fix import module

        return getattr(module, name)
    raise AttributeError(f"module 'opscan.fix' has no attribute {name!r}")
