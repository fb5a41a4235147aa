"""The text tokens of the pre-filter: literals a rule's regex or name pattern needs, with their bounds.

# NOTE [pre-filter bounds]
A token found inside a longer word proves nothing: "npu" in `inputs`, "load" in `download`,
"distributed" in the licence header of every file. So each token carries what must surround it in
the source text for a rule to possibly match there (derived from the rule, never listed by hand):
  - a dotted-name component (`torch.ops.*`, an import, a method, a decorator) is an identifier in
    the source, so it is bounded on both sides by characters that cannot continue one (EDGE),
    except next to a wildcard (`*_cuda`: open on that side);
  - a literal of a string regex is bounded where the regex says so: `^` (the value starts here)
    means just after the opening quote in the source (QUOTE), `$`, `\b`, and characters that
    cannot be in an identifier (`:`, `,`, whitespace) mean EDGE; anything else leaves it open (ANY).
    With inline MULTILINE a `^` may follow an escaped newline: no bound;
  - an import matcher fires on `import` / `from` statements only, so its tokens are looked for in
    the text of those statements (Compiled.import_tokens, matchers.IMPORT_STATEMENT).
Like the tokens themselves, this assumes the source spells the literal as it is matched (no
escapes such as `"\x6epu"`, no implicit concatenation splitting it): the visitor's values come
from literals in the same way. The file pre-check (Compiled.relevant, NOTE [pre-check] in
engine.py) uses the bounded tokens; the visitor's per-line filter keeps the plain substring
tokens of NOTE [pre-filter tokens] (a superset of lines, so the same findings).
"""

from __future__ import annotations

import re

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
