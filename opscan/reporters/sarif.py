"""SARIF 2.1.0 for GitHub code scanning: the rules that fired, results with relative locations.

Paths are made relative to the directory opscan ran in (the checkout) by prefixing the report root
when it is relative, with uriBaseId %SRCROOT%. Each result carries a `partialFingerprints` entry
computed as baselines do (see NOTE [fingerprints] in opscan/assess/baseline.py), so alerts survive moved
lines. Ops the backend rejects or runs on the CPU are results too (rule ids `op/unsupported`,
`op/cpu-fallback`), located at the user-code line that dispatched them.
"""

from __future__ import annotations

import json
import re
from typing import TextIO

from opscan.assess.baseline import fingerprints
from opscan.records import Report, RuleInfo

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning", "note": "note"}

OP_RULES = {
    "unsupported": RuleInfo(
        "op/unsupported", "op-unsupported", "error", "op",
        what="The model dispatches an aten op that the coverage database records as unsupported.",
        why="The op raises an error on TorchNeuron, so the step cannot run.",
        fix="Rewrite the code with supported ops or implement the op in NKI (`@nki_op`)."),
    "cpu-fallback": RuleInfo(
        "op/cpu-fallback", "op-cpu-fallback", "warning", "op",
        what="The model dispatches an aten op that TorchNeuron runs on the CPU.",
        why="CPU fallback copies tensors to the host and back in every step: slow.",
        fix="Use ops with a Neuron kernel, or write an NKI kernel (`@nki_op`)."),
}


def uri(root: str, path: str) -> str:
    """`path` (relative to the scanned root) relative to the run's working directory."""
    if not root or root == "." or root.startswith("/") or (len(root) > 1 and root[1] == ":"):
        return path
    return f"{root.rstrip('/')}/{path}"


_OP_VERB = {"op/unsupported": "is unsupported", "op/cpu-fallback": "runs on the CPU"}
_SENTENCE_END = re.compile(r"(?<![.\s])\.\s+(?=[A-Z])")


def _first_sentence(text: str, limit: int = 200) -> str:
    """The first sentence of `text` (not fooled by `...` or `e.g.`), at most `limit` characters."""
    match = _SENTENCE_END.search(text)
    first = text[:match.start()] if match else text.rstrip(".")
    return first if len(first) <= limit else first[:limit - 1].rstrip() + "…"


def _in_project(report: Report, path: str) -> bool:
    """Whether an op source is a file of the project (library frames get no SARIF location)."""
    return report.project_sources is None or path in report.project_sources


def _rule(info: RuleInfo) -> dict:
    short = _first_sentence(info.what) if info.what else info.name
    text = "\n\n".join(part for part in (info.what, info.why, info.fix and "Fix: " + info.fix) if part)
    markdown = "\n\n".join(part for part in (
        info.what, info.why and f"**Why:** {info.why}", info.fix and f"**Fix:** {info.fix}") if part)
    out = {
        "id": info.id,
        "name": info.name,
        "shortDescription": {"text": short or info.id},
        "fullDescription": {"text": text or info.name},
        "help": {"text": text or info.name, "markdown": markdown or info.name},
        "defaultConfiguration": {"level": _LEVEL.get(info.severity, "warning")},
        "properties": {"tags": [t for t in ("torchneuron", info.category) if t], "precision": "high"},
    }
    if info.help_uri:
        out["helpUri"] = info.help_uri
    return out


def _location(root: str, path: str, line: int, column: int = 1, end_line: int = 0,
              end_column: int = 0) -> dict:
    region = {"startLine": max(line, 1), "startColumn": max(column, 1)}
    if end_line and end_line >= line:
        region["endLine"] = end_line
        if end_column and (end_line > line or end_column > column):
            region["endColumn"] = end_column
    return {"physicalLocation": {
        "artifactLocation": {"uri": uri(root, path), "uriBaseId": "%SRCROOT%"},
        "region": region,
    }}


def _verdict(report: Report) -> dict:
    """The report's verdict as a tool notification (a warning unless ready, an error when blocked)
    and as a run property; nothing for a hand-built report without one."""
    judged = report.verdict
    if judged is None:
        return {}
    level = {"ready": "note", "blocked": "error"}.get(judged.kind, "warning")
    step = [f"step: {judged.step.text}"] if judged.step is not None else []   # NOTE [the step answered for]
    text = f"opscan verdict ({judged.kind}): {judged.headline}" + "".join(f"; {d}" for d in [*step, *judged.details])
    return {
        "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": [
            {"level": level, "message": {"text": text}, "descriptor": {"id": f"verdict/{judged.kind}"}}]}],
        "properties": {"verdict": {"kind": judged.kind, "headline": judged.headline,
                                   "details": list(judged.details),
                                   "checked": {"source": judged.source_checked, "ops": judged.ops_checked},
                                   **({"step": {"kind": judged.step.kind, "text": judged.step.text}}
                                      if judged.step is not None else {})}},
    }


def to_dict(report: Report) -> dict:
    """The SARIF log as a dict."""
    infos = {r.id: r for r in report.rules}
    results: list[tuple[str, dict]] = []
    for finding, fp in fingerprints(report.findings):
        if finding.rule not in infos:
            infos[finding.rule] = RuleInfo(finding.rule, finding.name, finding.severity, finding.category,
                                           fix=finding.fix)
        loc = finding.location
        message = finding.message + (f" Fix: {finding.fix}" if finding.fix else "")
        if loc.cell is not None:   # lines of a notebook cell are not lines of the .ipynb file
            message = f"cell {loc.cell}, line {loc.line}: {message}"
            loc = type(loc)(loc.path)
        if loc.cell is not None:   # a cell's line is not a line of the .ipynb JSON: name it, point at the file
            message = f"cell {loc.cell}, line {loc.line}: {message}"
            where = _location(report.root, loc.path, 1)
        else:
            where = _location(report.root, loc.path, loc.line, loc.column, loc.end_line, loc.end_column)
        results.append((finding.rule, {
            "ruleId": finding.rule,
            "level": _LEVEL.get(finding.severity, "warning"),
            "message": {"text": message},
            "locations": [where],
            "partialFingerprints": {"opscanFingerprint/v2": fp},   # baseline format 2's fingerprint
            "properties": {"task": finding.task, "subject": finding.subject},
        }))
    status = {c.op: c.status for c in report.coverage}
    seen: set[tuple[str, str, int]] = set()
    for trace in report.traces:
        for usage in trace.ops:
            info = OP_RULES.get(status.get(usage.op, ""))
            if info is None:
                continue
            for source in usage.sources:
                if (usage.op, source.path, source.line) in seen or not _in_project(report, source.path):
                    continue
                seen.add((usage.op, source.path, source.line))
                infos[info.id] = info
                where = f" (in {source.module})" if source.module else ""
                results.append((info.id, {
                    "ruleId": info.id,
                    "level": _LEVEL[info.severity],
                    "message": {"text": f"`{usage.op}` {_OP_VERB[info.id]} "
                                        f"on {report.backend or 'the backend'}{where}."},
                    "locations": [_location(report.root, source.path, source.line)],
                    "partialFingerprints": {"opscanFingerprint/v1": f"{info.id}:{usage.op}:{source.path}"},
                }))
    rule_ids = sorted(infos)
    index = {rule_id: i for i, rule_id in enumerate(rule_ids)}
    ordered = []
    for rule_id, result in results:
        result = {"ruleId": result["ruleId"], "ruleIndex": index[rule_id],
                  **{k: v for k, v in result.items() if k != "ruleId"}}
        ordered.append(result)
    ordered.sort(key=lambda r: (r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                                r["locations"][0]["physicalLocation"]["region"]["startLine"],
                                r["ruleId"], r["message"]["text"]))
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "opscan",
                "version": report.tool_version,
                "semanticVersion": report.tool_version,
                "rules": [_rule(infos[r]) for r in rule_ids],
            }},
            "automationDetails": {"id": "opscan/"},
            "columnKind": "unicodeCodePoints",
            **_verdict(report),
            "results": ordered,
        }],
    }


def render(report: Report, out: TextIO) -> None:
    """Write the SARIF log (indented, newline-terminated, byte-stable)."""
    json.dump(to_dict(report), out, indent=2, ensure_ascii=False)
    out.write("\n")
