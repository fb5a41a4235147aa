"""Flags several commands share, defined once so they mean the same everywhere (docs/check.md, "Flags"):
the release (--backend, --db) and the limits of the child process that runs model code
(--timeout, --max-memory, --in-process; the child itself is opscan/containment/process.py) and its
containment (--pass-env, --require-containment; opscan/containment/).

It is also the one module of the helpers the commands share (docs/architecture.md): rule codes of
--select / --ignore (`codes`), the progress display (`progress`), the one report writer
(`render_report` for a Report in --format to stdout or --output, `write_output` for any text) and
the exit code of --fail-on / --exit-zero (`gate`)."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import sys
from pathlib import Path

from typing import TYPE_CHECKING

from opscan.errors import UsageError
from opscan.reporters import REPORTERS

if TYPE_CHECKING:   # imported where used: `opscan scan` (the pre-commit hook) loads this module too
    from opscan.containment import Policy
    from opscan.containment.process import Limits

FORMATS = tuple(REPORTERS)   # --format of a Report: one per reporter (opscan/reporters/__init__.py)
BACKEND_HELP = ("coverage-database release to check against, e.g. torchneuron==2.33.0 or 2.33.0 "
                "(default: [tool.opscan] backend, else the newest TorchNeuron release); its device "
                "profile shapes the trace, its torch pairing judges dependency manifests")
BACKEND_HELP_UNCONFIGURED = ("release to use, e.g. torchneuron==2.33.0, torch-neuronx-xla==2.32.0 or "
                             "torch-neuronx==2.14.3.0 (default: the newest TorchNeuron release)")
DB_HELP = ("a release file (e.g. one written by `opscan db probe`) or a folder of release files, "
           "used instead of the shipped coverage database (default: [tool.opscan] db)")


def positive_int(text: str) -> int:
    """argparse type of a count flag (--steps, --batch, ...): a positive integer."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    return value


def add_backend_argument(parser: argparse.ArgumentParser, *, configured: bool = True) -> None:
    """--backend RELEASE of every command that picks a release (`configured=False`: a command that
    reads no [tool.opscan], `opscan db`, whose default is the newest TorchNeuron release)."""
    parser.add_argument("--backend", metavar="RELEASE", default=None,
                        help=BACKEND_HELP if configured else BACKEND_HELP_UNCONFIGURED)


def add_db_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="FILE", default=None, help=DB_HELP)


def retire_flag(parser: argparse.ArgumentParser, old: str, hint: str) -> None:
    """Keep a renamed flag only as a usage error that says what to use instead."""

    class _Retired(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            raise argparse.ArgumentError(self, f"was renamed: {hint}")

    parser.add_argument(old, nargs="?", action=_Retired, help=argparse.SUPPRESS)


# --- limits of the child process that runs model code (opscan/containment/process.py) ---------------------

def add_limit_arguments(parser, *, default_timeout: float | None = None, in_process: bool = True) -> None:
    """--timeout / --max-memory (and --in-process) of every command that runs model code
    (`default_timeout`: process.DEFAULT_TIMEOUT when None)."""
    from opscan.containment.process import DEFAULT_TIMEOUT

    default_timeout = DEFAULT_TIMEOUT if default_timeout is None else default_timeout
    parser.add_argument("--timeout", metavar="SECONDS", default=f"{default_timeout:g}",
                        help=f"stop a trace that runs longer (default {default_timeout:g}; 0: no limit). "
                        "Tracing runs the model's code in a child process")
    parser.add_argument("--max-memory", metavar="SIZE", default=None,
                        help="address-space limit of the trace's child process, e.g. 8G "
                        "(default: 3/4 of physical memory, never above an existing ulimit; 0: no limit)")
    if in_process:
        parser.add_argument("--in-process", action="store_true",
                            help="trace in this process, without the child process and its limits (debugging)")
    add_containment_arguments(parser)


def add_containment_arguments(parser) -> None:
    """--pass-env / --require-containment of every command that runs project code (docs/reliability.md)."""
    parser.add_argument("--pass-env", metavar="NAME", action="append", default=[],
                        help="pass this environment variable to the child that runs the model's code "
                        "(repeatable); otherwise it gets only an allow-list: no token, key or credential")
    parser.add_argument("--scratch-size", metavar="SIZE", default=None,
                        help="size of the child's scratch folder, the only place it may write "
                        "(a memory-backed tmpfs; default 2G)")
    parser.add_argument("--allow-read", metavar="PATH", action="append", default=[],
                        help="let the child read this file or folder too (repeatable; a data set, a "
                        "model outside the project); otherwise it reads only what it needs to run")
    parser.add_argument("--max-processes", metavar="N", type=positive_int, default=None,
                        help="processes and threads the child's whole tree may have (default 512)")
    parser.add_argument("--require-containment", action="store_true",
                        help="exit 2 instead of running project code when a part of the containment "
                        "(environment, network, files, ipc, keyring, processes, limits) cannot be had "
                        "on this machine")


def limits_from(args, start_method: str = "spawn") -> Limits:
    """Limits from parsed --timeout / --max-memory (UsageError for bad values)."""
    from opscan.containment.process import DEFAULT_TIMEOUT, Limits, default_max_memory

    timeout = parse_timeout(str(getattr(args, "timeout", DEFAULT_TIMEOUT)))
    raw = getattr(args, "max_memory", None)
    limits = Limits(timeout=timeout, max_memory=parse_size(raw) if raw is not None else default_max_memory(),
                    start_method=start_method, containment=policy_from(args))
    if limits.containment.require and not getattr(args, "in_process", False):
        from opscan.containment.process import check_containment

        check_containment(limits)   # ContainmentError (exit 2) before any project code runs
    return limits


def policy_from(args) -> Policy:
    """The containment of the child from --pass-env / --require-containment (UsageError for a bad name)."""
    names = tuple(dict.fromkeys(getattr(args, "pass_env", None) or ()))
    for name in names:
        if not name or "=" in name or not name.replace("_", "a").isalnum():
            raise UsageError(f"--pass-env {name!r}: not an environment variable name (give the name, not NAME=VALUE)")
    from opscan.containment import MAX_PROCESSES, SCRATCH_SIZE, Policy

    from opscan.containment import named_paths

    readable = []
    for path in getattr(args, "allow_read", None) or ():
        if not os.path.exists(path):
            raise UsageError(f"--allow-read {path!r}: no such file or folder")
        readable.append(os.path.abspath(path))
    named = [getattr(args, "target", None), *(getattr(args, "model", None) or ()), getattr(args, "report", None),
             *(getattr(args, "script_command", None) or ()), *(getattr(args, "selection", None) or ())]
    # what the user named (a trace target, a model folder, a script): the child reads it
    readable += named_paths([str(word) for word in named if word], os.getcwd(), dict(os.environ))
    processes = getattr(args, "max_processes", None) or MAX_PROCESSES
    if processes < 8:
        raise UsageError(f"--max-processes {processes}: at least 8 (Python and torch start threads of their own)")
    raw = getattr(args, "scratch_size", None)
    size = SCRATCH_SIZE
    if raw is not None:
        match = _SIZE.match(raw)
        if not match or float(match[1]) <= 0:
            raise UsageError(f"--scratch-size: not a size: {raw!r} (expected e.g. 2G, 512M)")
        size = int(float(match[1]) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[match[2].lower()])
        if size < 1 << 20:
            raise UsageError(f"--scratch-size {raw}: at least 1M")
    return Policy(pass_env=names, require=bool(getattr(args, "require_containment", False)), scratch_size=size,
                  readable=tuple(dict.fromkeys(readable)), max_processes=processes)


def isolation_from(args) -> Limits | None:
    """The limits a trace runs under, or None with --in-process (traced in this process, no child)."""
    limits = limits_from(args)   # bad values are a usage error with --in-process too
    if getattr(args, "in_process", False) and limits.containment.require:
        raise UsageError("--require-containment and --in-process: the model's code would run in opscan's "
                         "own process, with nothing contained")
    return None if getattr(args, "in_process", False) else limits


def passed_secrets(policy: Policy) -> tuple[str, ...]:
    """The --pass-env names that read as secrets (the report says they were passed on purpose)."""
    from opscan.containment import is_secret_name

    return tuple(name for name in policy.pass_env if is_secret_name(name))


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int | None:
    """'8G', '512M', '1.5GiB', '1000000' (bytes), '0' or 'none' (no limit) -> bytes. Raises UsageError."""
    if text.strip().lower() in ("0", "none", "unlimited"):
        return None
    match = _SIZE.match(text)
    if not match:
        raise UsageError(f"--max-memory: not a size: {text!r} (expected e.g. 8G, 512M, 0 for no limit)")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[match[2].lower()]
    value = int(float(match[1]) * scale)
    if value < 64 << 20:
        raise UsageError(f"--max-memory {text}: too small to start Python and torch (at least 64M)")
    return value


def parse_timeout(text: str) -> float | None:
    """'600', '2.5', '0' (no limit) -> seconds. Raises UsageError."""
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"--timeout: not a number of seconds: {text!r}") from None
    if value < 0:
        raise UsageError(f"--timeout: must be >= 0 seconds (0 means no limit), not {text}")
    return None if value == 0 else value


# --- helpers the commands share: rule codes, progress, the one report writer, the gate ------------

def codes(values: list[str] | None) -> tuple[str, ...] | None:
    """Repeated and comma-separated flag values as one tuple (None when the flag was not given)."""
    if not values:
        return None
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


@contextlib.contextmanager
def progress():
    """A transient progress display on stderr (only when stderr is a terminal)."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    display = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                       console=Console(stderr=True), transient=True)
    with display:
        task = display.add_task("starting", total=None)

        def update(event: str, detail: str) -> None:
            if event == "traced":
                display.console.print(f"[dim]traced {detail}[/dim]")
                return
            display.update(task, description=detail)

        yield update


def write_output(text: str, output: str | None) -> None:
    """Print `text`, or write it to `output` atomically."""
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from opscan.errors import InputError

    from opscan.fsutil import atomic_write

    path = Path(output)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text)   # temp file + fsync + os.replace (docs/reliability.md)
    except OSError as exc:
        raise InputError(f"cannot write the report: {exc.strerror or exc}", path=str(path)) from None


def render_report(report, fmt: str, output: str | None) -> None:
    """Render in `fmt` to stdout (terminal colour when it is a tty) or to `output`."""
    from opscan.reporters import render

    if fmt == "terminal" and output is None:
        from opscan.reporters.terminal import make_console
        from opscan.reporters.terminal import render as terminal
        from opscan.reporters.terminal.verdict import recap

        console = make_console(sys.stdout)
        terminal(report, sys.stdout, console)
        if sys.stdout.isatty():   # the details may have scrolled the verdict away
            recap(report, console)
        return
    buffer = io.StringIO()
    render(fmt, report, buffer)
    write_output(buffer.getvalue(), output)


def on_screen(fmt: str, output: str | None) -> bool:
    """The terminal report went to the screen the gate's stderr lines would go to: the report
    already says each of them (the verdict, what was not checked), so they are not said twice."""
    return fmt == "terminal" and output is None and sys.stdout.isatty() and sys.stderr.isatty()


def gate(report, fail_on: tuple[str, ...], exit_zero: bool, allow_unchecked: bool = False,
         quiet: bool = False, shown: bool = False) -> int:
    """Exit code for `report`: 2 when a model given could not be checked (unless allow_unchecked),
    1 when a --fail-on condition is met (reasons on stderr unless `quiet`: the output has them),
    else 0 (opscan/assess/gate.py). `shown`: the report is on the screen (`on_screen`): no reason,
    "could not check" or remedy line on stderr, the exit code alone."""
    from opscan.assess.gate import could_not_check, failures

    reasons = failures(report, fail_on)
    for reason in reasons if not (quiet or shown) else ():
        print(f"opscan: fail-on {reason}", file=sys.stderr)
    unchecked = could_not_check(report)
    for line in unchecked if not shown else ():   # the whole reason, one line each
        print(f"opscan: error: could not check {line}", file=sys.stderr)
    remedy = report.verdict.remedy if report.verdict is not None else ""
    if unchecked and remedy and not allow_unchecked and not shown:   # once, after the causes
        print(f"opscan: {remedy}", file=sys.stderr)                   # (NOTE [every missing module at once])
    if unchecked and allow_unchecked:
        print("opscan: --allow-unchecked: the gate judges what was checked", file=sys.stderr)
    if unchecked and not allow_unchecked:
        return 2
    if reasons and exit_zero and not quiet:
        print("opscan: --exit-zero: exiting 0 anyway", file=sys.stderr)
    return 1 if reasons and not exit_zero else 0
