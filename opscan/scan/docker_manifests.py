"""Dockerfiles read as manifests, never built: FROM images and the installs of RUN commands.

`ARG` and `ENV` defaults are substituted within the file and heredoc RUN blocks are read as shell
lines (NOTE [Dockerfile values]). Entries are scan/manifests.py's.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, replace

from opscan.scan.conda_manifests import conda_spec
from opscan.scan.docker_clones import Clones
from opscan.scan.manifests import Entry, Problem, pip_arguments

# pip, pip3, uv pip, python -m pip, also called by path (`/opt/conda/bin/pip install`)
_PIP = re.compile(r"(?:^|[\s;&|(])(?:[\w./-]*python[\d.]*\s+-m\s+)?(?:[\w.-]*/)*(?:uv\s+)?pip[\d.]*\s+install\s+"
                  r"(?P<args>[^;&|]*)")
_CONDA = re.compile(r"(?:^|[\s;&|(])(?:[\w.-]*/)*(?:conda|mamba|micromamba)\s+install\s+(?P<args>[^;&|]*)")
# apt-get / apt install, options before `install` allowed (`apt-get -y --no-install-recommends install`)
_APT = re.compile(r"(?:^|[\s;&|(])(?:[\w.-]*/)*apt(?:-get)?\s+(?:-\S+\s+)*install\s+(?P<args>[^;&|]*)")
_HEREDOC = re.compile(r"<<(?P<dash>-?)\s*(?P<quote>[\"']?)(?P<word>[A-Za-z_][A-Za-z0-9_]*)(?P=quote)")
_VARIABLE = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?P<op>:?[-+=?])?(?P<alt>[^}]*)\}"
                       r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))")
_SHELLS = ("", "bash", "sh", "/bin/bash", "/bin/sh", "set")
# `NAME=value cmd` and `export NAME=value` in a RUN line (upper-case names: environment variables)
_SETS = re.compile(r"(?:^|[\s;&|(])(?:export\s+)?(?P<name>[A-Z_][A-Z0-9_]*)=(?P<value>[^\s;&|]*)")
# a RUN that runs a script or a build, which may read any variable of its environment
_SCRIPT = re.compile(r"(?:^|[\s;&|(])(?:(?:bash|sh|source|\.)\s+\S+|\./\S+|python[\d.]*\s+(?!-m\s+pip)\S+\.py|make\b)")

# the CUDA version of an image tag (`nvidia/cuda:11.8.0-devel-...`, `pytorch/pytorch:1.9.0-cuda11.1-...`)
_CUDA_TAG = re.compile(r"cuda[:-]?(?P<version>\d+(?:\.\d+)*)", re.I)

# NOTE [CUDA images from variables]
# A base image whose CUDA part comes from an ARG / ENV default (`ARG CUDA="11.1"` then
# `FROM pytorch/pytorch:${PYTORCH}-cuda${CUDA}-cudnn${CUDNN}-devel`; `ARG NVIDIA_CUDA_VERSION=11.8.0`
# feeding `FROM nvidia/cuda:${NVIDIA_CUDA_VERSION}-devel-...` and `...-runtime-...`) is reported at the
# ARG line that writes that CUDA version, one finding per FROM, whose value names the FROM line
# (`nvidia/cuda:11.8.0-devel-ubuntu22.04 (the FROM at line 17)`); an image given whole by a variable
# (`FROM ${BUILD_BASE_IMAGE}`) is reported at the line that writes it, named the same way. Why the
# ARG line: it is the one place the file says which CUDA the images are built on (two FROM lines
# share it; a `--build-arg` overrides it there), it is where a reader of the file looks for the
# build's versions (the torch version of a PyTorch image is reported at its ARG line too), and two
# labellers of real Dockerfiles, independently, put the line a port changes there. The FROM line
# named in the value is the other line the port edits (the base image itself changes to one without
# CUDA). An image whose CUDA part is written on the FROM line (`FROM nvidia/cuda:12.1.0-devel`, or
# `nvidia/cuda:${TAG}` where the ARG holds no CUDA version) is reported on the FROM line.

# NOTE [Dockerfile values]
# A Dockerfile is read as instructions: physical lines joined at `\`, `#` lines dropped. `ARG NAME=x`
# and `ENV NAME=x` (and `ENV NAME x`) set a variable from that line on; `$NAME`, `${NAME}` and
# `${NAME:-default}` in FROM and RUN are replaced by its value (or the default written in place),
# so `ARG TORCH_VERSION=2.0.1` ... `pip install torch==${TORCH_VERSION}` is `torch==2.0.1` and
# `FROM ${BASE}` is the base image ARG names. A requirement is placed on the install line that names
# its package (`pip install flash-attn==${FLASH_ATTN_VERSION}`, a wheel URL `.../flash_attn-${V}-...whl`):
# that line is the one a port changes (drops or fences), whatever variable gives the version; the
# ARG / ENV line of its version is kept with it (`version_line`), and a finding judged by the version
# (OPS501, OPS502, OPS509) is reported there (NOTE [versions written by a Dockerfile variable] in
# scan/dependencies.py). Any
# other entry whose text came from a variable (`pip install ${PACKAGES}`, `--index-url ${INDEX}`,
# `FROM ${BASE}`) is placed on the ARG / ENV line that wrote it: that is the line a port changes.
# A variable with no value in the file (`--build-arg` only) stays unresolved and its token is
# skipped (a wheel URL keeps its file name's package and version when those two are resolved:
# NOTE [partly resolved wheels] in scan/manifests.py). `RUN <<EOF` heredocs
# (and `RUN bash <<EOF`) are shell lines, each read at its own line; a heredoc fed to another
# program (`RUN python - <<EOF`) is not shell and is skipped.
# Variables are entries too (NOTE [build variables] in scan/build_variables.py): each ARG / ENV value
# written in the file, each `NAME=value` / `export NAME=value` of a RUN line, and, marked `read`,
# each ARG / ENV value a later RUN reads: by `$NAME`, or because that RUN runs a script or a build
# (`bash install.sh`, `./build.sh`, `python setup.py`, `make`), which sees every ARG and ENV value
# in its environment. An ENV that copies an ARG (`ENV X=${X}`) keeps the ARG line as the value's.


@dataclass(frozen=True)
class _Instruction:
    line: int                        # where its text starts
    word: str                        # FROM, RUN, ARG, ENV, ...
    rest: str                        # the arguments, continuation lines joined
    lines: tuple[int, ...]           # the physical lines it spans


def _instructions(physical: list[str]) -> list[_Instruction]:
    out: list[_Instruction] = []
    i = 0
    while i < len(physical):
        raw = physical[i]
        if not raw.strip() or raw.lstrip().startswith("#"):
            i += 1
            continue
        first, spans, text = i + 1, [i + 1], raw.rstrip()
        while text.endswith("\\") and i + 1 < len(physical):
            i += 1
            if physical[i].lstrip().startswith("#"):
                continue
            spans.append(i + 1)
            text = text[:-1] + " " + physical[i].rstrip()
        i += 1
        word, _, rest = text.strip().partition(" ")
        word = word.upper()
        heredoc = _HEREDOC.search(rest) if word == "RUN" else None
        if heredoc is None:
            out.append(_Instruction(first, word, rest.strip(), tuple(spans)))
            continue
        before = rest[:heredoc.start()].strip().split()
        shell = not before or before[0].rsplit("/", 1)[-1] in ("bash", "sh") or before[0].startswith("--")
        body_start = i
        while i < len(physical) and (physical[i].strip() if heredoc["dash"] else physical[i]) != heredoc["word"]:
            i += 1
        if shell:
            out += [replace(b, line=b.line + body_start, lines=tuple(n + body_start for n in b.lines))
                    for b in _shell_lines(physical[body_start:i])]
        i += 1   # the closing word
    return out


def _shell_lines(body: list[str]) -> list[_Instruction]:
    """The lines of a heredoc RUN block as RUN instructions (lines 1-based within the block)."""
    out = []
    i = 0
    while i < len(body):
        first, text = i + 1, body[i].rstrip()
        spans = [i + 1]
        while text.endswith("\\") and i + 1 < len(body):
            i += 1
            spans.append(i + 1)
            text = text[:-1] + " " + body[i].rstrip()
        i += 1
        if text.strip() and not text.lstrip().startswith("#"):
            out.append(_Instruction(first, "RUN", text.strip(), tuple(spans)))
    return out


class _Variables:
    """ARG / ENV values in file order, and the line each was written on (NOTE [Dockerfile values])."""

    def __init__(self) -> None:
        self.values: dict[str, tuple[str, int]] = {}

    def define(self, instruction: _Instruction) -> None:
        rest = instruction.rest
        try:
            words = shlex.split(rest, posix=True)
        except ValueError:
            words = rest.split()
        if instruction.word == "ENV" and len(words) >= 2 and "=" not in words[0]:   # ENV NAME value
            self._set(words[0], " ".join(words[1:]), instruction.line)
            return
        for word in words:
            name, eq, value = word.partition("=")
            if eq:
                self._set(name, value, instruction.line)
            elif instruction.word == "ARG" and name not in self.values:
                self.values[name] = ("", 0)   # declared, value given only at build time

    def _set(self, name: str, raw: str, line: int) -> None:
        value, used = self.expand(raw)
        if value and set(used) == {value}:   # `ENV X=${X}`: the value is the ARG line's
            line = used[value]
        self.values[name] = (value, line)

    def entries(self, rest: str) -> list[Entry]:
        """The values a RUN reads (`$NAME`, or all of them when it runs a script), at the lines that
        wrote them (NOTE [Dockerfile values])."""
        script = _SCRIPT.search(rest) is not None
        out = []
        for name, (value, line) in sorted(self.values.items()):
            if line and value and "$" not in value and (script or re.search(
                    r"\$(?:\{" + re.escape(name) + r"[}:]|" + re.escape(name) + r"(?![A-Za-z0-9_]))", rest)):
                out.append(Entry(line, "variable", name, value, text=f"{name}={value}", read=True))
        return out

    def expand(self, text: str) -> tuple[str, dict[str, int]]:
        """`text` with known variables replaced, and the values used -> the line that wrote each."""
        used: dict[str, int] = {}

        def one(match: re.Match[str]) -> str:
            name = match["braced"] or match["bare"]
            value, line = self.values.get(name, ("", 0))
            op, alt = str(match["op"] or ""), str(match["alt"] or "")
            if op.endswith("+"):
                return alt if value else ""
            if not value and op.endswith(("-", "=")) and "$" not in alt:
                return alt
            if not value:
                return str(match[0])
            if line:
                used[value] = line
            return value

        return _VARIABLE.sub(one, text), used


def read_dockerfile(text: str) -> tuple[list[Entry], list[Problem]]:
    """FROM images, and the packages and indexes of `pip install` / `conda install` in RUN lines,
    with ARG / ENV values substituted and heredoc RUN blocks read (NOTE [Dockerfile values])."""
    physical = text.splitlines()
    variables = _Variables()
    clones = Clones()   # NOTE [cloned checkouts] in scan/docker_clones.py
    entries: list[Entry] = []
    for instruction in _instructions(physical):
        if instruction.word == "WORKDIR":
            clones.workdir_to(variables.expand(instruction.rest)[0])
        if instruction.word in ("ARG", "ENV"):
            variables.define(instruction)
            entries += [Entry(line, "variable", name, value, text=f"{name}={value}")
                        for name, (value, line) in sorted(variables.values.items())
                        if line == instruction.line and value]
            continue
        if instruction.word not in ("FROM", "RUN"):
            continue
        rest, used = variables.expand(instruction.rest)
        start = len(entries)
        if instruction.word == "FROM":
            _from(rest, instruction.line, entries)
        else:
            _run(rest, instruction.line, entries)
            entries += clones.run(rest, instruction.line)
            entries += [Entry(instruction.line, "variable", m["name"], m["value"], text=m[0].strip().split()[-1])
                        for m in _SETS.finditer(rest)]
        lines = {n: variables.expand(physical[n - 1])[0] for n in instruction.lines}
        for i in range(start, len(entries)):
            entries[i] = _placed(entries[i], lines, used, physical, variables.values)
        if instruction.word == "RUN":
            entries += variables.entries(instruction.rest)
    return entries, []


def _placed(entry: Entry, lines: dict[int, str], used: dict[str, int], physical: list[str],
            values: dict[str, tuple[str, int]]) -> Entry:
    """The entry at the physical line that spells it, or at the ARG / ENV line of a value it took."""
    needle = entry.url or entry.text
    # a value written before the install too (`curl -o /tmp/x.whl URL && pip install /tmp/x.whl`) is on
    # the install's line: the lines from the first that says `install` are searched first
    ordered = sorted(lines.items())
    begin = next((i for i, (_, text) in enumerate(ordered) if re.search(r"\binstall\b", text)), 0)
    line = next((n for n, text in ordered[begin:] + ordered[:begin] if needle and needle in text), entry.line)
    written = physical[line - 1] if 0 < line <= len(physical) else ""
    if entry.kind == "image":   # NOTE [CUDA images from variables]
        cuda = _CUDA_TAG.search(entry.name)
        where = next((at for value, at in sorted(used.items())
                      if cuda and value and value not in written   # the value spells the whole version, in place
                      and value.startswith(cuda["version"]) and entry.name.startswith(value, cuda.start("version"))), 0)
        if not where and entry.name.split(":", 1)[0] not in written:
            where = next((at for value, at in sorted(used.items()) if value and value in needle
                          and value not in written), 0)   # `FROM ${BASE_IMAGE}`
        if where:
            return replace(entry, line=where, text=f"{entry.name} (the FROM at line {line})")
        return replace(entry, line=line)
    if entry.kind == "requirement" and entry.name and _names(entry.name, written):
        # `pip install flash-attn==${VERSION}`: the package is named here; the version's own line is kept
        return replace(entry, line=line, version_line=_version_line(entry, physical[line - 1], values)
                       if entry.spec and 0 < line <= len(physical) else 0)
    for value, where in sorted(used.items()):
        if value and value in needle and value not in written:
            return replace(entry, line=where)
    return replace(entry, line=line)


def _version_line(entry: Entry, raw: str, values: dict[str, tuple[str, int]]) -> int:
    """The ARG / ENV line whose value is the version of `entry` as the install line spells it
    (`torch==${TORCH_VERSION}`, `torch==$V`), or 0 (NOTE [versions written by a Dockerfile variable]
    in scan/dependencies.py)."""
    pattern = r"[-_.]+".join(re.escape(part) for part in re.split(r"[-_.]+", entry.name))
    spelled = re.search(rf"(?<![A-Za-z0-9_.-]){pattern}(?:\[[^\]]*\])?\s*[=<>!~]=?=?\s*"
                        r"\$\{?(?P<name>[A-Za-z_][A-Za-z0-9_]*)", raw, re.I)
    if spelled is None:
        return 0
    value, line = values.get(spelled["name"], ("", 0))
    return line if value and value in entry.spec else 0


def _names(name: str, written: str) -> bool:
    """Whether a line spells the distribution `name` itself (`flash_attn-${V}` and `Flash-Attn==` spell
    `flash-attn`; `torchvision` does not spell `torch`)."""
    pattern = r"[-_.]+".join(re.escape(part) for part in re.split(r"[-_.]+", name))
    return re.search(rf"(?<![A-Za-z0-9_.-]){pattern}(?![A-Za-z0-9_])(?!-[A-Za-z])", written, re.I) is not None


def _from(rest: str, line: int, entries: list[Entry]) -> None:
    parts = [p for p in rest.split() if not p.startswith("--")]
    if parts and "$" not in parts[0]:
        entries.append(Entry(line, "image", parts[0], text=parts[0]))
        tag = re.match(r"^(?:[\w.-]+/)?pytorch/pytorch:(\d+\.\d+(?:\.\d+)?)", parts[0])
        if tag:   # PyTorch's images are named for the torch they hold
            entries.append(Entry(line, "requirement", "torch", f"=={tag[1]}", text=parts[0]))


def _run(rest: str, line: int, entries: list[Entry]) -> None:
    for match in _PIP.finditer(rest):
        try:
            tokens = shlex.split(match["args"], posix=True)
        except ValueError:
            tokens = match["args"].split()
        pip_arguments(tokens, line, entries, None, strict=False)
    for match in _APT.finditer(rest):   # system packages: judged by name only (rules/apt-cuda-package.yaml)
        for token in match["args"].split():
            if token.startswith("#"):   # a shell comment ends the command
                break
            if not token.startswith("-") and token != "\\":
                name = token.strip("'\"").split("=", 1)[0]
                if re.fullmatch(r"[a-z0-9][a-z0-9+.-]*", name):
                    entries.append(Entry(line, "apt", name, text=name))   # the name: its place in the file
    for match in _CONDA.finditer(rest):
        args = match["args"].split()
        for i, token in enumerate(args):
            if token in ("-c", "--channel") and i + 1 < len(args):
                entries.append(Entry(line, "index", name=args[i + 1], url=args[i + 1], text=args[i + 1]))
            elif not token.startswith("-") and (i == 0 or args[i - 1] not in ("-c", "--channel", "-n",
                                                                               "--name", "-p", "--prefix")):
                name, spec, build = conda_spec(token.strip("'\""))
                if name:
                    entries.append(Entry(line, "conda", name, spec, build=build, text=token))
