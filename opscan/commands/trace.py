"""`opscan trace TARGET`: every aten op a model dispatches in forward, backward and optimizer step."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from opscan import __version__
from opscan.errors import UsageError
from opscan.model import Coverage, DeviceProfile, ModelTrace, Report

HELP = "list every aten op a model dispatches (forward, loss, backward, optimizer), traced without weights"

FORMATS = ("terminal", "json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", nargs="?", metavar="TARGET",
                        help="file.py:NAME, package.module:NAME, hf:PATH (config.json or its folder) or "
                        "timm:NAME; NAME is an nn.Module class or a factory. Default: the models in "
                        "[tool.opscan] of pyproject.toml")
    parser.add_argument("--mode", choices=("train", "inference", "both"), default=None,
                        help="train: forward, loss, backward, optimizer step (default); inference: "
                        "eval() + no_grad; both: trace the two and mark ops seen in only one")
    parser.add_argument("--device", choices=("neuron", "cpu", "cuda", "meta"), default="neuron",
                        help="device the trace imitates (default neuron: a PrivateUse1 backend)")
    parser.add_argument("--optimizer", default=None, help="torch.optim optimizer, by name (default adamw)")
    parser.add_argument("--optimizer-impl", choices=("foreach", "fused", "for-loop"), default=None,
                        help="optimizer implementation (default: foreach, as on a real accelerator)")
    parser.add_argument("--amp", choices=("bf16", "fp16"), default=None,
                        help="run forward and loss under autocast with this dtype")
    parser.add_argument("--input", action="append", default=[], metavar="NAME:DTYPE[SHAPE]",
                        help="example input override, e.g. input_ids:int64[2,128] (repeatable; a "
                        "numeric NAME is a positional argument)")
    parser.add_argument("--batch", type=_positive, default=None, help="batch size of generated inputs")
    parser.add_argument("--seq-len", type=_positive, default=None, help="sequence length of generated inputs")
    parser.add_argument("--fsdp", type=_world_size, default=None, metavar="N",
                        help="trace rank 0 of an N-way FSDP2 (fully_shard) job on a fake process group: "
                        "adds its collectives and copy ops (N >= 2; see docs/trace.md, \"FSDP\")")
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="let an hf: folder whose config.json has auto_map run its own code")
    parser.add_argument("--format", choices=FORMATS, default="terminal", help="output format")
    parser.add_argument("--output", metavar="FILE", default=None, help="write the report here")
    from opscan.commands.flags import add_backend_argument, add_db_argument
    from opscan.sandbox import add_limit_arguments

    add_backend_argument(parser)   # the same release and device profile as `opscan PATH` by default
    add_db_argument(parser)

    add_limit_arguments(parser)   # the model's code runs in a child process (docs/reliability.md)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    return value


def _world_size(text: str) -> int:
    value = _positive(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"an FSDP world size is at least 2: {text}")
    return value


def build_report(traces: tuple[ModelTrace, ...], root: str, coverage: tuple[Coverage, ...] = (),
                 backend: str = "", notes: tuple[str, ...] = (), caveats: tuple = ()) -> Report:
    """The Report a trace run renders; coverage (from the coverage db) is optional."""
    from dataclasses import replace

    from opscan.verdict import judge

    report = Report(root=root, tool_version=__version__, traces=traces,
                    coverage=tuple(sorted(coverage, key=lambda c: c.op)), backend=backend, notes=notes,
                    caveats=tuple(caveats))
    return replace(report, verdict=judge(report, source_not_checked="`opscan trace` lists ops only "
                                                                    "(`opscan PATH` also scans the source)"))


def configured_release(backend: str | None, db: str | None) -> tuple[str | None, str | None]:
    """(release spec, db path) from the flags, else from [tool.opscan] of the working directory.

    `opscan trace`, `opscan zoo` and `opscan PATH` so pick the same release: the flag, else the
    project's `backend` / `db`, else the newest TorchNeuron release of the shipped database.
    """
    if backend is not None and db is not None:
        return backend, db
    from opscan.config import load_config

    config = load_config(Path.cwd())
    if backend is None:
        backend = config.backend or None
    if db is None and config.db is not None:
        db = str(config.db)
    return backend, db


def device_profile(args: argparse.Namespace) -> DeviceProfile | None:
    """Hook: the device profile for the trace: the chosen release's, as in `opscan PATH`."""
    release = _release(args)
    return release.profile() if release is not None else None


def _release(args: argparse.Namespace):
    """The coverage-db release --backend / --db / [tool.opscan] chose (default: the newest TorchNeuron one)."""
    from opscan.db import load_release

    backend, db = configured_release(getattr(args, "backend", None), getattr(args, "db", None))
    return load_release(backend, Path(db) if db else None)


def annotate(args: argparse.Namespace, traces: tuple[ModelTrace, ...]):
    """Hook: (coverage, backend, notes) for the traced ops, checked against the chosen release."""
    release = _release(args)
    if release is None:
        return (), "", ()
    from opscan.db.annotate import annotate as check_ops

    coverage, notes = check_ops(release, {usage.op for trace in traces for usage in trace.ops})
    return coverage, release.spec, notes


def caveats(args: argparse.Namespace, traces: tuple[ModelTrace, ...]) -> tuple:
    """Hook: the release caveats the traced ops hit (known dtype failures, 64-bit narrowing)."""
    release = _release(args)
    if release is None:
        return ()
    from opscan.db.caveats import op_caveats

    return op_caveats(release, traces)


def _requests(args: argparse.Namespace) -> list[dict]:
    """One dict of trace_target options per model to trace."""
    from opscan.trace.spec import parse_input

    inputs = tuple(parse_input(text) for text in args.input)
    common = {"device": args.device}
    if getattr(args, "fsdp", None) is not None:
        common["fsdp"] = args.fsdp
    if getattr(args, "trust_remote_code", False):
        common["trust_remote_code"] = True
    if args.target:
        return [dict(common, target=args.target, mode=args.mode or "train",
                     optimizer=args.optimizer or "adamw", optimizer_impl=args.optimizer_impl,
                     amp=args.amp, inputs=inputs, batch=args.batch, seq_len=args.seq_len,
                     project_root=str(Path.cwd()))]
    models, root = _configured_models()
    if not models:
        raise UsageError("no TARGET given and no [[tool.opscan.models]] in pyproject.toml; "
                         "e.g. opscan trace model.py:build")
    out = []
    for model in models:
        out.append(dict(common, target=model.target, mode=args.mode or model.mode,
                        optimizer=args.optimizer or model.optimizer,
                        optimizer_impl=args.optimizer_impl or model.optimizer_impl or None,
                        amp=args.amp or model.amp or None,
                        inputs=inputs or tuple(parse_input(t) for t in model.inputs),
                        batch=args.batch or model.batch, seq_len=args.seq_len or model.seq_len,
                        project_root=str(root),
                        **({"trust_remote_code": True} if model.trust_remote_code else {})))
    return out


def _configured_models():
    try:
        from opscan.config import load_config
    except ImportError:
        return (), Path.cwd()
    config = load_config(Path.cwd())
    return config.models, config.root


def run(args: argparse.Namespace) -> int:
    """Trace, render, and exit 0 (complete) or 1 (a trace stopped early; its partial list is shown)."""
    from opscan.sandbox import limits_from, trace_isolated

    limits = limits_from(args)
    requests = _requests(args)
    profile = device_profile(args)
    traces = tuple(trace_isolated(dict(request, profile=profile), limits, getattr(args, "in_process", False))
                   for request in requests)
    coverage, backend, notes = annotate(args, traces)
    report = build_report(traces, root=str(Path.cwd()), coverage=coverage, backend=backend,
                          notes=tuple(notes), caveats=caveats(args, traces))
    _write(report, args.format, args.output)
    return 0 if all(t.complete for t in traces) else 1


def _write(report: Report, fmt: str, output: str | None) -> None:
    from opscan.reporters import render

    if output is None:
        render(fmt, report, sys.stdout)
        return
    from opscan.fsutil import atomic_open

    try:
        with atomic_open(output) as out:   # the old file or the new one, never half of one
            render(fmt, report, out)
    except OSError as exc:
        raise UsageError(f"cannot write: {exc.strerror or exc}", path=output) from None
