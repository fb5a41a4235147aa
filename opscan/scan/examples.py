"""Runs rule examples: an invalid example must give exactly its `# expect:` lines, a valid one nothing."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from opscan.records import Finding
from opscan.scan.dependencies import DependencyContext
from opscan.scan.suppressions import unused_suppression_findings
from opscan.scan.tree import scan_memory
from opscan.scan.rules import Example, Rule, RuleSet, load_rules

EXPECT = re.compile(r"(?:#|//)\s*expect:\s*(?P<codes>[A-Z][A-Z0-9]*\d{3}(?:\s*,\s*[A-Z][A-Z0-9]*\d{3})*)")


@dataclass(frozen=True)
class ExampleFailure:
    """One example that did not give what it promised."""

    rule: str
    index: int                      # 1-based among the rule's examples
    invalid: bool
    missing: tuple[str, ...]        # "path:line CODE" expected but not found
    unexpected: tuple[str, ...]     # "path:line CODE" found but not expected

    def __str__(self) -> str:
        kind = "invalid" if self.invalid else "valid"
        parts = []
        if self.missing:
            parts.append("missing " + ", ".join(self.missing))
        if self.unexpected:
            parts.append("unexpected " + ", ".join(self.unexpected))
        return f"{self.rule} {kind} example {self.index}: " + "; ".join(parts)


def expectations(example: Example) -> set[str]:
    """The "path:line CODE" entries an example promises (markers plus its `expect` list)."""
    out = set(example.expect)
    for path, text in example.files:
        for number, line in enumerate(text.splitlines(), 1):
            match = EXPECT.search(line)
            if match:
                for code in match["codes"].split(","):
                    out.add(f"{path}:{number} {code.strip()}")
    return out


def run_example(example: Example, rules: RuleSet, only: str | None = None,
                deps: DependencyContext | None = None) -> tuple[set[str], set[str]]:
    """(expected, found) "path:line CODE" sets; with `only`, both are limited to that rule id.
    `deps`: the DependencyContext manifests are judged against (the caller's release)."""
    result = scan_memory(dict(example.files), rules, deps=deps)
    unused: list[Finding] = []
    if "unused-suppression" in rules.compiled.inputs:   # OPS003 judges the suppressions of the scan
        known = {r.id for r in load_rules()}
        unused = unused_suppression_findings(result, rules, known)
    if "unreadable-config" in rules.compiled.inputs:   # OPS005: the config files the walk would read
        from opscan.scan.config_findings import config_findings, file_problems, without_duplicates

        data = {k: v.encode("utf-8") if isinstance(v, str) else v for k, v in example.files}
        result = replace(result, findings=without_duplicates(result.findings,
                                                            config_findings(file_problems(data), rules)))
    found = {f"{f.location.path}:{f.location.line} {f.rule}" for f in (*result.findings, *unused)}
    expected = expectations(example) if example.invalid else set()
    if only is not None:
        found = {e for e in found if e.endswith(" " + only)}
        expected = {e for e in expected if e.endswith(" " + only)}
    return expected, found


def check_rule(rule: Rule, rules: RuleSet | None = None, deps: DependencyContext | None = None) -> list[ExampleFailure]:
    """Run every example of `rule`.

    Args:
        rule: the rule whose examples run.
        rules: the rule set to scan with. Default: `rule` alone, and only its own code is
            compared. With a full set, every code is compared (stricter: examples must mark
            all the findings they cause).
        deps: the DependencyContext manifest examples are judged against (opscan/pipeline/phases.py
            dependency_context: the release's torch pairing); None: no release known.
    """
    only = None
    if rules is None:
        rules, only = RuleSet((rule,)), rule.id
    failures = []
    for index, example in enumerate(rule.examples, 1):
        expected, found = run_example(example, rules, only, deps)
        if example.invalid and not expected:
            failures.append(ExampleFailure(rule.id, index, True, (f"(no `# expect: {rule.id}` marker)",), ()))
            continue
        if expected != found:
            failures.append(ExampleFailure(rule.id, index, example.invalid,
                                           tuple(sorted(expected - found)), tuple(sorted(found - expected))))
    return failures
