"""Markdown: the port plan as a document to attach to a review (verdict, tasks, graph, details)."""

from __future__ import annotations

from collections import Counter
from typing import TextIO

from opscan.records import Report, status_of
from opscan.reporters.words import plural
from opscan.reporters.tasklist import PRIORITY, size, sites_by_file, task_effort, total
from opscan.reporters.texts import blockers_words

MAX_SITE_FILES = 50   # beyond this many files a task lists the count only
# GitHub alert per verdict kind: only "ready" is shown without a caution.
ALERT = {"blocked": "CAUTION", "unknown": "WARNING", "fallback": "WARNING", "unchecked": "WARNING",
         "likely": "WARNING"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _mermaid_label(text: str) -> str:
    return text.replace('"', "#quot;").replace("`", "")


def _mermaid(report: Report) -> list[str]:
    ids = {task.id: f"t{i}" for i, task in enumerate(report.tasks, 1)}
    lines = ["```mermaid", "graph TD"]
    for task in report.tasks:
        size = task_effort(task, report.hours_per_day)
        label = f"{task.title}<br/>{PRIORITY.get(task.priority, '?')} · {size}"
        lines.append(f'  {ids[task.id]}["{_mermaid_label(label)}"]')
    for task in report.tasks:
        for dep in task.depends_on:
            if dep in ids:   # the reason of each edge is listed under the task's "After"
                lines.append(f"  {ids[dep]} --> {ids[task.id]}")
    for priority, colour in ((1, "#f4cccc"), (2, "#fff2cc"), (3, "#d9ead3")):
        members = [ids[t.id] for t in report.tasks if t.priority == priority]
        if members:
            lines.append(f"  classDef p{priority} fill:{colour}")
            lines.append(f"  class {','.join(members)} p{priority}")
    lines.append("```")
    return lines


def _task_section(index: int, report: Report) -> list[str]:
    task = report.tasks[index]
    lines = [f"### {index + 1}. {task.title}", "",
             f"- **Priority:** {PRIORITY.get(task.priority, '?')} ({task.priority})",
             f"- **Effort:** {task_effort(task, report.hours_per_day)} — {task.effort_basis}",
             f"- **What:** {task.action}",
             f"- **Why:** {task.why}" + "".join(f" ([source]({url}))" for url in task.sources)]
    if task.depends_on:
        lines.append("- **After:**")
        for dep in task.depends_on:
            reason = task.reason_for(dep)
            lines.append(f"  - `{dep}`" + (f": {reason}" if reason else ""))
    if task.ops:
        lines.append("- **Ops:** " + ", ".join(f"`{op}`" for op in task.ops))
    files = sites_by_file(task)
    if files:
        lines.append(f"- **Where:** {plural(len(task.sites), 'site')} in {plural(len(files), 'file')}")
        for path, numbers in files[:MAX_SITE_FILES]:
            lines.append(f"  - `{path}`: line{'s' * (len(numbers) > 1)} {', '.join(map(str, numbers))}")
        if len(files) > MAX_SITE_FILES:
            lines.append(f"  - … and {len(files) - MAX_SITE_FILES} more files (see the JSON report)")
    lines.append("")
    return lines


def render(report: Report, out: TextIO) -> None:
    """Write the markdown document."""
    judged = report.verdict
    lines = ["# opscan port report", ""]
    if judged is not None:
        alert = ALERT.get(judged.kind)
        verdict_line = f"**Verdict ({judged.kind}): {judged.headline}**"
        lines += ([f"> [!{alert}]", f"> {verdict_line}"] if alert else [verdict_line]) + [""]
        if judged.step is not None:   # NOTE [the step answered for]
            lines += [f"Step: {judged.step.text}.", ""]
        if judged.blockers.count:   # NOTE [blockers] in opscan/assess/verdict.py: the gate's count
            n = judged.blockers.count
            lines += [(f"Blockers: **{n}** ({blockers_words(judged.blockers)}): each fails the default gate "
                       "(`--fail-on error`)."), ""]
        lines += [f"- {detail}" for detail in judged.details]
        if judged.details:
            lines.append("")
    status = Counter(c.status for c in report.coverage)
    ops = {u.op for t in report.traces for u in t.ops}
    lines += [
        f"Backend: `{report.backend or 'unknown'}` · opscan {report.tool_version} · "
        f"{plural(report.files_scanned, 'file')} scanned · "
        f"{plural(len(report.findings), 'new finding' if report.baseline is not None else 'finding')} · "
        f"{plural(report.sites, 'site')} in {plural(len(report.tasks), 'task')} · "
        f"{plural(len(ops), 'op')} traced"
        + (" (" + ", ".join(f"{n} {s}" for s, n in sorted(status.items())) + ")" if status else ""),
        "",
    ]
    if report.baseline is not None:
        lines += [f"Baseline `{report.baseline.path}`: {report.baseline.known} known (hidden), "
                  f"{len(report.findings)} new, "
                  f"{len(report.baseline.stale)} stale entr{'y' if len(report.baseline.stale) == 1 else 'ies'}.", ""]
    lines += ["## Port tasks", ""]
    if not report.tasks:
        lines += ["No port work found.", ""]
    else:
        totals = report.effort
        lines += [f"Total: **{total(report)}** ({totals.likely_hours:g} h likely, {totals.low_hours:g}-"
                  f"{totals.high_hours:g} h, at {report.hours_per_day:g} h per day).", ""]
        if totals.unsized:
            lines += ["Not sized (no catalog entry): " + ", ".join(f"`{t}`" for t in totals.unsized) + ".", ""]
        lines += ["| # | task | priority | effort (likely, range) | sites |", "|---|---|---|---|---|"]
        for i, task in enumerate(report.tasks, 1):
            lines.append(f"| {i} | {_cell(task.title)} | {PRIORITY.get(task.priority, '?')} | "
                         f"{task_effort(task, report.hours_per_day)} | {len(task.sites)} |")
        lines += ["", "Order of work (an arrow means \"before\"):", ""] + _mermaid(report) + [""]
        for i in range(len(report.tasks)):
            lines += _task_section(i, report)
    if report.findings:
        lines += ["## Findings", "", "| location | rule | severity | message |", "|---|---|---|---|"]
        for f in sorted(report.findings, key=lambda f: f.sort_key()):
            loc = f.location
            where = f"{loc.path}:{loc.line}" if loc.cell is None else f"{loc.path}:cell {loc.cell}:{loc.line}"
            guard = " (guarded)" if f.guarded else ""
            guard += " (fixable)" if f.fixable else ""
            lines.append(f"| `{where}` | {f.rule} {f.name} | {f.severity}{guard} | {_cell(f.message)} |")
        lines.append("")
        fixable = report.fixable   # docs/fix.md
        if fixable:
            lines += [f"{fixable} fixable with `opscan fix`.", ""]
    gaps = [c for c in sorted(report.coverage, key=lambda c: c.op)
            if c.op in ops and status_of(c.status).needs_attention]
    if gaps:
        costs = {f.op: f for f in report.fallbacks}   # ops that may run on the CPU (model.Fallback)
        lines += ["## Ops that need attention", "", "| op | status | CPU fallback per step | evidence |",
                  "|---|---|---|---|"]
        for c in gaps:
            evidence = "; ".join(e.text + (f" ([link]({e.url}))" if e.url else "") for e in c.evidence) or "none"
            cost = costs.get(c.op)
            per_step = (f"{size(cost.bytes_per_step)}, {plural(cost.syncs_per_step, 'sync')}"
                        if cost is not None and cost.calls_per_step else "")
            if per_step and cost.scaled_by:   # NOTE [fallback scaling] in opscan/assess/assessment.py
                per_step += (f" (scaled back: {cost.scaled_by}; as traced {size(cost.traced_bytes)}, "
                             f"{plural(cost.traced_syncs, 'sync')})")
            lines.append(f"| `{c.op}` | {c.status} | {per_step} | {_cell(evidence)} |")
        lines.append("")
    if report.release_notes:   # release facts about traced ops that are no known failure (never the verdict)
        lines += ["## Release notes on traced ops", "", "| op | traced as | note | evidence |", "|---|---|---|---|"]
        for note in report.release_notes:
            traced = ("parts " if note.via == "part" else "") + ", ".join(f"`{op}`" for op in note.ops)
            evidence = "; ".join(e.text for e in note.evidence) or "none"
            lines.append(f"| `{note.packet}` | {traced} | {_cell(note.text)} | {_cell(evidence)} |")
        lines.append("")
    if report.notes:
        lines += ["## Notes", ""] + [f"- {note}" for note in report.notes] + [""]
    out.write("\n".join(lines).rstrip("\n") + "\n")
