"""Reading AWS's per-release torch-neuronx compatibility table into a release file of documented evidence.

NOTE [compatibility table format]
The table itself (torch-neuronx `docs/torch_api_compatibility.md`, regenerated per release) could
not be retrieved; the reader follows what the supported-operators page (2026-11-06) says of it:
the public PyTorch API, namespace by namespace (`torch`, `torch.Tensor`, `torch.nn`,
`torch.distributed`, ...), each entry marked
  - `Y`: supported; the limitations column says how: `Native` (runs on the device), `Host-only`
    (Python on the host, no tensor compute) or `Needs a process group`;
  - `CPU_FALLBACK`: works, but the named ATen operator runs on the CPU and the result is copied
    back; the limitations column names the operator and, where coverage differs by dtype, the dtypes;
  - `N`: not supported (quantized operator variants, non-Neuron backends under torch.backends, ...).
Read as Markdown: a heading (`#`..`######`) names the namespace of the rows below it; each pipe
table has a header row whose cells name an API column ("API", "Name", "Function", "Operator"), a
value column ("Status", "Support", "Value", "Supported") and optionally a limitations column
("Limitations", "Notes"); a `|---|` row separates header and body. A row is unreadable -- skipped
and reported as `file:line: cause`, never guessed -- when its cell count differs from its header,
its value is not one of the three, a `Y` does not say which of the three kinds, a `CPU_FALLBACK`
names no `aten::` operator (or an operator name that does not parse), or no namespace heading is
above it.

What becomes evidence: a `CPU_FALLBACK` row is an op entry -- `cpu-fallback`, or `limited` when it
names dtypes (the op has a kernel for the others) -- citing the table (`documented`). `Y`/`N` rows
name public APIs, not aten ops, so they become op entries only when the API cell is itself an aten
op (`aten::add.Tensor`: `Y` Native -> native, `N` -> unsupported); otherwise they are counted per
namespace in the release's notes, and the `N` APIs are listed there by name.

NOTE [merging a compatibility table]
The table names a few hundred APIs, not the whole op set, so a release built from it alone would
leave every other op `unknown` (no `no_kernel` rule) and pair with no torch. `import-compat` instead
extends a release (`--extends`, default the newest shipped TorchNeuron one): the new file is that
release's document with
  - the table's entries replacing the extended release's entries for the ops they name (documented,
    high confidence), every other entry kept with its own evidence and confidence;
  - a dtype-specific CPU_FALLBACK kept as a `dtype_fallbacks` row (the entry is `limited`): a trace
    calling the op with one of those dtypes makes it `cpu-fallback` for that model
    (opscan/db/annotate.py `with_dtype_fallbacks`), so the verdict and the fallback cost count it;
  - the extended release's `no_kernel` rule, `unlisted` default, known failures, release notes,
    SDPA profile and dtype narrowing kept (the table does not speak of them);
  - `packages` replaced by the pairing the user states (`--torch`, `--neuron-sdk`): the extended
    release's packages pair with the extended release, not with this one.
Every op name a row gives is resolved against the operators of the torch the release pairs with
(`--torch`; NOTE [op names resolve] in opscan/db/operators.py): a packet name with no default
overload (`aten::div`) stands for every overload of the packet, and a name that resolves to nothing
(`aten::sortt.values`) is refused (`--allow-unknown` keeps it as a note). Two rows that say different
things of one operator (directly, or through a packet) are refused too, naming both lines: the
table's order decides nothing. The import is all-or-nothing: one unreadable or refused row and
nothing is written; an existing output file is replaced only with `--replace`; the file is written
with the mode a new file gets here (the umask's), never a temporary file's 0600.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, replace
from pathlib import Path

from opscan.db.loader import DTYPES
from opscan.errors import DatabaseError
from opscan.records import OpName

TABLE_URL = "https://github.com/aws-neuron/torch-neuronx/blob/main/docs/torch_api_compatibility.md"
PAGE_URL = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/api/supported-operators.html"
PAGE_DATE = "2026-11-06"
VALUES = ("Y", "CPU_FALLBACK", "N")
HOW = {"native": "Native", "host-only": "Host-only", "needs a process group": "Needs a process group"}
_COLUMNS = {"api": ("api", "name", "function", "operator", "entry"),
            "value": ("status", "support", "value", "supported"),
            "limits": ("limitation", "note", "detail")}
_HEADING = re.compile(r"^#{1,6}\s+(?P<text>.+?)\s*#*\s*$")
_SEPARATOR = re.compile(r"^\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_ATEN = re.compile(r"aten::[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)?")
_NAMESPACE = re.compile(r"^torch(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@dataclass(frozen=True)
class Row:
    """One readable row of the table."""

    line: int
    namespace: str
    api: str
    value: str                   # Y | CPU_FALLBACK | N
    how: str = ""                # Y: Native | Host-only | Needs a process group
    op: str = ""                 # CPU_FALLBACK (or an aten API cell): the canonical aten op name
    dtypes: tuple[str, ...] = ()
    limits: str = ""
    packet: str = ""             # the packet name the row gave, when `op` is one of its overloads


@dataclass(frozen=True)
class Skipped:
    """A row the reader could not read, and why."""

    line: int
    cause: str


def _cells(line: str) -> list[str]:
    text = line.strip()
    if text.startswith("|"):
        text = text[1:]
    if text.endswith("|") and not text.endswith("\\|"):
        text = text[:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", text)]


def _plain(cell: str) -> str:
    return re.sub(r"[`*]", "", cell).strip()


def _header(cells: list[str]) -> dict[str, int] | None:
    found: dict[str, int] = {}
    for i, cell in enumerate(cells):
        low = _plain(cell).lower()
        for role, words in _COLUMNS.items():
            if role not in found and any(w in low for w in words):
                found[role] = i
                break
    return found if "api" in found and "value" in found else None


def _namespace(heading: str) -> str:
    text = _plain(heading)
    first = text.split()[0] if text.split() else ""
    return first if _NAMESPACE.match(first) else ""


def _row(line_no: int, namespace: str, cells: list[str], columns: dict[str, int]) -> Row | Skipped:
    api = _plain(cells[columns["api"]])
    value = _plain(cells[columns["value"]])
    limits = _plain(cells[columns["limits"]]) if "limits" in columns else ""
    if not namespace:
        return Skipped(line_no, f"{api or 'row'}: no namespace heading above this row")
    if value not in VALUES:
        return Skipped(line_no, f"{api}: value {value!r} is not one of {', '.join(VALUES)}")
    aten = _ATEN.fullmatch(api)
    if api.startswith("aten::") and not (aten and _canonical(api)):
        return Skipped(line_no, f"{api}: not an aten op name")
    if value == "Y":
        how = next((name for key, name in HOW.items() if key in limits.lower()), "")
        if not how:
            return Skipped(line_no, f"{api}: Y without Native, Host-only or Needs a process group")
        return Row(line_no, namespace, api, value, how=how, op=_canonical(api) if aten else "", limits=limits)
    if value == "N":
        return Row(line_no, namespace, api, value, op=_canonical(api) if aten else "", limits=limits)
    named = _ATEN.findall(limits) or ([api] if aten else [])
    if len(set(named)) != 1:
        return Skipped(line_no, f"{api}: CPU_FALLBACK " + ("names no aten:: operator" if not named else
                                                          f"names {len(set(named))} operators"))
    op = _canonical(named[0])
    if not op:
        return Skipped(line_no, f"{api}: CPU_FALLBACK operator {named[0]!r} is not an aten op name")
    words = re.findall(r"[a-z0-9]+", limits.lower().replace("torch.", ""))
    dtypes = tuple(sorted({w for w in words if w in DTYPES}, key=DTYPES.index))
    return Row(line_no, namespace, api, value, op=op, dtypes=dtypes, limits=limits)


def _canonical(text: str) -> str:
    try:
        return str(OpName.parse(text))
    except ValueError:
        return ""


def read_table(path: Path) -> tuple[list[Row], list[Skipped]]:
    """Every row of a compatibility table file: the ones read and the ones skipped (with causes)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DatabaseError(f"cannot read compatibility table: {exc}", str(path)) from None
    rows: list[Row] = []
    skipped: list[Skipped] = []
    namespace, columns, width, expect_separator = "", None, 0, False
    for number, line in enumerate(lines, 1):
        heading = _HEADING.match(line)
        if heading:
            namespace, columns = _namespace(heading["text"]), None
            continue
        if not line.strip().startswith("|"):
            columns, expect_separator = None, False
            continue
        cells = _cells(line)
        if columns is None:
            columns, width, expect_separator = _header(cells), len(cells), True
            if columns is None:
                skipped.append(Skipped(number, "table header names no API and value (status) column"))
                columns, width = {}, len(cells)
            continue
        if expect_separator and _SEPARATOR.match(line.strip()):
            expect_separator = False
            continue
        expect_separator = False
        if not columns:
            skipped.append(Skipped(number, "row of a table whose header could not be read"))
        elif len(cells) != width:
            skipped.append(Skipped(number, f"{_plain(cells[0]) or 'row'}: {len(cells)} cells, the header has {width}"))
        else:
            hit = _row(number, namespace, cells, columns)
            (skipped if isinstance(hit, Skipped) else rows).append(hit)
    return rows, skipped


def resolve(rows: list[Row], known) -> tuple[list[Row], list[Row]]:
    """(the rows with each op name resolved to the real operators it stands for, the rows naming
    none): a packet name with no default overload (`aten::div`) becomes one row per overload of the
    paired torch, a real name stays as it is (NOTE [op names resolve] in opscan/db/operators.py).
    `known` is the paired torch's `operators.Operators`. Rows without an op (public API rows) are kept."""
    out: list[Row] = []
    unknown: list[Row] = []
    for row in rows:
        if not row.op:
            out.append(row)
            continue
        found = known.resolve(row.op)
        if not found:
            unknown.append(row)
        out.extend(row if op == row.op else replace(row, op=op, packet=row.op) for op in found)
    return out, unknown


def _claim(row: Row) -> tuple:
    """What a row says of its op: its value, how, and the dtypes that fall back ("all" for every one)."""
    falls_back = (row.dtypes or ("all",)) if row.value == "CPU_FALLBACK" else ()
    return row.value, row.how, falls_back


def _said(row: Row) -> str:
    if row.value == "CPU_FALLBACK":
        return "CPU_FALLBACK" + (f" for {', '.join(row.dtypes)}" if row.dtypes else " (every dtype)")
    return f"{row.value} {row.how}".strip()


def conflicts(rows: list[Row]) -> list[tuple[int, str]]:
    """(line, cause) of each row that says something else of an op than an earlier row does (two
    rows on one op must agree: the table's order decides nothing), naming both lines and both claims."""
    first: dict[str, Row] = {}
    out = []
    for row in sorted((r for r in rows if r.op), key=lambda r: r.line):
        seen = first.setdefault(row.op, row)
        if seen is not row and _claim(seen) != _claim(row):
            via = f" (through {row.packet})" if row.packet else ""
            name = row.op if row.api == row.op else f"{row.api}: {row.op}"
            out.append((row.line, f"{name}{via}: {_said(row)} here, but line {seen.line} ({seen.api}) "
                                  f"says {_said(seen)}; two rows on one operator must agree"))
    return out


def release_doc(rows: list[Row], base: dict, release: str, date: str, *, torch: tuple[str, ...],
                neuron_sdk: str = "", url: str = TABLE_URL, unknown: tuple[Row, ...] = ()) -> dict:
    """The release document of `base` (the release the table extends, as its YAML mapping) with the
    table's rows merged in (NOTE [merging a compatibility table]).

    Args:
        rows: the table's readable rows naming known ops (and the public API rows, for the notes).
        base: the extended release's document; it is not changed.
        torch: the torch minors this release pairs with (`--torch`), written as its `packages`.
        neuron_sdk: the Neuron SDK release of the pairing (default: `release`).
        unknown: rows naming no known op, kept (`--allow-unknown`) as a note only.
    """
    doc = copy.deepcopy(base)
    source_id = f"compat-{release}"
    entries: dict[str, dict] = {}
    for row in rows:
        if not row.op or row in unknown:
            continue
        entry = entries.setdefault(row.op, {"op": row.op, "apis": [], "dtypes": set(), "all": False, "value": row.value,
                                            "how": row.how})
        entry["apis"].append(row.api if not row.packet else f"{row.api} ({row.packet})")
        if row.value == "CPU_FALLBACK":
            entry["all"] = entry["all"] or not row.dtypes
            entry["dtypes"].update(row.dtypes)
        if _rank(row.value) > _rank(entry["value"]):
            entry["value"] = row.value
    plain = [f for f in doc.get("known_failures") or [] if f.get("dtype") and not f.get("case")]

    def fails(op: str) -> bool:   # as the loader's _check_failures: the row's ops, or its whole packet
        return any(op in (f.get("ops") or ()) or (not f.get("ops") and not f.get("parts")
                                                  and f["packet"] == op.split(".")[0]) for f in plain)

    ops = {item["op"]: item for item in doc.get("ops") or []}
    fallbacks = {item["op"]: item for item in doc.get("dtype_fallbacks") or []}
    for op, e in sorted(entries.items()):
        apis = ", ".join(sorted(set(e["apis"])))
        dtypes = sorted(e["dtypes"], key=DTYPES.index)
        fallbacks.pop(op, None)
        if e["value"] == "CPU_FALLBACK" and not e["all"] and dtypes:
            status, note = "limited", f"falls back to CPU for {', '.join(dtypes)} (compatibility table: {apis})"
            fallbacks[op] = {"op": op, "dtypes": dtypes, "evidence": [source_id],
                             "note": f"compatibility table {release}: CPU_FALLBACK for {', '.join(dtypes)}"}
        elif e["value"] == "CPU_FALLBACK":
            status, note = "cpu-fallback", f"runs on the CPU, result copied back (compatibility table: {apis})"
        elif e["value"] == "N":
            status, note = "unsupported", f"not supported (compatibility table: {apis})"
        else:
            if e["how"] != "Native":
                continue            # Host-only / process group: says nothing about a device kernel
            status, note = "native", f"runs on the Neuron device (compatibility table: {apis})"
            if fails(op):   # the loader keeps an op with failing tests from plain native
                status, note = "limited", note + "; upstream tests fail for some dtypes (opscan db show " + op + ")"
        ops[op] = {"op": op, "status": status, "evidence": [source_id], "confidence": "high", "note": note}
    spec = f"{base['backend']}=={base['release']}"
    doc.update({
        "release": release,
        "title": f"{_title(base['backend'])} {release}: the torch-neuronx compatibility table over {spec}",
        "packages": [{"name": "neuron-sdk", "version": neuron_sdk or release, "torch": t} for t in torch],
        "ops": [ops[op] for op in sorted(ops)],
    })
    doc.pop("environment", None)
    if _is_date(date):
        doc["released"] = date
    else:
        doc.pop("released", None)
    if fallbacks:
        doc["dtype_fallbacks"] = [fallbacks[op] for op in sorted(fallbacks)]
    else:
        doc.pop("dtype_fallbacks", None)
    sources = [s for s in doc["sources"] if s["id"] not in (source_id, "compat-page")]
    sources.append({"id": source_id, "kind": "documented",
                    "text": f"the torch-neuronx compatibility table for {release}", "url": url, "date": date})
    sources.append({"id": "compat-page", "kind": "documented",
                    "text": "what the compatibility table's values mean (supported-operators page)",
                    "url": PAGE_URL, "date": PAGE_DATE})
    doc["sources"] = sources
    doc["notes"] = [n for n in doc.get("notes") or [] if not n.startswith(_NOTE_PREFIXES)] + [
        f"release {release} extends {spec}: the compatibility table's rows replace its entries for the ops "
        f"they name; every other entry, the known failures and the no-kernel rule are {spec}'s"] + _notes(rows, unknown)
    return doc


def _title(backend: str) -> str:
    return {"torchneuron": "TorchNeuron"}.get(backend, backend)


def _is_date(text: str) -> bool:
    import datetime

    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _rank(value: str) -> int:
    return {"Y": 0, "CPU_FALLBACK": 1, "N": 2}[value]


_NOTE_PREFIXES = ("compatibility table, ", "not supported (N) in the compatibility table", "release ",
                  "the compatibility table names ")


def _notes(rows: list[Row], unknown: tuple[Row, ...] = ()) -> list[str]:
    notes = []
    spaces: dict[str, dict[str, int]] = {}
    for row in rows:
        key = f"Y {row.how}" if row.value == "Y" else row.value
        counts = spaces.setdefault(row.namespace, {})
        counts[key] = counts.get(key, 0) + 1
    for space in sorted(spaces):
        counts = spaces[space]
        notes.append(f"compatibility table, {space}: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    unsupported = sorted({row.api for row in rows if row.value == "N" and not row.op})
    if unsupported:
        notes.append("not supported (N) in the compatibility table: " + ", ".join(unsupported))
    if unknown:
        notes.append("the compatibility table names ops that neither torch nor the extended release knows (kept "
                     "as this note, not as entries): "
                     + ", ".join(f"{r.op} {r.value} (line {r.line})" for r in unknown))
    return notes
