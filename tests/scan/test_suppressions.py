"""OPS003: suppression comments that suppress nothing (like ruff's RUF100)."""

from __future__ import annotations

from opscan.scan.suppressions import CODE, unused

ACTIVE = {"OPS101", "OPS102"}
KNOWN = ACTIVE | {"OPS500"}


def test_used_suppressions_are_quiet():
    declared = {3: frozenset({"OPS101"}), 5: frozenset({"*"})}
    assert unused("a.py", declared, [(3, "OPS101"), (5, "*")], ACTIVE, KNOWN) == []


def test_unused_codes_and_bare_ignores_are_reported():
    declared = {3: frozenset({"OPS101", "OPS102"}), 5: frozenset({"*"}), 7: frozenset({"OPS999"})}
    lines = ["", "", "x.cuda()  # opscan: ignore[OPS101, OPS102]", "", "y = 1  # opscan: ignore", "",
             "z = 2  # opscan: ignore[OPS999]"]
    texts = {number: text for number, text in enumerate(lines, 1) if number in declared}   # as the scan keeps them
    found = unused("a.py", declared, [(3, "OPS101")], ACTIVE, KNOWN, texts)
    assert [(f.rule, f.location.line) for f in found] == [(CODE, 3), (CODE, 5), (CODE, 7)]
    assert "OPS102" in found[0].message and "OPS101" not in found[0].message
    assert "unknown rule code(s) OPS999" in found[2].message
    assert found[0].location.column == lines[2].index("#") + 1 and found[0].snippet == lines[2]


def test_codes_of_inactive_rules_are_not_judged():
    assert unused("a.py", {2: frozenset({"OPS500"})}, [], ACTIVE, KNOWN) == []
