"""`opscan trace TARGET`: every aten op a model dispatches in forward, backward and optimizer step."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from opscan import __version__
from opscan.commands.flags import positive_int
from opscan.errors import UsageError
from opscan.records import MODES, Draft, NotChecked, Target

if TYPE_CHECKING:
    from opscan.config import Config

HELP = "list every aten op a model dispatches (forward, loss, backward, optimizer), traced without weights"

FORMATS = ("terminal", "json")
TRACE_ONLY = "`opscan trace` lists ops only (`opscan PATH` also scans the source)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", nargs="?", metavar="TARGET",
                        help="file.py:NAME, package.module:NAME, hf:PATH (config.json or its folder) or "
                        "timm:NAME; NAME is an nn.Module class or a factory. Default: the models in "
                        "[tool.opscan] of pyproject.toml")
    parser.add_argument("--mode", choices=MODES, default=None,
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


def configured(backend: str | None, db: str | None, need_models: bool = False) -> Config:
    """[tool.opscan] of the working directory with `--backend` / `--db` in place of its own, read
    only when a flag is not given or its models are needed (`need_models`).

    `opscan trace`, `opscan zoo` and `opscan PATH` so load the same release (the pipeline's
    `database` step): the flag, else the project's `backend` / `db`, else the newest TorchNeuron
    release of the shipped database.
    """
    from dataclasses import replace

    from opscan.config import Config

    if backend is not None and db is not None and not need_models:
        return Config(root=Path.cwd(), backend=backend, db=Path(db) if db else None)
    from opscan.config.checks import load_checked_config

    config = load_checked_config(Path.cwd())
    if backend is not None:
        config = replace(config, backend=backend)
    if db is not None:
        config = replace(config, db=Path(db) if db else None)
    return config


def _models(args: argparse.Namespace, config: Config) -> tuple[list, Path]:
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
    if not config.models:
        raise UsageError("no TARGET given and no [[tool.opscan.models]] in pyproject.toml; "
                         "e.g. opscan trace model.py:build")
    return [replace(model, **flags) for model in config.models], config.root


def run(args: argparse.Namespace) -> int:
    """Trace, assess (opscan/assess/assessment.py, as `opscan PATH` does), render, and exit 0 (complete) or 1
    (a trace stopped early; its partial list is shown)."""
    from opscan.assess import assess
    from opscan.commands.flags import isolation_from, render_report
    from opscan.pipeline import phases

    limits = isolation_from(args)
    config = configured(getattr(args, "backend", None), getattr(args, "db", None), need_models=not args.target)
    models, root = _models(args, config)
    # the pipeline's steps, as `opscan PATH` runs them: the release, loaded once (the device profile
    # of the trace, then coverage and caveats), and each model traced in its child
    release = phases.database(config)
    profile = release.profile()
    extra = {"device": args.device, **({"fsdp": args.fsdp} if getattr(args, "fsdp", None) is not None else {}),
             **({"steps": args.steps} if getattr(args, "steps", None) else {})}
    traces = tuple(phases.trace(model, root, profile, limits, **extra) for model in models)
    report = assess(Draft(root=str(Path.cwd()), tool_version=__version__, traces=traces,
                          source=NotChecked(TRACE_ONLY)), release)
    render_report(report, args.format, args.output)   # the one report writer (commands/flags.py)
    return 0 if all(t.complete for t in traces) else 1
