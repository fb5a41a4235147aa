"""Configuration files opscan could not read, as located input findings (OPS005 / OPS000).

opscan/config/load.py collects them while it walks up to `[tool.opscan]` (NOTE [unreadable config
files] there); the scan phase (opscan/pipeline/phases.py) turns them into findings here, and the rule
examples (opscan/scan/examples.py) do the same for an example's config files, so both paths are
one. A problem of opscan's own config is `unreadable-config` (OPS005, an error that blocks); any
other is `parse-error` (OPS000), as for a manifest opscan cannot read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from opscan.config.toml_file import OWN_NAME, ConfigProblem, read_toml
from opscan.records import Finding, Location, Severity, TaskKind
from opscan.scan.rules import RuleSet

CONFIG_NAMES = ("pyproject.toml", OWN_NAME)
_SAME_CAUSE = ("parse-error", "unreadable-file")   # the manifest scan's findings on a file it cannot read


def config_findings(problems: Iterable[tuple[str, ConfigProblem]], rules: RuleSet) -> list[Finding]:
    """One finding per (path relative to the scanned root, problem); none for a rule not selected."""
    out = []
    for relpath, problem in problems:
        rule = rules.input_rule("unreadable-config" if problem.own else "parse-error")
        if rule is None:
            continue
        out.append(Finding(
            rule=rule.id, name=rule.name, category=rule.category, severity=Severity(rule.severity),
            message=rule.format(rule.message, value=problem.message), location=Location(relpath, problem.line),
            fix=rule.format(rule.fix), task=TaskKind(rule.task) if rule.task else ""))
    return sorted(out, key=Finding.sort_key)


def file_problems(files: Mapping[str, bytes]) -> list[tuple[str, ConfigProblem]]:
    """The config files at the root of in-memory files (relative path -> bytes) that cannot be read,
    as the walk up from that root would meet them (rule examples)."""
    out = []
    for relpath, data in sorted(files.items()):
        if relpath in CONFIG_NAMES:
            got = read_toml(Path(relpath), data)
            if isinstance(got, ConfigProblem):
                out.append((relpath, got))
    return out


def without_duplicates(findings: Iterable[Finding], config: list[Finding]) -> tuple[Finding, ...]:
    """The scan's findings and the config's, a file the config reports as unreadable once: the
    manifest scan's own parse or decoding error on the same file is dropped (one located finding per file)."""
    reported = {f.location.path for f in config}
    kept = [f for f in findings if not (f.location.path in reported and f.name in _SAME_CAUSE)]
    return tuple(sorted(kept + list(config), key=Finding.sort_key))
