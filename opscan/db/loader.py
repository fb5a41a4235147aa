"""Strict loading of one release file: safe YAML, no duplicate keys, closed vocabularies, file:line errors."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

from opscan.db.entries import DTYPE_EFFECTS
from opscan.db.release import (
    CONFIDENCES,
    NO_KERNEL_MODES,
    DtypeFallback,
    Entry,
    KnownFailure,
    Narrowing,
    ReleaseNote,
    NoKernel,
    Package,
    Release,
)
from opscan.errors import DatabaseError
from opscan.records import EVIDENCE_KINDS, STATUSES, Evidence, OpName, Status, EvidenceKind
from opscan.strict_yaml import YamlProblem, check_keys as _keys, line_of as _line, load_checked

SCHEMA_VERSION = 1
SDPA_POLICIES = ("math", "overrideable", "overrideable-4d")
# torch dtype names a release file may name (known failures, narrowing), without "torch."
DTYPES = ("bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float16",
          "bfloat16", "float32", "float64", "complex32", "complex64", "complex128")
DISPATCH_KEYS = ("PrivateUse1", "XLA")
NARROWED = ("float64", "int64")    # dtypes a dtype_narrowing entry can name (CAVEAT_KINDS has one kind each)

_TOP = {
    "schema_version": True, "backend": True, "release": True, "title": True, "released": False,
    "device": True, "dispatch_key": True, "packages": False, "op_names": True, "kernel_list": True,
    "statuses": True, "evidence_kinds": True, "sources": True, "unlisted": True, "profile": False,
    "notes": False, "ops": True, "known_failures": False, "dtype_narrowing": False, "environment": False,
    "no_kernel": False, "release_notes": False, "dtype_fallbacks": False,
}
_NO_KERNEL = {"eager": True, "compile": True, "evidence": True, "note": False, "compile_note": False,
              "not_supported": False}
_NOT_SUPPORTED = {"ops": True, "evidence": True, "note": False}
# vocabulary values a file written before they existed may leave out
_OPTIONAL_VOCABULARY = ("device-or-cpu",)
_SOURCE = {"id": True, "kind": True, "text": True, "url": False, "date": False, "repo": False,
           "commit": False, "install": False, "compared": False}
_SOURCE_NEEDS = {"documented": ("url", "date"), "probed": ("install", "date"),
                 "source-snapshot": ("repo", "commit"), "inferred": ()}
_ENTRY = {"op": True, "status": True, "evidence": True, "confidence": True, "note": False,
          "parts": False, "since": False}
_FAILURE = {"packet": True, "dtype": False, "case": False, "ops": False, "parts": False, "reasons": False,
            "tests": True, "more_tests": False, "evidence": True}
_DTYPE_FALLBACK = {"op": True, "dtypes": True, "evidence": True, "note": False}
_NARROWING = {"dtype": True, "computed_as": False, "evidence": True, "note": False, "effect": False}
_UNLISTED = {"status": True, "evidence": True, "confidence": True, "note": False}
_PACKAGE = {"name": True, "version": True, "torch": True}
_PROFILE = {"sdpa_policy": True, "evidence": False, "note": False}
_BACKEND_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")


# One strict YAML implementation for db and rule files (opscan/strict_yaml.py).
_Problem = YamlProblem


def load_file(path: Path, check_registry: bool = True) -> Release:
    """Load and check one release file. Raises DatabaseError naming the file and line."""
    path = Path(path)
    release = load_checked(path, lambda data: _build(path, data), DatabaseError, "cannot read release file")
    if check_registry:
        from opscan.db.registry import registry_warnings

        release = _with_warnings(release, registry_warnings(release))
    return release


def load_text(text: str, path: Path) -> Release:
    """A release document's text, checked as `load_file` checks a file (errors name `path` and the
    line): a file about to be written is proven to load before it is (no temporary file)."""
    from opscan.strict_yaml import parse_yaml

    try:
        return _build(Path(path), parse_yaml(text))
    except _Problem as exc:
        raise DatabaseError(str(exc), str(path), exc.line) from None


def _with_warnings(release: Release, warnings: tuple[str, ...]) -> Release:
    from dataclasses import replace

    return replace(release, warnings=warnings) if warnings else release


def _text(mapping, key: str, what: str) -> str:
    value = mapping.get(key)
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise _Problem(f"{what}: {key!r} must be a non-empty string", _line(mapping, key))
    return value


def _choice(mapping, key: str, allowed, what: str) -> str:
    value = mapping.get(key)
    if value not in allowed:
        raise _Problem(f"{what}: {key} {value!r} is not one of: {', '.join(allowed)}", _line(mapping, key))
    return value


def _vocabulary(doc, key: str, closed: dict[str, str]) -> None:
    vocab = doc[key]
    if not isinstance(vocab, dict):
        raise _Problem(f"{key} must map each value to its description", _line(doc, key))
    for name in vocab:
        if name not in closed:
            raise _Problem(f"{key}: {name!r} is not in opscan's closed vocabulary ({', '.join(closed)})",
                           _line(vocab, name))
        if not isinstance(vocab[name], str) or not vocab[name].strip():
            raise _Problem(f"{key}: {name!r} needs a one-line description", _line(vocab, name))
    missing = [name for name in closed if name not in vocab and name not in _OPTIONAL_VOCABULARY]
    if missing:
        raise _Problem(f"{key}: missing a description for {', '.join(missing)}", _line(doc, key))


def _sources(doc) -> dict[str, Evidence]:
    items = doc["sources"]
    if not isinstance(items, list) or not items:
        raise _Problem("sources must be a non-empty list", _line(doc, "sources"))
    out: dict[str, Evidence] = {}
    for item in items:
        _keys(item, _SOURCE, "source", _line(items))
        sid = _text(item, "id", "source")
        if sid in out:
            raise _Problem(f"duplicate source id {sid!r}", _line(item, "id"))
        kind = _choice(item, "kind", EVIDENCE_KINDS, f"source {sid}")
        for needed in _SOURCE_NEEDS[kind]:
            if needed not in item:
                raise _Problem(f"source {sid}: {kind} evidence needs {needed!r}", _line(item))
        fields = {k: _text(item, k, f"source {sid}") for k in ("url", "date", "repo", "commit", "install")
                  if k in item}
        compared = item.get("compared", False)
        if not isinstance(compared, bool) or (compared and kind != EvidenceKind.PROBED):
            raise _Problem(f"source {sid}: compared must be true or false, and only probed evidence can be "
                           "compared (results checked against the CPU)", _line(item, "compared"))
        out[sid] = Evidence(kind=kind, text=_text(item, "text", f"source {sid}"), compared=compared, **fields)
    return out


def _evidence_ids(item, sources: dict[str, Evidence], what: str) -> tuple[str, ...]:
    ids = item.get("evidence")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise _Problem(f"{what}: evidence must be a non-empty list of source ids", _line(item, "evidence"))
    for sid in ids:
        if sid not in sources:
            raise _Problem(f"{what}: unknown source id {sid!r} (define it under sources)", _line(item, "evidence"))
    if len(set(ids)) != len(ids):
        raise _Problem(f"{what}: a source id is repeated in evidence", _line(item, "evidence"))
    return tuple(ids)


def _canonical(text, op_names: str, line: int | None) -> str:
    if not isinstance(text, str):
        raise _Problem(f"op must be a string, got {text!r}", line)
    try:
        name = OpName.parse(text)
    except ValueError as exc:
        raise _Problem(str(exc), line) from None
    if str(name) != text:
        raise _Problem(f"op {text!r} is not canonical: write {str(name)!r} (as OpOverload.name() prints it)", line)
    if op_names == "packet" and name.overload:
        raise _Problem(f"op {text!r} names an overload, but this file lists overload packets "
                       f"(op_names: packet): write {name.packet!r}", line)
    return text


def _real(name: str, known, line: int | None, packet: bool = False) -> str:
    """`name`, when it is an operator (or, `packet`, an overload packet) of the release's paired torch;
    else a load error at `line` (NOTE [op names resolve] in opscan/db/operators.py). `known` None: not checked."""
    if known is None or not known.complete:
        return name
    if known.exists(name) or (packet and known.is_packet(name)):
        return name
    raise _Problem(known.why_not(name, packet) + " (the release pairs with that torch: its `packages`)", line)


def _entry(item, sources, op_names: str, parent_line, known=None) -> Entry:
    _keys(item, _ENTRY, "op entry", parent_line)
    op = _real(_canonical(item["op"], op_names, _line(item, "op")), known, _line(item, "op"),
               packet=op_names == "packet")
    status = Status(_choice(item, "status", STATUSES, op))
    ids = _evidence_ids(item, sources, op)
    confidence = _choice(item, "confidence", CONFIDENCES, op)
    if status.has_kernel and all(sources[i].kind is EvidenceKind.INFERRED for i in ids):
        raise _Problem(f"{op}: {status} needs a documented, probed or source-snapshot source, "
                       "not only an inference", _line(item, "evidence"))
    if status is Status.LIMITED and not item.get("note"):
        raise _Problem(f"{op}: limited needs a note stating the conditions", _line(item))
    parts: tuple[str, ...] = ()
    if "parts" in item or status.decomposes:
        raw = item.get("parts")
        if not status.decomposes:
            raise _Problem(f"{op}: parts are only for status composite", _line(item, "parts"))
        if not isinstance(raw, list) or not raw:
            raise _Problem(f"{op}: composite needs parts (the ops it expands into)", _line(item))
        parts = tuple(_real(_canonical(p, "overload", _line(item, "parts")), known, _line(item, "parts"))
                      for p in raw)
    note = _text(item, "note", op) if "note" in item else ""
    since = _date(item, "since", op) if "since" in item else ""
    return Entry(op=op, status=status.value, sources=ids, confidence=confidence, note=note, parts=parts,
                 line=_line(item) or 0, since=since)


def _date(mapping, key: str, what: str) -> str:
    value = _text(mapping, key, what)
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        raise _Problem(f"{what}: {key} {value!r} is not a date (YYYY-MM-DD)", _line(mapping, key)) from None
    return value


def _strings(item, key: str, what: str, ops: bool = False, known=None) -> tuple[str, ...]:
    raw = item.get(key, [])
    if not isinstance(raw, list) or not all(isinstance(t, str) and t for t in raw):
        raise _Problem(f"{what}: {key} must be a list of non-empty strings", _line(item, key))
    if ops:
        return tuple(_real(_canonical(op, "overload", _line(item, key)), known, _line(item, key)) for op in raw)
    return tuple(raw)


def _count(item, key: str, what: str) -> int:
    value = item.get(key, 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _Problem(f"{what}: {key} must be a whole number >= 0", _line(item, key))
    return value


_RELEASE_NOTE = {"packet": True, "text": True, "ops": False, "parts": False, "evidence": True, "tests": False}


def _release_notes(doc, sources, known=None) -> tuple[ReleaseNote, ...]:
    """Release facts about one op packet each (release.ReleaseNote), sorted by packet, one per packet."""
    items = doc.get("release_notes") or []
    if not isinstance(items, list):
        raise _Problem("release_notes must be a list", _line(doc, "release_notes"))
    out: list[ReleaseNote] = []
    for item in items:
        _keys(item, _RELEASE_NOTE, "release note", _line(items))
        packet = _real(_canonical(item["packet"], "packet", _line(item, "packet")), known, _line(item, "packet"),
                       packet=True)
        what = f"release note {packet}"
        note = ReleaseNote(packet=packet, text=_text(item, "text", what),
                           sources=_evidence_ids(item, sources, what),
                           ops=_strings(item, "ops", what, ops=True, known=known),
                           parts=_strings(item, "parts", what, ops=True, known=known),
                           tests=_strings(item, "tests", what))
        if out and packet <= out[-1].packet:
            raise _Problem(f"release_notes must be sorted by packet, without repeats: {packet} comes after "
                           f"{out[-1].packet}", _line(item))
        out.append(note)
    return tuple(out)


def _known_failures(doc, sources, known=None) -> tuple[KnownFailure, ...]:
    """Rows of failing upstream tests: (packet, dtype or any, case), the ops a trace sees for them."""
    items = doc.get("known_failures") or []
    if not isinstance(items, list):
        raise _Problem("known_failures must be a list", _line(doc, "known_failures"))
    out: list[KnownFailure] = []
    for item in items:
        _keys(item, _FAILURE, "known failure", _line(items))
        packet = _real(_canonical(item["packet"], "packet", _line(item, "packet")), known, _line(item, "packet"),
                       packet=True)
        dtype = _choice(item, "dtype", DTYPES, f"known failure {packet}") if "dtype" in item else ""
        what = f"known failure {packet} {dtype or '(any dtype)'}"
        tests = _strings(item, "tests", what)
        if not tests:
            raise _Problem(f"{what}: tests must be a non-empty list of test names", _line(item, "tests"))
        failure = KnownFailure(packet=packet, dtype=dtype, tests=tests,
                               sources=_evidence_ids(item, sources, f"known failure {packet}"),
                               case=_text(item, "case", what) if "case" in item else "",
                               ops=_strings(item, "ops", what, ops=True, known=known),
                               parts=_strings(item, "parts", what, ops=True, known=known),
                               reasons=_strings(item, "reasons", what), more_tests=_count(item, "more_tests", what))
        key = (failure.packet, failure.dtype, failure.case)
        if out and key <= (out[-1].packet, out[-1].dtype, out[-1].case):
            raise _Problem(f"known_failures must be sorted by packet, dtype and case, without repeats: "
                           f"{packet} {dtype} {failure.case} comes after {out[-1].packet} {out[-1].dtype} "
                           f"{out[-1].case}", _line(item))
        out.append(failure)
    return tuple(out)


def _narrowing(doc, sources) -> tuple[Narrowing, ...]:
    items = doc.get("dtype_narrowing") or []
    if not isinstance(items, list):
        raise _Problem("dtype_narrowing must be a list", _line(doc, "dtype_narrowing"))
    out: list[Narrowing] = []
    for item in items:
        _keys(item, _NARROWING, "dtype narrowing", _line(items))
        effect = _choice(item, "effect", tuple(DTYPE_EFFECTS), "dtype narrowing") if "effect" in item else "narrowed"
        dtype = _choice(item, "dtype", NARROWED if effect == "narrowed" else DTYPES, "dtype narrowing")
        if any(n.dtype == dtype for n in out):
            raise _Problem(f"dtype_narrowing: {dtype} is listed twice", _line(item))
        if (effect == "narrowed") != ("computed_as" in item):
            raise _Problem(f"dtype_narrowing: {dtype}: computed_as is " + ("required when the dtype is narrowed"
                           if effect == "narrowed" else f"only for effect narrowed, not {effect}"), _line(item))
        out.append(Narrowing(dtype=dtype, computed_as=_choice(item, "computed_as", DTYPES, f"narrowing of {dtype}")
                             if effect == "narrowed" else "",
                             sources=_evidence_ids(item, sources, f"narrowing of {dtype}"),
                             note=_text(item, "note", dtype) if "note" in item else "", effect=effect))
    return tuple(out)


def _dtype_fallbacks(doc, sources, entries: dict[str, Entry], known=None) -> tuple[DtypeFallback, ...]:
    """Ops that run on the CPU for some dtypes only, sorted by op; each op's entry must be `limited`."""
    items = doc.get("dtype_fallbacks") or []
    if not isinstance(items, list):
        raise _Problem("dtype_fallbacks must be a list", _line(doc, "dtype_fallbacks"))
    out: list[DtypeFallback] = []
    for item in items:
        _keys(item, _DTYPE_FALLBACK, "dtype fallback", _line(items))
        op = _real(_canonical(item["op"], "overload", _line(item, "op")), known, _line(item, "op"))
        what = f"dtype fallback {op}"
        dtypes = _strings(item, "dtypes", what)
        if not dtypes or any(d not in DTYPES for d in dtypes):
            raise _Problem(f"{what}: dtypes must be a non-empty list of: {', '.join(DTYPES)}", _line(item, "dtypes"))
        entry = entries.get(op)
        if entry is None or entry.status != Status.LIMITED:
            raise _Problem(f"{what}: the op needs an entry of status limited (it has a kernel for the other "
                           "dtypes)", _line(item, "op"))
        if out and op <= out[-1].op:
            raise _Problem(f"dtype_fallbacks must be sorted by op, without repeats: {op} comes after {out[-1].op}",
                           _line(item))
        out.append(DtypeFallback(op=op, dtypes=dtypes, sources=_evidence_ids(item, sources, what),
                                 note=_text(item, "note", what) if "note" in item else ""))
    return tuple(out)


def _check_failures(entries: dict[str, Entry], failures: tuple[KnownFailure, ...]) -> None:
    """An entry whose tests fail for a dtype cannot claim plain `native`: it is `limited` (or worse).

    That holds for the plain rows -- one dtype, no special case -- for the overloads they list as
    `ops` (rows without `ops` name every overload of their packet). Special-case rows and `parts`
    (other ops' decompositions) carry caveats, not statuses (NOTE [failure cases] in caveats.py)."""
    plain = [f for f in failures if f.dtype and not f.case]
    for entry in entries.values():
        if entry.status != Status.NATIVE:
            continue
        packet = OpName.parse(entry.op).packet
        for failure in plain:
            if entry.op in failure.ops or (not failure.ops and not failure.parts and failure.packet == packet):
                raise _Problem(f"{entry.op}: known_failures record failing tests for {failure.packet}; "
                               "the entry must be limited (its note naming the dtypes), not native", entry.line)


def _build(path: Path, doc) -> Release:
    if not isinstance(doc, dict):
        raise _Problem("a release file must be a YAML mapping", 1)
    _keys(doc, _TOP, "release file", 1)
    if doc["schema_version"] != SCHEMA_VERSION:
        raise _Problem(f"schema_version {doc['schema_version']!r} is not supported (expected {SCHEMA_VERSION})",
                       _line(doc, "schema_version"))
    backend = _text(doc, "backend", "release file")
    if not _BACKEND_ID.match(backend):
        raise _Problem(f"backend {backend!r} must be lower-case letters, digits and '-'", _line(doc, "backend"))
    _vocabulary(doc, "statuses", STATUSES)
    _vocabulary(doc, "evidence_kinds", EVIDENCE_KINDS)
    op_names = _choice(doc, "op_names", ("overload", "packet"), "release file")
    kernel_list = _choice(doc, "kernel_list", ("complete", "partial"), "release file")
    sources = _sources(doc)

    unl = doc["unlisted"]
    _keys(unl, _UNLISTED, "unlisted", _line(doc, "unlisted"))
    status = Status(_choice(unl, "status", STATUSES, "unlisted"))
    if status.runs_on_device:
        raise _Problem(f"unlisted: {status} cannot be a default for ops nobody listed", _line(unl, "status"))
    if kernel_list == "partial" and not status.unchecked:
        raise _Problem("unlisted: with kernel_list: partial nobody knows whether an unlisted op has a "
                       "kernel, so its status must be unknown", _line(unl, "status"))
    unlisted = Entry(op="", status=status.value, sources=_evidence_ids(unl, sources, "unlisted"),
                     confidence=_choice(unl, "confidence", CONFIDENCES, "unlisted"),
                     note=_text(unl, "note", "unlisted") if "note" in unl else "", line=_line(unl) or 0)

    packages = []
    for item in doc.get("packages") or []:
        _keys(item, _PACKAGE, "package", _line(doc, "packages"))
        packages.append(Package(*(_text(item, k, "package") for k in ("name", "version", "torch"))))

    sdpa, sdpa_sources = "math", ()
    if "profile" in doc:
        prof = doc["profile"]
        _keys(prof, _PROFILE, "profile", _line(doc, "profile"))
        sdpa = _choice(prof, "sdpa_policy", SDPA_POLICIES, "profile")
        if "evidence" in prof:
            sdpa_sources = _evidence_ids(prof, sources, "profile")

    known = _paired_operators(packages)
    ops = doc["ops"]
    if not isinstance(ops, list):
        raise _Problem("ops must be a list", _line(doc, "ops"))
    entries: dict[str, Entry] = {}
    previous = ""
    for item in ops:
        entry = _entry(item, sources, op_names, _line(ops), known)
        if entry.op in entries:
            raise _Problem(f"duplicate entry for {entry.op} (first at line {entries[entry.op].line})", entry.line)
        if previous and entry.op < previous:
            raise _Problem(f"ops must be sorted by name: {entry.op} comes after {previous}", entry.line)
        entries[entry.op] = entry
        previous = entry.op
    known_failures = _known_failures(doc, sources, known)
    _check_failures(entries, known_failures)
    narrowing = _narrowing(doc, sources)
    environment = _environment(doc)
    notes = doc.get("notes") or []
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise _Problem("notes must be a list of strings", _line(doc, "notes"))
    return Release(
        path=path, backend=backend, release=_text(doc, "release", "release file"),
        title=_text(doc, "title", "release file"), device=_text(doc, "device", "release file"),
        dispatch_key=_choice(doc, "dispatch_key", DISPATCH_KEYS, "release file"), op_names=op_names,
        kernel_list=kernel_list, sources=sources, entries=entries, unlisted=unlisted,
        packages=tuple(packages), released=_text(doc, "released", "release file") if "released" in doc else "",
        sdpa_policy=sdpa, sdpa_sources=sdpa_sources, notes=tuple(notes), known_failures=known_failures,
        release_notes=_release_notes(doc, sources, known),
        narrowing=narrowing, environment=environment, no_kernel=_no_kernel(doc, sources, kernel_list),
        dtype_fallbacks=_dtype_fallbacks(doc, sources, entries, known),
    )


def _paired_operators(packages: list[Package]):
    """The operators of the torch the release pairs with (NOTE [op names resolve] in
    opscan/db/operators.py), or None when the file names no pairing."""
    if not packages:
        return None
    from opscan.db.operators import for_release

    return for_release(p.torch for p in packages)


def _no_kernel(doc, sources, kernel_list: str) -> NoKernel | None:
    """`no_kernel:` (what happens to an op without a kernel); None when the file does not say."""
    if "no_kernel" not in doc:
        return None
    item = doc["no_kernel"]
    _keys(item, _NO_KERNEL, "no_kernel", _line(doc, "no_kernel"))
    patterns, refused, refused_note = (), (), ""
    if "not_supported" in item:
        ns = item["not_supported"]
        _keys(ns, _NOT_SUPPORTED, "no_kernel: not_supported", _line(item, "not_supported"))
        patterns = _strings(ns, "ops", "no_kernel: not_supported")
        refused = _evidence_ids(ns, sources, "no_kernel: not_supported")
        refused_note = _text(ns, "note", "no_kernel: not_supported") if "note" in ns else ""
    return NoKernel(eager=_choice(item, "eager", NO_KERNEL_MODES, "no_kernel"),
                    compile=_choice(item, "compile", NO_KERNEL_MODES, "no_kernel"),
                    sources=_evidence_ids(item, sources, "no_kernel"),
                    note=_text(item, "note", "no_kernel") if "note" in item else "",
                    compile_note=_text(item, "compile_note", "no_kernel") if "compile_note" in item else "",
                    not_supported=patterns, not_supported_sources=refused, not_supported_note=refused_note)


def _environment(doc) -> dict:
    """`environment:` of a probed file: strings, and one level of string mappings (env: {NAME: value})."""
    env = doc.get("environment")
    if env is None:
        return {}
    if not isinstance(env, dict):
        raise _Problem("environment must be a mapping", _line(doc, "environment"))
    out: dict = {}
    for key, value in env.items():
        if isinstance(value, dict):
            if not all(isinstance(v, str) for v in value.values()):
                raise _Problem(f"environment: {key}: values must be strings", _line(env, key))
            out[str(key)] = {str(k): v for k, v in value.items()}
        else:
            out[str(key)] = _text(env, key, "environment")
    return out
