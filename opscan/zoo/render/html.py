"""Zoo HTML: one self-contained page (inline CSS and a small sorting script, no external assets)."""

from __future__ import annotations

from html import escape
from typing import TextIO

from opscan.zoo.render.common import (
    SHORT,
    blocking_ops,
    cost_basis,
    explain,
    fallback,
    fallback_ops,
    headline,
    megabytes,
    matrix_ops,
    new_compiles,
    verdict_counts,
    verdict_label,
)
from opscan.zoo.execution import ZooRun

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}\
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3;cursor:pointer;position:sticky;top:0}th.num,td.num{text-align:right}
.v-ready{background:#d9f2d9}.v-likely{background:#fde9b8}.v-fallback{background:#fff2cc}.v-unknown{background:#eee}
.v-blocked{background:#f8d0d0}.v-incomplete{background:#e6e0f8}.v-failed{background:#f4b6b6}
.s-N,.s-L,.s-C{background:#d9f2d9}.s-F{background:#fff2cc}.s-X{background:#f8d0d0}.s-\\?{background:#e4e4e4}
.badge{display:inline-block;padding:0 6px;margin-right:4px;border-radius:3px}
.matrix td{font:12px monospace;text-align:center}.matrix th.op{writing-mode:vertical-rl;font:12px monospace}
.err{color:#900;font-size:12px}code{font-size:12px}
"""

_JS = """
document.querySelectorAll('table.sortable').forEach(function(t){
 t.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){
  var b=t.tBodies[0],rows=Array.from(b.rows),asc=th.dataset.asc!=='1';th.dataset.asc=asc?'1':'0';
  rows.sort(function(x,y){\
var a=x.cells[i].dataset.v||x.cells[i].textContent,c=y.cells[i].dataset.v||y.cells[i].textContent;
   var na=parseFloat(a),nc=parseFloat(c);var r=(!isNaN(na)&&!isNaN(nc))?na-nc:a.localeCompare(c);return asc?r:-r;});
  rows.forEach(function(r){b.appendChild(r);});});});});
"""


def _td(value, cls: str = "", sort: str | None = None) -> str:
    attrs = f' class="{cls}"' if cls else ""
    if sort is not None:
        attrs += f' data-v="{escape(sort)}"'
    return f"<td{attrs}>{escape(str(value))}</td>"


def _th(label: str, num: bool = False, cls: str = "") -> str:
    classes = " ".join(c for c in ("num" if num else "", cls) if c)
    return f'<th class="{classes}">{escape(label)}</th>' if classes else f"<th>{escape(label)}</th>"


def render(run: ZooRun, out: TextIO) -> None:
    meta, tools = run.meta, run.meta.get("tools", {})
    w = out.write
    w("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      f"<title>opscan zoo: {escape(str(meta.get('backend', '')))}</title><style>{_CSS}</style></head><body>\n")
    w(f"<h1>opscan zoo</h1>\n<p>{escape(headline(run))}.<br>torch {escape(tools.get('torch', '?'))}, "
      f"transformers {escape(tools.get('transformers', '?'))}, opscan {escape(tools.get('opscan', '?'))}; "
      f"options {escape(str(meta.get('options', {})))}. Click a column header to sort.</p>\n<p>")
    for verdict, count in verdict_counts(run).items():
        w(f'<span class="badge v-{verdict}">{escape(verdict)}: {count}</span>')
    w("</p>\n<h2>Ops that block the most models</h2>\n")
    ops = blocking_ops(run)
    if ops:
        w('<table class="sortable"><thead><tr>' + _th("op") + _th("status") + _th("models", True)
          + _th("every training step", True) + _th("models that need it") + "</tr></thead><tbody>\n")
        for stat in ops:
            w(f"<tr>{_td(stat.op)}{_td(stat.status, 's-' + SHORT.get(stat.status, '?'))}"
              f"{_td(len(stat.models), 'num')}{_td(stat.step_models, 'num')}{_td(', '.join(stat.models))}</tr>\n")
        w("</tbody></table>\n")
    else:
        w("<p>None: every op met runs, on the device or on the CPU.</p>\n")
    w("<h2>Ops that may fall back to the CPU</h2>\n")
    w(f"<p>Most costly first: MB per training step copied between host and device in the model where the op "
      f"costs most, {escape(cost_basis(run))}.</p>\n")
    slow = fallback_ops(run)
    if slow:
        w('<table class="sortable"><thead><tr>' + _th("op") + _th("status") + _th("MB per step", True)
          + _th("models", True) + _th("every training step", True) + _th("models that need it")
          + "</tr></thead><tbody>\n")
        for stat in slow:
            w(f"<tr>{_td(stat.op)}{_td(stat.status, 's-' + SHORT.get(stat.status, '?'))}"
              f"{_td(megabytes(stat.bytes_per_step), 'num')}{_td(len(stat.models), 'num')}"
              f"{_td(stat.step_models, 'num')}{_td(', '.join(stat.models))}</tr>\n")
        w("</tbody></table>\n")
    else:
        w("<p>None.</p>\n")
    w("<h2>Models</h2>\n<table class=\"sortable\"><thead><tr>" + "".join(
        _th(h, n) for h, n in (("model", False), ("verdict", False), ("status", False), ("ops", True),
                               ("native", True), ("fallback", True), ("unsupported", True), ("unknown", True),
                               ("new compiles per step", True), ("custom ops", False), ("stand-ins", False),
                               ("seconds", True), ("why", False)))
      + "</tr></thead><tbody>\n")
    for row in run.rows:
        name = row.name + (f" ({row.note})" if row.note else "")
        w(f"<tr>{_td(name, sort=row.name)}{_td(verdict_label(row.verdict), 'v-' + row.verdict)}{_td(row.status)}"
          f"{_td(row.ops, 'num')}{_td(row.native, 'num')}{_td(fallback(row), 'num')}"
          f"{_td(row.counts.get('unsupported', 0), 'num')}{_td(row.counts.get('unknown', 0), 'num')}"
          f"{_td(new_compiles(row), 'num')}"
          f"{_td(', '.join(row.custom_ops))}{_td('; '.join(row.stand_ins))}{_td(f'{row.seconds:.1f}', 'num')}"
          f"{_td(explain(row), 'err' if row.error else '')}</tr>\n")
    w("</tbody></table>\n")
    columns = matrix_ops(run)
    if columns:
        status = {s.op: s.status for s in run.ops}
        w("<h2>Op x model matrix</h2>\n<p>Cell: the phases that dispatch the op (F forward, L loss, "
          "B backward, O optimizer, I inference only), coloured by its status; ops that block the most "
          "models come first.</p>\n<table class=\"sortable matrix\"><thead><tr>" + _th("model")
          + "".join(_th(op, cls="op") for op in columns) + "</tr></thead><tbody>\n")
        for row in run.rows:
            if not row.op_cells:
                continue
            cells = []
            for op in columns:
                phases = row.op_cells.get(op)
                cls = "s-" + SHORT.get(status[op], "?") if phases else ""
                cells.append(_td(phases or "", cls))
            w(f"<tr>{_td(row.name)}{''.join(cells)}</tr>\n")
        w("</tbody></table>\n")
    w(f"<script>{_JS}</script>\n</body></html>\n")
