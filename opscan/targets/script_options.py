"""A constructor's options object built from the project's own argparse parser (child side).

NOTE [options from the training script's parser]
Research models are often built as `Model(opt)`, `Net(args)`, `LSTMLM(params)`, where `opt` is the
Namespace the training script's argparse returns (`opt = opts.parse_opt()`, `args =
parser.parse_args()`), sometimes with a few fields the script sets from its data before the
constructor (`opt.vocab_size = loader.vocab_size`). When no config file of the repository holds
what the constructor reads from such an argument (config_files.py), the parsers of the project are
read, statically (never run): each `add_argument(...)` call of a file gives an option (its `dest`,
its literal `default`, `store_true` -> False, `store_false` -> True, a string default passed through
the option's `type` when that is `int`/`float`; a default that is not a literal is None). The parser
holding the most of what the constructor reads wins (then one in an options module: `opts.py`,
`options.py`, a `parse_opt()` / `get_args()`; then the file name). The object given is an
`argparse.Namespace` that also answers `opt["key"]` and `.get()` (a dict built from the options
reads the same: `params["rnn_size"]`); a read the parser lacks is filled by its name
(recipes.named_value: `vocab_size`, `seq_length`; a `use_*` flag False) and named in the report
as chosen; a read that neither gives leaves the argument to the other ways of filling it.
When the README (README.md, .rst, .txt at the root) writes a command `python FILE ...` of the
parser's own file, its arguments are applied as argparse would apply them (options of the file's
`add_argument` calls with their `type`, `action` and `nargs`; unknown ones ignored) and the words say
so; a required option the command does not give is None.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import re
import shlex
from pathlib import Path

from opscan.index import walk
from opscan.targets.config_files import reads
from opscan.targets.recipes import OPTIONS_ARG, named_value

WORDS = "the argparse defaults of"   # in the words of an options object found here (repository.py notes them)
MAX_FILES = 400
MAX_BYTES = 1 << 20
_OPTIONS_FILE = re.compile(r"(^|_)(opts|options|args|arguments|flags|config|parser)$", re.IGNORECASE)
_OPTIONS_FUNCTION = re.compile(r"^(parse_opts?|get_args|parse_args|get_parser|get_opts?|arg_parse|options|"
                               r"build_parser|make_parser|argparser)$")
_SKIP_DIRS = {"tests", "test", ".github", "docs", "node_modules"}
_CACHE: dict[Path, list[tuple[str, dict, bool, str]]] = {}
_README = ("README.md", "README.rst", "README.txt", "README", "readme.md")
_COMMAND = re.compile(r"python[0-9.]*\s+(?:-u\s+)?(\S+\.py)(?=\s|$)(.*)")
_TYPES = {"int": int, "float": float, "str": str}
_ACTIONS = ("store", "store_true", "store_false", "append", "count")


class Options(argparse.Namespace):
    """The parser's Namespace, also read as a mapping (`opt["rnn_size"]`, `opt.get("dropout", 0)`)."""

    def __getitem__(self, key):
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def __setitem__(self, key, value) -> None:
        setattr(self, key, value)

    def get(self, key, default=None):
        return getattr(self, key, default)

    def keys(self):
        return vars(self).keys()

    def items(self):
        return vars(self).items()


def value_for(fn, name: str, root: Path | None):
    """(Options, words) for `fn`'s argument `name` from the project's argparse parsers, else None."""
    if root is None or not OPTIONS_ARG.match(name):
        return None
    required, optional = reads(fn, name)
    wanted = {p[0] for p in required}
    if not wanted:
        return None
    best = None
    for label, options, module_like, applied in parsers(Path(root)):
        held = len(wanted & options.keys())
        if not held:
            continue
        key = (-held, not module_like, label)
        if best is None or key < best[0]:
            best = (key, label, options, applied)
    if best is None:
        return None
    _, label, options, applied = best
    values = dict(options)
    chosen = []
    for field in sorted(wanted - values.keys()):
        value = _by_name(field)
        if value is None:
            return None
        values[field] = value
        chosen.append(f"{field}={value!r}")
    words = f"{name} from {WORDS} {label} ({len(options)} options{applied}"
    words += f"; not among them, chosen by name: {', '.join(chosen)})" if chosen else ")"
    return Options(**values), words


def _by_name(field: str):
    if field.startswith(("use_", "is_", "no_", "with_")) or field in ("cuda", "gpu", "fp16", "amp"):
        return False
    return named_value(field)


def parsers(root: Path) -> list[tuple[str, dict, bool, str]]:
    """(label, {dest: value}, is an options module, words on the README command applied) of every
    file of `root` that adds arguments."""
    root = root.resolve()
    if root in _CACHE:
        return _CACHE[root]

    def keep(path: Path) -> bool:
        return path.suffix == ".py" and not set(path.relative_to(root).parts[:-1]) & _SKIP_DIRS

    found = []
    for count, path in enumerate(walk.files(root, keep, limit=None)):
        if count >= MAX_FILES:
            break
        try:
            if path.stat().st_size > MAX_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            if "add_argument" not in text:
                continue
            tree = ast.parse(text)
        except (OSError, SyntaxError, ValueError):
            continue
        options = options_of(tree)
        if options:
            label = path.relative_to(root).as_posix()
            module_like = bool(_OPTIONS_FILE.search(path.stem)) or any(
                isinstance(n, ast.FunctionDef) and _OPTIONS_FUNCTION.match(n.name) for n in tree.body)
            applied = ""
            command = readme_command(root, label)
            if command is not None:
                options, changed = apply(tree, options, command[1])
                applied = f"; with the arguments of the README's `{command[0]}`" if changed else ""
            found.append((label, options, module_like, applied))
    _CACHE[root] = found
    return found


def options_of(tree: ast.AST) -> dict:
    """{dest: default} of the `add_argument(...)` calls of a parsed file (NOTE [options from the
    training script's parser])."""
    return {dest: _default(keywords) for dest, _, keywords in _calls(tree)}


def _calls(tree: ast.AST) -> list[tuple[str, list[str], dict]]:
    """(dest, flags, keywords) of each `add_argument(...)` call, the first of each dest."""
    out, seen = [], set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        dest = _literal(keywords.get("dest"))
        if not isinstance(dest, str):
            longs = [f for f in flags if f.startswith("--")] or [f for f in flags if f.startswith("-")] or flags
            if not longs:
                continue
            dest = longs[0].lstrip("-").replace("-", "_")
        if not dest.isidentifier() or dest in seen:
            continue
        seen.add(dest)
        out.append((dest, flags, keywords))
    return out


def readme_command(root: Path, label: str) -> tuple[str, list[str]] | None:
    """(the command, its arguments) of the first `python LABEL ...` line of the root README, else None."""
    for name in _README:
        try:
            text = (root / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.replace("\\\n", " ").splitlines():
            found = _COMMAND.search(line)
            if found is None or found.group(1).removeprefix("./") != label:
                continue
            rest = found.group(2).split("`")[0].split("|")[0].split("&&")[0].split(";")[0]
            try:
                args = shlex.split(rest)
            except ValueError:
                continue
            return shlex.join(["python", label, *args]), args
    return None


def apply(tree: ast.AST, options: dict, args: list[str]) -> tuple[dict, list[str]]:
    """`options` with `args` parsed as the file's parser parses them (its flagged options only);
    the dests the arguments changed."""
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False, allow_abbrev=False)
    for dest, flags, keywords in _calls(tree):
        if not flags or not all(f.startswith("-") for f in flags):
            continue
        kwargs: dict = {"dest": dest, "default": options.get(dest)}
        action = _literal(keywords.get("action"))
        if isinstance(action, str) and action in _ACTIONS:
            kwargs["action"] = action
        stores = kwargs.get("action", "store") in ("store", "append")
        kind = keywords.get("type")
        if stores and isinstance(kind, ast.Name) and kind.id in _TYPES:
            kwargs["type"] = _TYPES[kind.id]
        nargs = _literal(keywords.get("nargs"))
        if stores and (nargs in ("?", "*", "+") or isinstance(nargs, int)):
            kwargs["nargs"] = nargs
        try:
            parser.add_argument(*flags, **kwargs)
        except (argparse.ArgumentError, ValueError, TypeError):
            continue
    try:
        with contextlib.redirect_stderr(io.StringIO()):   # argparse's own messages: not the report's
            known, _ = parser.parse_known_args(args)
    except (argparse.ArgumentError, SystemExit, ValueError, TypeError):
        return options, []
    values = vars(known)
    changed = [d for d, v in values.items() if v != options.get(d)]
    return {**options, **values}, changed


def _default(keywords: dict):
    action = _literal(keywords.get("action"))
    if "default" not in keywords:
        return {"store_true": False, "store_false": True}.get(action) if isinstance(action, str) else None
    value = _literal(keywords["default"])
    kind = keywords.get("type")
    if isinstance(value, str) and isinstance(kind, ast.Name) and kind.id in ("int", "float"):
        try:
            return int(value) if kind.id == "int" else float(value)
        except ValueError:
            return value
    return value


def _literal(node):
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
