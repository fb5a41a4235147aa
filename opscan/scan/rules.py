"""Rule files: strict loading of rules/*.yaml into frozen Rule objects, and selection into a RuleSet."""

from __future__ import annotations

import os
import re
import string
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opscan.errors import RuleError, UsageError
from opscan.records import CATEGORIES, SEVERITIES, TASKS, Category
from opscan.resources import coverage_db_dir, rules_dir
from opscan.scan.matchers import Compiled, compile_rules
from opscan.scan.rule_records import AutoFix, Example, FixEntry, FixExample, Matcher, Rule
from opscan.scan.rules_memo import RulesMemo, close_memo, open_memo
from opscan.strict_yaml import YamlProblem, line_of, parse_yaml

__all__ = ["AutoFix", "Example", "FixEntry", "FixExample", "Matcher", "Rule", "RuleSet", "load_rule_dir",
           "load_rule_file", "load_rules", "shipped_file", "unknown_selectors"]

STATUSES = ("preview", "stable", "deprecated", "removed")
# `autofix` declares the automatic rewrite `opscan fix` applies to a rule's findings (AutoFix
# below, docs/fix.md); `fix` stays the fix text shown with each finding.
# `fix` stays the fix text shown with each finding.
TOP_KEYS = {"id", "name", "status", "since", "category", "severity", "task", "message", "match", "docs",
            "fix", "requires", "fixes", "examples", "autofix", "sources"}
REQUIRED = ("id", "name", "status", "since", "category", "severity", "task", "message", "match", "docs",
            "fix", "examples")
DOC_KEYS = ("what", "why", "fix")
PLACEHOLDERS = {"value", "name", "leaf"}

# The closed matcher vocabulary: kind -> the option keys it accepts (see docs/scan.md).
CONTEXTS = {
    "device-arg": "positional device argument: torch.device(...), .to(...), torch.autocast(...), "
                  "torch.set_default_device(...), ...",
    "device-keyword": "a device-named keyword (device=, device_type=, map_location=, device_map=, *_device=), "
                      "parameter default, dict entry or argparse default",
    "device-variable": "assignment to a device-named variable or attribute inside a function or class "
                       "(self.device = ...)",
    "device-constant": "a module-level constant holding the string and used as a device "
                       "(reported once, at the definition)",
    "availability-idiom": "`\"cuda\" if torch.cuda.is_available() else \"cpu\"` and its variants "
                          "(reported at the conditional)",
    "backend-arg": "the process-group backend: init_process_group(...), backend= keywords, "
                   "backend-named variables and defaults",
    "backend-compare": "a comparison with a backend value: `backend == \"nccl\"`, `dist.get_backend() == \"nccl\"`",
    "env-var": "an environment-variable name read or written: os.environ[...], os.getenv(...), "
               "os.environ.get/setdefault/pop(...), env= dicts",
    "env-default": "the default of an environment lookup: os.environ.get(NAME, DEFAULT), os.getenv(NAME, DEFAULT), "
                   "os.environ.setdefault(NAME, DEFAULT): what runs when the variable is not set",
    "device-return": "a value returned by a function whose name says it gives a device "
                     "(`def infer_device(): return \"cuda\"`)",
    "device-compare": "a device-type test that selects code: `x.device.type == \"cuda\"`, "
                      "`dev in (\"cuda\", \"npu\")`, `str(d).startswith(\"cuda\")`, `t.is_cuda` "
                      "(the value is the type)",
    "device-assert": "the same tests where failing raises: in an `assert`, `torch._check(...)`, "
                     "or an `if` whose body raises",
    "command": "the program a command runs: shutil.which(...), subprocess.run/call/check_output/Popen(...), "
               "os.system/popen(...)",
}
MATCHERS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "string": {"string": str, "in": list},
    "name": {"name": list, "unless": list, "uses-unless": list, "instance-methods": list, "imports": bool,
             "required-to-start": bool},
    "import": {"import": list, "unless": list},
    "method": {"method": list},
    "call": {"call": list, "keyword": str, "value": str, "max-args": int},
    "decorator": {"decorator": list, "launch": bool},
    "extension-import": {"extension-import": bool, "module": str, "relative": str, "member": str},
    "extension-call": {"extension-call": bool, "module": str, "relative": str, "member": str, "from": list},
    "file": {"file": list, "contains": str},
    "dispatch": {"dispatch": list},
    "input": {"input": str},
    # dependency manifests (scan/manifests.py, judged by scan/dependencies.py; docs/dependencies.md)
    "dependency": {"dependency": str, "names": list, "urls": list, "labels": str, "channels": list,
                   "builds": str, "images": list},
}
# What a `dependency` matcher judges (scan/dependencies.py implements each; docs/dependencies.md).
DEPENDENCY_KINDS = {
    "torch-pin": "a torch requirement, conda spec or locked version that admits no torch the release pairs with",
    "companion": "a package built for one torch (torchvision, torchaudio; installed metadata) "
                 "that admits no paired torch",
    "ended": "a package with no build for any torch the release pairs with (torchtext)",
    "cuda-index": "a CUDA wheel index or find-links URL (`urls`), or a CUDA local version label (`labels`, `+cu121`)",
    "cuda-build": "a CUDA build of a package, by distribution name (`names`)",
    "cuda-library": "a distribution of a CUDA-only library in the catalog (opscan/plan/libraries.yaml), or an extra "
                    "the catalog names as a distribution's CUDA install (`aqlm[gpu]`)",
    "cpu-capable-library": "a requirement of a catalog library that admits a release whose wheels also run on CPU "
                           "(the catalog's `cpu_since`)",
    "conda-cuda": "a conda CUDA package (`names`), a CUDA build of one (`builds`) or a CUDA channel (`channels`)",
    "apt-cuda": "a system package of NVIDIA's CUDA, cuDNN, NCCL or TensorRT installed by apt in a Dockerfile (`names`)",
    "cuda-image": "a container base image that is a CUDA image (`images`)",
    "torch-constraint": "a package whose admitted releases all require an unpaired torch, by the shipped table of "
                        "published metadata (rules/data/torch-constraints.yaml)",
    "cuda-metadata": "a package outside the catalog whose published metadata requires NVIDIA wheels or triton",
    "cuda-build-variable": "a Dockerfile variable (`names`) set to a value that makes an install build CUDA code "
                           "(`DS_BUILD_OPS=1`)",
    "cuda-selector-default": "a Dockerfile ARG / ENV default (`names`) that selects a CUDA build (`labels`: the "
                             "values) and that a later RUN reads",
}
INPUT_KINDS = ("parse-error", "unreadable", "internal-error", "empty-file", "unused-suppression", "unreadable-config")


@dataclass(frozen=True)
class RuleSet:
    """The rules of one run, sorted by id; `compiled` is built on first use (see matchers.py).

    `known` holds the codes of every rule loaded before `select`/`ignore` narrowed the set (removed
    ones excepted): a suppression naming one of them is not an unknown code (OPS003). Empty when the
    set was built by hand: then only its own rules are known.
    """

    rules: tuple[Rule, ...]
    known: frozenset[str] = field(default=frozenset(), compare=False)
    _compiled: list[Compiled] = field(default_factory=list, compare=False, repr=False)

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)

    def by_id(self, rule_id: str) -> Rule | None:
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        return None

    @property
    def compiled(self) -> Compiled:
        if not self._compiled:
            self._compiled.append(compile_rules(self.rules))
        return self._compiled[0]

    def input_rule(self, kind: str) -> Rule | None:
        """The rule of an input matcher of `kind` ("unused-suppression", ...), as `compiled.inputs`
        has it (the last by id), without compiling the rules (a warm scan never needs them)."""
        if self._compiled:
            return self._compiled[0].inputs.get(kind)
        found = None
        for rule in self.rules:
            if any(m.kind == "input" and m.get("input") == kind for m in rule.match):
                found = rule
        return found

    def fingerprint(self) -> str:
        """A stable text that changes whenever any rule changes (for caches)."""
        return repr(tuple((r.id, r.path, r.message, r.match, r.fix, r.fixes, r.severity, r.task) for r in self.rules))


def _fail(path: Path | str, message: str, line: int | None = None) -> RuleError:
    return RuleError(message, path=str(path), line=line)


def _check_type(path: Path, where: str, value: Any, expected: type | tuple[type, ...]) -> None:
    if expected is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value) or not value:
            raise _fail(path, f"{where}: expected a non-empty list of strings")
    elif expected is bool:
        if not isinstance(value, bool):
            raise _fail(path, f"{where}: expected true or false")
    elif expected is int:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise _fail(path, f"{where}: expected a whole number >= 0")
    elif not isinstance(value, expected) or (isinstance(value, str) and not value):
        raise _fail(path, f"{where}: expected a non-empty string")


def _check_regex(path: Path, where: str, pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise _fail(path, f"{where}: bad regular expression {pattern!r}: {exc}") from None


def _matcher(path: Path, raw: Any, index: int) -> Matcher:
    where = f"match[{index}]"
    if not isinstance(raw, dict) or not raw:
        raise _fail(path, f"{where}: expected a mapping")
    kinds = [k for k in raw if k in MATCHERS]
    if len(kinds) != 1:
        raise _fail(path, f"{where}: needs exactly one of {', '.join(MATCHERS)} (got {', '.join(map(str, raw))})",
                    line_of(raw))
    kind = kinds[0]
    allowed = MATCHERS[kind]
    for key, value in raw.items():
        if key not in allowed:
            raise _fail(path, f"{where}: unknown key {key!r} for a {kind} matcher (allowed: {', '.join(allowed)})",
                        line_of(raw, key))
        _check_type(path, f"{where}.{key}", value, allowed[key])
    if kind == "string":
        _check_regex(path, f"{where}.string", raw["string"])
        if "in" not in raw:
            raise _fail(path, f"{where}: a string matcher needs `in` (one or more of {', '.join(CONTEXTS)})")
        for ctx in raw["in"]:
            if ctx not in CONTEXTS:
                raise _fail(path, f"{where}.in: unknown context {ctx!r} (known: {', '.join(CONTEXTS)})")
    if kind == "call":
        if ("keyword" in raw) != ("value" in raw) or ("keyword" not in raw and "max-args" not in raw):
            raise _fail(path, f"{where}: a call matcher needs `keyword` and `value`, or `max-args`")
        if "value" in raw:
            _check_regex(path, f"{where}.value", raw["value"])
    if kind in ("extension-import", "extension-call"):
        if raw[kind] is not True:
            raise _fail(path, f"{where}: {kind} must be true")
        for key in ("module", "relative", "member"):
            if key in raw:
                _check_regex(path, f"{where}.{key}", raw[key])
    if kind == "file" and "contains" in raw:
        _check_regex(path, f"{where}.contains", raw["contains"])
    if kind == "dependency":
        if raw["dependency"] not in DEPENDENCY_KINDS:
            raise _fail(path, f"{where}.dependency: unknown kind {raw['dependency']!r} "
                              f"(known: {', '.join(DEPENDENCY_KINDS)})")
        for key in ("labels", "builds"):
            if key in raw:
                _check_regex(path, f"{where}.{key}", raw[key])
    if kind == "input" and raw["input"] not in INPUT_KINDS:
        raise _fail(path, f"{where}.input: unknown kind {raw['input']!r} (known: {', '.join(INPUT_KINDS)})")
    options = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in sorted(raw.items()))
    return Matcher(kind, options)


_SHIPPED = {"rules": rules_dir, "coverage_db": coverage_db_dir}


def shipped_file(entry: str) -> Path | None:
    """The file a `rules/...` or `coverage_db/...` citation names, if opscan ships it; else None."""
    folder, _, rest = entry.partition("/")
    if folder not in _SHIPPED or not rest or ".." in rest.split("/"):
        return None
    candidate = _SHIPPED[folder]() / rest
    return candidate if candidate.is_file() else None


def _sources(path: Path, raw: Any, line: int | None) -> tuple[str, ...]:
    """`sources`: every entry a public https URL or a file opscan ships (rules/..., coverage_db/...)."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(v, str) and v for v in raw):
        raise _fail(path, "sources: expected a list of URLs or shipped files", line)
    for entry in raw:
        if re.fullmatch(r"https://[^\s/]+\.[^\s/]+/\S*", entry):
            continue
        if shipped_file(entry) is None:
            raise _fail(path, f"sources: {entry!r} is neither a public https URL nor a file opscan ships "
                              "(rules/..., coverage_db/...)", line)
    return tuple(raw)


def _template(path: Path, where: str, text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise _fail(path, f"{where}: expected a non-empty string")
    try:
        fields = {f for _, f, _, _ in string.Formatter().parse(text) if f is not None}
    except ValueError as exc:
        raise _fail(path, f"{where}: bad template: {exc}") from None
    unknown = fields - PLACEHOLDERS
    if unknown:
        raise _fail(path, f"{where}: unknown placeholder(s) {sorted(unknown)}; use {{value}}, {{name}} or {{leaf}} "
                          f"(write {{{{ }}}} for braces)")
    return text.strip()


def _examples(path: Path, raw: Any) -> tuple[Example, ...]:
    if not isinstance(raw, dict):
        raise _fail(path, "examples: expected a mapping with `invalid` and `valid`")
    out: list[Example] = []
    for key in raw:
        if key not in ("invalid", "valid"):
            raise _fail(path, f"examples: unknown key {key!r} (allowed: invalid, valid)", line_of(raw, key))
    for kind in ("invalid", "valid"):
        items = raw.get(kind) or []
        if not isinstance(items, list):
            raise _fail(path, f"examples.{kind}: expected a list")
        for i, item in enumerate(items):
            where = f"examples.{kind}[{i}]"
            expect: tuple[str, ...] = ()
            files: tuple[tuple[str, str], ...]
            if isinstance(item, str):
                files = (("example.py", item),)
            elif (isinstance(item, dict) and "files" in item and set(item) <= {"files", "expect"}
                  and isinstance(item["files"], dict) and item["files"]):
                files = tuple(sorted((str(k), str(v)) for k, v in item["files"].items()))
                raw_expect = item.get("expect", [])
                if not isinstance(raw_expect, list) or not all(
                        isinstance(e, str) and re.fullmatch(r"\S+:\d+ [A-Z][A-Z0-9]*\d{3}", e) for e in raw_expect):
                    raise _fail(path, f"{where}.expect: expected a list of 'path:line CODE' strings")
                expect = tuple(raw_expect)
            else:
                raise _fail(path,
                            f"{where}: expected source text or a mapping {{files: {{path: text}}, expect: [...]}}")
            out.append(Example(files, kind == "invalid", expect))
    return tuple(out)


# The closed vocabulary of codemods a rule's `autofix` may name; opscan/fix/codemods.py implements
# each one (a test pins that the two agree). See docs/fix.md.
CODEMODS = {
    "device-string": "a CUDA device string (\"cuda\", \"cuda:0\", f-string, %, .format) -> the module's device",
    "cuda-method": "`.cuda()` / `.cuda(i)` -> `.to(device)`",
    "availability-idiom": "`\"cuda\" if torch.cuda.is_available() else \"cpu\"` "
                          "-> torch.accelerator.current_accelerator(...)",
    "torch-amp": "`torch.cuda.amp.autocast/GradScaler(...)` -> `torch.amp.*(device.type, ...)`",
    "accelerator-api": "a `torch.cuda.*` call -> its `torch.accelerator` equivalent (`replace`)",
    "backend-for-device": "an `\"nccl\"` process-group backend "
                          "-> torch.distributed.get_default_backend_for_device(device)",
    "required-check": "a check that the script requires CUDA to start "
                      "-> the same check of `torch.accelerator` (`replace`)",
}
FIX_SAFETY = ("safe", "unsafe")


def _autofix(path: Path, raw: Any) -> AutoFix | None:
    if raw is None:
        return None
    allowed = ("codemod", "safety", "replace", "examples")
    if not isinstance(raw, dict):
        raise _fail(path, "autofix: expected a mapping with codemod, safety, examples")
    for key in raw:
        if key not in allowed:
            raise _fail(path, f"autofix: unknown key {key!r} (allowed: {', '.join(allowed)})", line_of(raw, key))
    if raw.get("codemod") not in CODEMODS:
        raise _fail(path, f"autofix.codemod {raw.get('codemod')!r}: expected one of {', '.join(CODEMODS)}",
                    line_of(raw, "codemod"))
    if raw.get("safety") not in FIX_SAFETY:
        raise _fail(path, f"autofix.safety {raw.get('safety')!r}: expected safe or unsafe", line_of(raw, "safety"))
    replace = raw.get("replace") or {}
    if not isinstance(replace, dict) or not all(isinstance(k, str) and isinstance(v, str) and k and v
                                                for k, v in replace.items()):
        raise _fail(path, "autofix.replace: expected a mapping of dotted names", line_of(raw, "replace"))
    examples = raw.get("examples")
    if not isinstance(examples, list) or not examples:
        raise _fail(path, "autofix.examples: expected a non-empty list of {before, after}", line_of(raw, "examples"))
    out = []
    for i, item in enumerate(examples):
        if (not isinstance(item, dict) or not {"before", "after"} <= set(item) <= {"before", "after", "unsafe"}
                or not all(isinstance(item[k], str) for k in ("before", "after"))
                or not isinstance(item.get("unsafe", False), bool)):
            raise _fail(path, f"autofix.examples[{i}]: expected {{before: text, after: text, unsafe: bool}}",
                        line_of(item) if isinstance(item, dict) else None)
        out.append(FixExample(item["before"], item["after"], item.get("unsafe", False)))
    return AutoFix(raw["codemod"], raw["safety"], tuple(sorted(replace.items())), tuple(out))


def _fixes(path: Path, raw: Any) -> tuple[FixEntry, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _fail(path, "fixes: expected a list of {names, fix, requires}")
    out = []
    for i, item in enumerate(raw):
        where = f"fixes[{i}]"
        if not isinstance(item, dict):
            raise _fail(path, f"{where}: expected a mapping")
        for key in item:
            if key not in ("names", "fix", "requires", "severity", "message"):
                raise _fail(path, f"{where}: unknown key {key!r} (allowed: names, fix, requires, severity, message)",
                            line_of(item, key))
        if item.get("severity", "error") not in SEVERITIES:
            raise _fail(path, f"{where}.severity {item.get('severity')!r}: expected one of {', '.join(SEVERITIES)}",
                        line_of(item, "severity"))
        _check_type(path, f"{where}.names", item.get("names"), list)
        requires = item.get("requires", [])
        if requires:
            _check_type(path, f"{where}.requires", requires, list)
        message = _template(path, f"{where}.message", item["message"]) if "message" in item else ""
        out.append(FixEntry(tuple(item["names"]), _template(path, f"{where}.fix", item.get("fix")), tuple(requires),
                            item.get("severity", ""), message))
    return tuple(out)


def load_rule_file(path: Path, memo: RulesMemo | None = None) -> Rule:
    """Load and validate one rule file; raises RuleError naming the file and the problem.
    `memo`: parsed documents by the file's bytes (NOTE [rules memo] in scan/rules_memo.py)."""
    try:
        data = path.read_bytes()
        remembered = memo.get(data) if memo is not None else None
        if remembered is not None:
            try:
                return _build_rule(path, remembered)
            except (RuleError, LookupError, TypeError, ValueError, AttributeError):
                pass   # raised again from a fresh parse, which knows the lines
        raw = parse_yaml(data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n"))   # as read_text
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(path, f"cannot read rule file: {exc}") from None
    except YamlProblem as exc:   # invalid YAML, or a key given twice in one mapping
        raise _fail(path, str(exc), exc.line) from None
    rule = _build_rule(path, raw)
    if memo is not None:
        memo.put(data, raw)
    return rule


def _build_rule(path: Path, raw: Any) -> Rule:
    if not isinstance(raw, dict):
        raise _fail(path, "expected a mapping at the top level", 1)
    for key in raw:
        if key not in TOP_KEYS:
            raise _fail(path, f"unknown key {key!r} (allowed: {', '.join(sorted(TOP_KEYS))})", line_of(raw, key))
    missing = [k for k in REQUIRED if k not in raw]
    if missing:
        raise _fail(path, f"missing key(s): {', '.join(missing)}")
    rule_id = str(raw["id"])
    if not re.fullmatch(r"[A-Z][A-Z0-9]*\d{3}", rule_id):
        raise _fail(path, f"id {rule_id!r}: expected letters then three digits, e.g. OPS101")
    name = str(raw["name"])
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name):
        raise _fail(path, f"name {name!r}: expected kebab-case")
    if path.stem != name:
        raise _fail(path, f"file name must be the rule name: {name}.yaml")
    if raw["status"] not in STATUSES:
        raise _fail(path, f"status {raw['status']!r}: expected one of {', '.join(STATUSES)}")
    if raw["category"] not in CATEGORIES:
        raise _fail(path, f"category {raw['category']!r}: expected one of {', '.join(CATEGORIES)}")
    if raw["severity"] not in SEVERITIES:
        raise _fail(path, f"severity {raw['severity']!r}: expected one of {', '.join(SEVERITIES)}")
    if raw["task"] not in TASKS:
        raise _fail(path, f"task {raw['task']!r}: expected one of {', '.join(TASKS)} (docs/scan.md, \"Task kinds\")",
                    line_of(raw, "task"))
    match = raw["match"]
    if isinstance(match, dict):
        match = [match]
    if not isinstance(match, list) or not match:
        raise _fail(path, "match: expected a matcher mapping or a list of them")
    matchers = tuple(_matcher(path, m, i) for i, m in enumerate(match))
    docs = raw["docs"]
    if not isinstance(docs, dict):
        raise _fail(path, "docs: expected a mapping with what, why, fix")
    for key in docs:
        if key not in DOC_KEYS:
            raise _fail(path, f"docs: unknown key {key!r} (allowed: {', '.join(DOC_KEYS)})", line_of(docs, key))
    for key in DOC_KEYS:
        if not isinstance(docs.get(key), str) or not docs[key].strip():
            raise _fail(path, f"docs.{key}: missing or empty")
    requires = raw.get("requires", []) or []
    if requires:
        _check_type(path, "requires", requires, list)
    return Rule(
        id=rule_id, name=name, status=raw["status"], since=str(raw["since"]),
        category=Category(raw["category"]), severity=raw["severity"],
        message=_template(path, "message", raw["message"]),
        match=matchers, what=docs["what"].strip(), why=docs["why"].strip(), fix_doc=docs["fix"].strip(),
        fix=_template(path, "fix", raw["fix"]), requires=tuple(requires), fixes=_fixes(path, raw.get("fixes")),
        examples=_examples(path, raw["examples"]), path=str(path), task=raw["task"],
        sources=_sources(path, raw.get("sources"), line_of(raw, "sources")), autofix=_autofix(path, raw.get("autofix")),
    )


def load_rule_dir(directory: Path, memo: RulesMemo | None = None) -> list[Rule]:
    """Every *.yaml / *.yml rule file in `directory` (not recursive), sorted by file name."""
    if not directory.is_dir():
        raise RuleError("rule directory not found", path=str(directory))
    files = sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])
    return [load_rule_file(p, memo) for p in files]


def unknown_selectors(rules: Iterable[Rule], patterns: Iterable[str]) -> list[str]:
    """One problem line per entry of `patterns` that selects no rule, with the closest valid one.

    A selector is a rule code, a prefix of at least one code ("OPS2"), a rule name or a category
    (as in ruff, an unknown one is an error: a typo must not silently turn a check off).
    """
    import difflib

    rules = list(rules)
    words = sorted({r.id for r in rules} | {r.name for r in rules} | {r.category.value for r in rules})
    out = []
    for pattern in dict.fromkeys(patterns):
        if pattern and any(_selected(r, (pattern,)) for r in rules):
            continue
        # the most similar word; among equally similar ones the one differing in the fewest positions
        # ("OPS1O1" -> "OPS101", not "OPS311"), then the first in order
        close = [min(words, key=lambda w: (-difflib.SequenceMatcher(None, pattern, w).ratio(),
                                           sum(a != b for a, b in zip(pattern, w)) + abs(len(pattern) - len(w)),
                                           w))] if pattern and words else []
        hint = f": did you mean {close[0]!r}?" if close else ""
        out.append(f"unknown rule selector {pattern!r}{hint} (use a rule code, code prefix, rule name "
                   "or category; `opscan rules` lists them)")
    return out


def _selected(rule: Rule, patterns: tuple[str, ...]) -> bool:
    return any(rule.id.startswith(p) or rule.name == p or rule.category == p for p in patterns)


def load_rules(extra_dirs: Iterable[str | os.PathLike[str]] = (), select: Sequence[str] = (),
               ignore: Sequence[str] = (), builtin: bool = True, memo_dir: Path | None = None) -> RuleSet:
    """Load the built-in rules plus `extra_dirs`, keep `select`ed ones, drop `ignore`d ones.

    Args:
        extra_dirs: folders (or single files) of the user's own rule files.
        select: codes, code prefixes ("OPS2"), rule names or categories to keep (empty: all).
        ignore: the same, to drop; applied after `select`.
        builtin: load the shipped rules too.
        memo_dir: the folder of the memo of parsed rule files (the scan cache's; NOTE [rules memo]).
    Raises:
        RuleError: a file that does not load, or an id or name used twice.
        UsageError: a `select` or `ignore` entry that selects no rule (see unknown_selectors).
    """
    memo = open_memo(memo_dir) if memo_dir is not None else None
    if memo is None:
        close_memo()   # the shipped tables this run reads are not answered from another run's folder
    rules: list[Rule] = load_rule_dir(rules_dir(), memo) if builtin else []
    for extra in extra_dirs:
        extra = Path(extra)
        rules.extend([load_rule_file(extra, memo)] if extra.is_file() else load_rule_dir(extra, memo))
    if memo is not None:
        memo.save()
    seen_id: dict[str, str] = {}
    seen_name: dict[str, str] = {}
    for rule in rules:
        if rule.id in seen_id:
            raise RuleError(f"rule id {rule.id} is also used by {seen_id[rule.id]}", path=rule.path)
        if rule.name in seen_name:
            raise RuleError(f"rule name {rule.name} is also used by {seen_name[rule.name]}", path=rule.path)
        seen_id[rule.id] = rule.path
        seen_name[rule.name] = rule.path
    problems = unknown_selectors(rules, [*select, *ignore])
    if problems:
        raise UsageError(problems[0] if len(problems) == 1 else "; ".join(problems))
    chosen = [r for r in rules if r.status != "removed"]
    if select:
        chosen = [r for r in chosen if _selected(r, tuple(select)) or r.category is Category.INPUT]
    if ignore:
        chosen = [r for r in chosen if not _selected(r, tuple(ignore))]
    known = frozenset(r.id for r in rules if r.status != "removed")
    return RuleSet(tuple(sorted(chosen, key=lambda r: r.id)), known)
