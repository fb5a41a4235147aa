"""`opscan rules`: list the rules, test rule files' examples, regenerate the rule reference."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from opscan.errors import InputError, UsageError

HELP = "list the rules (`rules list`), test rule files' examples (`rules test PATH...`), regenerate docs (`rules docs`)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("list", "test", "docs"), help="what to do")
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="test: rule files or folders of them (default: the built-in rules)")
    parser.add_argument("--rules", action="append", default=[], metavar="DIR",
                        help="list: also load the rule files in DIR (repeatable)")
    parser.add_argument("--format", choices=("terminal", "json"), default="terminal", help="list: output format")
    parser.add_argument("--check", action="store_true",
                        help="docs: do not write; exit 1 when docs/rules.md or the README block is out of date")
    parser.add_argument("--root", metavar="DIR",
                        help="docs: the opscan source checkout to update (default: the one opscan runs from)")


def run(args: argparse.Namespace) -> int:
    if args.action == "list":
        return _list(args)
    if args.action == "test":
        return _test(args)
    return _docs(args)


def _list(args: argparse.Namespace) -> int:
    from opscan.scan import load_rules

    if args.paths:
        raise UsageError("`rules list` takes no paths (use --rules DIR for extra rule files)")
    rules = load_rules(extra_dirs=args.rules)
    if args.format == "json":
        json.dump([{"id": r.id, "name": r.name, "category": r.category, "severity": r.severity,
                    "status": r.status, "since": r.since, "path": r.path} for r in rules],
                  sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    width = max(len(r.name) for r in rules)
    for rule in rules:
        print(f"{rule.id}  {rule.name:<{width}}  {rule.category:<14} {rule.severity:<8} {rule.status}")
    return 0


def _test(args: argparse.Namespace) -> int:
    from opscan.resources import rules_dir
    from opscan.scan.examples import check_rule
    from opscan.scan.rules import load_rule_dir, load_rule_file

    rules = []
    for raw in args.paths or [str(rules_dir())]:
        path = Path(raw)
        if not path.exists():
            raise InputError("no such file or directory", path=raw)
        rules.extend([load_rule_file(path)] if path.is_file() else load_rule_dir(path))
    if not rules:
        raise InputError("no rule files (*.yaml) found", path=" ".join(args.paths))
    failed = 0
    from opscan.fix.examples import check_autofix   # `autofix` before/after examples (docs/fix.md)

    from opscan.config import Config
    from opscan.pipeline.phases import dependency_context

    deps = dependency_context(Config(Path.cwd()))   # manifest examples: the newest TorchNeuron release's pairing
    for rule in rules:
        failures = [*check_rule(rule, deps=deps), *check_autofix(rule)]
        count = len(rule.examples) + (len(rule.autofix.examples) if rule.autofix else 0)
        if failures:
            failed += 1
            print(f"FAIL {rule.id} {rule.name} ({rule.path})")
            for failure in failures:
                print(f"  {failure}")
        else:
            print(f"ok   {rule.id} {rule.name} ({count} example{'s' if count != 1 else ''})")
    print(f"{len(rules) - failed} of {len(rules)} rule(s) passed")
    return 1 if failed else 0


def _docs(args: argparse.Namespace) -> int:
    from opscan.resources import rules_dir
    from opscan.scan.docs import readme_block, reference, with_readme_block
    from opscan.scan.rules import load_rule_dir

    root = Path(args.root) if args.root else rules_dir().parent
    readme_path, docs_path = root / "README.md", root / "docs" / "rules.md"
    if not readme_path.is_file():
        raise InputError("not an opscan source checkout (no README.md); pass --root", path=str(root))
    rules = load_rule_dir(root / "rules")
    wanted_docs = reference(rules)
    readme = readme_path.read_text(encoding="utf-8")
    wanted_readme = with_readme_block(readme, readme_block(rules))
    current_docs = docs_path.read_text(encoding="utf-8") if docs_path.is_file() else ""
    stale = [p for p, ok in ((docs_path, current_docs == wanted_docs), (readme_path, readme == wanted_readme))
             if not ok]
    if args.check:
        for path in stale:
            print(f"out of date: {path} (run `opscan rules docs`)")
        return 1 if stale else 0
    from opscan.fsutil import atomic_write

    docs_path.parent.mkdir(parents=True, exist_ok=True)
    if current_docs != wanted_docs:
        atomic_write(docs_path, wanted_docs)
    if readme != wanted_readme:
        atomic_write(readme_path, wanted_readme)   # README.md is never left half-written
    for path in stale:
        print(f"updated {path}")
    return 0
