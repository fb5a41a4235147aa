"""Generates the rule reference (docs/rules.md and the README's summary by category) from the rule files."""

from __future__ import annotations

import re

from opscan.records import CATEGORIES, TASKS
from opscan.scan.rules import CONTEXTS, Example, Rule

START = "<!-- rules:start -->"
END = "<!-- rules:end -->"


def anchor(rule: Rule) -> str:
    """The markdown anchor of a rule's section in docs/rules.md."""
    return f"{rule.id.lower()}-{rule.name}"


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    match = re.match(r"(.+?[.:])(\s|$)", text)
    sentence = match.group(1) if match else text
    sentence = sentence.rstrip(":") if sentence.endswith(":") else sentence
    if len(sentence) > 100:
        sentence = sentence[:100].rsplit(" ", 1)[0] + " …"
    return sentence


def _example_block(example: Example) -> str:
    parts = []
    for path, text in example.files:
        lang = "python" if path.endswith((".py", ".ipynb")) else (
            "cpp" if path.endswith((".cpp", ".cu", ".cuh", ".h", ".cc")) else "")
        label = "" if path == "example.py" else f"`{path}`:\n\n"
        parts.append(f"{label}```{lang}\n{text.rstrip()}\n```")
    return "\n\n".join(parts)


def reference(rules: list[Rule]) -> str:
    """docs/rules.md: a table of every rule, then one section per rule with its docs and examples."""
    rules = sorted(rules, key=lambda r: r.id)
    out = ["# Rule reference", "",
           "Generated from `rules/*.yaml` by `opscan rules docs`; do not edit by hand (a test checks it).",
           "Suppress a finding with `# opscan: ignore[CODE]` on its line. Severities: error blocks the "
           "port, warning runs differently or slower, note is worth knowing.", "",
           "| code | name | category | severity | status | `opscan fix` | what it flags |",
           "|---|---|---|---|---|---|---|"]
    for rule in rules:
        what = _first_sentence(rule.what).replace("|", "\\|")
        out.append(f"| [{rule.id}](#{anchor(rule)}) | `{rule.name}` | {rule.category} | {rule.severity} "
                   f"| {rule.status} | {_fix_label(rule)} | {what} |")
    out += ["", "Categories: " + "; ".join(f"**{k}** — {v}" for k, v in CATEGORIES.items()) + ".", ""]
    out += ["Task kinds (`task:`, the port task a rule's findings go to; docs/tasks.md): "
            + "; ".join(f"**{k}** — {v}" for k, v in TASKS.items()) + ".", ""]
    out += ["String contexts used by `string` matchers:", ""]
    out += [f"- `{k}`: {v}" for k, v in CONTEXTS.items()]
    for rule in rules:
        out += ["", f"## {rule.id} {rule.name}", "",
                f"*{rule.category} · {rule.severity} · {rule.status} · since {rule.since} · task {rule.task}*", "",
                "### What it does", "", rule.what, "", "### Why", "", rule.why, "", "### Fix", "", rule.fix_doc]
        if rule.sources:
            out += ["", "### Sources", ""] + [f"- <{s}>" if s.startswith("https://")
                                               else f"- `{s}` (shipped with opscan)"
                                               for s in rule.sources]
        out += _autofix_section(rule)
        invalid = [e for e in rule.examples if e.invalid]
        valid = [e for e in rule.examples if not e.invalid]
        if invalid:
            out += ["", "### Flagged", ""] + ["\n\n".join(_example_block(e) for e in invalid)]
        if valid:
            out += ["", "### Not flagged", ""] + ["\n\n".join(_example_block(e) for e in valid)]
    return "\n".join(out).rstrip() + "\n"


def _fix_label(rule: Rule) -> str:
    """The `opscan fix` column: "safe", "unsafe" or "no" (docs/fix.md, "Safety")."""
    return rule.autofix.safety if rule.autofix is not None else "no"


def _autofix_section(rule: Rule) -> list[str]:
    """The rule's automatic fix: codemod, safety, names it covers, before/after examples."""
    fix = rule.autofix
    if fix is None:
        return ["", "### Automatic fix", "", "None: `opscan fix` leaves these findings to the port plan."]
    out = ["", "### Automatic fix", "",
           (f"`opscan fix` applies the `{fix.codemod}` codemod ({fix.safety}; [docs/fix.md](fix.md)). "
            "Findings inside a CUDA availability guard are left alone.")]
    if fix.replace:
        out += ["", "Rewritten names (anything else is left, with the reason):", ""]
        out += [f"- `{old}` -> `{new}`" for old, new in fix.replace]
    for example in fix.examples:
        flag = " (with `--unsafe-fixes`)" if example.unsafe else ""
        out += ["", f"Before{flag}:", "", f"```python\n{example.before.rstrip()}\n```", "", "After:", "",
                f"```python\n{example.after.rstrip()}\n```"]
    return out


def readme_block(rules: list[Rule]) -> str:
    """The README's rule summary (one row per category), between the START and END markers.

    The README keeps to one screen: each rule's name, severity and what it flags are in the
    reference (docs/rules.md); here, each category says what it flags and links its rules.
    """
    rules = sorted(rules, key=lambda r: r.id)
    by_category: dict[str, list[Rule]] = {}
    for rule in rules:
        by_category.setdefault(rule.category, []).append(rule)
    lines = [START, "## Rules", "",
             f"{len(rules)} rules, generated from `rules/*.yaml` by `opscan rules docs`; every rule with its "
             "severity, examples and fix in [docs/rules.md](docs/rules.md).", "",
             "| category | what it flags | rules |", "|---|---|---|"]
    for category, members in by_category.items():
        what = CATEGORIES.get(category, "").replace("|", "\\|")
        codes = ", ".join(f"[{rule.id}](docs/rules.md#{anchor(rule)})" for rule in members)
        lines.append(f"| {category} | {what} | {codes} |")
    lines.append(END)
    return "\n".join(lines) + "\n"


def with_readme_block(readme: str, block: str) -> str:
    """`readme` with its rule block replaced by `block` (appended at the end when absent)."""
    if START in readme and END in readme:
        head, rest = readme.split(START, 1)
        _, tail = rest.split(END, 1)
        return head + block.rstrip("\n") + tail
    return readme.rstrip("\n") + "\n\n" + block
