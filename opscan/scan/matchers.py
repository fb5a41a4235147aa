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
    from re._constants import BRANCH, IN, LITERAL, MAX_REPEAT, MIN_REPEAT, SUBPATTERN  # type: ignore
except ImportError:  # pragma: no cover
    import sre_parse  # type: ignore[no-redef]
    from sre_constants import BRANCH, IN, LITERAL, MAX_REPEAT, MIN_REPEAT, SUBPATTERN  # type: ignore

from opscan.scan.rules import Matcher, Rule

MIN_TOKEN = 3


def regex_tokens(pattern: str) -> frozenset[str] | None:
    """Literal strings one of which must occur in any text the pattern matches; None if unknown."""
    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return None
    if parsed.state.flags & re.IGNORECASE:
        return None
    return _seq_tokens(list(parsed))


def _seq_tokens(items: list) -> frozenset[str] | None:
    best: frozenset[str] | None = None
    run = ""

    def consider(tokens: frozenset[str] | None) -> None:
        nonlocal best
        if tokens and all(len(t) >= MIN_TOKEN for t in tokens):
            if best is None or min(map(len, tokens)) > min(map(len, best)):
                best = tokens

    for op, arg in items:
        if op is LITERAL:
            run += chr(arg)
            continue
        consider(frozenset([run]) if run else None)
        run = ""
        if op is SUBPATTERN:
            consider(_seq_tokens(list(arg[-1])))
        elif op is BRANCH:
            branches = [_seq_tokens(list(b)) for b in arg[1]]
            if all(branches):
                consider(frozenset().union(*branches))  # type: ignore[arg-type]
        elif op in (MAX_REPEAT, MIN_REPEAT) and arg[0] >= 1:
            consider(_seq_tokens(list(arg[2])))
        elif op is IN and len(arg) == 1 and arg[0][0] is LITERAL:
            run += chr(arg[0][1])
    consider(frozenset([run]) if run else None)
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


def literal_regex(words) -> re.Pattern | None:
    """A regex finding any of `words` as a substring, as a trie (much faster than a flat alternation)."""
    words = sorted(set(words))
    words = [w for w in words if not any(o != w and o in w for o in words)]   # "cuda" covers "_cuda"
    if not words:
        return None
    trie: dict = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict) -> str:
        if "" in node:
            return ""   # a shorter word already matches: no need to go on
        alts = [re.escape(ch) + build(sub) for ch, sub in sorted(node.items())]
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
    dispatch: list[tuple[tuple[str, ...], Rule]] = field(default_factory=list)   # accelerator names
    tokens: frozenset[str] = frozenset()
    always: bool = False            # some matcher has no token: every file is parsed
    roots: frozenset[str] = frozenset()   # first components of name/decorator patterns
    regexes: dict = field(default_factory=dict)   # extra names -> token_regex (engine's cache)

    def token_regex(self, extra: frozenset[str] = frozenset()) -> re.Pattern | None:
        """One regex finding any token (substring) or any `extra` word; cached per `extra`."""
        if extra not in self.regexes:
            self.regexes[extra] = literal_regex(set(self.tokens) | set(extra))
        return self.regexes[extra]


def compile_rules(rules: tuple[Rule, ...]) -> Compiled:
    """Index `rules` for the visitor (see NOTE [pre-filter tokens])."""
    out = Compiled()
    tokens: set[str] = set()
    roots: set[str] = set()

    names: list[str] = []

    def need(token: str | None) -> None:
        if token:
            tokens.add(token)
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
            need(pattern_token(pattern))
    out.tokens = frozenset(tokens)
    out.roots = frozenset(roots)
    return out


def _compile_one(out: Compiled, rule: Rule, m: Matcher, need, roots: set[str], names: list[str]) -> None:
    kind = m.kind
    if kind == "string":
        regex = re.compile(m.get("string"))
        found = regex_tokens(m.get("string"))
        if found is None:
            need(None)
        else:
            for t in found:
                need(t)
        for ctx in m.get("in"):
            out.strings.setdefault(ctx, []).append((regex, rule))
        if "env-var" in m.get("in"):   # `k.startswith("NCCL")`: an exported prefix (strings.py _env_prefix)
            for prefix in ("NCCL", "TORCH_NCCL", "CUBLAS", "CUDNN", "CUDA\"", "CUDA'", "CUDA_\"", "CUDA_'"):
                need('"' + prefix)
                need("'" + prefix)
            for lower in ("nccl_", "cuda_visible", "cuda_launch", "cuda_device", "cublas_workspace", "pytorch_cuda"):
                need(lower)   # env["nccl_p2p_disable"]: the lower case a launcher upper-cases (positions.LOWER_ENV)
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
            need(pattern_token(p))
    elif kind == "method":
        for name in m.get("method"):
            out.methods.setdefault(name, []).append(rule)
            need(name if len(name) >= MIN_TOKEN else None)
    elif kind == "call":
        if m.get("keyword") is not None:
            out.keywords.append((m.get("call"), m.get("keyword"), re.compile(m.get("value")), rule))
        if m.get("max-args") is not None:
            out.arity.append((m.get("call"), m.get("max-args"), rule))
        for p in m.get("call"):
            need(pattern_token(p))
            roots.add(p.split(".")[0])
    elif kind == "decorator":
        pats = NamePatterns(m.get("decorator"))
        out.decorators.append((pats, bool(m.get("launch", False)), rule))
        for p in pats.patterns:
            need(pattern_token(p))
            roots.add(p.split(".")[0])
    elif kind in ("extension-import", "extension-call"):
        # `relative` (members of relative imports, `from . import _C`) adds the token "import <its
        # literal prefix>" ("import _C"), which the import statement itself spells.
        module, relative = m.get("module"), m.get("relative")
        if relative:
            prefix = re.match(r"\^?([A-Za-z0-9_]*)", relative)[1]
            need("import " + prefix if prefix else None)
        compiled = (re.compile(module) if module else None, re.compile(relative) if relative else None)
        if kind == "extension-import":
            out.extensions.append((*compiled, rule))
        else:
            sources = NamePatterns(m.get("from")) if m.get("from") else None
            out.ext_calls.append((*compiled, sources, rule))
            for p in m.get("from") or ():
                need(pattern_token(p))
                roots.add(p.split(".")[0])
        if module:
            found = regex_tokens(module)
            for t in found or ():
                need(t)
            if found is None:
                need(None)
    elif kind == "file":
        contains = m.get("contains")
        out.files.append((m.get("file"), re.compile(contains, re.M) if contains else None, rule))
    elif kind == "dispatch":
        # quoted names and availability checks: "mps" alone is in every `json.dumps`
        names = tuple(m.get("dispatch"))
        out.dispatch.append((names, rule))
        for name in names:
            for token in (f'"{name}', f"'{name}", f"{name}_available", f"{name}.is_available"):
                need(token)
    elif kind == "input":
        out.inputs[m.get("input")] = rule
