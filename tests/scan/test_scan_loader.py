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
