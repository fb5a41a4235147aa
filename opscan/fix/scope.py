"""Which findings `opscan fix` tries, decided from the rules and the finding alone (no libcst).

The scan asks this of every file with a finding, warm runs included, so it imports nothing heavy:
libcst is loaded only for a file the fixer would try (fix/file_plan.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Protocol

from opscan.records import Finding

# The bfloat16 choice (NOTE [the bfloat16 choice] in fix/precision.py): the one guarded finding rewritten.
BF16_QUERIES = frozenset({"torch.cuda.is_bf16_supported"})
# The torch names the codemods look up besides the rules' `replace` targets (codemods.py).
LOOKUPS = ("torch.distributed.get_default_backend_for_device", "torch.accelerator.current_accelerator")

# Manifests (fix/manifest.py): PyTorch's CUDA wheel index is rewritten to its CPU index.
INDEX_RULE = "cuda-wheel-index"
CUDA_INDEX = re.compile(r"(https?://download\.pytorch\.org/whl/(?:nightly/|test/)?)cu\d+(?=/|\s|$|[\"'])")
CUDA_LABEL = re.compile(r"\+cu\d+")


class Probe(Protocol):
    """What the codemods ask of the installed torch (scan/fixes.py TorchProbe, or its answers)."""

    installed: bool
    version: str | None

    def has(self, path: str) -> bool: ...


def handles_guarded(codemod: str, subject: str) -> bool:
    """Whether the codemod rewrites a finding of `subject` inside an availability guard (the
    bfloat16 choice keeps its guard); every other guarded finding is left."""
    return codemod == "accelerator-api" and subject in BF16_QUERIES


def certain(finding: Finding, rules: dict[str, Any], text: str | None = None) -> bool:
    """Whether a manifest finding is a CUDA index on PyTorch's own server (and, given the file's text,
    that no `+cuXXX` label in it depends on that index)."""
    rule = rules.get(finding.rule)
    if rule is None or rule.name != INDEX_RULE or finding.subject != "index" or finding.guarded:
        return False
    if not CUDA_INDEX.search(finding.snippet or ""):
        return False
    return text is None or CUDA_LABEL.search(text) is None


def fixable(finding: Finding, rules: dict[str, Any], unsafe: bool = False) -> bool:
    """Whether the fixer tries the finding: its rule declares a rewrite that applies to it by default
    (safe, not guarded, its name covered; with `unsafe`, unsafe rewrites too), or the bfloat16 choice.
    Decided from the rules, never from `Finding.fixable` (which the scan sets from the fixer's plan)."""
    rule = rules.get(finding.rule)
    if rule is None or rule.autofix is None:
        return False
    autofix = rule.autofix
    if autofix.fixes(finding.subject, finding.guarded):
        return True
    if unsafe and not finding.guarded and autofix.covers(finding.subject):
        return True
    return handles_guarded(autofix.codemod, finding.subject)


def would_try(findings: Iterable[Finding], rules: dict[str, Any], unsafe: bool = False) -> bool:
    """Whether the fixer plans a file holding `findings` (otherwise it reads nothing of it)."""
    return any(fixable(f, rules, unsafe) or certain(f, rules) for f in findings)


def lookups(rules: Iterable[Any]) -> set[str]:
    """Every torch name a codemod may check: the `replace` targets and the helpers codemods use."""
    return {new for r in rules if r.autofix is not None for _, new in r.autofix.replace} | set(LOOKUPS)
