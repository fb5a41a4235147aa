"""Malformed rule files, coverage-db files, config and baselines: exit 2 with one line naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.support.corpus import GOOD, noise, write_tree
from opscan.resources import coverage_db_dir, rules_dir

MARKER_CMD = "touch {marker}"


def one_error_line(err: str, name: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) >= 1 and lines[0].startswith("opscan: error:"), err
    assert name in lines[0], err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture(scope="module")
def good_tree(tmp_path_factory) -> Path:
    return write_tree(tmp_path_factory.mktemp("tree"), GOOD)


def _user_rule() -> dict:
    raw = yaml.safe_load((rules_dir() / "cuda-env-var.yaml").read_text())
    raw["id"], raw["name"] = "USR901", "my-rule"
    return raw


def _dump(raw) -> str:
    return yaml.safe_dump(raw, sort_keys=False)


def _rule_variants(marker: Path) -> dict[str, str | bytes]:
    base = _user_rule()
    missing = dict(base)
    del missing["match"]
    return {
        "yaml-syntax": "id: [USR901\nname: my-rule\n",
        "empty": "",
        "top-level-list": "- id: USR901\n",
        "unknown-key": _dump({**base, "colour": "red"}),
        "missing-key": _dump(missing),
        "bad-severity": _dump({**base, "severity": "fatal"}),
        "bad-category": _dump({**base, "category": "gpu"}),
        "bad-regex": _dump({**base, "match": {"string": "(unclosed", "in": ["device-arg"]}}),
        "bad-matcher": _dump({**base, "match": {"telepathy": True}}),
        "wrong-type": _dump({**base, "message": ["a", "list"]}),
        "duplicate-builtin-id": _dump({**base, "id": "OPS101"}),
        "not-utf8": b"id: USR901\nname: my-rule\nmessage: \"\xff\xfe\"\n",
        "python-tag": f"!!python/object/apply:os.system [{MARKER_CMD.format(marker=marker)!r}]\n",
        "python-tag-nested": _dump(base).replace("status: stable",
                                                 "status: !!python/object/apply:os.system "
                                                 f"[{MARKER_CMD.format(marker=marker)!r}]"),
        "alias-bomb": "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                      "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                      "id: USR901\nname: my-rule\nmessage: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n",
    }


RULE_KINDS = sorted(_rule_variants(Path("/x")))


@pytest.mark.parametrize("kind", RULE_KINDS)
def test_malformed_rule_file(kind, tmp_path, good_tree, run_cli):
    marker = tmp_path / "PWNED"
    folder = tmp_path / "rules"
    folder.mkdir()
    content = _rule_variants(marker)[kind]
    path = folder / "my-rule.yaml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    code, out, err = run_cli("scan", str(good_tree), "--rules", str(folder), "--format", "json")
    assert code == 2, (out, err)
    one_error_line(err, "my-rule.yaml")
    assert out == ""
    assert not marker.exists(), "a YAML tag executed code"


def test_valid_user_rule_still_loads(tmp_path, good_tree, run_cli):
    """The variants above fail for their defect alone: the base rule is fine."""
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "my-rule.yaml").write_text(_dump(_user_rule()))
    code, out, err = run_cli("scan", str(good_tree), "--rules", str(folder), "--format", "json")
    assert code == 1 and noise(err) == [] and "fail-on error" in err, err


# -- coverage database ---------------------------------------------------------------------------
def _db_text() -> str:
    return (coverage_db_dir() / "torchneuron-2.33.0.yaml").read_text()


def _db_variants(marker: Path) -> dict[str, str | bytes]:
    text = _db_text()
    first_op = next(line for line in text.splitlines() if line.strip().startswith("- {op:"))
    return {
        "yaml-syntax": text.replace("schema_version: 1", "schema_version: [1", 1),
        "empty": "",
        "not-a-mapping": "- 1\n- 2\n",
        "unknown-status": text.replace(first_op, first_op.replace("status: native", "status: mostly"), 1),
        "duplicate-op": text.replace(first_op, first_op + "\n" + first_op, 1),
        "bad-op-name": text.replace(first_op, first_op.replace('op: "aten::', 'op: "aten:::', 1), 1),
        "unknown-key": text.replace("schema_version: 1", "schema_version: 1\nflavour: spicy", 1),
        "newer-schema": text.replace("schema_version: 1", "schema_version: 99", 1),
        "not-utf8": text.encode() + b"\n# \xff\xfe\n",
        "python-tag": text.replace("schema_version: 1",
                                   "schema_version: !!python/object/apply:os.system "
                                   f"[{MARKER_CMD.format(marker=marker)!r}]", 1),
    }


DB_KINDS = sorted(_db_variants(Path("/x")))


@pytest.mark.slow
@pytest.mark.parametrize("kind", DB_KINDS)
def test_malformed_db_file(kind, tmp_path, run_cli):
    marker = tmp_path / "PWNED"
    path = tmp_path / "torchneuron-9.9.9.yaml"
    content = _db_variants(marker)[kind]
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    code, out, err = run_cli("db", "show", "aten::relu", "--db", str(path))
    assert code == 2, (out, err)
    one_error_line(err, path.name)
    code, out, err = run_cli("db", "validate", str(path))
    assert code != 0 and path.name in err and "Traceback" not in err
    assert not marker.exists(), "a YAML tag executed code"


# -- configuration ---------------------------------------------------------------------------------
# Keys and values opscan reads but rejects: exit 2, one line naming the file (every command).
CONFIGS = {
    "unknown-key": ("pyproject.toml", b"[tool.opscan]\ncolour = 'red'\n"),
    "wrong-type": ("pyproject.toml", b"[tool.opscan]\nexclude = 3\n"),
    "not-a-table": ("pyproject.toml", b"[tool]\nopscan = 1\n"),
    "bad-fail-on": ("pyproject.toml", b"[tool.opscan]\nfail-on = ['sometimes']\n"),
    "missing-rules-folder": ("pyproject.toml", b"[tool.opscan]\nextra-rules = ['no/such/folder']\n"),
}
# opscan's own config file that cannot be read at all (NOTE [unreadable config files] in
# opscan/config/load.py): the reporting commands go on with the defaults and report OPS005 at its
# line, an error that fails the gate; under --exit-zero they exit 0 with the same finding.
UNREADABLE_CONFIGS = {
    "toml-syntax": ("pyproject.toml", b"[tool.opscan\nfail-on = 'error'\n", 1),
    "not-utf8": ("pyproject.toml", b"[tool.opscan]\nexclude = ['\xff']\n", 2),
    "opscan-toml-syntax": ("opscan.toml", b"exclude = [\n", 1),
}


@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_malformed_config(kind, tmp_path, run_cli):
    name, data = CONFIGS[kind]
    tree = write_tree(tmp_path / "proj", {**GOOD, name: data})
    code, out, err = run_cli("check", str(tree), "--no-trace", "--format", "json")
    assert code == 2, (out, err)
    one_error_line(err, name)


@pytest.mark.parametrize("command", ["check", "scan"])
@pytest.mark.parametrize("exit_zero", [False, True])
@pytest.mark.parametrize("kind", sorted(UNREADABLE_CONFIGS))
def test_unreadable_config_is_a_finding_that_fails_the_gate(kind, exit_zero, command, tmp_path, run_cli):
    name, data, line = UNREADABLE_CONFIGS[kind]
    tree = write_tree(tmp_path / "proj", {**GOOD, name: data, "dev.py": b"import torch\nx = torch.zeros(1).cuda()\n"})
    args = [command, str(tree), "--format", "json"] + (["--no-trace"] if command == "check" else [])
    code, out, err = run_cli(*args, *(["--exit-zero"] if exit_zero else []))
    assert code == (0 if exit_zero else 1), (out, err)
    findings = json.loads(out)["findings"]
    assert [(f["rule"], f["path"], f["line"]) for f in findings if f["category"] == "input"] == [("OPS005", name, line)]
    assert any(f["rule"] == "OPS105" and f["path"] == "dev.py" for f in findings)   # the rest is scanned
    assert json.loads(out)["verdict"]["kind"] == "blocked"


def test_an_unreadable_config_still_stops_the_commands_that_act_on_it(tmp_path, run_cli):
    tree = write_tree(tmp_path / "proj", {**GOOD, "opscan.toml": b"exclude = [\n"})
    code, out, err = run_cli("fix", str(tree), "--diff")
    assert code == 2, (out, err)
    one_error_line(err, "opscan.toml")


@pytest.mark.parametrize("exit_zero", [False, True])
@pytest.mark.parametrize("where", ["root", "above"])
def test_a_malformed_pyproject_at_the_root_or_above_is_one_located_finding(where, exit_zero, tmp_path, run_cli):
    top = tmp_path / "top"
    tree = write_tree(top / "proj", {**GOOD, "clean.py": b"x = 1\n"})
    folder = tree if where == "root" else top
    (folder / "pyproject.toml").write_bytes(b"[project]\nname = 'x'\nversion = \n")
    code, out, err = run_cli("check", str(tree), "--no-trace", "--format", "json",
                             *(["--exit-zero"] if exit_zero else []))
    assert code in ((0,) if exit_zero else (0, 1)) and "Traceback" not in err, (out, err)
    inputs = [(f["rule"], f["path"], f["line"]) for f in json.loads(out)["findings"] if f["category"] == "input"]
    path = "pyproject.toml" if where == "root" else "../pyproject.toml"
    assert inputs == [("OPS000", path, 3)]


def test_a_config_above_a_malformed_pyproject_is_still_found(tmp_path, run_cli):
    top = tmp_path / "top"
    tree = write_tree(top / "proj", {**GOOD, "pyproject.toml": b"[project\n"})
    (top / "opscan.toml").write_text('ignore = ["OPS105"]\n')
    code, out, err = run_cli("check", str(tree), "--no-trace", "--format", "json")
    found = {(f["rule"], f["path"]) for f in json.loads(out)["findings"]}
    assert ("OPS000", "pyproject.toml") in found and not any(rule == "OPS105" for rule, _ in found), found


# -- baselines ------------------------------------------------------------------------------------
BASELINES = {
    "newer-opscan": json.dumps({"opscan_baseline": 99, "tool_version": "9.0.0", "entries": []}),
    "truncated": '{"opscan_baseline": 1, "tool_version": "0.1.0", "entries": [{"fingerp',
    "not-json": b"\x89PNG\r\n\x1a\n\x00\x00",
    "a-list": "[]",
    "no-version": json.dumps({"entries": []}),
    "bad-entry": json.dumps({"opscan_baseline": 1, "entries": [{"rule": "OPS101"}]}),
    "empty": "",
}


@pytest.mark.parametrize("kind", sorted(BASELINES))
@pytest.mark.parametrize("command", ["scan", "check"])
def test_malformed_baseline(kind, command, tmp_path, good_tree, run_cli):
    path = tmp_path / "baseline.json"
    data = BASELINES[kind]
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    extra = ["--no-trace"] if command == "check" else []
    code, out, err = run_cli(command, str(good_tree), "--baseline", str(path), "--format", "json", *extra)
    assert code == 2, (out, err)
    line = one_error_line(err, "baseline.json")
    if kind == "newer-opscan":
        assert "newer" in line and "9.0.0" in line
