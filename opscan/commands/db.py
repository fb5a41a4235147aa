"""`opscan db list|show|diff|validate|probe|import-compat`: read, compare, check and regenerate the
coverage database."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from opscan.errors import OpscanError, UsageError
from opscan.reporters.texts import coverage_label

HELP = "the TorchNeuron coverage database: list releases, show an op, diff releases, validate, probe"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from opscan.commands.flags import add_backend_argument, add_db_argument

    sub = parser.add_subparsers(dest="db_command", metavar="ACTION", parser_class=type(parser))
    sub.required = True

    def release_options(p: argparse.ArgumentParser) -> None:
        add_backend_argument(p, configured=False)   # opscan db reads no [tool.opscan]
        add_db_argument(p)
        p.add_argument("--format", choices=("terminal", "json"), default="terminal", help="output format")

    p = sub.add_parser("list", help="the releases in the database, newest last")
    add_db_argument(p)
    p.add_argument("--format", choices=("terminal", "json"), default="terminal", help="output format")

    p = sub.add_parser("show", help="status, evidence and lookup path of ops in one release")
    p.add_argument("ops", nargs="+", metavar="OP", help="operator, e.g. aten::add.Tensor or aten::relu")
    release_options(p)

    p = sub.add_parser("diff", help="changelog between two releases: ops added, removed, changed status")
    p.add_argument("old", metavar="OLD", help="release spec or release file")
    p.add_argument("new", metavar="NEW", help="release spec or release file")
    p.add_argument("--format", choices=("terminal", "json"), default="terminal", help="output format")

    p = sub.add_parser("validate", help="load release files strictly; report every problem with file:line")
    p.add_argument("files", nargs="*", metavar="FILE", help="release files (default: every shipped one)")
    p.add_argument("--strict", action="store_true",
                   help="also fail on warnings (ops the installed torch does not have)")

    p = sub.add_parser("probe", help="write a release file from the PrivateUse1 backend installed here")
    p.add_argument("--out", metavar="FILE", required=True, help="release file to write (atomically)")
    p.add_argument("--import", dest="import_module", metavar="MODULE", default=None,
                   help="import this module first (it registers the backend; TorchNeuron autoloads)")
    p.add_argument("--samples", action="store_true",
                   help="also run small sample inputs per dtype to catch run-time CPU fallbacks")
    p.add_argument("--dtypes", default=None, metavar="LIST",
                   help="comma-separated dtypes for --samples (default float32,bfloat16,float64,int64)")
    p.add_argument("--report", default=None, metavar="REPORT.json",
                   help="replay exactly the ops of this report (`opscan PATH --format json`) with its dtypes "
                        "and compare each with the CPU; writes those ops only")
    p.add_argument("--name", default=None, help="backend id to write (default: from the backend's package)")
    p.add_argument("--release", default=None, help="release to write (default: the backend's version)")
    from opscan.commands.flags import add_limit_arguments

    add_limit_arguments(p, default_timeout=3600)   # --import runs the backend's code: in a contained child

    p = sub.add_parser("import-compat", help="write a release file from a torch-neuronx compatibility table")
    p.add_argument("table", metavar="FILE", help="the table (Markdown, docs/torch_api_compatibility.md)")
    p.add_argument("--release", required=True, help="the release the table describes, e.g. 2.34.0")
    p.add_argument("--out", metavar="FILE", default=None,
                   help="release file to write (default: torchneuron-RELEASE.yaml here)")
    p.add_argument("--date", default="unknown", help="the table's date (YYYY-MM-DD), cited as its evidence")
    p.add_argument("--url", default=None, help="where the table was read (default: its GitHub location)")
    p.add_argument("--extends", metavar="SPEC|FILE", default=None,
                   help="the release the table is merged into (default: the newest shipped TorchNeuron release)")
    p.add_argument("--torch", action="append", required=True, metavar="MINOR",
                   help="a torch minor version this release pairs with, e.g. 2.14 (repeat for several)")
    p.add_argument("--neuron-sdk", default=None, metavar="VERSION",
                   help="the Neuron SDK release of that pairing (default: --release)")
    p.add_argument("--replace", action="store_true", help="replace --out when it exists (default: refuse)")
    p.add_argument("--allow-unknown", action="store_true",
                   help="keep rows naming ops torch and the extended release do not know, as a note (default: refuse)")


def run(args: argparse.Namespace) -> int:
    return {"list": _list, "show": _show, "diff": _diff, "validate": _validate,
            "probe": _probe, "import-compat": _import_compat}[args.db_command](args)


def _print_json(data) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def _load(spec: str | None, db: str | None):
    from opscan.db import load_release

    return load_release(spec, Path(db) if db else None)


def _pairing_notes(release) -> list[str]:
    from opscan.db.annotate import release_notes

    return [f"warning: {note}" for note in release_notes(release)]


def _list(args: argparse.Namespace) -> int:
    from collections import Counter

    from opscan.db import shipped_releases

    if args.db and Path(args.db).is_file():   # --db FILE: that one release
        from opscan.db import load_file

        releases = [load_file(Path(args.db))]
    else:
        releases = shipped_releases(Path(args.db) if args.db else None)
    rows = []
    for r in releases:
        counts = Counter(e.status for e in r.entries.values())
        rows.append({"spec": r.spec, "title": r.title, "released": r.released, "device": r.device,
                     "entries": len(r.entries), "by_status": dict(sorted(counts.items())),
                     "kernel_list": r.kernel_list, "unlisted": r.unlisted.status,
                     "packages": [f"{p.name} {p.version} (torch {p.torch})" for p in r.packages],
                     "path": r.path.name,
                     "dtype_narrowing": ", ".join(f"{n.dtype} as {n.computed_as}" for n in r.narrowing),
                     "known_failures": len(r.known_failures), "environment": r.environment,
                     "notes": list(r.notes)})
    if args.format == "json":
        _print_json({"releases": rows})
        return 0
    for row in rows:
        status = ", ".join(f"{n} {s}" for s, n in row["by_status"].items())
        print(f"{row['spec']:<28} {row['released']:<11} {row['entries']:>4} ops listed ({status}); "
              f"unlisted: {row['unlisted']}")
        print(f"  {row['title']}")
        if row["packages"]:
            print(f"  packages: {'; '.join(row['packages'])}")
        if row["dtype_narrowing"]:
            print(f"  computes {row['dtype_narrowing']} by default")
        if row["known_failures"]:
            print(f"  known failures: {row['known_failures']} (op, dtype) rows from failing upstream tests")
        if row["environment"]:
            env = row["environment"]
            print(f"  probed on: {env.get('backend', '?')}, torch {env.get('torch', '?')}, "
                  f"instance {env.get('instance_type', '?')}")
        for note in row["notes"]:   # release-level facts (e.g. failing tests that name no one op)
            print(f"  note: {note}")
    return 0


def _evidence_line(e) -> str:
    where = e.url or ""
    if e.repo:
        where = f"{e.repo}@{e.commit[:12]}" if e.commit else e.repo
    if e.install:
        where = e.install
    bits = [b for b in (where, e.date) if b]
    return f"{e.kind}: {e.text}" + (f" [{', '.join(bits)}]" if bits else "")


def _failure_line(op: str, failure) -> str:
    """'known failure with complex64: T.test_x', with the case, the decomposition and the reasons."""
    what = f"with {failure.dtype}" if failure.dtype else "with any dtype"
    if failure.case:
        what += f", case {failure.case}"
    if op in failure.parts:
        what += f", in tests of {failure.packet} (decomposes into this op)"
    hidden = max(len(failure.tests) - 5, 0) + failure.more_tests
    tests = ", ".join(failure.tests[:5]) + (f" and {hidden} more" if hidden else "")
    reasons = f" (reason: {' / '.join(failure.reasons)})" if failure.reasons else ""
    return f"known failure {what}: {tests}{reasons}"


def _show(args: argparse.Namespace) -> int:
    from opscan.db import check
    from opscan.records import OpName

    release = _load(args.backend, args.db)
    for op in args.ops:
        try:
            OpName.parse(op)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    answers = check(release, args.ops)
    notes = _pairing_notes(release)
    if args.format == "json":
        from opscan.reporters.json import evidence_json

        _print_json({"backend": release.spec, "notes": notes, "ops": [
            {"op": c.op, "status": c.status, "confidence": c.confidence, "via": c.via,
             "parts": list(c.parts), "evidence": [evidence_json(e) for e in c.evidence],
             "known_failures": [{"packet": f.packet, "dtype": f.dtype, "case": f.case, "reasons": list(f.reasons),
                                 "decomposes": c.op in f.parts, "tests": list(f.tests),
                                 "more_tests": f.more_tests}
                                for f in release.failures_for(c.op)]}
            for c in answers]})
        return 0
    print(f"{release.spec}  ({release.path.name})")
    for note in notes:
        print(note)
    for c in answers:
        print(f"\n{c.op}: {coverage_label(c)}  [confidence {c.confidence}]")
        print(f"  via: {c.via}")
        if c.parts:
            print(f"  parts: {', '.join(c.parts)}")
        for e in c.evidence:
            print(f"  - {_evidence_line(e)}")
        for failure in release.failures_for(c.op):
            print(f"  {_failure_line(c.op, failure)}")
    return 0


def _release_arg(text: str):
    from opscan.db import load_file

    path = Path(text)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise UsageError(f"no such release file: {text}")
        return load_file(path)
    return _load(text, None)


def _entry_dict(release, entry) -> dict:
    return {"status": entry.status, "confidence": entry.confidence, "note": entry.note,
            "evidence": [e.text for e in release.evidence(entry.sources)]}


def _diff(args: argparse.Namespace) -> int:
    from opscan.db import diff

    old, new = _release_arg(args.old), _release_arg(args.new)
    log = diff(old, new)
    unchanged = len(set(old.entries) & set(new.entries)) - len(log.of_kind("status")) - len(log.of_kind("evidence"))

    def rows(kind: str, cause: str) -> list:
        out = []
        for c in log.of_kind(kind, cause):
            if kind == "added":
                out.append(dict(op=c.op, **_entry_dict(new, c.new)))
            elif kind == "removed":
                out.append(dict(op=c.op, **_entry_dict(old, c.old)))
            else:
                out.append({"op": c.op, "old": _entry_dict(old, c.old), "new": _entry_dict(new, c.new)})
        return out

    if args.format == "json":
        _print_json({
            "old": old.spec, "new": new.spec,
            "metadata": [{"field": f, "old": a, "new": b} for f, a, b in log.header],
            "release_changed": {"added": rows("added", "release"), "removed": rows("removed", "release"),
                                "status_changed": rows("status", "release")},
            "evidence_changed": {"added": rows("added", "evidence"), "removed": rows("removed", "evidence"),
                                 "status_changed": rows("status", "evidence"),
                                 "details_changed": rows("evidence", "evidence")},
            "unchanged": unchanged,
        })
        return 0
    print(f"Changelog {old.spec} -> {new.spec}")
    for field, a, b in log.header:
        print(f"  {field}: {a or '-'} -> {b or '-'}")
    groups = (
        ("The release changed", "release", (("Ops added", "added", new), ("Ops removed", "removed", old),
                                            ("Status changed", "status", new))),
        ("The evidence changed (what we know, not the release)", "evidence",
         (("Ops added", "added", new), ("Ops removed", "removed", old), ("Status changed", "status", new),
          ("Confidence, note or kind of evidence changed", "evidence", new))),
    )
    for heading, cause, sections in groups:
        print(f"\n{heading} ({len(log.of_cause(cause))})")
        for title, kind, side in sections:
            changes = log.of_kind(kind, cause)
            print(f"  {title} ({len(changes)})")
            for c in changes:
                entry = c.new if kind != "removed" else c.old
                first = side.evidence(entry.sources)[0].text
                if kind == "status":
                    line = f"    {c.op}: {c.old.status} -> {c.new.status} ({first})"
                elif kind == "evidence":
                    line = f"    {c.op}: {c.new.status}, confidence {c.old.confidence} -> {c.new.confidence} ({first})"
                else:
                    line = f"    {c.op}: {entry.status} ({first})"
                since = f" [since {entry.since}]" if entry.since and cause == "release" else ""
                print(line + since + (f" - {entry.note}" if entry.note else ""))
    print(f"\nUnchanged: {unchanged} ops")
    return 0


def _validate(args: argparse.Namespace) -> int:
    from opscan.db import load_file
    from opscan.db.shipped import release_files

    files = [Path(f) for f in args.files] or release_files()
    failed = False
    for path in files:
        try:
            release = load_file(path)
        except OpscanError as exc:
            print(f"opscan: error: {exc}", file=sys.stderr)
            failed = True
            continue
        for warning in release.warnings:
            print(f"{path}: warning: {warning}", file=sys.stderr)
        failed = failed or (args.strict and bool(release.warnings))
        print(f"ok {path}: {release.spec}, {len(release.entries)} ops, {len(release.warnings)} warnings")
    return 1 if failed else 0


def _probe(args: argparse.Namespace) -> int:
    from opscan.db.probe import SAMPLE_DTYPES, write_probe

    if args.report:
        return _probe_report(args)
    dtypes = SAMPLE_DTYPES
    if args.dtypes:
        dtypes = tuple(d.strip() for d in args.dtypes.split(",") if d.strip())
        try:
            import torch
        except ImportError as exc:
            raise UsageError(f"probe needs torch ({exc})") from None
        bad = [d for d in dtypes if not isinstance(getattr(torch, d, None), torch.dtype)]
        if bad:
            raise UsageError(f"--dtypes: not a torch dtype: {', '.join(bad)}")
    doc = _contained(args, "opscan.db.probe:probe", dict(import_module=args.import_module, samples=args.samples,
                                                          name=args.name, release=args.release, dtypes=dtypes))
    write_probe(doc, Path(args.out))
    statuses = {}
    for entry in doc["ops"]:
        statuses[entry["status"]] = statuses.get(entry["status"], 0) + 1
    counts = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
    print(f"wrote {args.out}: {doc['backend']}=={doc['release']} on device '{doc['device']}', "
          f"{len(doc['ops'])} ops with a kernel ({counts}); unlisted ops: {doc['unlisted']['status']}")
    return 0


def _contained(args: argparse.Namespace, func: str, kwargs: dict):
    """`func(**kwargs)` in the contained child (opscan/containment/process.py; docs/reliability.md), or in this
    process with --in-process; the probe's own errors come back as they were raised."""
    from opscan.commands.flags import isolation_from
    from opscan.containment.process import run
    from opscan.containment.outcome import result_of

    limits = isolation_from(args)
    if limits is None:
        from opscan.db.cache_stats import counted_replay
        from opscan.db.probe import probe

        return {"opscan.db.probe:probe": probe, "opscan.db.cache_stats:counted_replay": counted_replay}[func](**kwargs)
    returns = {"opscan.db.probe:probe": dict,   # the release document; counted_replay's (doc, per op, counters)
               "opscan.db.cache_stats:counted_replay": tuple[dict, float, dict | None, dict | None]}[func]
    return result_of(run(func, kwargs, limits, returns=returns), f"db probe (--import {args.import_module or '-'})",
                     limits)


def _probe_report(args: argparse.Namespace) -> int:
    """`db probe --report`: the report's ops replayed and compared (NOTE [model replay] in db/replay.py)."""
    from opscan.db.probe import write_probe
    from opscan.db.replay import report_ops
    from opscan.records import Confidence, Status

    if args.samples or args.dtypes:
        raise UsageError("--report replays the report's ops with the report's dtypes: "
                         "--samples and --dtypes do not apply")
    from opscan.db import cache_stats

    # the replay and the cache counters around it (NOTE [cache counters]: optional, absent -> said so)
    # are read in the contained child, where the backend's code runs
    doc, per_op, before, after = _contained(args, "opscan.db.cache_stats:counted_replay", dict(
        report=Path(args.report).resolve(), import_module=args.import_module, name=args.name, release=args.release))
    write_probe(doc, Path(args.out))
    replayed = set(report_ops(Path(args.report)))
    statuses: dict[str, int] = {}
    for entry in doc["ops"]:
        if entry["op"] in replayed:
            statuses[entry["status"]] = statuses.get(entry["status"], 0) + 1
    counts = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
    failed = [e["op"] for e in doc["ops"]
              if e["op"] in replayed and not (e["status"] == Status.NATIVE and e["confidence"] == Confidence.HIGH)]
    print(f"wrote {args.out}: {len(replayed)} ops of {Path(args.report).name} replayed on "
          f"{doc['backend']}=={doc['release']} (device '{doc['device']}'), {per_op:.3f} s per op: {counts}; "
          f"{len(doc['ops']) - len(replayed & {e['op'] for e in doc['ops']})} other registered kernels listed as "
          f"probed (not run), unlisted ops: {doc['unlisted']['status']}")
    if failed:
        print("not passed: " + ", ".join(failed))
    for line in cache_stats.lines(before, after, cache_stats.forecast(Path(args.report))):
        print(line)
    return 0


def _import_compat(args: argparse.Namespace) -> int:
    """Exit 0: the merged release was written; 2: nothing was written (an unreadable or refused row,
    an existing --out without --replace, an --out that cannot be written). NOTE [merging a
    compatibility table] in opscan/db/compat.py."""
    from opscan.db.compat import TABLE_URL, conflicts, read_table, release_doc, resolve
    from opscan.db.operators import for_release
    from opscan.errors import DatabaseError, UsageError
    from opscan.strict_yaml import load_checked

    out = Path(args.out or f"torchneuron-{args.release}.yaml")
    if out.exists() and not args.replace:
        raise UsageError(f"{out} exists; import-compat writes a new release file (pass --replace to replace it)")
    for minor in args.torch:
        if not re.fullmatch(r"\d+\.\d+", minor):
            raise UsageError(f"--torch {minor!r}: give a torch minor version such as 2.14")
    known = for_release(args.torch)
    if known.missing:   # NOTE [op names resolve]: the names are checked against the paired torch
        raise UsageError(f"--torch {', '.join(known.missing)}: opscan has no operator list for that torch "
                         "(coverage_db/operators/; tools/operator_lists.py makes one), and it is not the "
                         "installed torch, so the table's op names cannot be checked")
    extends = Path(args.extends) if args.extends and Path(args.extends).is_file() else None
    base = _load(args.extends if args.extends and extends is None else None, str(extends) if extends else None)
    base_doc = load_checked(base.path, lambda data: data, DatabaseError, "cannot read release file")
    read, skipped = read_table(Path(args.table))
    rows, unknown = resolve(read, known)
    refused = [] if args.allow_unknown else [
        (row.line, f"{known.why_not(row.op)} (a typo? --allow-unknown keeps it as a note)") for row in unknown]
    problems = sorted([(s.line, s.cause) for s in skipped] + refused + conflicts(rows))
    for line, cause in problems:
        print(f"{args.table}:{line}: {cause}", file=sys.stderr)
    if problems:
        raise DatabaseError(f"{len(problems)} row{'s' * (len(problems) != 1)} not read or refused; nothing written "
                            f"(first at line {problems[0][0]})", args.table)
    if not read:
        raise DatabaseError("no readable row in the compatibility table", args.table)
    doc = release_doc(rows, base_doc, args.release, args.date, torch=tuple(args.torch),
                      neuron_sdk=args.neuron_sdk or "", url=args.url or TABLE_URL, unknown=tuple(unknown))
    from opscan.db.writer import write_checked

    write_checked(doc, out, f"Imported by `opscan db import-compat` from {Path(args.table).name}, extending "
                             f"{base.spec}. Regenerate rather than edit.\nSchema: coverage_db/README.md in the "
                             "opscan source.", f"{args.table} merged into {base.path}")
    by_status: dict[str, int] = {}
    table_ops = {row.op for row in rows if row.op}
    for entry in doc["ops"]:
        if entry["op"] in table_ops:
            by_status[entry["status"]] = by_status.get(entry["status"], 0) + 1
    counts = ", ".join(f"{n} {s}" for s, n in sorted(by_status.items())) or "no aten op entries"
    fallbacks = len([f for f in doc.get("dtype_fallbacks") or [] if f["op"] in table_ops])
    print(f"wrote {out}: {len(read)} rows read ({counts}; {fallbacks} per-dtype fallbacks), "
          f"{len(unknown)} unknown ops kept as a note, merged into {base.spec} ({len(doc['ops'])} entries), "
          f"pairs with torch {', '.join(args.torch)}")
    return 0

