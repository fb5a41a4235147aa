"""`opscan trace TARGET`: every aten op a model dispatches in forward, backward and optimizer step."""

from __future__ import annotations

import argparse
from pathlib import Path

from opscan import __version__
from opscan.commands.flags import positive_int
from opscan.errors import UsageError
from opscan.records import Draft, NotChecked, Target

HELP = "list every aten op a model dispatches (forward, loss, backward, optimizer), traced without weights"

FORMATS = ("terminal", "json")
TRACE_ONLY = "`opscan trace` lists ops only (`opscan PATH` also scans the source)"


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
    parser.add_argument("--batch", type=positive_int, default=None, help="batch size of generated inputs")
    parser.add_argument("--seq-len", type=positive_int, default=None, help="sequence length of generated inputs")
    parser.add_argument("--real-layers", type=positive_int, default=None, metavar="N",
                        help="layer count of the real model, when the traced one is cut (scales fallback costs)")
    parser.add_argument("--real-batch", type=positive_int, default=None, metavar="N",
                        help="batch size of the real training step (scales fallback costs)")
    parser.add_argument("--real-seq-len", type=positive_int, default=None, metavar="N",
                        help="sequence length of the real training step (scales fallback costs)")
    parser.add_argument("--real-hidden", type=positive_int, default=None, metavar="N",
                        help="width (hidden size) of the real model, when the traced one is built narrower "
                        "(scales fallback costs)")
    parser.add_argument("--fsdp", type=_world_size, default=None, metavar="N",
                        help="trace rank 0 of an N-way FSDP2 (fully_shard) job on a fake process group: "
                        "adds its collectives and copy ops (N >= 2; see docs/trace.md, \"FSDP\")")
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="let an hf: folder whose config.json has auto_map run its own code")
    parser.add_argument("--steps", type=positive_int, default=None, metavar="N",
                        help="run the step N times (default 1): the compile signatures of each, the "
                             "later steps recording nothing else (docs/trace.md, \"Compile signatures\")")
    parser.add_argument("--format", choices=FORMATS, default="terminal", help="output format")
    parser.add_argument("--output", metavar="FILE", default=None, help="write the report here")
    from opscan.commands.flags import add_backend_argument, add_db_argument, add_limit_arguments

    add_backend_argument(parser)   # the same release and device profile as `opscan PATH` by default
    add_db_argument(parser)

    add_limit_arguments(parser)   # the model's code runs in a child process (docs/reliability.md)


def _world_size(text: str) -> int:
    value = positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"an FSDP world size is at least 2: {text}")
    return value


def configured_release(backend: str | None, db: str | None) -> tuple[str | None, str | None]:
    """(release spec, db path) from the flags, else from [tool.opscan] of the working directory.

    `opscan trace`, `opscan zoo` and `opscan PATH` so pick the same release: the flag, else the
    project's `backend` / `db`, else the newest TorchNeuron release of the shipped database.
    """
    if backend is not None and db is not None:
        return backend, db
    from opscan.config.checks import load_checked_config

    config = load_checked_config(Path.cwd())
    if backend is None:
        backend = config.backend or None
    if db is None and config.db is not None:
        db = str(config.db)
    return backend, db


def _release(args: argparse.Namespace):
    """The coverage-db release --backend / --db / [tool.opscan] chose (default: the newest TorchNeuron one)."""
    from opscan.db import load_release

    backend, db = configured_release(getattr(args, "backend", None), getattr(args, "db", None))
    return load_release(backend, Path(db) if db else None)


def _models(args: argparse.Namespace) -> tuple[list, Path]:
    """(the models to trace, as ModelConfig with the flags applied; the project root they live in)."""
    from dataclasses import replace

    from opscan.config import ModelConfig
    from opscan.trace.spec import parse_input

    for text in args.input:   # a bad --input is a usage error here, before any child starts
        parse_input(text)
    flags = dict(mode=args.mode, optimizer=args.optimizer, optimizer_impl=args.optimizer_impl, amp=args.amp,
                 inputs=tuple(args.input), batch=args.batch, seq_len=args.seq_len,
                 real_layers=args.real_layers, real_batch=args.real_batch, real_seq_len=args.real_seq_len,
                 real_hidden=getattr(args, "real_hidden", None))
    flags = {key: value for key, value in flags.items() if value}   # a flag given replaces the configured value
    if getattr(args, "trust_remote_code", False):
        flags["trust_remote_code"] = True
    if args.target:   # parsed here, once (NOTE [targets parsed once]): a bad TARGET is a one-line usage error
        try:
            target = Target.parse(args.target)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        return [replace(ModelConfig(target=target), **flags)], Path.cwd()
    models, root = _configured_models()
    if not models:
        raise UsageError("no TARGET given and no [[tool.opscan.models]] in pyproject.toml; "
                         "e.g. opscan trace model.py:build")
    return [replace(model, **flags) for model in models], root


def _configured_models():
    try:
        from opscan.config.checks import load_checked_config
    except ImportError:
        return (), Path.cwd()
    config = load_checked_config(Path.cwd())
    return config.models, config.root


def run(args: argparse.Namespace) -> int:
    """Trace, assess (opscan/assess/assessment.py, as `opscan PATH` does), render, and exit 0 (complete) or 1
    (a trace stopped early; its partial list is shown)."""
    from opscan.assess import assess
    from opscan.commands.flags import isolation_from, render_report
    from opscan.containment.outcome import trace_isolated
    from opscan.pipeline.phases import at_real_size, tracer_options

    limits = isolation_from(args)
    models, root = _models(args)
    release = _release(args)   # loaded once: the device profile of the trace, then coverage and caveats
    profile = release.profile()
    extra = {"device": args.device, **({"fsdp": args.fsdp} if getattr(args, "fsdp", None) is not None else {}),
             **({"steps": args.steps} if getattr(args, "steps", None) else {})}
    traces = tuple(at_real_size(trace_isolated(tracer_options(model, root, profile, **extra), limits), model, root)
                   for model in models)
    report = assess(Draft(root=str(Path.cwd()), tool_version=__version__, traces=traces,
                          source=NotChecked(TRACE_ONLY)), release)
    render_report(report, args.format, args.output)   # the one report writer (commands/flags.py)
    return 0 if all(t.complete for t in traces) else 1
