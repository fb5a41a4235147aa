"""Project configuration: `[tool.opscan]` in pyproject.toml or opscan.toml, strictly checked.

`load_config(start)` walks up from `start` to the first folder holding an `opscan.toml` (its
top-level keys are the table) or a `pyproject.toml` with a `[tool.opscan]` table; with neither,
the defaults apply and the project root is `start`. Unknown keys, wrong types and bad values are
all collected and raised together as one ConfigError naming the file and each key. Paths in the
file are relative to the file's folder. Command-line flags override the file through
`Config.override(...)`. Every key is documented in docs/config.md.

This module reads data: it imports neither the coverage database nor the scan. What only they can
judge (does `backend` name a release, do `select` / `ignore` name rules) is checked by the caller,
which passes those checks to `load_config(start, checks)` (opscan/config_checks.py `CHECKS`), so
their problems are still reported with the file's own, all at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from opscan.config.toml_file import ConfigProblem, read_file
from opscan.errors import ConfigError
from opscan.records import MODES, Mode, TrainStep, Target
from opscan.plan.cost import CostConfig   # the cost model belongs to the plan; re-exported here

FAIL_ON: dict[str, str] = {
    "error": "any unguarded finding of severity error, or any op the backend does not support "
             "(exactly what makes the verdict `blocked`)",
    "warning": "any finding of severity warning or error, guarded ones included (and unsupported ops)",
    "fallback": "any traced op that runs, or may run, on the CPU (cpu-fallback, device-or-cpu)",
    "unknown": "any traced op whose status on the backend is unknown",
    "custom-kernel": "any custom kernel (source finding of category custom-kernel, or custom op)",
    "not-ready": "any verdict other than `ready` where ops were checked (likely, unchecked, fallback, "
                 "unknown, blocked); a source-only run (--no-trace, `opscan scan`, the pre-commit hook) "
                 "is judged on its source: it fails unless the source holds nothing open",
}
DEFAULT_BACKEND = ""   # "" = the newest TorchNeuron release in the coverage database


@dataclass(frozen=True)
class ModelConfig:
    """One model to trace; the fields are the options of `opscan trace` (see docs/trace.md)."""

    target: Target                   # file.py:NAME, package.module:NAME, hf:PATH, timm:NAME or pt2:FILE
    inputs: tuple[str, ...] = ()     # example inputs, `NAME:DTYPE[SHAPE]` (e.g. "idx:int64[2,64]")
    mode: str = "train"              # train | inference | both
    batch: int | None = None         # batch size for generated inputs
    seq_len: int | None = None       # sequence length for generated inputs
    optimizer: str = "adamw"         # optimizer stepped in train mode
    optimizer_impl: str = ""         # "" = as on the real device; foreach | fused | for-loop
    amp: str = ""                    # "" = no autocast; e.g. "bfloat16"
    trust_remote_code: bool = False  # let an hf: folder with auto_map run its own code (in the trace child)
    # the real training step's size, when the traced model or inputs are smaller (scales the cost
    # of CPU fallbacks back: NOTE [fallback scaling] in opscan/assess.py); None = as traced
    real_layers: int | None = None
    real_batch: int | None = None
    real_seq_len: int | None = None
    real_hidden: int | None = None   # the real model's width (hidden size), when built narrower
    # Not configurable: how the repository calls the model classes of a `repo:` target's file, read by
    # the model search through the run's project index (opscan/targets/discovery.py `call_site_table`)
    # and handed to the trace's child as data: ((file, class), call_sites.Usage or None) pairs.
    call_sites: tuple = ()
    # Not configurable either: the training step the project's training script constructs (loss,
    # optimizer, AMP, clipping; opscan/targets/train_step.py), read statically for a model found with
    # no configuration and traced in place of the stand-in parts (a records.TrainStep, or None).
    step: TrainStep | None = None
    # Not configurable either: the model a run of the training command built before it stopped, with
    # its arguments as data ((file, class, arguments JSON); NOTE [the model the command built] in
    # opscan/trace/run/built_models.py), built with them in the child.
    built_with: tuple[str, ...] = ()

    def __post_init__(self) -> None:   # NOTE [targets parsed once]: a string given here is parsed (ValueError)
        object.__setattr__(self, "target", Target.parse(self.target))


@dataclass(frozen=True)
class ParityConfig:
    """Settings of `opscan parity` (read by the workflow commands)."""

    # No default tolerance on purpose: it must be decided before looking at the numbers.
    tolerance: float | None = None       # absolute tolerance on |baseline - candidate| loss
    rel_tolerance: float | None = None   # relative tolerance (times |baseline|)
    steps: tuple[int, ...] = ()          # steps to compare; () = every step in both logs
    target_device: str = "neuron"
    fallback_command: str = ""     # command run when the target device is not present


@dataclass(frozen=True)
class Config:
    """The effective configuration of one run."""

    root: Path                              # the project root (folder of the config file, or start)
    path: Path | None = None                # the file it came from; None = defaults
    include: tuple[str, ...] = ()           # glob patterns; () = every .py / .ipynb file
    exclude: tuple[str, ...] = ()           # glob patterns added to the built-in excludes
    select: tuple[str, ...] = ()            # rule codes or prefixes; () = all rules
    ignore: tuple[str, ...] = ()            # rule codes or prefixes to drop
    backend: str = DEFAULT_BACKEND          # release spec in the coverage db ("2.33.0", "torchneuron==2.33.0")
    db: Path | None = None                  # a coverage_db folder replacing the shipped one
    models: tuple[ModelConfig, ...] = ()
    fail_on: tuple[str, ...] = ("error",)
    allow_unchecked: bool = False           # a model given but not checkable does not exit 2 (source gate alone)
    # the project's training command, run for its step instead of the one found by reading ("" = found;
    # opscan/targets/entry/), and whether a stand-in step may be `ready` (NOTE [the step answered for])
    entry: str = ""
    accept_stand_in_step: bool = False
    baseline: Path | None = None
    extra_rules: tuple[Path, ...] = ()      # folders of additional rule files
    parity: ParityConfig = field(default_factory=ParityConfig)
    cost: CostConfig = field(default_factory=CostConfig)
    # configuration files met that could not be read (NOTE [unreadable config files])
    problems: tuple[ConfigProblem, ...] = ()

    def override(self, **changes: Any) -> "Config":
        """A copy with the given fields replaced; `None` values leave a field as it is."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def parse_fail_on(values: list[str] | tuple[str, ...] | str, where: str = "--fail-on") -> tuple[str, ...]:
    """Split comma lists, check each value; raises ConfigError on an unknown one."""
    items = [values] if isinstance(values, str) else list(values)
    out: list[str] = []
    for item in items:
        for part in str(item).split(","):
            part = part.strip()
            if not part:
                continue
            if part not in FAIL_ON:
                raise ConfigError(f"{where}: unknown value {part!r} (choose from {', '.join(FAIL_ON)})")
            if part not in out:
                out.append(part)
    return tuple(out)


# A check of the values read from one file, run with the file's own checks: values (the keys of
# Config, e.g. "backend", "db", "select", "extra_rules") -> (table key, problem) pairs.
Check = Callable[[dict[str, Any]], Iterable[tuple[str, str]]]


# --- loading -----------------------------------------------------------------------------------

# NOTE [unreadable config files]
# The walk up from the scanned folder reads every pyproject.toml it meets until one holds
# [tool.opscan] (or an opscan.toml). A file it cannot read (invalid TOML, not UTF-8, no permission)
# is a ConfigProblem, never a stop of the whole scan:
#   - not opscan's own (its text spells no `tool.opscan`): a pyproject of the project or of a folder
#     above it. It is reported as one located OPS000 finding and the walk goes on upward;
#   - opscan's own (an opscan.toml, or a pyproject whose text spells `tool.opscan`): the team's
#     settings (fail-on, select, ...) cannot be applied. The commands that report (`opscan PATH`,
#     `opscan scan`: `tolerant=True`) run with the defaults and report it as OPS005, an error that
#     blocks, so the gate fails rather than drop a team's `fail-on` silently; every other command
#     stops with exit 2 as before (ConfigError).
# A file that reads but holds wrong keys or values is a ConfigError (exit 2) in every command.
def locate_config(start: Path) -> tuple[Path | None, dict, tuple[ConfigProblem, ...]]:
    """The first config file at or above `start`, its opscan table ({} when none), and the
    configuration files met on the way that could not be read (NOTE [unreadable config files]).
    An unreadable file of opscan's own ends the walk: (that file, {}, problems)."""
    start = start.resolve()
    folder = start if start.is_dir() else start.parent
    problems: list[ConfigProblem] = []
    for candidate in (folder, *folder.parents):
        own = candidate / "opscan.toml"
        if own.is_file():
            data = read_file(own)
            if isinstance(data, ConfigProblem):
                return own, {}, (*problems, data)
            return own, data, tuple(problems)
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file():
            data = read_file(pyproject)
            if isinstance(data, ConfigProblem):
                problems.append(data)
                if data.own:
                    return pyproject, {}, tuple(problems)
                continue
            tool = data.get("tool")
            table = tool.get("opscan") if isinstance(tool, dict) else None
            if table is not None:
                if not isinstance(table, dict):
                    raise ConfigError("[tool.opscan] must be a table", path=str(pyproject))
                return pyproject, table, tuple(problems)
    return None, {}, tuple(problems)


def find_config(start: Path) -> tuple[Path | None, dict]:
    """The first config file at or above `start`, and its opscan table ({} when none). Raises
    ConfigError when opscan's own file cannot be read; other unreadable files are passed over."""
    path, table, problems = locate_config(start)
    _raise_own(problems)
    return path, table


def _raise_own(problems: tuple[ConfigProblem, ...]) -> None:
    for problem in problems:
        if problem.own:
            raise ConfigError(problem.message, path=str(problem.path), line=problem.line)


def load_config(start: Path, checks: Sequence[Check] = (), tolerant: bool = False) -> Config:
    """The configuration that applies to `start` (a file or folder). Raises ConfigError.

    `checks`: the caller's checks of the values (opscan/config_checks.py), their problems reported
    with the file's own. `tolerant`: an unreadable file of opscan's own gives the defaults, with the
    problem in `Config.problems`, instead of raising (NOTE [unreadable config files])."""
    start = Path(start)
    path, table, problems = locate_config(start)
    if not tolerant:
        _raise_own(problems)
    if path is None or any(p.own for p in problems):
        here = start.resolve()
        root = path.parent.resolve() if path is not None else here if here.is_dir() else here.parent
        return Config(root=root, problems=problems)
    return replace(parse_table(table, path, checks), problems=problems)


def parse_table(table: dict, path: Path, checks: Sequence[Check] = ()) -> Config:
    """Check and convert one opscan table read from `path`; every problem is reported at once."""
    checker = _Checker(path)
    prefix = "tool.opscan." if path.name == "pyproject.toml" else ""
    if not prefix and isinstance(table.get("tool"), dict) and "opscan" in table["tool"]:
        raise ConfigError("opscan.toml takes the keys at the top level, without a [tool.opscan] header",
                          path=str(path))
    base = path.parent.resolve()
    known = {
        "include", "exclude", "select", "ignore", "backend", "db", "models", "fail-on",
        "allow-unchecked", "baseline", "extra-rules", "parity", "cost", "entry", "accept-stand-in-step",
    }
    checker.unknown(table, known, prefix)
    values: dict[str, Any] = {}
    for key in ("include", "exclude", "select", "ignore"):
        if key in table:
            values[key] = checker.strings(table[key], prefix + key)
    if "backend" in table:
        values["backend"] = checker.string(table["backend"], prefix + "backend")
    for key, attr in (("db", "db"), ("baseline", "baseline")):
        if key in table:
            text = checker.string(table[key], prefix + key)
            if text:
                values[attr] = (base / text).resolve()
    if values.get("db") is not None and not values["db"].exists():
        checker.add(prefix + "db", f"{table['db']!r} does not exist (a release file or a folder of them)")
    if "allow-unchecked" in table:
        values["allow_unchecked"] = checker.boolean(table["allow-unchecked"], prefix + "allow-unchecked")
    if "accept-stand-in-step" in table:
        values["accept_stand_in_step"] = checker.boolean(table["accept-stand-in-step"], prefix + "accept-stand-in-step")
    if "entry" in table:
        values["entry"] = checker.string(table["entry"], prefix + "entry").strip()
        if isinstance(table["entry"], str) and not values["entry"]:
            checker.add(prefix + "entry", "an empty command (write the training command, e.g. \"python train.py\")")
    if "extra-rules" in table:
        folders = checker.strings(table["extra-rules"], prefix + "extra-rules")
        resolved = []
        for folder in folders:
            full = (base / folder).resolve()
            if not full.is_dir():
                checker.add(prefix + "extra-rules", f"folder {folder!r} does not exist")
            else:
                resolved.append(full)
        values["extra_rules"] = tuple(resolved)
    if "fail-on" in table:
        items = checker.strings(table["fail-on"], prefix + "fail-on")
        bad = [i for i in items if i not in FAIL_ON]
        if bad:
            checker.add(prefix + "fail-on", f"unknown value(s) {', '.join(map(repr, bad))} "
                        f"(choose from {', '.join(FAIL_ON)})")
        else:
            values["fail_on"] = items
    if "models" in table:
        values["models"] = _models(table["models"], prefix + "models", checker)
    if "parity" in table:
        values["parity"] = _parity(table["parity"], prefix + "parity", checker)
    if "cost" in table:
        values["cost"] = _section(table["cost"], prefix + "cost", CostConfig, checker)
    for check in checks:   # the caller's (the release, the rules): every problem in one run
        for key, problem in check(values):
            checker.add(prefix + key, problem)
    checker.raise_if_any()
    return Config(root=base, path=path.resolve(), **values)


def _models(raw: Any, where: str, checker: "_Checker") -> tuple[ModelConfig, ...]:
    if isinstance(raw, dict):   # [tool.opscan.models] with one model: accept as a list of one
        raw = [raw]
    if not isinstance(raw, list):
        checker.add(where, "must be an array of tables ([[tool.opscan.models]])")
        return ()
    known = {"target", "inputs", "mode", "batch", "seq-len", "optimizer", "optimizer-impl", "amp",
             "trust-remote-code", "real-layers", "real-batch", "real-seq-len",
             "real-hidden"}
    models = []
    for index, item in enumerate(raw):
        here = f"{where}[{index}]"
        if not isinstance(item, dict):
            checker.add(here, "must be a table with at least `target`")
            continue
        checker.unknown(item, known, here + ".")
        if "target" not in item:
            checker.add(here, "missing required key `target` (e.g. \"model.py:build\")")
            continue
        text = checker.string(item["target"], here + ".target")
        if not isinstance(item["target"], str):
            continue
        try:   # the one parser (NOTE [targets parsed once])
            target = Target.parse(text)
        except ValueError as exc:
            checker.add(here + ".target", str(exc))
            continue
        mode = checker.string(item.get("mode", Mode.TRAIN), here + ".mode")
        if mode not in MODES:
            checker.add(here + ".mode", f"unknown mode {mode!r} (choose from {', '.join(MODES)})")
        models.append(ModelConfig(
            target=target,
            inputs=checker.strings(item.get("inputs", []), here + ".inputs"),
            mode=mode,
            batch=checker.positive_int(item.get("batch"), here + ".batch"),
            seq_len=checker.positive_int(item.get("seq-len"), here + ".seq-len"),
            optimizer=checker.string(item.get("optimizer", "adamw"), here + ".optimizer"),
            optimizer_impl=checker.string(item.get("optimizer-impl", ""), here + ".optimizer-impl"),
            amp=checker.string(item.get("amp", ""), here + ".amp"),
            trust_remote_code=checker.boolean(item.get("trust-remote-code", False), here + ".trust-remote-code"),
            real_layers=checker.positive_int(item.get("real-layers"), here + ".real-layers"),
            real_batch=checker.positive_int(item.get("real-batch"), here + ".real-batch"),
            real_seq_len=checker.positive_int(item.get("real-seq-len"), here + ".real-seq-len"),
            real_hidden=checker.positive_int(item.get("real-hidden"), here + ".real-hidden"),
        ))
    return tuple(models)


def _parity(raw: Any, where: str, checker: "_Checker") -> ParityConfig:
    """The parity table: optional tolerances (no defaults), a list of steps, two strings."""
    if not isinstance(raw, dict):
        checker.add(where, "must be a table")
        return ParityConfig()
    checker.unknown(raw, {"tolerance", "rel-tolerance", "steps", "target-device", "fallback-command"},
                    where + ".")
    values: dict[str, Any] = {}
    for key in ("tolerance", "rel-tolerance"):
        if key not in raw:
            continue
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            checker.add(f"{where}.{key}", f"must be a number, not {type(value).__name__}")
        elif value < 0:
            checker.add(f"{where}.{key}", "must not be negative")
        else:
            values[key.replace("-", "_")] = float(value)
    if "steps" in raw:
        steps = raw["steps"]
        if (not isinstance(steps, list) or not steps
                or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in steps)):
            checker.add(f"{where}.steps", "must be a non-empty list of step numbers (integers >= 0)")
        else:
            values["steps"] = tuple(sorted(set(steps)))
    for key in ("target-device", "fallback-command"):
        if key in raw:
            text = checker.string(raw[key], f"{where}.{key}")
            if text is not None:
                values[key.replace("-", "_")] = text
    return ParityConfig(**values)


def _section(raw: Any, where: str, cls: type, checker: "_Checker"):
    if not isinstance(raw, dict):
        checker.add(where, "must be a table")
        return cls()
    spec = {f.name.replace("_", "-"): f for f in fields(cls)}
    checker.unknown(raw, set(spec), where + ".")
    values = {}
    for key, value in raw.items():
        if key not in spec:
            continue
        default = getattr(cls(), spec[key].name)
        here = f"{where}.{key}"
        if isinstance(default, str):
            values[spec[key].name] = checker.string(value, here)
        elif isinstance(default, int) and not isinstance(default, bool) and not isinstance(default, float):
            number = checker.positive_int(value, here)
            if number is not None:
                values[spec[key].name] = number
        else:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                checker.add(here, f"must be a number, not {type(value).__name__}")
            elif value < 0:
                checker.add(here, "must not be negative")
            else:
                values[spec[key].name] = float(value)
    return cls(**values)


class _Checker:
    """Collects every problem in one file, so the user sees them all at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.problems: list[str] = []

    def add(self, key: str, message: str) -> None:
        self.problems.append(f"{self.path}: {key}: {message}")

    def unknown(self, table: dict, known: set[str], prefix: str) -> None:
        for key in sorted(table):
            if key not in known:
                hint = ""
                underscored = key.replace("_", "-")
                if underscored in known:
                    hint = f" (did you mean {underscored!r}?)"
                self.add(prefix + key, f"unknown key{hint}; known keys: {', '.join(sorted(known))}")

    def string(self, value: Any, key: str) -> str:
        if not isinstance(value, str):
            self.add(key, f"must be a string, not {type(value).__name__}")
            return ""
        return value

    def boolean(self, value: Any, key: str) -> bool:
        if not isinstance(value, bool):
            self.add(key, f"must be true or false, not {value!r}")
            return False
        return value

    def strings(self, value: Any, key: str) -> tuple[str, ...]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.add(key, "must be a list of strings")
            return ()
        return tuple(value)

    def positive_int(self, value: Any, key: str) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            self.add(key, f"must be a positive integer, not {value!r}")
            return None
        return value

    def raise_if_any(self) -> None:
        if self.problems:
            count = len(self.problems)
            raise ConfigError(f"{count} problem{'s' if count > 1 else ''} in the opscan configuration",
                              path=str(self.path), problems=tuple(self.problems))
