"""Runs the before/after examples of a rule's `autofix` (as opscan/scan/examples.py runs rule examples).

An example passes when fixing `before` (findings of that rule only) gives exactly `after`, the
result parses, and fixing `after` again changes nothing.
"""

from __future__ import annotations

from opscan.fix.file_plan import Probe
from opscan.fix.module import fix_source
from opscan.scan.tree import scan_memory
from opscan.scan.rules import Rule, RuleSet


def check_autofix(rule: Rule, probe: Probe | None = None) -> list[str]:
    """Problems with `rule`'s autofix examples (empty: all pass, or the rule has no autofix)."""
    if rule.autofix is None:
        return []
    rules = RuleSet((rule,))
    problems = []
    for index, example in enumerate(rule.autofix.examples, 1):
        first = _fix(example.before, rules, example.unsafe, probe)
        if first != example.after:
            problems.append(f"{rule.id} autofix example {index}: the fix gives\n{_indent(first)}\n"
                            f"  expected\n{_indent(example.after)}")
            continue
        if _fix(first, rules, example.unsafe, probe) != first:
            problems.append(f"{rule.id} autofix example {index}: fixing the result again changes it (not idempotent)")
    return problems


def _fix(text: str, rules: RuleSet, unsafe: bool, probe: Probe | None) -> str:
    findings = scan_memory({"example.py": text}, rules).findings
    fixed = fix_source(text, findings, rules, unsafe=unsafe, probe=probe).text
    return fixed if isinstance(fixed, str) else fixed.decode("utf-8")     # text in, text out


def _indent(text: str) -> str:
    return "\n".join("    | " + line for line in text.splitlines())
