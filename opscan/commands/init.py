"""`opscan init PATH`: find the project's models by reading it, and add them to its configuration.

Candidates come from opscan/targets/discovery.py (read, not run). When none is traceable as it is, the
ways to build the repository's model with no configuration (`repo:` targets) are tried, each traced
once in the contained child as `opscan REPO` does, and the ones that worked are written. The `[[tool.opscan.models]]`
blocks are appended to the file that holds the project's opscan configuration (pyproject.toml, or
opscan.toml; a new opscan.toml when the project has neither): existing text is kept byte for byte,
targets already configured are not added again, and the new text is parsed before it is written.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

from opscan.targets.recipes import REPO_KINDS
from opscan.records import CandidateKind, Target, TargetKind

HELP = ("find the models of PATH and add them to [[tool.opscan.models]]; when none can be traced as it is, "
        "tries to build them, which runs project code in a contained child process (--no-build: only read)")
MARK = "# Models found by `opscan init` (docs/check.md). Remove the ones you do not want traced."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of `opscan init`."""
    parser.add_argument("path", nargs="?", default=".", help="project folder (default: .)")
    parser.add_argument("--dry-run", action="store_true", help="print the lines; write nothing")
    parser.add_argument("--no-build", action="store_true",
                        help="only read the project: do not try to build its models (repo: targets)")
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="propose model folders whose config.json needs remote code (auto_map) too")
    from opscan.commands.flags import add_limit_arguments

    add_limit_arguments(parser)   # trying to build a repository's models runs its code, in a child process


def config_file(root: Path) -> Path:
    """Where the models go: the file holding [tool.opscan] (or opscan.toml) at or above root;
    else root's pyproject.toml; else a new root/opscan.toml."""
    from opscan.config import find_config

    found, _ = find_config(root)
    if found is not None:
        return found
    pyproject = root / "pyproject.toml"
    return pyproject if pyproject.is_file() else root / "opscan.toml"


def configured_targets(path: Path) -> set[str]:
    """Targets already in the file's models (nothing when the file does not exist)."""
    if not path.is_file():
        return set()
    data = _parse(path.read_bytes().decode("utf-8", errors="replace"), path)
    tool = data.get("tool") if path.name == "pyproject.toml" else None
    table = (tool.get("opscan", {}) if isinstance(tool, dict) else {}) if path.name == "pyproject.toml" else data
    models = table.get("models", []) if isinstance(table, dict) else []
    models = [models] if isinstance(models, dict) else models
    return {m.get("target") for m in models if isinstance(m, dict)} if isinstance(models, list) else set()


def insert(text: str, blocks: list[str], path: Path) -> str:
    """`text` with the blocks appended (same line endings); raises ConfigError if the result is not
    valid TOML or changes anything but the models (e.g. `models = [...]` written inline)."""
    from opscan.errors import ConfigError

    newline = "\r\n" if "\r\n" in text else "\n"
    body = "\n".join([MARK, *blocks]).replace("\n", newline)
    if not text or text.endswith(newline * 2):
        sep = ""
    else:
        sep = ("" if text.endswith(("\n", "\r")) else newline) + newline
    new = text + sep + body + ("" if body.endswith(newline) else newline)
    before = _parse(text, path) if text else {}
    after = _parse(new, path, written=True)
    if _without_models(before, path) != _without_models(after, path):
        raise ConfigError("adding the models would change other keys; add them by hand", path=str(path))
    return new


def _parse(text: str, path: Path, written: bool = False) -> dict:
    from opscan.errors import ConfigError

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        if written:
            raise ConfigError(f"cannot append [[models]] tables here ({exc}); `models` is probably "
                              "written inline: add the lines below by hand", path=str(path)) from None
        raise ConfigError(f"not valid TOML: {exc}", path=str(path)) from None


def _without_models(data: dict, path: Path) -> dict:
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
    if path.name == "pyproject.toml":
        tool = data.get("tool")
        if isinstance(tool, dict) and isinstance(tool.get("opscan"), dict):
            tool = dict(tool)
            tool["opscan"] = {k: v for k, v in tool["opscan"].items() if k != "models"}
            if not tool["opscan"]:
                del tool["opscan"]
            data["tool"] = tool
            if not tool:
                del data["tool"]
        return data
    return {k: v for k, v in data.items() if k != "models"}


def run(args: argparse.Namespace) -> int:
    """Print the candidates; append the traceable ones to the configuration (unless --dry-run)."""
    from opscan.pipeline.analyse import relative_root
    from opscan.targets.discovery import FACTORY_HINT, candidates, direct, toml_lines
    from opscan.errors import InputError
    from opscan.fsutil import atomic_write
    from opscan.records import ModelCandidate

    target = Path(args.path)
    if not target.is_dir():
        raise InputError("not a folder (opscan init takes the project folder)", path=str(target))
    root = target.resolve()
    own = direct(root, ".", trust_remote_code=args.trust_remote_code)
    if own is not None:   # the folder is a model itself: name it relative to the config file's folder
        found = [ModelCandidate(target=t, kind=CandidateKind.EXPORT if Target.parse(t).kind is TargetKind.EXPORT
                                 else CandidateKind.HF_FOLDER, path=".")
                 for t in own.traced] + list(own.refused)
    else:
        discovery = candidates(root, trust_remote_code=args.trust_remote_code, construct=True)
        found = [c for c in discovery.candidates if c.kind not in REPO_KINDS]
        if not any(c.ready for c in found) and not args.no_build:
            from opscan.commands.flags import isolation_from

            tried = _built(discovery, root, isolation_from(args))
            worked = {(c.path, c.line) for c in tried if c.ready}
            found = [c for c in found if (c.path, c.line) not in worked] + tried
    path = config_file(root)
    shown = relative_root(path)
    base = path.parent.resolve()
    ready = [_rebase(c, root, base) for c in found if c.ready]
    other = [c for c in found if not c.ready]
    hint = FACTORY_HINT + f" in {shown}"   # the next step, not `opscan init` again
    if path.name == "opscan.toml":   # its keys sit at the top level
        hint = hint.replace("[[tool.opscan.models]]", "[[models]]")
    if not found:
        print(f"opscan: no model found in {relative_root(root)}: no factory function (build, make, "
              "create_model, get_model, ...), nn.Module class, from_pretrained call on a local folder, "
              "model folder (config.json) or .pt2 file. To trace a model, " + hint, file=sys.stderr)
        return 1
    have = configured_targets(path)
    new = [c for c in ready if c.target not in have]
    blocks = [toml_lines(c, path.name) for c in new]
    if not ready:   # nothing to write: the whole answer on stderr, the outcome first
        print(f"opscan: no model that can be traced as it is; {len(other)} found that need a step first:",
              file=sys.stderr)
    for cand in other:
        where = f"{cand.path}:{cand.line}" if cand.line else cand.path
        print(f"opscan: not added: {where}: {cand.note.splitlines()[0]}", file=sys.stderr)
    if other:
        print("opscan: to trace those, " + hint, file=sys.stderr)
    if not ready:
        return 1
    if not new:
        print(f"opscan: {shown} already configures every model found ({', '.join(c.target for c in ready)})")
        return 0
    if args.dry_run:
        print(f"# add to {shown}:")
        print("\n".join(blocks), end="")
        return 0
    try:   # bytes, not read_text: line endings are kept as they are (CRLF stays CRLF)
        text = path.read_bytes().decode("utf-8") if path.is_file() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read it: {exc}", path=str(path)) from None
    atomic_write(path, insert(text, blocks, path).encode("utf-8"))
    print(f"opscan: added {len(new)} model(s) to {shown}:")
    print("\n".join(blocks), end="")
    return 0


def _built(discovery, root: Path, limits) -> list:
    """The `repo:` targets tried as `opscan REPO` tries them (traced in the contained child): the ones
    that worked are ready, with how they were found; the others carry their one-line reason."""
    from dataclasses import replace

    from opscan.config import ModelConfig
    from opscan.targets.tries import ZeroConfig
    from opscan.errors import TraceError
    from opscan.pipeline.phases import trace

    tries, out = ZeroConfig(discovery), []
    by_target = {c.target: c for c in discovery.candidates}
    for target in discovery.traced:
        if target not in by_target or by_target[target].kind not in REPO_KINDS or tries.done():
            continue
        try:
            got = tries.attempt(lambda: trace(ModelConfig(target=target), root, None, limits), target)
        except TraceError as exc:   # no torch, or the engine stopped: say so, try no further
            out.append(replace(by_target[target], ready=False, note=str(exc).splitlines()[0]))
            break
        cand = by_target[target]
        out.append(cand if got.traced else replace(cand, ready=False, note=got.stop))
    return out


def _rebase(cand, root: Path, base: Path):
    """Targets are relative to the config file's folder (docs/config.md), which may be above root."""
    from dataclasses import replace

    if base == root:
        return cand
    target = Target.parse(cand.target)
    kind, rest = target.kind, target.spec
    rel = root.relative_to(base).as_posix() if root.is_relative_to(base) else None
    if rel is None:
        return cand
    if target.kind.prefixed:
        return replace(cand, target=f"{kind}:{rel}/{rest}".replace("/./", "/").rstrip("/."))
    return replace(cand, target=f"{rel}/{cand.target}")
