"""Dependency manifests read, never run: requirements, pyproject, setup.py/cfg, locks, conda, Dockerfiles.

Each reader turns one file's text into `Entry` records (what the file asks to install, at which line)
and `Problem`s (a line it could not read). Requirements, specifiers and versions are `packaging`'s
types; TOML is `tomllib`, JSON `json`, YAML `yaml` (safe), setup.py `ast`. Nothing is judged here:
scan/dependencies.py decides which entries are findings (NOTE [manifest entries]). The TOML
manifests (pyproject.toml, Pipfile, the locks) are read by scan/toml_manifests.py.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from urllib.parse import unquote
from dataclasses import dataclass, replace

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from opscan.scan import vcs_urls
from opscan.scan.files import manifest_kind  # noqa: F401 - re-exported: the kind of a manifest by its name

# NOTE [manifest entries]
# An Entry is one thing a manifest line asks for, with the 1-based line it is written on:
#   requirement  a PEP 508 requirement (name, specifier, url, marker kept as text)
#   locked       a version a lock file resolves (name, version; url: the index it came from)
#   index        a package index or wheel location (--index-url, [[tool.uv.index]], a conda channel)
#   conda        a conda package (name, spec converted to a PEP 440 specifier where it can be, build)
#   image        a container base image (FROM)
#   path         a local folder installed by path (`pip install ./third_party/simple-knn`, `-e submodules/x`):
#                name: the folder's, canonical; judged only against the catalog (NOTE [local folders])
#   variable     a Dockerfile ARG / ENV value or a variable a RUN line sets (name as written, spec: the
#                value; read: a later RUN reads it, NOTE [Dockerfile values])
# Names are canonical (PEP 503: `Flash_Attn` -> `flash-attn`); conda's `pytorch` is `torch`.
# Lines come from the text itself (tomllib and json give none): the first line at or after the
# section that spells the value, so a value written twice is found twice, in order.
CONDA_NAMES = {"pytorch": "torch"}


@dataclass(frozen=True)
class Entry:
    """One thing a manifest asks to install, at its line (NOTE [manifest entries])."""

    line: int
    kind: str                  # requirement | locked | index | conda | image | path | variable
    name: str = ""             # canonical distribution name (or the image, the channel)
    spec: str = ""             # PEP 440 specifier text ("" = any version)
    version: str = ""          # locked version, or a conda build's version
    url: str = ""              # an index, a direct URL, the source of a locked package
    text: str = ""             # as written (the requirement, the match spec, the image)
    build: str = ""            # conda build string
    optional: bool = False     # an extra, a dependency group, dev dependencies: installed only when asked
    extra: str = ""            # the extra or dependency group it is listed under (NOTE [CUDA alternatives])
    read: bool = False         # a variable a later RUN reads ($NAME, or a script it runs)
    extras: tuple[str, ...] = ()   # the extras a requirement asks for (`aqlm[gpu]`), canonical, sorted
    # a VCS URL installed without a name: the repository its name was inferred from
    # (NOTE [nameless VCS URLs] in scan/vcs_urls.py)
    inferred: str = ""
    # a Dockerfile requirement whose version an ARG / ENV default wrote: that line (NOTE [Dockerfile
    # values] in scan/docker_manifests.py); `line` stays the install line that names the package
    version_line: int = 0


@dataclass(frozen=True)
class Problem:
    """A manifest line that could not be read: reported as OPS000 at that line."""

    line: int
    message: str


# NOTE [manifest lines]
# A manifest is text read line by line: a line that is not valid UTF-8 is one OPS001 finding at
# that line and is read as blank, so the valid lines around it are still judged (a requirements
# file with one Latin-1 comment keeps its torch pin). A UTF-8 byte-order mark is dropped. A file that
# starts with a UTF-16 or UTF-32 byte-order mark is decoded by it, as pip decodes a requirements file
# (Windows editors and `pip freeze > file` in PowerShell write UTF-16); a file with NUL bytes and no
# such mark is not text opscan can read line by line: one OPS001 at line 1, not one per line.
_WIDE_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
              (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def decode_lines(data: bytes) -> tuple[str, list[tuple[int, str]]]:
    """(text, [(line, problem)]): the file as UTF-8 text, each undecodable line blanked and named."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for bom, encoding in _WIDE_BOMS:   # NOTE [manifest lines]: UTF-32's marks first (they start like UTF-16's)
        if data.startswith(bom):
            try:
                return data.decode(encoding), []
            except UnicodeDecodeError as exc:
                return "", [(1, f"the file starts with a {encoding.upper()} byte-order mark but is not valid "
                                f"{encoding.upper()} (byte {exc.start}); not read")]
    if b"\x00" in data:
        return "", [(1, "the file holds NUL bytes: not UTF-8 text (UTF-16 without a byte-order mark?); not read")]
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError:
        pass
    lines, problems = [], []
    for number, raw in enumerate(data.split(b"\n"), 1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            lines.append("")
            problems.append((number, f"line {number} is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column "
                                     f"{exc.start + 1}); the rest of the file is read"))
    return "\n".join(lines), problems


# -- lines ------------------------------------------------------------------------------------------------

class TextLines:
    """Finds the line of a value in a file's text, in order: a value written twice is found twice
    (each occurrence, by its offset, handed out once; a line holding two values gives both)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.used: set[int] = set()

    def line_at(self, offset: int) -> int:
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    def offset(self, line: int) -> int:
        return self.starts[min(max(line, 1), len(self.starts)) - 1]

    def find(self, pattern: str, after: int = 0, regex: bool = False, before: int | None = None) -> int:
        """The first line at or after offset `after` (and before offset `before`, when given) holding
        `pattern` not handed out yet; 0 if none."""
        window = self.text[after:] if before is None else self.text[after:before]
        found = (m.start() for m in re.finditer(pattern, window, re.M)) if regex else _plain(window, pattern)
        first = 0
        for start in found:   # each occurrence is handed out once: two values on one line are two finds
            line = self.line_at(after + start)
            if after + start not in self.used:
                self.used.add(after + start)
                return line
            first = first or line
        return first

    def section(self, header: str) -> int:
        """The offset just after a TOML `[header]` / `[[header]]` line (0 when absent)."""
        match = re.search(r"^\s*\[\[?\s*" + re.escape(header) + r"\s*\]\]?\s*(#.*)?$", self.text, re.M)
        return match.end() if match else 0


def _plain(text: str, needle: str) -> Iterator[int]:
    start = text.find(needle)
    while start >= 0:
        yield start
        start = text.find(needle, start + 1)


# -- requirements ---------------------------------------------------------------------------------------

LINUX = {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix", "platform_machine": "x86_64"}


def installs_on_linux(marker: Marker | None) -> bool:
    """Whether a requirement with this marker is installed on a Linux host (Trainium instances are).
    Markers on extras or that cannot be evaluated count as installed (the project asks for them)."""
    if marker is None or "extra" in str(marker):
        return True
    try:
        return marker.evaluate(LINUX)
    except Exception:  # noqa: BLE001 - an unknown marker variable: keep the requirement
        return True


def requirement(text: str, line: int) -> Entry | Problem | None:
    """One PEP 508 requirement string as an Entry; a Problem when it does not parse; None when its
    marker excludes Linux."""
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        return Problem(line, f"not a requirement: {text.strip()!r} ({str(exc).splitlines()[0]})")
    if not installs_on_linux(req.marker):
        return None
    spec, url = str(req.specifier), unquote(req.url or "")
    wheel = wheel_version(url) if url else None
    if wheel is not None and wheel[0] == canonicalize_name(req.name):
        spec = f"=={wheel[1]}"
    return Entry(line, "requirement", canonicalize_name(req.name), spec, url=url, text=text.strip(),
                 extras=tuple(sorted(canonicalize_name(e) for e in req.extras)))


# NOTE [wheel URLs]
# A requirement may name a wheel by URL (`torch @ https://.../torch-2.1.0%2Bcu121-cp310-...whl`, or
# the bare URL in a requirements file or a `pip install` line). The URL is percent-decoded and the
# wheel file name (PEP 427, read by `packaging.utils.parse_wheel_filename`) gives the version, local
# label included: the entry is judged as the pin `torch==2.1.0+cu121` (OPS501 on the version,
# OPS504 on the CUDA label and the CUDA index of the URL). A URL that is no wheel (an sdist, a git
# URL) gives no version and is judged by its index only.
def wheel_version(url: str) -> tuple[str, str] | None:
    """(canonical name, version) of the wheel a URL points at, or None."""
    filename = unquote(url.split("#", 1)[0].split("?", 1)[0]).rsplit("/", 1)[-1]
    if not filename.endswith(".whl"):
        return None
    try:
        name, version, _build, _tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion):
        return None
    return str(name), str(version)


# NOTE [partly resolved wheels]
# A Dockerfile may build a wheel URL from variables it cannot resolve (`${RELEASE}/flash_attn-2.8.3+cu130torch2.12-
# ${PYTAG}-${PYTAG}-${PLATFORM}.whl`: the release URL and the tags are set by the RUN line's shell). The file
# name's first two fields (distribution and version, PEP 427) are read when they hold no variable; the
# rest of the name is not needed to judge the package and its version.
_WHEEL_HEAD = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9_.]*)-(?P<version>[A-Za-z0-9_.!+]+)-[^/]*\.whl$")


def partial_wheel(token: str, line: int) -> Entry | None:
    """The requirement of a wheel URL or path whose file name starts `name-version-` with no variable
    in those two fields (NOTE [partly resolved wheels]); None otherwise."""
    filename = unquote(token.strip("'\"").split("#", 1)[0].split("?", 1)[0]).rsplit("/", 1)[-1]
    match = _WHEEL_HEAD.match(filename)
    if match is None:
        return None
    try:
        version = str(Version(match["version"]))
    except InvalidVersion:
        return None
    return Entry(line, "requirement", canonicalize_name(match["name"]), f"=={version}", url=unquote(token),
                 text=token)


# NOTE [find-links pages of one torch]
# Extension projects publish their CUDA builds on one find-links page per torch and CUDA pair (PyG:
# `-f https://data.pyg.org/whl/torch-2.1.0+cu121.html`, formerly `pytorch-geometric.com/whl/...`). The
# page name is a CUDA build (OPS504's `urls`) and names the torch the builds are compiled against:
# the page is read as the pin `torch==2.1.0` too (judged by OPS501 as a torch pin), since its wheels
# load only with that torch. A page with no torch version in its name is judged as an index only.
_TORCH_PAGE = re.compile(r"/torch-(?P<version>\d+\.\d+(?:\.\d+)?)(?:\+[A-Za-z0-9]+)?\.html$")


def find_links_torch(url: str, line: int) -> Entry | None:
    """The torch pin a find-links page of one torch's builds stands for, or None."""
    match = _TORCH_PAGE.search(unquote(url).split("#", 1)[0].split("?", 1)[0])
    if match is None:
        return None
    return Entry(line, "requirement", "torch", f"=={match['version']}", text=url)


def url_requirement(url: str, line: int) -> Entry | None:
    """A bare wheel URL (`https://.../torch-2.1.0+cu121-...whl`, with an optional `; marker`) as
    the requirement it installs; None when it is no wheel or its marker excludes a Linux x86_64 host."""
    url, _, marker = url.partition(";")
    url = url.strip()
    if marker.strip():
        try:
            if not installs_on_linux(Marker(marker.strip())):
                return None
        except Exception:  # noqa: BLE001 - an unreadable marker: keep the requirement
            pass
    wheel = wheel_version(url)
    if wheel is None:
        return None
    return Entry(line, "requirement", wheel[0], f"=={wheel[1]}", url=unquote(url), text=url)


def vcs_requirement(token: str, line: int) -> Entry | None:
    """The requirement a VCS URL without a name installs, its name inferred (NOTE [nameless VCS
    URLs] in scan/vcs_urls.py), or None."""
    inferred = vcs_urls.inferred_name(token)
    if inferred is None:
        return None
    url = token.strip().strip("'\"")
    return Entry(line, "requirement", canonicalize_name(inferred.name), "", url=unquote(url), text=url,
                 inferred=inferred.repository)


# NOTE [local folders]
# `pip install ./third_party/simple-knn` or `-e submodules/diff-gaussian-rasterization` installs a
# checkout that ships with the project (often a git submodule of a CUDA extension). Its distribution
# name is known only by building it, which opscan never does; the folder's name usually is the
# project's. Such an entry (kind `path`) is judged only against the catalog of CUDA-only libraries
# (OPS506, its value saying the name is the folder's): never as a version pin, nor by published
# metadata, since a folder name is no proven distribution name. `.`, archives, wheels and files are
# not folders; a variable in the path hides it.
_ARCHIVES = (".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2", ".txt", ".in", ".toml", ".cfg", ".py")


def path_requirement(token: str, line: int) -> Entry | None:
    """A local folder a pip install names (NOTE [local folders]), or None."""
    path = token.strip().strip("'\"").split("#", 1)[0].split("[", 1)[0].rstrip("/")
    if not path or "$" in path or "://" in path or path.lower().endswith(_ARCHIVES) or vcs_urls.is_vcs(path):
        return None
    name = path.rsplit("/", 1)[-1]
    if name in ("", ".", "..") or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        return None
    return Entry(line, "path", canonicalize_name(name), url=path, text=token.strip())


_INDEX_OPTIONS = ("-i", "--index-url", "--extra-index-url", "-f", "--find-links")
_SKIP_VALUE = ("-r", "--requirement", "-c", "--constraint", "--trusted-host", "--hash", "-e", "--editable",
               "--prefix", "--target", "-t", "--root", "--src", "--python-version", "--platform", "--abi",
               "--implementation", "--cache-dir", "--log", "--progress-bar", "--report", "--upgrade-strategy",
               "--no-binary", "--only-binary", "--config-settings", "-C", "--global-option", "--build-option",
               # uv pip install's options that take a value (a package name, a file, a setting)
               "--reinstall-package", "--upgrade-package", "-P", "--no-build-package", "--no-binary-package",
               "--only-binary-package", "--excludes", "--overrides", "--build-constraints", "-b", "--python",
               "-p", "--exclude-newer", "--index-strategy", "--extra", "--group", "--torch-backend")


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line, joined text) of each logical line: `\\` continuations joined, comments removed."""
    out, buf, first = [], "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s)#.*$", "", raw)
        if not buf:
            first = number
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        buf += line
        if buf.strip():
            out.append((first, buf.strip()))
        buf = ""
    if buf.strip():
        out.append((first, buf.strip()))
    return out


def to_physical(entries: list[Entry], start: int, first: int, physical: list[str]) -> None:
    """Entries added from one logical line (from index `start` on) are moved to the physical line
    of a continued command that spells them (`--index-url URL` on the second line of a RUN)."""
    for i in range(start, len(entries)):
        entry = entries[i]
        needle = entry.url or entry.text
        for number in range(first, len(physical) + 1):
            if needle and needle in physical[number - 1]:
                entries[i] = replace(entry, line=number)
                break
            if not physical[number - 1].rstrip().endswith("\\"):
                break


def pip_arguments(tokens: list[str], line: int, entries: list[Entry], problems: list[Problem] | None,
                  strict: bool) -> None:
    """Entries of a pip argument list (a requirements line, or the words after `pip install`).
    `strict`: an argument that is no requirement is a Problem (requirements files); in a shell
    command it is skipped (it may be a variable, a path, an option opscan does not know)."""
    i = 0
    while i < len(tokens):
        token = tokens[i]
        value = None
        if token.startswith("-"):
            name, eq, inline = token.partition("=")
            if name in _INDEX_OPTIONS or name in _SKIP_VALUE:
                if eq:
                    value = inline
                elif i + 1 < len(tokens):
                    value, i = tokens[i + 1], i + 1
                elif name in _INDEX_OPTIONS and len(name) == 2 and len(token) > 2:   # -ihttps://...
                    value = token[2:]
                if name in ("-e", "--editable") and value:   # NOTE [nameless VCS URLs], [local folders]
                    _append(entries, vcs_requirement(value, line) or path_requirement(value, line))
                if name in _INDEX_OPTIONS and value:
                    entries.append(Entry(line, "index", url=value, text=f"{name} {value}"))
                    if name in ("-f", "--find-links"):
                        _append(entries, find_links_torch(value, line))
            elif token[:2] in ("-i", "-f") and len(token) > 2:
                entries.append(Entry(line, "index", url=token[2:], text=token))
                if token[:2] == "-f":
                    _append(entries, find_links_torch(token[2:], line))
            i += 1
            continue
        if vcs_urls.is_vcs(token):   # NOTE [nameless VCS URLs]
            _append(entries, vcs_requirement(token, line))
            i += 1
            continue
        if "$" in token and token.strip("'\"").endswith(".whl"):   # NOTE [partly resolved wheels]
            _append(entries, partial_wheel(token, line))
            i += 1
            continue
        if "$" not in token and "://" not in token and token.strip("'\"").endswith(".whl"):   # a local wheel file
            _append(entries, url_requirement(token.strip("'\""), line))   # its name gives package and version
            i += 1
            continue
        if "$" not in token and "://" not in token and (token.startswith((".", "/")) or "/" in token):
            _append(entries, path_requirement(token, line))   # NOTE [local folders]
            i += 1
            continue
        if "$" in token or (not strict and ("/" in token and "://" not in token or token in (".",))):
            i += 1
            continue
        if "://" in token and "@" not in token:   # a bare wheel or archive URL (NOTE [wheel URLs])
            entries.append(url_requirement(token, line) or Entry(line, "index", url=unquote(token), text=token))
            i += 1
            continue
        got = requirement(token, line)
        if isinstance(got, Problem):
            if strict and problems is not None:
                problems.append(got)
        elif got is not None:
            entries.append(got)
        i += 1


def _append(entries: list[Entry], entry: Entry | None) -> None:
    if entry is not None:
        entries.append(entry)


def read_requirements(text: str) -> tuple[list[Entry], list[Problem], list[str]]:
    """(entries, problems, included files) of a requirements file (`-r`/`-c` names are returned)."""
    entries: list[Entry] = []
    problems: list[Problem] = []
    includes: list[str] = []
    physical = text.splitlines()
    for line, logical in logical_lines(text):
        start = len(entries)
        requirement_line(line, logical, entries, problems, includes)
        to_physical(entries, start, line, physical)
    return entries, problems, includes


def requirement_line(line: int, logical: str, entries: list[Entry], problems: list[Problem],
                      includes: list[str]) -> None:
    """The entries of one logical line of a requirements file."""
    if logical.startswith("-"):
        tokens = logical.split()
        head = tokens[0].split("=", 1)[0]
        if head in ("-r", "--requirement", "-c", "--constraint") and len(tokens) > 1:
            includes.append(tokens[1])
        elif head.startswith(("-r", "-c")) and len(head) > 2 and len(tokens) == 1:
            includes.append(head[2:])
        pip_arguments(tokens, line, entries, None, strict=False)
        return
    logical = _without_options(logical)   # `pkg ; marker --hash=...`: the options after it
    if logical.startswith(("http://", "https://", "file:", "git+")) or logical.startswith((".", "/")):
        wheel = url_requirement(logical, line) or vcs_requirement(logical, line) \
            or path_requirement(logical, line)   # NOTE [wheel URLs], [local folders]
        if wheel is not None:
            entries.append(wheel)
        elif "cu1" in logical or "cuda" in logical or "nvidia" in logical:
            entries.append(Entry(line, "index", url=unquote(logical), text=logical))
        return
    got = requirement(logical, line)
    if isinstance(got, Entry):
        entries.append(got)
    elif isinstance(got, Problem):
        problems.append(got)


# NOTE [options after a requirement]
# pip accepts per-requirement options after the requirement and its marker (`--hash=sha256:...`,
# `--config-settings`, written by pip-compile and `uv pip compile --generate-hashes` on continued
# lines). They start at the first ` -` / ` --` outside a quoted marker string; a marker's own
# values (`platform_release >= "5.4-aws"`) are quoted, so they are kept.
_OPTION_START = re.compile(r"""\s--?[A-Za-z]|"[^"]*"|'[^']*'""")


def _without_options(logical: str) -> str:
    """A requirements line without the pip options written after its requirement."""
    for match in _OPTION_START.finditer(logical):
        if match.group(0)[0] not in "\"'":
            return logical[:match.start()].rstrip()
    return logical


def included_files(text: str) -> list[str]:
    """The files a requirements file includes with `-r` / `-c` (as written, relative to it)."""
    return [name for _, name in include_lines(text)]


def include_lines(text: str) -> list[tuple[int, str]]:
    """(line, file as written) of each `-r` / `-c` include of a requirements file."""
    out: list[tuple[int, str]] = []
    for line, logical in logical_lines(text):
        found: list[str] = []
        if logical.startswith("-"):
            requirement_line(line, logical, [], [], found)
        out += [(line, name) for name in found]
    return out
