"""Rule loading is strict: unknown keys, bad values and clashes are errors naming the file."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from opscan.errors import RuleError
from opscan.scan import load_rules, scan_memory
from opscan.scan.rules import load_rule_file

GOOD = """\
id: ACME101
name: acme-device
status: preview
since: "1.0"
category: device-string
severity: warning
task: device-agnostic
message: "acme device '{value}'"
match: {string: "^acme$", in: [device-arg, device-keyword]}
docs: {what: Flags acme., why: Because., fix: Do not.}
fix: "Use dev."
examples:
  invalid:
    - |
      x.to("acme")  # expect: ACME101
  valid:
    - |
      x.to("cpu")
"""


def write(tmp_path: Path, text: str, name: str = "acme-device.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_a_user_rule_loads_and_runs(tmp_path):
    write(tmp_path, GOOD)
    rules = load_rules(extra_dirs=[tmp_path])
    assert rules.by_id("ACME101") is not None and rules.by_id("OPS101") is not None
    result = scan_memory({"a.py": 'y = x.to("acme")\nz = torch.zeros(1, device="acme")\n'}, rules)
    assert [(f.rule, f.location.line) for f in result.findings] == [("ACME101", 1), ("ACME101", 2)]


@pytest.mark.parametrize("change,needle", [
    (("severity: warning", "severity: fatal"), "severity"),
    (("status: preview", "status: beta"), "status"),
    (("category: device-string", "category: gpu"), "category"),
    (("fix: \"Use dev.\"", "fix: \"Use dev.\"\ncolour: red"), "unknown key 'colour'"),
    (("in: [device-arg, device-keyword]", "in: [device-arg, everywhere]"), "unknown context 'everywhere'"),
    (("{string: \"^acme$\"", "{strin: \"^acme$\""), "needs exactly one of"),
    (("\"^acme$\"", "\"^(acme$\""), "bad regular expression"),
    (("message: \"acme device '{value}'\"", "message: \"acme {device}\""), "unknown placeholder"),
    (("id: ACME101", "id: acme"), "id 'acme'"),
    (("docs: {what: Flags acme., why: Because., fix: Do not.}", "docs: {what: Flags acme., fix: Do not.}"), "docs.why"),
    (("    - |\n      x.to(\"cpu\")", "    - 3"), "examples.valid[0]"),
    (("task: device-agnostic", "task: gpu-stuff"), "task 'gpu-stuff': expected one of device-agnostic"),
    (("task: device-agnostic\n", ""), "missing key(s): task"),
    (("fix: \"Use dev.\"", "fix: \"Use dev.\"\nfixes: [{names: [acme.x], fix: f, message: \"{devce}\"}]"),
     "fixes[0].message: unknown placeholder"),
])
def test_bad_rule_files_are_errors_naming_the_file(tmp_path, change, needle):
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(RuleError) as info:
        load_rule_file(path)
    assert needle in str(info.value)
    assert str(path) in str(info.value)


def test_the_file_stem_must_be_the_rule_name(tmp_path):
    with pytest.raises(RuleError, match="file name must be the rule name"):
        load_rule_file(write(tmp_path, GOOD, name="other.yaml"))


def test_invalid_yaml_names_file_and_line(tmp_path):
    with pytest.raises(RuleError) as info:
        load_rule_file(write(tmp_path, "id: [unclosed\n"))
    assert info.value.path.endswith("acme-device.yaml") and info.value.line


def test_duplicate_ids_across_folders(tmp_path):
    write(tmp_path, GOOD.replace("ACME101", "OPS101"))
    with pytest.raises(RuleError, match="OPS101 is also used by"):
        load_rules(extra_dirs=[tmp_path])


def test_select_and_ignore():
    rules = load_rules(select=["OPS2"])
    assert {r.category for r in rules} == {"cuda-api", "input"}   # input rules always stay
    rules = load_rules(ignore=["OPS105", "cuda-only-lib"])
    assert rules.by_id("OPS105") is None and rules.by_id("OPS401") is None and rules.by_id("OPS101")
    rules = load_rules(select=["nccl-backend"])
    assert [r.id for r in rules if r.category != "input"] == ["OPS206"]


@pytest.mark.parametrize("change,needle,line", [
    # a key given twice: plain YAML keeps the last one silently; the rule loader refuses
    (("severity: warning\n", "severity: warning\nseverity: error\n"), "duplicate key 'severity' (first at line 6)", 7),
    (("docs: {what: Flags acme., why: Because., fix: Do not.}",
      "docs: {what: Flags acme., why: Because., what: Again., fix: Do not.}"),
     "duplicate key 'what'", 10),
    (("fix: \"Use dev.\"", "fix: \"Use dev.\"\ncolour: red"), "unknown key 'colour'", 12),
    (("docs: {what: Flags acme.,", "docs: {whatt: Flags acme.,"), "docs: unknown key 'whatt'", 10),
    (("match: {string: \"^acme$\",", "match: {string: \"^acme$\", where: x,"), "unknown key 'where'", 9),
])
def test_duplicate_and_unknown_keys_name_file_and_line(tmp_path, change, needle, line):
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(RuleError) as info:
        load_rule_file(path)
    assert needle in str(info.value)
    assert info.value.path == str(path) and info.value.line == line
    assert str(info.value).startswith(f"{path}:{line}: ")


def test_rule_and_db_loaders_share_one_strict_yaml_implementation():
    import opscan.db.loader as db_loader
    import opscan.plan.libraries as catalog_loader
    import opscan.scan.rules as rules_module
    from opscan import strict_yaml

    assert rules_module.parse_yaml is strict_yaml.parse_yaml
    # the release and catalog loaders read, parse and report through one function of it
    assert db_loader.load_checked is strict_yaml.load_checked is catalog_loader.load_checked


def test_every_shipped_rule_declares_a_task_from_the_closed_vocabulary():
    from opscan.records import TASKS
    from opscan.plan.task_kinds import BY_TASK

    rules = load_rules()
    assert {r.task for r in rules} <= set(TASKS)
    assert set(BY_TASK) == set(TASKS) - {"none"}     # one planner task kind per vocabulary entry
    assert {r.task for r in rules if r.category == "input"} == {"none"}


@pytest.mark.parametrize("select,ignore,needle", [
    (["OPS999"], [], "unknown rule selector 'OPS999'"),
    ([], ["OPS1O1"], "unknown rule selector 'OPS1O1': did you mean 'OPS101'?"),      # letter O
    (["nccl-backen"], [], "did you mean 'nccl-backend'?"),
    (["cuda-apis"], [], "did you mean 'cuda-api'?"),
    (["OPS9"], [], "unknown rule selector 'OPS9'"),        # no rule code starts with OPS9
])
def test_unknown_selectors_are_usage_errors(select, ignore, needle):
    from opscan.errors import UsageError

    with pytest.raises(UsageError) as info:
        load_rules(select=select, ignore=ignore)
    assert needle in str(info.value)


def test_prefixes_names_and_categories_select(tmp_path):
    assert load_rules(select=["OPS2"]).by_id("OPS201") is not None
    assert load_rules(select=["cuda-only-lib"]).by_id("OPS401") is not None
    write(tmp_path, GOOD)
    assert load_rules(extra_dirs=[tmp_path], select=["ACME"]).by_id("ACME101") is not None
