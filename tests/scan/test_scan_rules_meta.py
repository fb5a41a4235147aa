"""Every rule's examples, run automatically, plus meta-checks on the rule files and the generated docs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from opscan.scan.docs import readme_block, reference, with_readme_block
from opscan.scan.examples import check_rule
from opscan.scan.rules import load_rule_dir, load_rules

ROOT = Path(__file__).resolve().parents[2]
RULE_FILES = sorted((ROOT / "rules").glob("*.yaml"))
ALL = load_rules()
RANGES = {"input": "OPS0", "device-string": "OPS1", "cuda-api": "OPS2", "custom-kernel": "OPS3", "cuda-only-lib": "OPS4"}


@pytest.mark.parametrize("rule", list(ALL), ids=lambda r: f"{r.id}-{r.name}")
def test_examples_with_the_full_rule_set(rule):
    """Valid examples give nothing and invalid ones exactly their `# expect:` lines, all rules on."""
    assert check_rule(rule, ALL) == []


@pytest.mark.parametrize("rule", list(ALL), ids=lambda r: f"{r.id}-{r.name}")
def test_examples_with_the_rule_alone(rule):
    """The same check as `opscan rules test` does for users' rules (each rule on its own)."""
    assert check_rule(rule) == []


def test_every_rule_file_loads_and_ids_and_names_are_unique():
    rules = load_rule_dir(ROOT / "rules")
    assert len(rules) == len(RULE_FILES) >= 25
    assert len({r.id for r in rules}) == len(rules)
    assert len({r.name for r in rules}) == len(rules)
    for rule in rules:
        assert Path(rule.path).stem == rule.name
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)


def test_codes_sit_in_their_category_range_and_003_stays_reserved():
    for rule in ALL:
        assert rule.id.startswith(RANGES[rule.category]), rule.id
    assert ALL.by_id("OPS003") is None


def test_both_example_kinds_present():
    for rule in ALL:
        kinds = {e.invalid for e in rule.examples}
        assert False in kinds, f"{rule.id} has no valid example"
        if rule.name != "internal-error":   # a scanner bug cannot be written down as an example
            assert True in kinds, f"{rule.id} has no invalid example"


def test_docs_and_fix_present_and_sources_cited():
    for rule in ALL:
        assert rule.what and rule.why and rule.fix_doc and rule.fix
        if rule.category != "input":
            assert re.search(r"neuron-facts|porting-map|source id|https://", rule.why + rule.fix_doc), rule.id


def test_generated_reference_has_the_headings_for_every_rule():
    text = reference(list(ALL))
    for rule in ALL:
        section = text.split(f"## {rule.id} {rule.name}\n", 1)[1].split("\n## ", 1)[0]
        for heading in ("### What it does", "### Why", "### Fix"):
            assert heading in section, (rule.id, heading)


def test_readme_and_docs_are_in_sync_with_the_rule_files():
    """Regenerate with `opscan rules docs` when this fails."""
    rules = load_rule_dir(ROOT / "rules")
    assert (ROOT / "docs" / "rules.md").read_text(encoding="utf-8") == reference(rules)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.count("<!-- rules:start -->") == 1
    assert with_readme_block(readme, readme_block(rules)) == readme
