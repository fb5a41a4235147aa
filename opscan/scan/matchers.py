"""Compiles rules into lookup tables for the visitor, and derives the text tokens of the pre-filter.

# NOTE [pre-filter tokens]
Every matcher needs some literal text to be present in a file before it can fire: a string matcher
needs a literal of its regular expression ("cuda", "nccl"), a name matcher the last literal
component of its pattern ("cuda" for `torch.cuda.*`, even when reached through an alias, because
the alias' own import line spells it), an import matcher the module's last component, and so on.
A file containing none of the tokens within their bounds (NOTE [pre-filter bounds], tokens.py)
is never parsed (NOTE [pre-check], file_scan.py); inside a parsed file only statements whose lines
contain a token within its bounds (or an import, or an alias, constant or kernel name bound to
one) are visited. A matcher whose regular expression has no literal of 3+ characters disables
the pre-filter (always active); a `member` prefix is looked for in import statements only, so it
may be shorter (`_C`). The tokens are derived from the loaded rules, never listed by hand: a new
rule brings its own; the device-type flags (`t.is_cuda`) of the device-compare contexts too.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from opscan.scan.rule_records import Matcher, Rule
from opscan.scan.string_contexts import DEVICE_TYPE_FLAGS
from opscan.scan.tokens import (ANY, ATTR, EDGE, MIN_TOKEN, bounded_regex, join_bound, literal_regex,
                                pattern_bounded_token, pattern_token, regex_bounded_tokens)
from opscan.scan.tokens import QUOTE, regex_tokens  # noqa: F401 - re-exported (tests, families)


@dataclass(frozen=True)
class NamePatterns:
    """fnmatch patterns over dotted names, with exceptions; `X.*` matches X and everything under it."""

    patterns: tuple[str, ...]
    unless: tuple[str, ...] = ()
    _yes: re.Pattern[str] | None = field(default=None, compare=False, repr=False)
    _no: re.Pattern[str] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_yes", _translate(self.patterns))
        object.__setattr__(self, "_no", _translate(self.unless))

    def matches(self, name: str) -> bool:
        return self._yes is not None and self._yes.match(name) is not None \
            and (self._no is None or self._no.match(name) is None)


def _translate(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """One regex for fnmatch-style dotted patterns (`*` may cross dots; `X.*` also matches X)."""
    if not patterns:
        return None
    parts = []
    for p in patterns:
        parts.append(fnmatch.translate(p))
        if p.endswith(".*"):
            parts.append(fnmatch.translate(p[:-2]))
    return re.compile("|".join(f"(?:{part})" for part in parts))


# An import statement's text, from its keyword to the end of its logical line (parenthesised names
# and backslash continuations included). Matches in strings and comments only add candidates.
IMPORT_STATEMENT = re.compile(r"(?:from|import)\b[^\n(\\]*(?:(?:\\[\s\S]|\([^)]*\))[^\n(\\]*)*")


def import_statements(text: str) -> str:
    """IMPORT_STATEMENT's matches in `text`, one a line: `"\\n".join(IMPORT_STATEMENT.findall(text))`,
    found from each literal `from` / `import` (which str.find skips to) instead of trying the
    regex's alternation at every position: about 2.5x faster, the same matches."""
    starts = []
    for word in ("from", "import"):
        i = text.find(word)
        while i != -1:
            starts.append(i)
            i = text.find(word, i + 1)
    out, end = [], 0
    for i in sorted(starts):
        if i < end:   # inside the previous statement (findall does not overlap matches)
            continue
        match = IMPORT_STATEMENT.match(text, i)
        if match is not None:
            out.append(match[0])
            end = match.end()
    return "\n".join(out)


FROM_IMPORT = re.compile(r"(?:^|;)[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]*(\([^)]*\)|(?:[^\n\\]|\\[\s\S])*)",
                         re.MULTILINE)
_NAME = re.compile(r"[A-Za-z_]\w*")
_FROM = re.compile(r"from[ \t]")


def from_import_names(text: str) -> tuple[str, ...]:
    """The names `from X import ...` statements of `text` bring in (sorted, `as` names and
    comments dropped): what a skipped file may use of another file (NOTE [pre-check] in file_scan.py).

    FROM_IMPORT's matches, found from each `from ` (a literal the regex engine skips to) instead of
    trying its `^` or `;` at every position: five times faster, the same matches in the same order."""
    names: set[str] = set()
    end = 0
    for candidate in _FROM.finditer(text):
        j = candidate.start()
        while j and text[j - 1] in " \t":
            j -= 1
        if j and text[j - 1] not in "\n;":
            continue
        start = j - 1 if j and text[j - 1] == ";" else j
        if start < end:   # inside the previous statement (finditer does not overlap matches)
            continue
        match = FROM_IMPORT.match(text, start)
        if match is None:
            continue
        end = max(match.end(), start + 1)
        body = re.sub(r"#[^\n]*", "", match[1])
        names.update(n for n in _NAME.findall(body) if n != "as")
    return tuple(sorted(names))


@dataclass
class Compiled:
    """The rules of a run indexed by matcher kind, plus the pre-filter tokens."""

    strings: dict[str, list[tuple[re.Pattern[str], Rule]]] = field(default_factory=dict)   # context -> ...
    names: list[tuple[NamePatterns, Rule, tuple[str, ...]]] = field(default_factory=list)
    imports: list[tuple[NamePatterns, Rule]] = field(default_factory=list)
    methods: dict[str, list[Rule]] = field(default_factory=dict)
    keywords: list[tuple[tuple[str, ...], str, re.Pattern[str], Rule]] = field(default_factory=list)
    decorators: list[tuple[NamePatterns, bool, Rule]] = field(default_factory=list)
    extensions: list[tuple[re.Pattern[str] | None, re.Pattern[str] | None, Rule]] = field(default_factory=list)
    # extension-call: (module regex, relative-member regex, calls whose result is a native module, rule)
    ext_calls: list[tuple[re.Pattern[str] | None, re.Pattern[str] | None, "NamePatterns | None", Rule]] = field(
        default_factory=list)
    # `member`: (regex over the last component, rule) of extension-import / extension-call matchers
    ext_members: list[tuple[re.Pattern[str], Rule]] = field(default_factory=list)
    ext_member_calls: list[tuple[re.Pattern[str], Rule]] = field(default_factory=list)
    import_names: list[tuple[NamePatterns, Rule]] = field(default_factory=list)   # name matchers with `imports`
    arity: list[tuple[tuple[str, ...], int, Rule]] = field(default_factory=list)    # call matchers with `max-args`
    exact_names: dict[str, list[Rule]] = field(default_factory=dict)   # wildcard-free name patterns
    files: list[tuple[tuple[str, ...], re.Pattern[str] | None, Rule]] = field(default_factory=list)
    inputs: dict[str, Rule] = field(default_factory=dict)
    dependencies: list[tuple[Matcher, Rule]] = field(default_factory=list)   # (dependency matcher, rule)
    dispatch: list[tuple[tuple[str, ...], Rule]] = field(default_factory=list)   # accelerator names
    # name matchers with `required-to-start`: only an availability check whose Neuron answer raises
    required: list[tuple[NamePatterns, Rule]] = field(default_factory=list)
    tokens: frozenset[str] = frozenset()
    bounded: dict[str, tuple[int, int]] = field(default_factory=dict)   # token -> (left, right) bounds
    import_tokens: dict[str, tuple[int, int]] = field(default_factory=dict)   # the same, in imports only
    always: bool = False            # some matcher has no token: every file is parsed
    roots: frozenset[str] = frozenset()   # first components of name/decorator patterns
    # extra names -> token_regex (the per-file scan's cache)
    regexes: dict[object, re.Pattern[str] | None] = field(default_factory=dict)

    def token_regex(self, extra: frozenset[str] = frozenset()) -> re.Pattern[str] | None:
        """One regex finding any token (substring) or any `extra` word; cached per `extra`."""
        if extra not in self.regexes:
            self.regexes[extra] = literal_regex(set(self.tokens) | set(extra))
        return self.regexes[extra]

    def bounded_regex(self, extra: frozenset[str] = frozenset()) -> re.Pattern[str] | None:
        """One regex finding any bounded token within its bounds, or any `extra` word as a whole
        identifier (NOTE [pre-filter bounds]); cached per `extra`."""
        key = ("file", extra)
        if key not in self.regexes:
            self.regexes[key] = bounded_regex({**self.bounded, **{w: (EDGE, EDGE) for w in extra}})
        return self.regexes[key]

    def relevant(self, text: str, extra: frozenset[str] = frozenset()) -> bool:
        """The file pre-check (NOTE [pre-filter bounds]): does `text` hold a token within its bounds,
        or one of the `extra` words (extension modules, wrappers) as a whole identifier?"""
        if self.always or not (self.bounded or self.import_tokens or extra):   # input rules only: parse
            return True
        regex = self.bounded_regex(extra)
        if regex is not None and regex.search(text) is not None:
            return True
        imports = self.import_regex()
        # An import matcher fires on import statements only: its tokens are looked for there
        # ("rotary_emb" the flash-attn module, not `self.rotary_emb` in every model file).
        return imports is not None and imports.search(import_statements(text)) is not None

    def import_regex(self) -> re.Pattern[str] | None:
        """The tokens looked for in import statements: import matchers' modules, and attribute tokens
        an import names (`from torch import library`); cached."""
        if "imports" not in self.regexes:
            words = dict(self.import_tokens)
            for word, (left, right) in self.bounded.items():
                if left == ATTR:   # `from torch import library`: an attribute token, bound by an import
                    old = words.get(word, (EDGE, right))
                    words[word] = (join_bound(old[0], EDGE), join_bound(old[1], right))
            self.regexes["imports"] = bounded_regex(words)
        return self.regexes["imports"]


def compile_rules(rules: tuple[Rule, ...]) -> Compiled:
    """Index `rules` for the visitor (see NOTE [pre-filter tokens])."""
    out = Compiled()
    tokens: set[str] = set()
    roots: set[str] = set()

    names: list[str] = []
    bounded: dict[str, tuple[int, int]] = {}

    def bneed(found: Sequence[tuple[str, int, int]] | None) -> None:
        """Add bounded tokens (text, left, right); None: no token, every file is parsed."""
        if found is None:
            out.always = True
            return
        for text, left, right in found:
            old = bounded.get(text, (left, right))
            bounded[text] = (join_bound(old[0], left), join_bound(old[1], right))   # the weaker covers both

    def need(token: str | None, bounds: Sequence[tuple[str, int, int]] | None = None) -> None:
        """Add a substring token (the visitor's line filter) and, unless given `bounds`, the same
        token unbounded for the file pre-check; None: no token."""
        if token:
            tokens.add(token)
            bneed([(token, ANY, ANY)] if bounds is None else bounds)
        else:
            out.always = True

    for rule in rules:
        for m in rule.match:
            _compile_one(out, rule, m, need, roots, names)
    # A name pattern any of whose components is already a token needs no token of its own
    # ("torch.version.cuda" is found by "cuda"; its own choice, "version", is in most files).
    for pattern in names:
        chunks = {c for part in pattern.lstrip(".").split(".") for c in re.split(r"[*?\[\]]", part)}
        if not chunks & tokens:
            need(pattern_token(pattern), ())
        whole = {part for part in pattern.lstrip(".").split(".") if not re.search(r"[*?\[\]]", part)}
        if not any(bounded.get(c, (EDGE + 1,))[0] <= EDGE and bounded[c][1] <= EDGE for c in whole):
            bounded_token = pattern_bounded_token(pattern)
            bneed([bounded_token] if bounded_token else None)
    out.tokens = frozenset(tokens)
    out.bounded = bounded
    out.roots = frozenset(roots)
    return out


def _literal_prefix(pattern: str) -> str:
    """The identifier characters a regex starts with (after an optional `^`): "" when none."""
    found = re.match(r"\^?([A-Za-z0-9_]*)", pattern)
    return found[1] if found else ""


def _bounds_of(pattern: str, attribute: bool = True) -> list[tuple[str, int, int]] | None:
    token = pattern_bounded_token(pattern, attribute)
    return [token] if token else None


def _compile_one(out: Compiled, rule: Rule, m: Matcher, need: Callable[..., None], roots: set[str],
                 names: list[str]) -> None:
    kind = m.kind
    if kind == "string":
        regex = re.compile(m.get("string"))
        found = regex_bounded_tokens(m.get("string"))
        if found is None:
            need(None)
        else:
            for t in found:
                need(t[0], [t])
        for ctx in m.get("in"):
            out.strings.setdefault(ctx, []).append((regex, rule))
        if {"device-compare", "device-assert"} & set(m.get("in")):   # `t.is_cuda` tests the type "cuda"
            for flag, value in DEVICE_TYPE_FLAGS.items():
                if regex.search(value):
                    need(flag, [(flag, EDGE, EDGE)])
        if "command" in m.get("in"):   # cuda_home + "/bin/nvcc": the program after a path (strings.py)
            for text, _, right in found or ():
                need("/" + text, [("/" + text, ANY, right)])
        if "env-var" in m.get("in"):   # `k.startswith("NCCL")`: an exported prefix (strings.py _env_prefix)
            for prefix in ("NCCL", "TORCH_NCCL", "CUBLAS", "CUDNN", "CUDA\"", "CUDA'", "CUDA_\"", "CUDA_'"):
                need('"' + prefix)
                need("'" + prefix)
            for lower in ("nccl_", "cuda_visible", "cuda_launch", "cuda_device", "cublas_workspace", "pytorch_cuda"):
                need(lower)   # env["nccl_p2p_disable"]: the lower case a launcher upper-cases (positions.LOWER_ENV)
    elif kind == "name":
        # `uses-unless`: exceptions for uses only (an import statement of such a name is still a site)
        pats = NamePatterns(m.get("name"), (*m.get("unless", ()), *m.get("uses-unless", ())))
        if m.get("required-to-start", False):   # NOTE [checks that require CUDA] (string_contexts.py)
            out.required.append((pats, rule))
            for p in pats.patterns:
                names.append(p)
                roots.add(p.split(".")[0])
            return
        out.names.append((pats, rule, m.get("instance-methods", ())))
        if m.get("imports", False):
            out.import_names.append((NamePatterns(m.get("name"), m.get("unless", ())), rule))
        for p in pats.patterns:
            if not any(ch in p for ch in "*?["):
                out.exact_names.setdefault(p, []).append(rule)
        for p in pats.patterns:
            names.append(p)
            roots.add(p.split(".")[0])
    elif kind == "import":
        out.imports.append((NamePatterns(m.get("import"), m.get("unless", ())), rule))
        for p in m.get("import"):   # found in import statements only (Compiled.relevant)
            need(pattern_token(p), ())
            token = pattern_token(p)
            bounds = _bounds_of(p, attribute=False) or ([(token, ANY, ANY)] if token is not None else [])
            if not bounds:
                need(None)
            for text, left, right in bounds:
                old = out.import_tokens.get(text, (left, right))
                out.import_tokens[text] = (join_bound(old[0], left), join_bound(old[1], right))
    elif kind == "method":
        for name in m.get("method"):
            out.methods.setdefault(name, []).append(rule)
            need(name if len(name) >= MIN_TOKEN else None, [(name, ATTR, EDGE)])   # `.cuda()`
    elif kind == "call":
        if m.get("keyword") is not None:
            out.keywords.append((m.get("call"), m.get("keyword"), re.compile(m.get("value")), rule))
        if m.get("max-args") is not None:
            out.arity.append((m.get("call"), m.get("max-args"), rule))
        for p in m.get("call"):
            need(pattern_token(p), _bounds_of(p))
            roots.add(p.split(".")[0])
    elif kind == "decorator":
        pats = NamePatterns(m.get("decorator"))
        out.decorators.append((pats, bool(m.get("launch", False)), rule))
        for p in pats.patterns:
            need(pattern_token(p), _bounds_of(p))
            roots.add(p.split(".")[0])
    elif kind in ("extension-import", "extension-call"):
        # `relative` (members of relative imports, `from . import _C`) adds the token "import <its
        # literal prefix>" ("import _C"), which the import statement itself spells.
        module, relative = m.get("module"), m.get("relative")
        if relative:
            prefix = _literal_prefix(relative)
            need("import " + prefix if prefix else None, [("import " + prefix, EDGE, ANY)])
        member = m.get("member")
        if member:   # `import pkg._C as C`, `from pkg import _C`: the name is read in import statements
            prefix = _literal_prefix(member)
            if prefix:
                need(prefix, ())
                old = out.import_tokens.get(prefix, (EDGE, ANY))
                out.import_tokens[prefix] = (join_bound(old[0], EDGE), join_bound(old[1], ANY))
            else:
                need(None)
            (out.ext_members if kind == "extension-import" else out.ext_member_calls).append(
                (re.compile(member), rule))
        compiled = (re.compile(module) if module else None, re.compile(relative) if relative else None)
        if kind == "extension-import":
            out.extensions.append((*compiled, rule))
        else:
            sources = NamePatterns(m.get("from")) if m.get("from") else None
            out.ext_calls.append((*compiled, sources, rule))
            for p in m.get("from") or ():
                need(pattern_token(p), _bounds_of(p))
                roots.add(p.split(".")[0])
            if any(p.startswith("ctypes.") for p in m.get("from") or ()):   # lib.f.restype = ... (natives.py)
                for attr in ("restype", "argtypes", "errcheck"):
                    need(attr, [(attr, ATTR, EDGE)])
        if module:
            found = regex_bounded_tokens(module, string=False)
            for t in found or ():
                need(t[0], [t])
            if found is None:
                need(None)
    elif kind == "file":
        contains = m.get("contains")
        out.files.append((m.get("file"), re.compile(contains, re.M) if contains else None, rule))
    elif kind == "dispatch":
        # quoted names and availability checks: "mps" alone is in every `json.dumps`
        spelled = tuple(m.get("dispatch"))
        out.dispatch.append((spelled, rule))
        for name in spelled:
            for token in (f'"{name}', f"'{name}", f"{name}_available", f"{name}_installed", f"{name}.is_available"):
                need(token)
    elif kind == "input":
        out.inputs[m.get("input")] = rule
    elif kind == "dependency":   # manifests only: no pre-filter token of Python files
        out.dependencies.append((m, rule))
