"""Requirements files that include (`-r` / `-c`) a file that is not there: one located finding each.

The scan of one file is pure on its content (it is cached by it), so whether an included file
exists is asked once per run over the tree, here, and reported at the include's line as OPS001
(pip stops at such a line: "Could not open requirements file").
"""

from __future__ import annotations

import os
from pathlib import Path

from opscan.records import Finding, Location, Severity, TaskKind
from opscan.scan.files import manifest_kind
from opscan.scan.rules import RuleSet


def missing_includes(root: Path, relpaths: list[str], rules: RuleSet,
                     requirements: frozenset[str] = frozenset()) -> list[Finding]:
    """OPS001 at each `-r` / `-c` line whose file does not exist (relative to the including file).
    `requirements`: files read as requirements files though their names do not say so (`-r dev.txt`)."""
    rule = rules.input_rule("unreadable")
    if rule is None:
        return []
    out = []
    for rel in relpaths:
        if manifest_kind(rel) != "requirements" and rel not in requirements:
            continue
        try:
            text = (root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if "-r" not in text and "-c" not in text and "--requirement" not in text and "--constraint" not in text:
            continue
        from opscan.scan.manifests import include_lines   # a warm scan of a tree without includes never parses one

        folder = (root / rel).parent
        for line, name in include_lines(text):
            if "$" in name or "://" in name or os.path.isfile(folder / name):
                continue
            snippet = text.splitlines()[line - 1] if line <= len(text.splitlines()) else ""
            out.append(Finding(
                rule=rule.id, name=rule.name, category=rule.category, severity=Severity(rule.severity),
                message=rule.format(rule.message, value=f"it includes `{name}`, which does not exist "
                                                        "(pip stops here); the other lines are still judged"),
                location=Location(rel, line, 1), fix=rule.format(rule.fix), snippet=snippet.strip(),
                task=TaskKind(rule.task) if rule.task else ""))
    return out
