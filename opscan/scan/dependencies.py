"""Judges dependency manifests' entries (scan/manifests.py) against the rules' `dependency` matchers.

What a run knows beyond the file (the torch versions the selected TorchNeuron release pairs with,
the CUDA-only library catalog, the installed distributions' torch requirements) arrives as one
`DependencyContext`, built by opscan/pipeline/phases.py from coverage_db and opscan/plan/libraries.yaml
(the scan imports neither). The companion tables (torchvision/torchaudio -> torch, packages that
ended) are data: rules/data/torch-companions.yaml. NOTE [torch pins] says how a specifier is judged.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from packaging.version import InvalidVersion, Version

from opscan.resources import rules_dir
from opscan.scan.rules import DEPENDENCY_KINDS  # re-exported

if TYPE_CHECKING:
    from collections.abc import Iterable

    from packaging.specifiers import SpecifierSet

    from opscan.scan.manifests import Entry, Problem, decode_lines
    from opscan.scan.rule_records import Matcher, Rule

    DependencyRules = tuple[tuple[Matcher, Rule], ...]   # (dependency matcher, rule) of a run
    Hit = tuple[Rule, int, str, str, str, bool, str]     # a finding of hits(): its docstring names the parts

# NOTE [what a scan without manifests imports]
# A scan reads DependencyContext, library_patterns and companions from here on every run, even a
# warm one whose manifests are all cached; the manifest parsers (scan/manifests.py and the others:
# ~75 regexes), packaging's specifiers and tags, and the constraints table are imported by the
# functions that read or judge a manifest, when they first run (issue 40's warm scan: ~16 ms).


def __getattr__(name: str) -> Any:   # PEP 562: the re-exports of scan/manifests.py, imported when asked
    if name in ("Problem", "decode_lines"):
        from opscan.scan import manifests

        return getattr(manifests, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

TORCH = "torch"
_PATCHES = tuple(range(0, 21))   # NOTE [torch pins]


@dataclass(frozen=True)
class DependencyContext:
    """What the dependency rules need beyond the file; empty fields mean "not known"."""

    release: str = ""                               # "torchneuron==2.33.0"; "": torch pins are not judged
    torch: tuple[str, ...] = ()                     # torch minors the release pairs with ("2.13", "2.14")
    pairs: str = ""                                 # "torch-neuronx 2.13.3.0 with torch 2.13, ..."
    libraries: tuple[tuple[str, str], ...] = ()     # (distribution pattern, catalog package) of CUDA-only libraries
    # (catalog package, first release whose wheels also run on CPU): NOTE [CPU-capable releases] in
    # opscan/plan/libraries.py
    cpu_since: tuple[tuple[str, str], ...] = ()
    # (distribution, extras that are its CUDA install): NOTE [CUDA extras] in opscan/plan/libraries.py
    cuda_extras: tuple[tuple[str, tuple[str, ...]], ...] = ()
    installed: tuple[tuple[str, str, str], ...] = ()   # (distribution, version, its torch requirement)
    # (distribution, version, the NVIDIA wheels / triton it requires, "" for none) of the installed
    # distributions whose metadata names torch, NVIDIA wheels or triton
    installed_cuda: tuple[tuple[str, str, str], ...] = ()
    environment: str = ""                           # the interpreter the installed metadata was read from

    def fingerprint(self) -> str:
        """Changes whenever the context does (the scan cache's salt covers it)."""
        return hashlib.sha256(repr(self).encode()).hexdigest()[:16]

    @property
    def paired(self) -> str:
        """"2.13/2.14" for messages."""
        return "/".join(self.torch) or "?"


EMPTY = DependencyContext()


@dataclass(frozen=True)
class Companions:
    """rules/data/torch-companions.yaml: package minor -> torch minor, and packages that ended."""

    pairs: dict[str, dict[str, str]]    # name -> {package minor: torch minor}
    sources: dict[str, str]             # name -> the page its row comes from
    ended: dict[str, tuple[str, str]]   # name -> (last release, the torch minor it is built for)
    # name -> (package minor, torch minor): releases from that minor support every later torch
    later: dict[str, tuple[str, str]]


@lru_cache(maxsize=1)
def companions() -> Companions:
    """The shipped companion tables (loaded once per process)."""
    from packaging.utils import canonicalize_name

    from opscan.strict_yaml import shipped_data

    doc = shipped_data((rules_dir() / "data" / "torch-companions.yaml").read_text(encoding="utf-8"))
    rows, gone = doc["companions"], doc["ended"]
    pairs: dict[str, dict[str, str]] = {
        canonicalize_name(n): {str(k): str(v) for k, v in e["pairs"].items()} for n, e in rows.items()}
    sources: dict[str, str] = {canonicalize_name(n): e["source"] for n, e in {**rows, **gone}.items()}
    ended: dict[str, tuple[str, str]] = {canonicalize_name(n): (str(e["last"]), str(e["torch"]))
                                         for n, e in gone.items()}
    later: dict[str, tuple[str, str]] = {canonicalize_name(n): (str(e["later"]["from"]), str(e["later"]["torch"]))
                                         for n, e in rows.items() if e.get("later")}
    return Companions(pairs, sources, ended, later)


# NOTE [torch pins]
# A specifier admits a paired torch when it contains some version of a paired minor series:
# M.0 .. M.20 for each minor M the release pairs with (prereleases included, local labels ignored:
# `==2.13.0+cu121` admits 2.13.0, its CUDA label is OPS504's). No version list is fetched, so a
# specifier admitting only a patch that does not exist yet (`>2.13.25,<2.14`) counts as admitting
# one. An unpinned requirement admits every version: nothing is reported (`torch`, `torch>=2.6`).
# A locked version is judged by its minor. The finding's subject is `torch M.N`, the newest torch
# minor the specifier admits (or the locked one) and the paired ones, `torch 2.0 to 2.13/2.14`: the
# plan sizes the torch move by it (plan/sizing.py torch_distance).
# NOTE [locks]
# A lock file lists every package the resolver installed, also those torch itself pulls in (a CUDA
# torch brings triton and a dozen `nvidia-*` wheels). Locks are therefore judged on what moves with
# torch only: the torch version (OPS501), companions and ended packages (OPS502, OPS503), and the
# CUDA index or label of torch and its companions (OPS504). Direct CUDA builds and CUDA-only
# libraries are reported where the project asks for them (requirements, pyproject, conda).
# A lock's finding on a package its manifest beside it already reports is dropped
# (locks.py `dedupe_locks`): the manifest line changes, the lock is regenerated.
@lru_cache(maxsize=4096)
def _spec(text: str) -> SpecifierSet | None:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        return SpecifierSet(re.sub(r"\+[A-Za-z0-9.]+", "", text))
    except InvalidSpecifier:
        return None


def _minor(version: str) -> str:
    try:
        release = Version(version).release
    except InvalidVersion:
        return ""
    return f"{release[0]}.{release[1] if len(release) > 1 else 0}"


def _bounds(spec: SpecifierSet) -> tuple[tuple[int, ...], ...]:
    """The release tuples the specifier's clauses name (`<2.1.2` -> (2, 1, 2))."""
    out = []
    for clause in spec:
        try:
            out.append(Version(clause.version.rstrip(".*")).release)
        except InvalidVersion:
            continue
    return tuple(out)


@lru_cache(maxsize=8192)
def _admits(spec_text: str, minor: str) -> bool:
    spec = _spec(spec_text)
    if spec is None:
        return False
    major, rest = (int(p) for p in minor.split("."))
    # A specifier's answer only changes at the versions its clauses name: within the series test
    # its first and last patch and each named patch with its neighbours (NOTE [torch pins]).
    patches = {0, _PATCHES[-1]}
    for bound in _bounds(spec):
        if bound[:2] == (major, rest):
            patch = bound[2] if len(bound) > 2 else 0
            patches.update(p for p in (patch - 1, patch, patch + 1) if _PATCHES[0] <= p <= _PATCHES[-1])
    candidates = [f"{minor}.{p}" for p in sorted(patches)] + [minor]
    return any(spec.contains(v, prereleases=True) for v in candidates)


def admits_minor(spec: SpecifierSet, minor: str) -> bool:
    """Whether `spec` admits some version of the `minor` series (NOTE [torch pins])."""
    return _admits(str(spec), minor)


_KNOWN_MINORS = tuple(f"1.{m}" for m in range(0, 14)) + tuple(f"2.{m}" for m in range(0, 31))


@lru_cache(maxsize=4096)
def _newest(spec_text: str) -> str:
    spec = _spec(spec_text)
    if spec is None:
        return ""
    named = {f"{b[0]}.{b[1] if len(b) > 1 else 0}" for b in _bounds(spec)}
    index = {m: i for i, m in enumerate(_KNOWN_MINORS)}
    # the answer changes only at a named minor: the newest admitted one is the top, a named one or
    # the one just below a named one
    candidates = {len(_KNOWN_MINORS) - 1}
    for minor in named & set(index):
        candidates.update(i for i in (index[minor], index[minor] - 1) if i >= 0)
    for i in sorted(candidates, reverse=True):
        if _admits(spec_text, _KNOWN_MINORS[i]):
            return _KNOWN_MINORS[i]
    return ""


def newest_minor(spec: SpecifierSet) -> str:
    """The newest torch minor (1.0 .. 2.30) the specifier admits, or ""."""
    return _newest(str(spec))


def _labels(entry: Entry, regex: re.Pattern[str]) -> str:
    for text in (entry.spec, entry.version, entry.url):
        match = regex.search(text or "")
        if match:
            return match[0]
    return ""


class _Judge:
    def __init__(self, ctx: DependencyContext, sources: dict[str, str], own: str = "") -> None:
        self.ctx = ctx
        self.sources = sources   # uv: package -> index name
        self.own = own           # the manifest's own project (`sglang[srt]` in sglang's extras: a self-reference)
        self.table = companions()

    def torch_pin(self, entry: Entry) -> tuple[str, str] | None:
        """(value, subject) when the entry pins torch away from every paired minor."""
        if entry.name != TORCH or not self.ctx.torch:
            return None
        if entry.kind == "locked":
            minor = _minor(entry.version)
            if minor and minor not in self.ctx.torch:
                return (f"torch {entry.version} is locked; {self.ctx.release} pairs with torch {self.ctx.paired}",
                        f"torch {minor} to {self.ctx.paired}")
            return None
        if entry.kind not in ("requirement", "conda") or not entry.spec:
            return None
        spec = _spec(entry.spec)
        if spec is None or any(admits_minor(spec, m) for m in self.ctx.torch):
            return None
        newest = newest_minor(spec)
        return (f"torch{entry.spec} admits no torch {self.ctx.paired}, the versions {self.ctx.release} pairs with "
                f"({self.ctx.pairs})"), f"torch {newest} to {self.ctx.paired}" if newest else TORCH

    def companion(self, entry: Entry) -> tuple[str, str] | None:
        from packaging.utils import canonicalize_name

        if entry.kind not in ("requirement", "locked", "conda") or not self.ctx.torch:
            return None
        installed: dict[str, tuple[str, str]] = {canonicalize_name(d): (v, req) for d, v, req in self.ctx.installed}
        if entry.name in installed:   # the environment's own metadata replaces the tables
            version, torch_req = installed[entry.name]
            chosen = entry.version if entry.kind == "locked" else version
            spec = _spec(entry.spec) if entry.kind != "locked" and entry.spec else None
            if chosen == version and (spec is None or spec.contains(version, prereleases=True)) and torch_req:
                torch_spec = _spec(torch_req)
                if torch_spec is not None and not any(admits_minor(torch_spec, m) for m in self.ctx.torch):
                    return (f"{entry.name} {version} (installed in {self.ctx.environment or 'this environment'}) "
                            f"requires torch{torch_req}"), entry.name
            return None
        pairs = self.table.pairs.get(entry.name)
        if pairs is None:
            return None
        if entry.kind == "locked":
            torch_minor = pairs.get(_minor(entry.version))
            if torch_minor and torch_minor not in self.ctx.torch:
                return (f"{entry.name} {entry.version} (locked) is built for torch {torch_minor}; "
                        f"{self._wanted(pairs, entry.name)}"), entry.name
            return None
        spec = _spec(entry.spec) if entry.spec else None
        if spec is None:
            return None
        admitted = [minor for minor in pairs if admits_minor(spec, minor)]
        newest = max(pairs, key=lambda m: Version(m))
        beyond = Version(newest).release
        after = f"{beyond[0]}.{beyond[1] + 1}" if len(beyond) > 1 else f"{beyond[0] + 1}.0"
        if not admitted or admits_minor(spec, after) or any(pairs[m] in self.ctx.torch for m in admitted):
            return None   # unknown versions, or one that pairs
        torches = sorted({pairs[m] for m in admitted}, key=Version)
        return (f"{entry.name}{entry.spec} is built for torch {', '.join(torches)}; "
                f"{self._wanted(pairs, entry.name)}"), entry.name

    def _wanted(self, pairs: dict[str, str], name: str = "") -> str:
        """"torch 2.13/2.14 needs 0.28/0.29" from the table, "needs 2.11 or later" from its `later`
        row (or "no version in the table pairs")."""
        wanted = [m for m in sorted(pairs, key=Version) if pairs[m] in self.ctx.torch]
        if wanted:
            return f"torch {self.ctx.paired} needs {'/'.join(wanted)}"
        first, torch_minor = self.table.later.get(name, ("", ""))
        if first and all(Version(m) >= Version(torch_minor) for m in self.ctx.torch):
            return f"torch {self.ctx.paired} needs {first} or later (built for every torch from {torch_minor} on)"
        return f"no version in its table is built for torch {self.ctx.paired}"

    def ended(self, entry: Entry) -> tuple[str, str] | None:
        if entry.kind not in ("requirement", "locked", "conda") or entry.name not in self.table.ended:
            return None
        last, torch_minor = self.table.ended[entry.name]
        if self.ctx.torch and torch_minor in self.ctx.torch:
            return None
        return f"{entry.name} (last release {last}, for torch {torch_minor})", entry.name

    def cuda_index(self, entry: Entry, urls: tuple[str, ...], labels: re.Pattern[str] | None
                   ) -> tuple[str, str] | None:
        if entry.kind == "index" and entry.url and any(fnmatchcase(entry.url.lower(), p) for p in urls):
            via = [name for name, index in sorted(self.sources.items()) if index and index == entry.name]
            extra = f" (the `[tool.uv.sources]` index of {', '.join(via)})" if via else ""
            return f"{entry.url}{extra}", "index"
        if labels is not None and entry.kind in ("requirement", "locked") and entry.name and \
                (entry.kind == "requirement" or entry.name == TORCH or entry.name in self.table.pairs):
            label = _labels(entry, labels)
            if label:
                return f"{entry.name} {label.lstrip('+')}", entry.name
        if entry.kind == "locked" and entry.url and any(fnmatchcase(entry.url.lower(), p) for p in urls) and \
                (entry.name == TORCH or entry.name in self.table.pairs):   # not every NVIDIA wheel torch pulls in
            return f"{entry.name} {entry.version} from {entry.url}", entry.name
        return None

    def held_back(self, entry: Entry) -> tuple[str, str] | None:
        """NOTE [packages that hold torch back] in scan/constraints.py; a package the companion or
        ended tables already judge is theirs."""
        from opscan.scan import constraints

        if entry.kind not in ("requirement", "locked", "conda") or not self.ctx.torch or entry.name == TORCH:
            return None
        if self.companion(entry) is not None or self.ended(entry) is not None or self._installed(entry):
            return None   # the installed metadata (OPS502) replaces the table for the installed version
        if entry.kind != "locked" and not entry.spec:
            return None
        message = constraints.held_back(entry.name, entry.spec, entry.version if entry.kind == "locked" else "",
                                        self.ctx.torch, _admits)
        return (message, entry.name) if message else None

    def _installed(self, entry: Entry) -> bool:
        """Whether the entry asks for the version installed in --environment (its metadata judges it)."""
        for name, version, _torch in self.ctx.installed:
            if name == entry.name:
                if entry.kind == "locked":
                    return entry.version == version
                spec = _spec(entry.spec) if entry.spec else None
                return spec is None or spec.contains(version, prereleases=True)
        return False

    def cuda_metadata(self, entry: Entry) -> tuple[str, str] | None:
        """NOTE [cuda by metadata] in scan/constraints.py: outside the catalog, CUDA-only by what it requires."""
        from opscan.scan import constraints

        if entry.kind not in ("requirement", "conda") or not entry.name or entry.inferred \
                or self.cuda_library(entry) is not None:
            return None   # an inferred name (NOTE [nameless VCS URLs]) is no proven distribution
        for name, version, required in self.ctx.installed_cuda:   # the environment's own metadata first
            if name == entry.name:
                spec = _spec(entry.spec) if entry.kind == "requirement" and entry.spec else None
                if spec is not None and not spec.contains(version, prereleases=True):
                    break   # the manifest asks for another version: the table decides
                where = self.ctx.environment or "this environment"
                return (f"{entry.name} ({version} installed in {where} requires {required})", entry.name) \
                    if required else None
        needs = constraints.cuda_requires(entry.name)
        return (f"{entry.name} (its published metadata requires {', '.join(needs)})", entry.name) if needs else None

    def cuda_library(self, entry: Entry) -> tuple[str, str] | None:
        # what the project asks for: a lock's CUDA-only packages come with its torch (NOTE [locks])
        if entry.kind not in ("requirement", "conda", "path") or not entry.name:
            return None
        package = _library_of(entry.name, self.ctx.libraries)
        if entry.kind == "path" and entry.inferred:   # NOTE [cloned checkouts] in scan/docker_clones.py
            package = package or _library_of(entry.inferred, self.ctx.libraries)
            return (f"{entry.name} (a clone of {entry.url} installed from source: the catalog names its repository)",
                    package) if package else None
        if package and entry.kind == "path":   # NOTE [local folders] in scan/manifests.py
            return f"{entry.name} (a local folder: the name is its folder's, {entry.url})", package
        if not package and entry.inferred:   # NOTE [catalog repositories]
            package = _library_of(entry.inferred, self.ctx.libraries)
        if package and self._cpu_release(entry, package):
            return None   # OPS513's: NOTE [CPU-capable releases] in opscan/plan/libraries.py
        if package and entry.inferred:   # a URL without a name: say the name is inferred
            how = "its #egg= name" if "egg=" in entry.url else "the repository"
            return f"{entry.name} (a URL without a name: inferred from {how}, {entry.inferred})", package
        if package:
            return entry.name, package
        for name, extras in self.ctx.cuda_extras:   # NOTE [CUDA extras] in opscan/plan/libraries.py
            chosen = [extra for extra in entry.extras if extra in extras]
            if entry.kind == "requirement" and name == entry.name and chosen and entry.name != self.own:
                return f"{entry.name}[{','.join(chosen)}]", entry.name
        return None

    def cpu_capable(self, entry: Entry) -> tuple[str, str] | None:
        """A catalog library's requirement that admits a release with CPU wheels (NOTE [CPU-capable releases])."""
        if entry.kind not in ("requirement", "conda") or not entry.name:
            return None
        package = _library_of(entry.name, self.ctx.libraries)
        first = self._cpu_release(entry, package) if package else ""
        return (f"{entry.text or entry.name} admits {entry.name} {first} or later", package) if first else None

    def _cpu_release(self, entry: Entry, package: str) -> str:
        """The library's first CPU-capable release when the entry admits it or a later one, else ""."""
        from packaging.specifiers import SpecifierSet

        first = dict(self.ctx.cpu_since).get(package, "")
        if not first:
            return ""
        spec = _spec(entry.spec) if entry.spec else SpecifierSet()
        if spec is None:
            return ""
        return first if _admits_from(spec, Version(first)) else ""


def _admits_from(spec: SpecifierSet, first: Version) -> bool:
    """Whether `spec` admits `first` or a later release: `first`, the versions the specifier names
    at or after it (and their next patch and minor), and a far later one are tried."""
    candidates = {first, Version("9999")}
    for item in spec:
        text = item.version.removesuffix(".*")
        try:
            named = Version(text)
        except InvalidVersion:
            continue
        release = named.release + (0,) * (3 - len(named.release))
        candidates |= {named, Version(f"{release[0]}.{release[1]}.{release[2] + 1}"),
                       Version(f"{release[0]}.{release[1] + 1}.0")}
    return any(spec.contains(c, prereleases=True) for c in candidates if c >= first)


@lru_cache(maxsize=4096)
def _library_of(name: str, libraries: tuple[tuple[str, str], ...]) -> str:
    """The catalog package a distribution installs, or ""."""
    return next((package for pattern, package in libraries if fnmatchcase(name, pattern)), "")


@lru_cache(maxsize=64)
def _compile(matcher: Matcher) -> dict[str, Any]:
    """A matcher's options with its regexes compiled and its patterns lower-cased (the values differ
    by key: build_variables.judge reads the same dict)."""
    out = dict(matcher.options)
    if "labels" in out:
        out["labels"] = re.compile(out["labels"], re.I)
    if "builds" in out:
        out["builds"] = re.compile(out["builds"], re.I)
    for key in ("names", "urls", "channels", "images"):
        if key in out:
            out[key] = tuple(p.lower() for p in out[key])
    return out


def _chunk(pattern: str) -> str:
    """The longest literal part of a glob (`*-cu1[0-9]` -> `-cu1`), or ""."""
    chunks = [c for c in re.split(r"[*?]", re.sub(r"\[[^\]]*\]", "*", pattern.lower())) if c.strip("-_.:/")]
    return max(chunks, key=len) if chunks else ""


@lru_cache(maxsize=16)
def tokens(dependency_rules: DependencyRules, ctx: DependencyContext) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(substrings, names): lower-case texts one of which a manifest must spell to be judged at
    all (NOTE [manifest pre-check]); names count only as whole names (`fla`, not in `flask`)."""
    from opscan.scan import constraints

    words = {"torch", "cuda", "nvidia"}
    names: set[str] = set()
    for matcher, _rule in dependency_rules:
        for key in ("names", "urls", "channels", "images"):
            for pattern in matcher.get(key) or ():
                chunk = _chunk(pattern)
                if chunk:
                    (names if key == "names" and "*" not in pattern and "?" not in pattern else words).add(chunk)
        if matcher.get("labels"):
            words.update(("+cu", "%2bcu"))   # a wheel URL spells the label percent-encoded
    table = companions()
    names.update(table.pairs)
    names.update(table.ended)
    names.update(constraints.table().releases)
    names.update(constraints.table().cuda)
    for pattern, _package in ctx.libraries:
        chunk = _chunk(pattern)
        if chunk:
            (words if "*" in pattern else names).add(chunk)
    names.update(name for name, _extras in ctx.cuda_extras)
    return tuple(sorted(words)), tuple(sorted(names))


def _variants(word: str) -> set[str]:
    return {word, word.replace("-", "_"), word.replace("-", ".")}


# NOTE [manifest pre-check]
# A manifest is read only when its lower-cased text spells one of the tokens: torch, cuda, nvidia,
# each rule pattern's longest literal part (`+cu` also as `%2bcu`: a wheel URL's label), and as
# whole names (not inside another word: `fla` is not in `flask`) the companion and catalog names,
# with `-`, `_` and `.` spelt either way. A
# requirements file of web packages costs one regex search, like a Python file that spells no
# pre-filter token (NOTE [pre-check] in file_scan.py).
@lru_cache(maxsize=16)
def _token_regex(words: tuple[str, ...], names: tuple[str, ...]) -> re.Pattern[str]:
    spelled = sorted({v for w in words for v in _variants(w)}, key=len, reverse=True)
    whole = sorted({v for w in names for v in _variants(w)}, key=len, reverse=True)
    parts = [re.escape(w) for w in spelled]
    if whole:
        parts.append(r"(?<![a-z0-9])(?:" + "|".join(re.escape(w) for w in whole) + r")(?![a-z0-9])")
    return re.compile("|".join(parts))


def relevant(text: str, dependency_rules: DependencyRules, ctx: DependencyContext) -> bool:
    """The manifest pre-check (NOTE [manifest pre-check])."""
    return _token_regex(*tokens(dependency_rules, ctx)).search(text.lower()) is not None


def read(kind: str, text: str) -> tuple[list[Entry], list[Problem]]:
    """The entries and problems of a manifest of `kind` (scan/files.py manifest_kind)."""
    from opscan.scan import conda_manifests, docker_manifests, manifests, setup_manifests, toml_manifests

    if kind == "requirements":
        if conda_manifests.conda_list(text):   # NOTE [conda lists under a requirements name]
            return conda_manifests.read_conda_list(text)
        entries, problems, _ = manifests.read_requirements(text)
        return entries, problems
    readers = {"pyproject": toml_manifests.read_pyproject, "pipfile": toml_manifests.read_pipfile,
               "uv-lock": toml_manifests.read_toml_lock, "poetry-lock": toml_manifests.read_toml_lock,
               "pdm-lock": toml_manifests.read_toml_lock, "pipfile-lock": toml_manifests.read_pipfile_lock,
               "setup-py": setup_manifests.read_setup_py, "setup-cfg": setup_manifests.read_setup_cfg,
               "conda": conda_manifests.read_conda, "dockerfile": docker_manifests.read_dockerfile}
    return readers[kind](text)


def hits(relpath: str, kind: str, text: str, dependency_rules: DependencyRules, ctx: DependencyContext
         ) -> tuple[list[Hit], list[Problem]]:
    """(rule, line, value, name, subject, optional, cpu_extra) for each finding of a manifest, and
    the lines it could not read. `name` picks a rule's `fixes` entry (the matched distribution,
    channel or image); `optional`: the entry is in an extra or a dependency group (reported guarded:
    it never blocks, like code under an availability check); `cpu_extra`: the entry's extra is a
    CUDA alternative of that CPU extra of the same manifest (NOTE [CUDA alternatives]), else ""."""
    from opscan.scan import alternatives, setup_manifests, toml_manifests

    entries, problems = read(kind, text)
    judge = _Judge(ctx, toml_manifests.uv_sources(text) if kind == "pyproject" else {},
                   toml_manifests.project_name(text) if kind == "pyproject" else "")
    extras = toml_manifests.extra_names(text) if kind == "pyproject" else \
        setup_manifests.setup_cfg_extras(text) if kind == "setup-cfg" else ()
    out: list[Hit] = []
    seen: set[tuple[str, int, str]] = set()
    uses: dict[tuple[str, int, str], list[int]] = {}   # a version's line -> the install lines that use it
    for matcher, rule in dependency_rules:
        what = matcher.get("dependency")
        options = _compile(matcher)
        for entry in entries:
            got = _judge(judge, what, options, entry)
            if got is None:
                continue
            value, subject = got
            line = entry.version_line if what in _VERSION_JUDGED and entry.version_line else entry.line
            key = (rule.id, line, value)
            if line != entry.line:
                uses.setdefault(key, []).append(entry.line)
            if key in seen:
                continue
            seen.add(key)
            out.append((rule, line, value, entry.name or entry.text, subject, entry.optional,
                        alternatives.cpu_extra(entry.extra, extras)))
    return [hit if (hit[0].id, hit[1], hit[2]) not in uses else
            (hit[0], hit[1], f"{hit[2]} ({_used_by(uses[(hit[0].id, hit[1], hit[2])])})", *hit[3:])
            for hit in out], problems


# NOTE [versions written by a Dockerfile variable]
# A pin judged by its version (OPS501 torch, OPS502 companions, OPS509 packages that hold torch back)
# whose version an ARG / ENV default wrote (`ARG TORCH_VERSION=2.12.0+cpu` ... `pip install
# torch==${TORCH_VERSION}`) is reported once, at the ARG / ENV line, its value naming the install
# lines that use it ("used by line 63"): the port changes the version there (the default is the one
# place the file writes it, a `--build-arg` overrides it there, and both labellers of the tenth
# held-out part put the line there), and the install line itself is unchanged. A version written on
# the install line (`torch==2.0.1`, `${V:-2.0.1}`) stays there, and so does every finding judged by
# the package's name (a CUDA-only library, an ended package): the port drops or fences that line.
_VERSION_JUDGED = frozenset({"torch-pin", "companion", "torch-constraint"})


def _used_by(lines: list[int]) -> str:
    ordered = sorted(set(lines))
    return f"used by line{'s' if len(ordered) > 1 else ''} {', '.join(str(n) for n in ordered)}"


def _judge(judge: _Judge, what: str, options: dict[str, Any], entry: Entry) -> tuple[str, str] | None:
    from opscan.scan import build_variables

    if what == "torch-pin":
        return judge.torch_pin(entry)
    if what == "companion":
        return judge.companion(entry)
    if what == "ended":
        return judge.ended(entry)
    if what == "cuda-index":
        return judge.cuda_index(entry, options.get("urls", ()), options.get("labels"))
    if what == "cuda-library":
        return judge.cuda_library(entry)
    if what == "cpu-capable-library":
        return judge.cpu_capable(entry)
    if what == "torch-constraint":
        return judge.held_back(entry)
    if what == "cuda-metadata":
        return judge.cuda_metadata(entry)
    if what == "cuda-build":
        if entry.kind == "requirement" and entry.name and not judge.cuda_library(entry) \
                and any(fnmatchcase(entry.name, p) for p in options.get("names", ())):
            return entry.name, entry.name
        return None
    if what == "apt-cuda":
        if entry.kind == "apt" and any(fnmatchcase(entry.name, p) for p in options.get("names", ())):
            return entry.text, entry.name
        return None
    if what == "conda-cuda":
        if entry.kind == "conda" and not judge.cuda_library(entry):
            if any(fnmatchcase(entry.name, p) for p in options.get("names", ())):
                return entry.text, entry.name
            builds = options.get("builds")
            if builds is not None and entry.build and builds.search(entry.build):
                return entry.text, entry.name
        if entry.kind == "index" and entry.url and "://" not in entry.url and \
                any(fnmatchcase(entry.url.lower(), p) for p in options.get("channels", ())):
            return f"channel {entry.url}", entry.url
        return None
    if what in ("cuda-build-variable", "cuda-selector-default"):
        return build_variables.judge(what, options, entry)
    if what == "cuda-image":
        if entry.kind == "image" and any(fnmatchcase(entry.name.lower(), p) for p in options.get("images", ())):
            # at an ARG line, the value names its FROM (NOTE [CUDA images from variables] in docker_manifests.py)
            value = entry.text if entry.text.startswith(f"{entry.name} (") else entry.name
            return value, entry.name.split(":", 1)[0]
        return None
    return None


# NOTE [catalog repositories]
# A VCS URL installed without a name (NOTE [nameless VCS URLs] in scan/vcs_urls.py) is matched by its
# inferred name like any requirement, and also by its repository: a catalog library's source that is
# a repository's home page (`https://github.com/NVlabs/tiny-cuda-nn`, exactly owner and name, no deeper
# path) is that library's repository, so `git+https://github.com/NVlabs/tiny-cuda-nn#subdirectory=...`
# is the catalog's tinycudann though the repository's name is no distribution name. The package is
# the library's package whose name is the repository's without separators (`tiny-cuda-nn` ->
# `tinycudann`), else its first. A library that is only a part of its repository's project (its
# `distributions` name none of its packages: deepspeed_ops covers `deepspeed-kernels` while the
# DeepSpeed repository builds `deepspeed`, which runs without CUDA) gives no repository: its
# repository's checkout is not the CUDA-only part. Only nameless URLs are matched this way (a
# named requirement is judged by its name).
_REPOSITORY = re.compile(r"^https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$")


class CatalogLibrary(Protocol):
    """What library_patterns reads of a catalog library (opscan/plan/libraries.py `Library`, which the
    scan does not import)."""

    @property
    def packages(self) -> tuple[str, ...]: ...
    @property
    def distributions(self) -> tuple[str, ...]: ...
    @property
    def sources(self) -> tuple[str, ...]: ...


def library_patterns(catalog_libraries: Iterable[CatalogLibrary]) -> tuple[tuple[str, str], ...]:
    """(distribution pattern, package) pairs of catalog libraries: their `distributions`, else their
    packages' canonical names (`flash_attn` -> `flash-attn`), and their repositories (NOTE [catalog
    repositories]). For phases.py, which reads the catalog."""
    from packaging.utils import canonicalize_name

    out = []
    for library in catalog_libraries:
        declared = {canonicalize_name(d) for d in library.distributions}
        whole = not declared or any(canonicalize_name(p) in declared for p in library.packages)
        for source in library.sources if whole else ():
            home = _REPOSITORY.match(str(source))
            if home:
                flat = re.sub(r"[-_.]", "", home[2]).lower()
                package = next((p for p in library.packages if re.sub(r"[-_.]", "", p).lower() == flat),
                               library.packages[0])
                out.append((f"github.com/{home[1]}/{home[2]}".lower(), package))
        patterns = library.distributions or tuple(canonicalize_name(p) for p in library.packages)
        for pattern in patterns:
            pattern = canonicalize_name(pattern) if "*" not in pattern else pattern.lower()
            # the package a distribution installs: the one its name starts with (`cuml-cu12` -> cuml)
            package = next((p for p in library.packages if pattern.startswith(canonicalize_name(p))),
                           library.packages[0])
            out.append((pattern, package))
    return tuple(sorted(set(out)))


__all__ = ["DEPENDENCY_KINDS", "EMPTY", "DependencyContext", "Problem", "admits_minor", "companions", "decode_lines",
           "hits", "library_patterns", "newest_minor", "relevant", "tokens"]


def known_package(name: str) -> bool:
    """Whether opscan's tables know the package `name` (an import or pip name): the torch companion
    table (rules/data/torch-companions.yaml) or the table of packages that constrain torch."""
    from packaging.utils import canonicalize_name

    from opscan.scan import constraints

    canonical = canonicalize_name(name)
    known = companions()
    return canonical in known.pairs or canonical in known.ended or canonical in constraints.table().releases


def library_namespace(name: str) -> str:
    """The namespace of `torch.ops.<ns>.<op>` (or `torch.ops.<ns>`) when it is a package opscan's tables
    know (`torch.ops.torchvision.nms` -> torchvision: that library's op, NOTE [library ops] in
    opscan/assess/library_ops.py), else ""."""
    parts = name.split(".")
    if len(parts) < 3 or parts[:2] != ["torch", "ops"]:
        return ""
    return parts[2] if known_package(parts[2]) else ""
