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
    the text of those statements (Compiled.import_tokens, matchers.IMPORT_STATEMENT);
  - a dotted-name component after the first, or a method, is reached as an attribute (ATTR): it
    follows a `.` (`torch.library`, `x.compile`) or a quote (`getattr(torch, "ops")`), unless an
    import statement names it (`from torch import library`), where it is looked for as well.
Like the tokens themselves, this assumes the source spells the literal as it is matched (no
escapes such as `"\x6epu"`, no implicit concatenation splitting it, no space after a dot): the
visitor's values come from literals in the same way. The file pre-check (Compiled.relevant, NOTE
[pre-check] in file_scan.py) and the visitor's per-line filter (visitor.py `_hot_lines`) both use the
bounded tokens; the plain substring tokens of NOTE [pre-filter tokens] remain for `precheck=False`
and for testing the names imports bind. tests/perf/test_perf_identical.py compares the findings
with those of a walk of every statement of every file.
"""

from __future__ import annotations

import re
import re._parser as sre_parse   # Python >= 3.11 (pyproject.toml requires-python)
from collections.abc import Iterable
from re._constants import (AT, AT_BEGINNING, AT_BEGINNING_STRING, AT_BOUNDARY, AT_END, AT_END_STRING, BRANCH,
                           CATEGORY, CATEGORY_SPACE, IN, LITERAL, MAX_REPEAT, MIN_REPEAT, SUBPATTERN)
from typing import Any

Items = list[tuple[Any, Any]]    # a parsed regex: (opcode, argument) pairs (re._parser.SubPattern items)
Trie = dict[str, "Trie"]         # literal_regex's trie of characters ("" ends a word)

MIN_TOKEN = 3


# Bounds of a token in the source text (NOTE [pre-filter bounds]): what must precede / follow it.
ANY, EDGE, QUOTE = 0, 1, 2          # anything / no identifier character / a quote (string start)
ATTR = 3                            # an attribute or imported name: after `.` or a quote (`getattr`)


def join_bound(a: int, b: int) -> int:
    """The weaker of two bounds, covering both: equal ones stay, EDGE covers QUOTE and ATTR."""
    return a if a == b else (EDGE if min(a, b) >= EDGE else ANY)
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


def _char_class(op: Any, arg: Any) -> int:
    """EDGE if the item matches only characters that cannot continue an identifier, else ANY."""
    if op is LITERAL:
        return ANY if chr(arg) in _ID else EDGE
    if op is IN:
        ok = all((o is LITERAL and chr(a) not in _ID) or (o is CATEGORY and a is CATEGORY_SPACE) for o, a in arg)
        return EDGE if ok and arg else ANY
    return ANY


def _end_class(items: Items, before: int) -> int:
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


def _start_class(items: Items, after: int) -> int:
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


def _seq_tokens(items: Items, before: int = ANY, after: int = ANY) -> frozenset[tuple[str, int, int]] | None:
    best: frozenset[tuple[str, int, int]] | None = None
    run, start = "", 0

    def consider(tokens: frozenset[tuple[str, int, int]] | None) -> None:
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


def pattern_bounded_token(pattern: str, attribute: bool = True) -> tuple[str, int, int] | None:
    """The token of a dotted fnmatch pattern with its bounds: a component spelled whole is an
    identifier in the source (EDGE both sides), and with `attribute` (name, call and decorator
    patterns, not imports) one after the first, or after a leading `.`, is reached as an attribute
    (ATTR: `torch.library`, `x.compile`) unless imported by name, which the import statements
    show (NOTE [pre-filter bounds]); a chunk next to a wildcard is open on that side.
    The last chunk if 4+ characters (bounded, "NCCL" is rare), else the longest; never `torch`."""
    chunks: list[tuple[str, int, int]] = []
    for index, part in enumerate(pattern.split(".")):   # ".compile": a method, index 1
        if not part:
            continue
        pieces = re.split(r"([*?]|\[[^\]]*\])", part)
        whole = ATTR if attribute and index > 0 else EDGE
        for k in range(0, len(pieces), 2):
            text = pieces[k]
            if len(text) >= MIN_TOKEN:
                chunks.append((text, ANY if k > 0 else whole, ANY if k + 1 < len(pieces) else EDGE))
    preferred = [c for c in chunks if c[0] != "torch"] or chunks
    if not preferred:
        return None
    if len(preferred[-1][0]) >= 4:
        return preferred[-1]
    return max(preferred, key=lambda c: len(c[0]))


def literal_regex(words: Iterable[str], prune: bool = True) -> re.Pattern[str] | None:
    """A regex finding any of `words` as a substring, as a trie (much faster than a flat alternation).

    `prune`: a word containing another is dropped ("cuda" covers "_cuda"); without it (bounded
    words, where "cuda" does not cover "cudart") every word stays, longer branches first."""
    unique = sorted(set(words))
    if prune:
        unique = [w for w in unique if not any(o != w and o in w for o in unique)]
    if not unique:
        return None
    trie: Trie = {}
    for word in unique:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: Trie) -> str:
        if "" in node and (prune or len(node) == 1):
            return ""   # a shorter word already matches: no need to go on
        alts = [re.escape(ch) + build(sub) for ch, sub in sorted(node.items()) if ch]
        if "" in node:
            alts.append("")
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return re.compile(build(trie))


# Characters per 10,000 of Python source (CPython 3.11's stdlib, its 168 top-level modules); any
# other character counts as 2. Only the order matters much: it picks where a token is looked for
# (NOTE [pivot characters]).
CHAR_FREQUENCY = {
    " ": 2915, "e": 710, "t": 458, "s": 400, "r": 383, "a": 365, "n": 364, "i": 358, "o": 338, "l": 273,
    "f": 204, "d": 199, "c": 186, "_": 167, "p": 154, "u": 145, "m": 144, ".": 125, "h": 120, ")": 108,
    "(": 108, ",": 101, "'": 89, '"': 87, "g": 86, "=": 82, ":": 78, "b": 75, "y": 64, "w": 48, "v": 41,
    "x": 41, "#": 40, "-": 38, "k": 38, "E": 35, "T": 31, "N": 27, "0": 25, "I": 25, "1": 24, "S": 23,
    "A": 20, "O": 18, "R": 18, "]": 17, "[": 17, "P": 16, "C": 15, ">": 15, "F": 14, "D": 14, "2": 14,
    "*": 13, "L": 13, "j": 12, "M": 11, "/": 10, "z": 10, "U": 9, "+": 9, "%": 9, "3": 8, "8": 7,
    "\\": 7, "q": 7, "5": 7, "B": 6, "4": 6, "H": 6, "V": 6, "<": 6, "G": 6, "6": 5, "9": 5, "W": 5,
}
_WORD_CHAR = "[A-Za-z0-9_]"


def _weight(ch: str) -> int:
    return CHAR_FREQUENCY.get(ch, 2)


def _pivots(words: Iterable[str]) -> frozenset[str]:
    """Characters such that every word holds one, of small total frequency (greedy weighted set
    cover: the cheapest character per word covered, ties by the character)."""
    left, chosen = set(words), set[str]()
    while left:
        best = min({ch for word in left for ch in word},
                   key=lambda ch: (_weight(ch) / sum(ch in word for word in left), ch))
        chosen.add(best)
        left = {word for word in left if best not in word}
    return frozenset(chosen)


# NOTE [pivot characters]
# The pre-check runs one regex over every file's text, and Python's regex engine tries a match at
# every position holding a character that can start one: with tokens starting with `c`, `l`, `o`,
# `p`, `r`, ... that is most positions, and at each, every alternative. So each token is looked for
# from a rarer character inside it, its pivot (`load` from `d`, `triton` from `o`, `CUDA` from
# `U`): the pivots are chosen together so that few, rare characters cover all tokens, and the
# characters before the pivot, with the token's left bound, are checked by fixed-width
# look-behinds: `d(?<=load)(?<![A-Za-z0-9_]load)(?![A-Za-z0-9_])` is "load" as a whole word.
# The regex matches exactly where the token occurs within its bounds (the match starts at the
# pivot, not at the token: callers use only whether, and on which line, one occurs). About 3x
# faster than a trie of the tokens by their first character, on transformers' source.
def bounded_regex(words: dict[str, tuple[int, int]]) -> re.Pattern[str] | None:
    """One regex finding any word within its (left, right) bounds (NOTE [pivot characters])."""
    if not words:
        return None
    pivots = _pivots(words)
    by_pivot: dict[str, list[str]] = {}
    for word, (left, right) in sorted(words.items()):
        k = min((i for i, ch in enumerate(word) if ch in pivots), key=lambda i: (_weight(word[i]), i))
        head = re.escape(word[:k + 1])
        parts = [f"(?<={head})" if k else ""]
        parts.append({ANY: "", EDGE: f"(?<!{_WORD_CHAR}{head})", QUOTE: f"(?<=[\"']{head})",
                      ATTR: f"(?<=[.\"']{head})"}[left])
        parts.append(re.escape(word[k + 1:]) + (f"(?!{_WORD_CHAR})" if right else ""))
        by_pivot.setdefault(word[k], []).append("".join(parts))
    alternatives = [re.escape(ch) + (tails[0] if len(tails) == 1 else "(?:" + "|".join(tails) + ")")
                    for ch, tails in sorted(by_pivot.items())]
    return re.compile("|".join(alternatives))
