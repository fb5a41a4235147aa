"""Compiles rules into lookup tables for the visitor, and derives the text tokens of the pre-filter.

# NOTE [pre-filter tokens]
Every matcher needs some literal text to be present in a file before it can fire: a string matcher
needs a literal of its regular expression ("cuda", "nccl"), a name matcher the last literal
component of its pattern ("cuda" for `torch.cuda.*`, even when reached through an alias, because
the alias' own import line spells it), an import matcher the module's last component, and so on.
A file containing none of the tokens is never parsed; inside a parsed file only statements whose
lines contain a token (or an alias, constant or kernel name bound to one) are visited. A matcher
whose regular expression has no literal of 3+ characters disables the pre-filter (always active).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field

try:  # Python >= 3.11
    import re._parser as sre_parse  # type: ignore[import-not-found]
    from re._constants import (AT, AT_BEGINNING, AT_BEGINNING_STRING, AT_BOUNDARY, AT_END,  # type: ignore
                               AT_END_STRING, BRANCH, CATEGORY, CATEGORY_SPACE, IN, LITERAL, MAX_REPEAT,
                               MIN_REPEAT, SUBPATTERN)
except ImportError:  # pragma: no cover
    import sre_parse  # type: ignore[no-redef]
    from sre_constants import (AT, AT_BEGINNING, AT_BEGINNING_STRING, AT_BOUNDARY, AT_END,  # type: ignore
                               AT_END_STRING, BRANCH, CATEGORY, CATEGORY_SPACE, IN, LITERAL, MAX_REPEAT,
                               MIN_REPEAT, SUBPATTERN)

from opscan.scan.rules import Matcher, Rule

MIN_TOKEN = 3


# Bounds of a token in the source text (NOTE [pre-filter bounds]): what must precede / follow it.
ANY, EDGE, QUOTE = 0, 1, 2          # anything / no identifier character / a quote (string start)
_ID = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def regex_tokens(pattern: str) -> frozenset[str] | None:
    """Literal strings one of which must occur in any text the pattern matches; None if unknown."""
    found = regex_bounded_tokens(pattern)
    return None if found is None else frozenset(t for t, _, _ in found)


def regex_bounded_tokens(pattern: str, string: bool = True) -> frozenset[tuple[str, int, int]] | None:
    """regex_tokens with each token's (left, right) bounds in source text; `string`: the pattern
    matches a string literal's value (its start is after a quote), else a dotted name."""
    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return None
    if parsed.state.flags & re.IGNORECASE:
        return None
    found = _seq_tokens(list(parsed))
    if found is not None and (parsed.state.flags & re.MULTILINE):   # `^` may follow a "\n" escape
        found = frozenset((t, ANY, ANY) for t, _, _ in found)
    if found is not None and not string:                            # no quote before a dotted name
        found = frozenset((t, min(left, EDGE), right) for t, left, right in found)
    return found


def _char_class(op, arg) -> int:
    """EDGE if the item matches only characters that cannot continue an identifier, else ANY."""
    if op is LITERAL:
        return ANY if chr(arg) in _ID else EDGE
    if op is IN:
        ok = all((o is LITERAL and chr(a) not in _ID) or (o is CATEGORY and a is CATEGORY_SPACE) for o, a in arg)
        return EDGE if ok and arg else ANY
    return ANY


def _end_class(items: list, before: int) -> int:
    """What the text matched by `items` (preceded by `before`) ends with, as a left bound."""
    if not items:
        return before
    op, arg = items[-1]
    if op is AT:
        if arg in (AT_BEGINNING, AT_BEGINNING_STRING):
            return QUOTE            # the value starts here: in the source, after its opening quote
        return EDGE if arg is AT_BOUNDARY else ANY
    if op is SUBPATTERN:
        return _end_class(list(arg[-1]), _end_class(items[:-1], before))
    if op is BRANCH:
        prev = _end_class(items[:-1], before)
        return min(_end_class(list(b), prev) for b in arg[1])
    if op in (MAX_REPEAT, MIN_REPEAT):
        body = _end_class(list(arg[2]), ANY)
        return min(body, _end_class(items[:-1], before)) if arg[0] == 0 else body
    return _char_class(op, arg)


def _start_class(items: list, after: int) -> int:
    """What the text matched by `items` (followed by `after`) starts with, as a right bound."""
    if not items:
        return after
    op, arg = items[0]
    if op is AT:
        if arg in (AT_END, AT_END_STRING):
            return EDGE
        return EDGE if arg is AT_BOUNDARY else ANY
    if op is SUBPATTERN:
        return _start_class(list(arg[-1]), _start_class(items[1:], after))
    if op is BRANCH:
        nxt = _start_class(items[1:], after)
        return min(_start_class(list(b), nxt) for b in arg[1])
    if op in (MAX_REPEAT, MIN_REPEAT):
        body = _start_class(list(arg[2]), ANY)
        return min(body, _start_class(items[1:], after)) if arg[0] == 0 else body
    return _char_class(op, arg)


def _seq_tokens(items: list, before: int = ANY, after: int = ANY) -> frozenset[tuple[str, int, int]] | None:
    best: frozenset[tuple[str, int, int]] | None = None
    run, start = "", 0

    def consider(tokens) -> None:
        nonlocal best
        if tokens and all(len(t[0]) >= MIN_TOKEN for t in tokens):
            if best is None or min(len(t[0]) for t in tokens) > min(len(t[0]) for t in best):
                best = tokens

    def close(i: int) -> None:
        nonlocal run
        if run:
            consider(frozenset([(run, _end_class(items[:start], before), _start_class(items[i:], after))]))
        run = ""

    for i, (op, arg) in enumerate(items):
        if op is LITERAL or (op is IN and len(arg) == 1 and arg[0][0] is LITERAL):
            if not run:
                start = i
            run += chr(arg if op is LITERAL else arg[0][1])
            continue
        close(i)
        left, right = _end_class(items[:i], before), _start_class(items[i + 1:], after)
        if op is SUBPATTERN:
            consider(_seq_tokens(list(arg[-1]), left, right))
        elif op is BRANCH:
            branches = [_seq_tokens(list(b), left, right) for b in arg[1]]
            if all(branches):
                consider(frozenset().union(*branches))  # type: ignore[arg-type]
        elif op in (MAX_REPEAT, MIN_REPEAT) and arg[0] >= 1:
            consider(_seq_tokens(list(arg[2]), ANY, ANY))
    close(len(items))
    return best


def pattern_token(pattern: str) -> str | None:
    """The token of a dotted fnmatch pattern: its last literal chunk if 5+ characters, else the longest.

    Every literal component of a dotted name appears in a file that uses it (in the import that
    binds an alias, or in the use itself), so any one will do; the leaf is usually the rarest,
    unless it is short enough to be part of common words ("amp", "jit"). `torch` is never chosen.
    """
    chunks = [c for part in pattern.lstrip(".").split(".") for c in re.split(r"[*?\[\]]", part)
              if len(c) >= MIN_TOKEN]
    preferred = [c for c in chunks if c != "torch"] or chunks
    if not preferred:
        return None
    if len(preferred[-1]) >= 5:
        return preferred[-1]
    return max(preferred, key=len)


def pattern_bounded_token(pattern: str) -> tuple[str, int, int] | None:
    """The token of a dotted fnmatch pattern with its bounds: a component spelled whole is an
    identifier in the source (EDGE both sides); a chunk next to a wildcard is open on that side.
    The last chunk if 4+ characters (bounded, "NCCL" is rare), else the longest; never `torch`."""
    chunks: list[tuple[str, int, int]] = []
    for part in pattern.lstrip(".").split("."):
        pieces = re.split(r"([*?]|\[[^\]]*\])", part)
        for k in range(0, len(pieces), 2):
            text = pieces[k]
            if len(text) >= MIN_TOKEN:
                chunks.append((text, ANY if k > 0 else EDGE, ANY if k + 1 < len(pieces) else EDGE))
    preferred = [c for c in chunks if c[0] != "torch"] or chunks
    if not preferred:
        return None
    if len(preferred[-1][0]) >= 4:
        return preferred[-1]
    return max(preferred, key=lambda c: len(c[0]))


@dataclass(frozen=True)
class NamePatterns:
    """fnmatch patterns over dotted names, with exceptions; `X.*` matches X and everything under it."""

    patterns: tuple[str, ...]
    unless: tuple[str, ...] = ()
    _yes: re.Pattern | None = field(default=None, compare=False, repr=False)
    _no: re.Pattern | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_yes", _translate(self.patterns))
        object.__setattr__(self, "_no", _translate(self.unless))

    def matches(self, name: str) -> bool:
        return self._yes.match(name) is not None and (self._no is None or self._no.match(name) is None)


def _translate(patterns: tuple[str, ...]) -> re.Pattern | None:
    """One regex for fnmatch-style dotted patterns (`*` may cross dots; `X.*` also matches X)."""
    if not patterns:
        return None
    parts = []
    for p in patterns:
        parts.append(fnmatch.translate(p))
        if p.endswith(".*"):
            parts.append(fnmatch.translate(p[:-2]))
    return re.compile("|".join(f"(?:{part})" for part in parts))


def literal_regex(words, prune: bool = True) -> re.Pattern | None:
    """A regex finding any of `words` as a substring, as a trie (much faster than a flat alternation).

    `prune`: a word containing another is dropped ("cuda" covers "_cuda"); without it (bounded
    words, where "cuda" does not cover "cudart") every word stays, longer branches first."""
    words = sorted(set(words))
    if prune:
        words = [w for w in words if not any(o != w and o in w for o in words)]
    if not words:
        return None
    trie: dict = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict) -> str:
        if "" in node and (prune or len(node) == 1):
            return ""   # a shorter word already matches: no need to go on
        alts = [re.escape(ch) + build(sub) for ch, sub in sorted(node.items()) if ch]
        if "" in node:
            alts.append("")
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return re.compile(build(trie))


@dataclass
class Compiled:
    """The rules of a run indexed by matcher kind, plus the pre-filter tokens."""

    strings: dict[str, list[tuple[re.Pattern, Rule]]] = field(default_factory=dict)   # context -> ...
    names: list[tuple[NamePatterns, Rule, tuple[str, ...]]] = field(default_factory=list)
    imports: list[tuple[NamePatterns, Rule]] = field(default_factory=list)
    methods: dict[str, list[Rule]] = field(default_factory=dict)
    keywords: list[tuple[tuple[str, ...], str, re.Pattern, Rule]] = field(default_factory=list)
    decorators: list[tuple[NamePatterns, bool, Rule]] = field(default_factory=list)
    extensions: list[tuple[re.Pattern | None, re.Pattern | None, Rule]] = field(default_factory=list)
    # extension-call: (module regex, relative-member regex, calls whose result is a native module, rule)
    ext_calls: list[tuple[re.Pattern | None, re.Pattern | None, "NamePatterns | None", Rule]] = field(
        default_factory=list)
    import_names: list[tuple[NamePatterns, Rule]] = field(default_factory=list)   # name matchers with `imports`
    arity: list[tuple[tuple[str, ...], int, Rule]] = field(default_factory=list)    # call matchers with `max-args`
    exact_names: dict[str, list[Rule]] = field(default_factory=dict)   # wildcard-free name patterns
    files: list[tuple[tuple[str, ...], re.Pattern | None, Rule]] = field(default_factory=list)
    inputs: dict[str, Rule] = field(default_factory=dict)
    tokens: frozenset[str] = frozenset()
    bounded: dict[str, tuple[int, int]] = field(default_factory=dict)   # token -> (left, right) bounds
    always: bool = False            # some matcher has no token: every file is parsed
    roots: frozenset[str] = frozenset()   # first components of name/decorator patterns
    regexes: dict = field(default_factory=dict)   # extra names -> token_regex (engine's cache)

    def token_regex(self, extra: frozenset[str] = frozenset()) -> re.Pattern | None:
        """One regex finding any token (substring) or any `extra` word; cached per `extra`."""
        if extra not in self.regexes:
            self.regexes[extra] = literal_regex(set(self.tokens) | set(extra))
        return self.regexes[extra]

    def relevant(self, text: str, extra: frozenset[str] = frozenset()) -> bool:
        """The file pre-check (NOTE [pre-filter bounds]): does `text` hold a token within its bounds,
        or one of the `extra` words (extension modules, wrappers) as a whole identifier?"""
        if self.always or not (self.bounded or extra):   # no token at all: parse (input rules only)
            return True
        key = ("file", extra)
        if key not in self.regexes:
            self.regexes[key] = bounded_regex({**self.bounded, **{w: (EDGE, EDGE) for w in extra}})
        regex = self.regexes[key]
        return regex is not None and regex.search(text) is not None


def bounded_regex(words: dict[str, tuple[int, int]]) -> re.Pattern | None:
    """One regex finding any word within its (left, right) bounds.

    Words are grouped by bounds, each group a trie; the left bound is checked just after the first
    character (`c(?<![A-Za-z0-9_]c)uda`), so that every alternative starts with a literal and the
    regex engine can skip ahead to the characters that start a word (a leading look-behind makes
    it try every alternative at every position: 20 times slower)."""
    alternatives = []
    groups: dict[tuple[int, int], list[str]] = {}
    for word, bounds in words.items():
        groups.setdefault(bounds, []).append(word)
    for (left, right), group in sorted(groups.items()):
        trie: dict = {}
        for word in sorted(set(group)):
            node = trie
            for ch in word:
                node = node.setdefault(ch, {})
            node[""] = {}
        after = "(?![A-Za-z0-9_])" if right else ""
        for ch, sub in sorted(trie.items()):
            first = re.escape(ch)
            check = {ANY: "", EDGE: f"(?<![A-Za-z0-9_]{first})", QUOTE: f"(?<=[\"']{first})"}[left]
            alternatives.append(first + check + _trie(sub, prune=(left, right) == (ANY, ANY)) + after)
    return re.compile("|".join(alternatives)) if alternatives else None


def _trie(node: dict, prune: bool) -> str:
    if "" in node and (prune or len(node) == 1):
        return ""
    alts = [re.escape(ch) + _trie(sub, prune) for ch, sub in sorted(node.items()) if ch]
    if "" in node:
        alts.append("")   # after the longer words: a failed right bound backtracks to this one
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def compile_rules(rules: tuple[Rule, ...]) -> Compiled:
    """Index `rules` for the visitor (see NOTE [pre-filter tokens])."""
    out = Compiled()
    tokens: set[str] = set()
    roots: set[str] = set()

    names: list[str] = []
    bounded: dict[str, tuple[int, int]] = {}

    def bneed(found) -> None:
        """Add bounded tokens (text, left, right); None: no token, every file is parsed."""
        if found is None:
            out.always = True
            return
        for text, left, right in found:
            old = bounded.get(text, (left, right))
            bounded[text] = (min(old[0], left), min(old[1], right))   # the weaker bound covers both

    def need(token, bounds=None) -> None:
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
            bneed([pattern_bounded_token(pattern)] if pattern_bounded_token(pattern) else None)
    out.tokens = frozenset(tokens)
    out.bounded = bounded
    out.roots = frozenset(roots)
    return out


def _bounds_of(pattern: str) -> list | None:
    token = pattern_bounded_token(pattern)
    return [token] if token else None


def _compile_one(out: Compiled, rule: Rule, m: Matcher, need, roots: set[str], names: list[str]) -> None:
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
    elif kind == "name":
        pats = NamePatterns(m.get("name"), m.get("unless", ()))
        out.names.append((pats, rule, m.get("instance-methods", ())))
        if m.get("imports", False):
            out.import_names.append((pats, rule))
        for p in pats.patterns:
            if not any(ch in p for ch in "*?["):
                out.exact_names.setdefault(p, []).append(rule)
        for p in pats.patterns:
            names.append(p)
            roots.add(p.split(".")[0])
    elif kind == "import":
        out.imports.append((NamePatterns(m.get("import"), m.get("unless", ())), rule))
        for p in m.get("import"):
            need(pattern_token(p), _bounds_of(p))
    elif kind == "method":
        for name in m.get("method"):
            out.methods.setdefault(name, []).append(rule)
            need(name if len(name) >= MIN_TOKEN else None, [(name, EDGE, EDGE)])
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
            prefix = re.match(r"\^?([A-Za-z0-9_]*)", relative)[1]
            need("import " + prefix if prefix else None, [("import " + prefix, EDGE, ANY)])
        compiled = (re.compile(module) if module else None, re.compile(relative) if relative else None)
        if kind == "extension-import":
            out.extensions.append((*compiled, rule))
        else:
            sources = NamePatterns(m.get("from")) if m.get("from") else None
            out.ext_calls.append((*compiled, sources, rule))
            for p in m.get("from") or ():
                need(pattern_token(p), _bounds_of(p))
                roots.add(p.split(".")[0])
        if module:
            found = regex_bounded_tokens(module, string=False)
            for t in found or ():
                need(t[0], [t])
            if found is None:
                need(None)
    elif kind == "file":
        contains = m.get("contains")
        out.files.append((m.get("file"), re.compile(contains, re.M) if contains else None, rule))
    elif kind == "input":
        out.inputs[m.get("input")] = rule
