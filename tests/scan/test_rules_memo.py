"""The memo of parsed rule files (NOTE [rules memo] in opscan/scan/rules_memo.py): the same rules
with and without it, no YAML parsed when it holds a file's bytes, an edited file parsed again, a
corrupt or foreign memo ignored and rewritten, and the same report bytes whatever the memo holds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from opscan.errors import RuleError
from opscan.resources import rules_dir
from opscan.scan import rules as rules_mod
from opscan.scan.rules import load_rules
from opscan.scan.rules_memo import MEMO_NAME


def _no_yaml(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every rule file the strict YAML loader parses."""
    parsed: list[str] = []
    real = rules_mod.parse_yaml

    def counting(text: str):
        parsed.append(text[:40])
        return real(text)

    monkeypatch.setattr(rules_mod, "parse_yaml", counting)
    return parsed


def test_memo_gives_the_same_rules_without_parsing(tmp_path: Path, monkeypatch) -> None:
    truth = load_rules()
    assert load_rules(memo_dir=tmp_path).rules == truth.rules          # cold: parsed, then remembered
    memo = json.loads((tmp_path / MEMO_NAME).read_text())
    assert len(memo["files"]) == len(list(rules_dir().glob("*.yaml")))
    parsed = _no_yaml(monkeypatch)
    warm = load_rules(memo_dir=tmp_path)
    assert parsed == []
    assert warm.rules == truth.rules and warm.known == truth.known
    assert [r.examples for r in warm] == [r.examples for r in truth]   # every nested field, not only ids


@pytest.mark.parametrize("damage", ["truncated", "not-json", "list", "foreign-stamp", "files-not-dict",
                                    "entries-not-dicts", "wrong-documents", "empty"])
def test_a_corrupt_or_foreign_memo_is_ignored_and_rewritten(tmp_path: Path, monkeypatch, damage: str) -> None:
    truth = load_rules()
    load_rules(memo_dir=tmp_path)
    path = tmp_path / MEMO_NAME
    text = path.read_text()
    doc = json.loads(text)
    if damage == "truncated":
        path.write_text(text[: len(text) // 2])
    elif damage == "not-json":
        path.write_bytes(b"\x00\xff not json")
    elif damage == "list":
        path.write_text("[]")
    elif damage == "foreign-stamp":
        doc["stamp"] = "1/0.0.1/5.0"
        path.write_text(json.dumps(doc))
    elif damage == "files-not-dict":
        doc["files"] = ["x"]
        path.write_text(json.dumps(doc))
    elif damage == "entries-not-dicts":
        doc["files"] = {key: [1, 2] for key in doc["files"]}
        path.write_text(json.dumps(doc))
    elif damage == "wrong-documents":   # right keys, contents a rule file never held: parsed afresh
        for n, entry in enumerate(doc["files"].values()):
            if n % 3 == 0:
                entry["severity"] = "fatal"
            elif n % 3 == 1:
                entry["match"] = {"no-such-matcher": 7}
            else:
                del entry["docs"]
        path.write_text(json.dumps(doc))
    else:
        path.write_text("")
    assert load_rules(memo_dir=tmp_path).rules == truth.rules
    parsed = _no_yaml(monkeypatch)
    assert load_rules(memo_dir=tmp_path).rules == truth.rules
    if damage != "wrong-documents":   # rewritten whole: the next run parses nothing
        assert parsed == []


def test_an_edited_rule_file_is_parsed_again(tmp_path: Path) -> None:
    extra = tmp_path / "rules"
    extra.mkdir()
    source = next(p for p in sorted(rules_dir().glob("*.yaml")) if "severity: error" in p.read_text())
    mine = extra / source.name
    shutil.copy(source, mine)
    # the same file as an extra rule collides with the built-in one: load the extra folder alone
    before = load_rules(extra_dirs=[extra], builtin=False, memo_dir=tmp_path / "memo").rules[0]
    assert before.severity == "error"
    mine.write_text(source.read_text().replace("severity: error", "severity: warning", 1))
    after = load_rules(extra_dirs=[extra], builtin=False, memo_dir=tmp_path / "memo").rules[0]
    assert after.severity == "warning"
    mine.write_text(source.read_text())   # back to the first bytes: the first rule again
    assert load_rules(extra_dirs=[extra], builtin=False, memo_dir=tmp_path / "memo").rules[0] == before


def test_an_invalid_rule_file_is_not_remembered_and_its_error_names_the_line(tmp_path: Path) -> None:
    extra = tmp_path / "rules"
    extra.mkdir()
    source = next(p for p in sorted(rules_dir().glob("*.yaml")) if "\ntask: " in p.read_text())
    (extra / source.name).write_text(source.read_text().replace("\ntask: ", "\ntask: nonsense-", 1))
    for _ in range(2):
        with pytest.raises(RuleError) as caught:
            load_rules(extra_dirs=[extra], builtin=False, memo_dir=tmp_path / "memo")
        assert "task" in str(caught.value) and caught.value.line is not None
    assert not (tmp_path / "memo" / MEMO_NAME).exists()


def test_a_folder_that_cannot_be_written_is_no_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert load_rules(memo_dir=blocker / "cache").rules == load_rules().rules


def test_same_report_bytes_with_any_memo(run_cli, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import torch\nx = torch.device('cuda')\ntorch.cuda.synchronize()\n")
    (project / "requirements.txt").write_text("torch==2.1.0+cu121\nflash-attn\n")
    cache = tmp_path / "cache"
    outputs = {}
    for fmt in ("json", "sarif", "terminal"):
        reference = run_cli("scan", str(project), "--format", fmt, "--no-fix-check", "--no-cache")
        cold = run_cli("scan", str(project), "--format", fmt, "--no-fix-check", "--cache-dir", str(cache))
        assert (cache / MEMO_NAME).is_file()
        warm = run_cli("scan", str(project), "--format", fmt, "--no-fix-check", "--cache-dir", str(cache))
        (cache / MEMO_NAME).write_text("{corrupt")
        corrupt = run_cli("scan", str(project), "--format", fmt, "--no-fix-check", "--cache-dir", str(cache))
        assert reference[0] == 1 and reference == cold == warm == corrupt
        outputs[fmt] = reference[1]
    assert '"OPS' in outputs["json"]


def test_shipped_tables_come_from_the_memo_and_a_changed_one_is_parsed_again(tmp_path: Path) -> None:
    from opscan.scan import rules_memo
    from opscan.strict_yaml import shipped_data

    text = (rules_dir() / "data" / "torch-companions.yaml").read_text(encoding="utf-8")
    load_rules(memo_dir=tmp_path)
    first = shipped_data(text)
    assert rules_memo.active() is not None
    rules_memo.close_memo()
    load_rules(memo_dir=tmp_path)   # a new run: the memo read from the folder
    memo = json.loads((tmp_path / MEMO_NAME).read_text())
    assert len(memo["files"]) == len(list(rules_dir().glob("*.yaml"))) + 1
    assert shipped_data(text) == first
    changed = text + "\n# a comment changes the bytes, not the data\n"
    assert shipped_data(changed) == first
    assert len(json.loads((tmp_path / MEMO_NAME).read_text())["files"]) == len(memo["files"]) + 1
    load_rules()   # a run without a cache folder: no memo answers
    assert rules_memo.active() is None


@pytest.mark.slow
def test_a_warm_scan_imports_no_yaml_and_no_manifest_parser(tmp_path: Path) -> None:
    """A warm `opscan scan` (its manifests cached) answers every YAML document from the memo: PyYAML,
    the manifest parsers and packaging's specifiers are not imported; the same bytes as cold."""
    import subprocess
    import sys

    project = tmp_path / "proj"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "model.py").write_text("import torch\nx = torch.zeros(2).cuda()\n")
    (project / "requirements.txt").write_text("torch==2.4.0\nflash-attn\n")
    code = ("import io, json, sys, contextlib\nfrom opscan import cli\nout = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            f"    code = cli.main(['scan', {str(project)!r}, '--format', 'json', '--jobs', '1', '--no-fix-check', "
            f"'--cache-dir', {str(tmp_path / 'cache')!r}])\n"
            "print(json.dumps([code, out.getvalue(), sorted(m for m in sys.modules if m == 'yaml' or m in ("
            "'opscan.scan.manifests', 'packaging.specifiers', 'opscan.scan.constraints'))]))")
    runs = {}
    for run in ("cold", "warm"):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        runs[run] = json.loads(done.stdout.splitlines()[-1])
    assert runs["cold"][0] == runs["warm"][0] == 1 and runs["cold"][1] == runs["warm"][1]
    assert "yaml" in runs["cold"][2] and runs["warm"][2] == []
