"""Every rule's examples, run automatically, plus meta-checks on the rule files and the generated docs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from opscan.config import Config
from opscan.pipeline.phases import dependency_context
from opscan.scan.docs import readme_block, reference, with_readme_block
from opscan.scan.examples import check_rule
from opscan.scan.rules import load_rule_dir, load_rules

ROOT = Path(__file__).resolve().parents[2]
RULE_FILES = sorted((ROOT / "rules").glob("*.yaml"))
ALL = load_rules()
RANGES = {"input": "OPS0", "device-string": "OPS1", "cuda-api": "OPS2", "custom-kernel": "OPS3",
          "cuda-only-lib": "OPS4",
          "device-dispatch": "OPS1", "dependency": "OPS5"}
DEPS = dependency_context(Config(Path.cwd()))   # dependency manifests' examples: the shipped newest release's pairing


@pytest.mark.slow
@pytest.mark.parametrize("rule", list(ALL), ids=lambda r: f"{r.id}-{r.name}")
def test_examples_with_the_full_rule_set(rule):
    """Valid examples give nothing and invalid ones exactly their `# expect:` lines, all rules on."""
    assert check_rule(rule, ALL, DEPS) == []


@pytest.mark.parametrize("rule", list(ALL), ids=lambda r: f"{r.id}-{r.name}")
def test_examples_with_the_rule_alone(rule):
    """The same check as `opscan rules test` does for users' rules (each rule on its own)."""
    assert check_rule(rule, deps=DEPS) == []


def test_every_rule_file_loads_and_ids_and_names_are_unique():
    rules = load_rule_dir(ROOT / "rules")
    assert len(rules) == len(RULE_FILES) >= 25
    assert len({r.id for r in rules}) == len(rules)
    assert len({r.name for r in rules}) == len(rules)
    for rule in rules:
        assert Path(rule.path).stem == rule.name
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)


def test_codes_sit_in_their_category_range_and_003_is_the_unused_suppression_rule():
    for rule in ALL:
        assert rule.id.startswith(RANGES[rule.category]), rule.id
    from opscan.scan import suppressions

    ops003 = ALL.by_id("OPS003")
    assert (ops003.id, ops003.name) == (suppressions.CODE, suppressions.NAME)
    assert [m.kind for m in ops003.match] == ["input"] and ops003.task == "none"


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
            assert rule.sources, f"{rule.id} cites no source"


# A file-like citation (`porting-map.md`, `notes/users.md`, `neuron-facts/x.yaml`) outside a URL.
_FILE_REF = re.compile(r"(?<![\w/.:-])((?:[\w.-]+/)*[\w.-]+\.(?:md|ya?ml|json|txt|rst|csv))\b")
_URL = re.compile(r"https?://\S+")
# Names of material only the developers have (the project's ../shared folder), never shipped.
_PRIVATE = re.compile(r"porting-map|neuron-facts|source ids?\b|notes/", re.I)


def _texts(rule):
    yield "message", rule.message
    yield "docs.what", rule.what
    yield "docs.why", rule.why
    yield "docs.fix", rule.fix_doc
    yield "fix", rule.fix
    for i, entry in enumerate(rule.fixes):
        yield f"fixes[{i}].fix", entry.text


@pytest.mark.parametrize("rule", list(ALL), ids=lambda r: f"{r.id}-{r.name}")
def test_rules_cite_only_public_urls_or_shipped_files(rule):
    from opscan.scan.rules import shipped_file

    for entry in rule.sources:
        assert entry.startswith("https://") or shipped_file(entry) is not None, (rule.id, entry)
    for where, text in _texts(rule):
        assert not _PRIVATE.search(text), (rule.id, where, _PRIVATE.search(text)[0])
        for ref in _FILE_REF.findall(_URL.sub(" ", text)):
            assert shipped_file(ref) is not None, f"{rule.id} {where} cites {ref!r}, which opscan does not ship"


def test_the_citation_check_catches_unshipped_files_and_private_notes():
    assert _FILE_REF.findall("use torch.amp (porting-map.md)") == ["porting-map.md"]
    text = _URL.sub(" ", "see https://example.org/a/b.md and coverage_db/torchneuron-2.33.0.yaml")
    assert _FILE_REF.findall(text) == ["coverage_db/torchneuron-2.33.0.yaml"]     # the URL's file is not a citation
    assert _PRIVATE.search("(neuron-facts torchneuron-2.33.0, source id about)")
    from opscan.scan.rules import shipped_file

    assert shipped_file("coverage_db/torchneuron-2.33.0.yaml") is not None
    assert shipped_file("porting-map.md") is None and shipped_file("rules/../README.md") is None


def test_plan_task_sources_are_public_urls():
    from opscan.plan import task_kinds

    kinds = [*task_kinds.SOURCE_KINDS, task_kinds.LIBRARY_KIND, task_kinds.KERNEL_KIND, task_kinds.UNSUPPORTED_KIND,
             task_kinds.FALLBACK_KIND, task_kinds.UNKNOWN_KIND]
    for kind in kinds:
        assert kind.sources and all(re.fullmatch(r"https://\S+", s) for s in kind.sources), kind.id
        for text in (kind.title, kind.action, kind.why):
            assert not _PRIVATE.search(text) and not _FILE_REF.findall(_URL.sub(" ", text)), kind.id


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
