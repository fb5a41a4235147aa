"""`opscan zoo SELECTION`: a Trainium-readiness matrix over whole model families (and `zoo diff`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from opscan.errors import UsageError
from opscan.records import MODES

HELP = "readiness matrix over model families (hf:causal-lm, hf:*, lists); `zoo diff OLD.json NEW.json`"
FORMATS = ("terminal", "json", "markdown", "html")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("selection", nargs="+", metavar="SELECTION",
                        help="hf:causal-lm, hf:* (every base architecture), hf:FAMILY, hf:MODEL_TYPE, "
                             "hf:PATH, timm:*, file.py:NAME, pkg.mod:NAME, @targets.txt; several allowed. "
                             "`diff OLD.json NEW.json` compares two runs")
    parser.add_argument("--mode", choices=MODES, default="train")
    from opscan.commands.flags import add_backend_argument, add_db_argument, retire_flag
    from opscan.commands.flags import add_limit_arguments
    from opscan.zoo.execution import ZOO_TIMEOUT

    add_backend_argument(parser)
    add_db_argument(parser)
    retire_flag(parser, "--db-file", "use --db FILE")
    parser.add_argument("--device", default="neuron", help="device the trace imitates (default neuron)")
    retire_flag(parser, "--profile-from-db",
                "the release's device profile is now always used (as by `opscan trace` and `opscan PATH`); drop it")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="models traced at once (default: CPU count)")
    add_limit_arguments(parser, default_timeout=ZOO_TIMEOUT, in_process=False)   # per model
    retire_flag(parser, "--memory", "use --max-memory SIZE, e.g. --max-memory 8G")
    parser.add_argument("--layers", type=int, default=None, metavar="N",
                        help="shrink hf default configs to N layers (op set kept; see docs/zoo.md)")
    parser.add_argument("--dtype", choices=("bfloat16", "float16", "float32"), default=None,
                        help="write this dtype into hf default configs (MoE grouped-mm kernels need bf16)")
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--seq-len", type=int, default=None)
    parser.add_argument("--cluster", metavar="ADDRESS", default=None,
                        help="Dask scheduler (tcp://host:8786), or 'local' for a loopback LocalCluster; "
                             "default $DASK_SCHEDULER_ADDRESS if set, else a local process pool")
    parser.add_argument("--cache-dir", type=Path, default=None, help="default ~/.cache/opscan/zoo")
    parser.add_argument("--no-cache", action="store_true", help="trace everything again, write nothing")
    parser.add_argument("--format", choices=FORMATS, default="terminal", help="what goes to stdout/--output")
    parser.add_argument("--output", "-o", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write JSON here")
    parser.add_argument("--markdown", type=Path, default=None, help="also write markdown here")
    parser.add_argument("--html", type=Path, default=None, help="also write the HTML page here")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--tracer", default=None, help=argparse.SUPPRESS)        # module:function
    parser.add_argument("--start-method", default="forkserver", choices=("forkserver", "fork", "spawn"),
                        help=argparse.SUPPRESS)


def _write(fmt: str, run, path: Path | None) -> None:
    import importlib

    from opscan.zoo.render import FORMATS as MODULES

    module = importlib.import_module(MODULES[fmt])
    if path is None:
        module.render(run, sys.stdout)
        return
    import io

    from opscan.commands.flags import write_output

    buffer = io.StringIO()
    module.render(run, buffer)
    write_output(buffer.getvalue(), str(path))   # the one writer of --output (atomic; commands/flags.py)


def _diff(args) -> int:
    from opscan.zoo import diff

    if len(args.selection) != 3:
        raise UsageError("usage: opscan zoo diff OLD.json NEW.json")
    old, new = diff.load(Path(args.selection[1])), diff.load(Path(args.selection[2]))
    changes = diff.diff(old, new)
    if args.format == "json":
        import json

        text = json.dumps(diff.to_dict(changes), indent=2, sort_keys=True) + "\n"
    else:
        text = diff.render_text(changes, old, new)
    from opscan.commands.flags import write_output

    write_output(text, str(args.output) if args.output else None)
    return 1 if any(c.kind.worse for c in changes) else 0


def _release(args):
    """The release of --backend / --db, each falling back to [tool.opscan] of the working directory,
    loaded by the pipeline's `database` step, as `opscan trace` and `opscan PATH` load it."""
    from opscan.commands.trace import configured
    from opscan.pipeline.phases import database

    return database(configured(args.backend, args.db))


def run(args) -> int:
    if args.selection[0] == "diff":
        return _diff(args)
    from dataclasses import replace

    from opscan.zoo.cache import Cache
    from opscan.zoo.cluster import address_from_env
    from opscan.commands.flags import limits_from
    from opscan.zoo.jobs import DEFAULT_TRACER
    from opscan.zoo.execution import run_zoo
    from opscan.zoo.selection import resolve

    if args.workers < 1 or (args.layers is not None and args.layers < 1):
        raise UsageError("--workers and --layers must be >= 1")
    limits = limits_from(args, start_method=args.start_method)
    cache = Cache(args.cache_dir, enabled=not args.no_cache)
    release = _release(args)
    configs = (cache.root / "configs").resolve()   # the default configs written here, read by each child
    targets = resolve(args.selection, configs, args.layers, args.dtype)
    limits = replace(limits, containment=replace(limits.containment,
                                                 readable=(*limits.containment.readable, str(configs))))
    options = {"mode": args.mode, "device": args.device}
    if args.batch:
        options["batch"] = args.batch
    if args.seq_len:
        options["seq_len"] = args.seq_len
    options["profile"] = release.profile()   # the release's device profile, as `opscan PATH` uses

    def progress(done: int, total: int, row) -> None:
        if not args.quiet:
            extra = f" ({row.error[:100]})" if row.error else ""
            print(f"[{done}/{total}] {row.name}: {row.verdict}{' (cached)' if row.cached else ''}{extra}",
                  file=sys.stderr, flush=True)

    result = run_zoo(targets, release, options=options, tracer=args.tracer or DEFAULT_TRACER,
                     workers=args.workers, limits=limits,
                     cache=cache, cluster=args.cluster or address_from_env(), progress=progress)
    result.meta["selection"] = list(args.selection)
    result.meta["layers"] = args.layers
    result.meta["dtype"] = args.dtype
    _write(args.format, result, args.output)
    for fmt, path in (("json", args.json), ("markdown", args.markdown), ("html", args.html)):
        if path is not None:
            _write(fmt, result, path)
    return 0
