"""`opscan fix`: format-preserving rewrites (libcst codemods) of the findings whose rules declare one.

Public API (pinned by tests/fix/test_fix_api.py):
    fix_source(text, findings, rules, unsafe=False, probe=None) -> SourceFix   (pure, one module)
    fix_paths(targets, config_for, unsafe=False, write=True, probe=None) -> FixRun
    SiteOutcome, SourceFix, FileFix, FixRun                                   (results)

The scan finds the sites first (fast, stdlib ast); libcst parses only the files that have a
fixable finding, and each codemod rewrites exactly the node a finding points at. See docs/fix.md.
"""

from opscan.fix.module import SiteOutcome, SourceFix, fix_source
from opscan.fix.files import FileFix, FixRun, fix_paths

__all__ = ["FileFix", "FixRun", "SiteOutcome", "SourceFix", "fix_paths", "fix_source"]
