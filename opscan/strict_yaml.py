"""Strict YAML for opscan's own data files (coverage_db releases, rule files): the safe loader,
no duplicate keys, and the line of every mapping and key, so errors can name file and line."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

# PyYAML is imported where a document is parsed: a warm scan answers its YAML from the memo of
# parsed documents (NOTE [rules memo] in scan/rules_memo.py) and never imports it.


class YamlProblem(Exception):
    """A problem found while reading; callers turn it into their own error with the file path."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


class LineMap(dict):
    """A YAML mapping that remembers its own line and each key's line."""

    line: int = 0
    key_lines: dict


class LineList(list):
    """A YAML sequence that remembers its line."""

    line: int = 0


def _strict_loader() -> Any:
    """SafeLoader (libyaml's where installed) that rejects duplicate mapping keys and records line
    numbers: `StrictLoader`, built on first use."""
    return _build_strict_loader()


@lru_cache(maxsize=1)
def _build_strict_loader() -> Any:
    import yaml

    class StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        """SafeLoader that rejects duplicate mapping keys and records line numbers."""

    def _construct_map(loader: Any, node: yaml.MappingNode) -> LineMap:
        loader.flatten_mapping(node)
        out = LineMap()
        out.line = node.start_mark.line + 1
        out.key_lines = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise YamlProblem(f"mapping key must be a plain value, got {type(key).__name__}", line)
            if key in out:
                raise YamlProblem(f"duplicate key {key!r} (first at line {out.key_lines[key]})", line)
            out[key] = loader.construct_object(value_node, deep=True)
            out.key_lines[key] = line
        return out

    def _construct_seq(loader: Any, node: yaml.SequenceNode) -> LineList:
        out = LineList(loader.construct_object(child, deep=True) for child in node.value)
        out.line = node.start_mark.line + 1
        return out

    StrictLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)
    StrictLoader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)
    return StrictLoader


def __getattr__(name: str) -> Any:   # PEP 562: StrictLoader and FastSafeLoader, with PyYAML imported when asked
    if name == "StrictLoader":
        return _strict_loader()
    if name == "FastSafeLoader":
        import yaml

        return getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_yaml(text: str):
    """Parse YAML safely (no tags beyond the safe set), rejecting duplicate keys; raises YamlProblem."""
    import yaml

    StrictLoader = _strict_loader()
    try:
        return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - StrictLoader is a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise YamlProblem(f"not valid YAML: {exc.problem or exc}", mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise YamlProblem(f"not valid YAML: {exc}", None) from None


def line_of(mapping, key=None) -> int | None:
    """The line of `key` in `mapping` (or of the mapping itself); None when unknown."""
    if key is not None and isinstance(mapping, LineMap):
        return mapping.key_lines.get(key, mapping.line)
    return getattr(mapping, "line", None)


def check_keys(mapping, spec: dict[str, bool], what: str, line: int | None) -> None:
    """`mapping` is a mapping with no key outside `spec` (key -> required) and every required key;
    raises YamlProblem naming `what` and the line."""
    if not isinstance(mapping, dict):
        raise YamlProblem(f"{what} must be a mapping", line)
    for key in mapping:
        if key not in spec:
            raise YamlProblem(f"unknown key {key!r} in {what} (allowed: {', '.join(spec)})", line_of(mapping, key))
    for key, required in spec.items():
        if required and key not in mapping:
            raise YamlProblem(f"missing key {key!r} in {what}", line_of(mapping))


def load_checked(path, build, error, unreadable: str, *, memo: bool = False):
    """`build(data)` of the strict YAML file at `path`. A file that cannot be read, or whose data
    parse_yaml or `build` refuses (YamlProblem), raises `error(message, path[, line])`; an
    unreadable file's message starts with `unreadable`. `memo`: a shipped file whose parsed document
    the run's memo may hold (NOTE [rules memo]; a document from it that `build` refuses is parsed
    again, so the error names its line)."""
    from opscan.scan.rules_memo import active

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{unreadable}: {exc}", str(path)) from None
    store = active() if memo else None
    if store is not None:
        remembered = store.get(text.encode("utf-8"))
        if remembered is not None:
            try:
                return build(remembered)
            except (YamlProblem, LookupError, TypeError, ValueError, AttributeError):
                pass
    try:
        data = parse_yaml(text)
        built = build(data)
    except YamlProblem as exc:
        raise error(str(exc), str(path), exc.line) from None
    if store is not None:
        store.put(text.encode("utf-8"), data, save=True)
    return built


def shipped_data(text: str):
    """A YAML document of opscan's own shipped tables (no line numbers needed), from the run's memo
    of parsed documents (NOTE [rules memo]) or read by the safe loader in C where PyYAML has it: the
    pure-Python one took ~0.3 s of every scan for the table of packages that constrain torch (issue
    40's warm scan)."""
    from opscan.scan.rules_memo import active

    store = active()
    if store is not None:
        remembered = store.get(text.encode("utf-8"))
        if remembered is not None:
            return remembered
    import yaml

    FastSafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)   # libyaml's safe loader where installed
    doc = yaml.load(text, Loader=FastSafeLoader)  # noqa: S506 - a safe loader (SafeLoader or CSafeLoader)
    if store is not None:
        store.put(text.encode("utf-8"), doc, save=True)
    return doc


def safe_data(text: str):
    """`yaml.safe_load(text)` (PyYAML's errors included), from the run's memo of parsed documents
    when it holds `text` (NOTE [rules memo]): the release files' heads a scan reads every run."""
    from opscan.scan.rules_memo import active

    store = active()
    if store is not None:
        remembered = store.get(text.encode("utf-8"))
        if remembered is not None:
            return remembered
    import yaml

    doc = yaml.safe_load(text)
    if store is not None:
        store.put(text.encode("utf-8"), doc, save=True)
    return doc


def yaml_error() -> type[Exception]:
    """PyYAML's base error, for an `except` clause (evaluated only when something was raised, so
    PyYAML is imported then, if the parse has not done it)."""
    import yaml

    return yaml.YAMLError
