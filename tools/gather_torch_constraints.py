"""Gathers the table of packages that constrain torch (rules/data/torch-constraints.yaml) from their
published metadata: each release's `Requires-Dist` on torch, read from one of its wheels.

Run by a developer, never by the scan (the scan stays offline and reads the shipped table). The
package index is pip's own: `PIP_INDEX_URL`, else `index-url` of pip's configuration, else pip's
default index, read at run time (no index is named here). For each release that has a wheel, only
the wheel's `METADATA` member is read, through HTTP range requests on the wheel file (the zip's
central directory, then that member): no wheel is downloaded whole. Requests are sequential.

    python tools/gather_torch_constraints.py                  # every package below -> the YAML
    python tools/gather_torch_constraints.py torchdata vllm   # only these (merged into the YAML)
    python tools/gather_torch_constraints.py --dry-run torchdata
    python tools/gather_torch_constraints.py --docs-only      # the docs' tables again, offline

A row of the table is a run of consecutive releases whose torch requirement is the same, with its
source: the wheel file name and sha256 the metadata was read from (first and last release of the
run). Packages that publish only sdists (deepspeed, flash-attn) have no metadata to read without
building them: they are listed under `not_gathered`, with why.
"""

from __future__ import annotations

import argparse
import email.parser
import io
import json
import os
import re
import subprocess
import sys
import urllib.request
import zipfile
from datetime import date
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "rules" / "data" / "torch-constraints.yaml"
# packages whose releases pin torch (issue #43; docs/dependencies.md, "Packages that hold torch back")
# (the first line: PyTorch's companions and trainers issue 43 named; the second: packages research
# repositories pin that publish wheels whose Requires-Dist may pin torch, added after the third
# held-out part: finetuner-commons==0.13.10 requires torch~=2.0.1; monai after the seventh: monai
# 1.5.0 requires torch<2.7.0,>=2.4.1). Any package with wheels can be
# added here: its rows are what its metadata says, nothing is assumed for a package not listed.
TORCH_BOUND = ("torchvision", "torchaudio", "torchtext", "torchdata", "torchcodec", "torchrec", "torchao",
               "torchtune", "xformers", "vllm", "mosaicml", "composer", "megablocks",
               "finetuner-commons", "tensordict", "torchrl", "monai")
# packages whose metadata may make them CUDA-only without being in the catalog (NOTE [cuda by metadata])
# (their newest releases only: what a project installs today)
CUDA_CHECKED = ("unsloth", "unsloth-zoo", "cut-cross-entropy", "lmdeploy")
CUDA_RELEASES = 3
SDIST_ONLY = {"deepspeed": "publishes only sdists; its torch requirement is unpinned (`torch`) in its setup",
              "flash-attn": "publishes only sdists; the CUDA build is made at install"}
TIMEOUT = 120
# Limits stated only in a package's own docs (its wheels do not declare torch): release (a version
# or a minor) -> the torch it is built for, with the page that states it. Used where a release's
# metadata declares no torch requirement; a release matching none stays unknown.
_CODEC = "https://github.com/meta-pytorch/torchcodec"
# README of torchcodec at 78ed5ad8 (2026-08-21): its "Compatibility with `torch` versions" table
_CODEC_README = f"{_CODEC}/blob/78ed5ad8b9ca735b0757ffa34f4426b371315a37/README.md (compatibility table)"
_AO = "https://github.com/pytorch/ao"
# torchao's own `torchao_pytorch_compatible_versions` (torchao/__init__.py of v0.16.0, removed by #4154): the
# exact torch each release's C++ extensions were built against (another torch: they are not loaded)
_AO_TABLE = (f"{_AO}/blob/3c1065ca6ff2eb8a48262bd7c31ded2fffe0d15e/torchao/__init__.py "
             "(torchao_pytorch_compatible_versions)")
# from 0.17.0 on: `min_torch_version = _parse_version("2.11.0")` in torchao/__init__.py (#4154, tags v0.17.0, v0.18.0)
_AO_MIN = f"{_AO}/commit/f0f9a052657e062d0d5e5739aebf6aae8f852cb8 (min_torch_version 2.11.0)"
_REC = ("https://github.com/meta-pytorch/torchrec/blob/ddb6a07614ba664e06d66e27d090b29a73800cc4/"
        "docs/source/setup-torchrec.rst (\"TorchRec 0.8 is compatible with PyTorch 2.4\", 1.0 with 2.5)")
# torchaudio's installation page of 2.11.0, "Compatibility Matrix": "TorchAudio 2.11 is built against
# PyTorch's stable ABI and therefore supports PyTorch 2.11 and all later versions" (row "2.11 and
# above"); the 2.11.0 wheels declare no torch (2.11.1 declares torch>=2.11: its release notes)
_AUDIO_MATRIX = "https://docs.pytorch.org/audio/2.11.0/installation.html (Compatibility Matrix: \"2.11 and above\")"
DOCS_ROWS = {
    "torchaudio": [
        ("2.11", ">=2.11", _AUDIO_MATRIX),
    ],
    "torchcodec": [
        ("0.0.3", "==2.4.*", f"{_CODEC}/pull/652.diff (README compatibility table)"),
        ("0.1", "==2.5.*", f"{_CODEC}/pull/652.diff (README compatibility table)"),
        ("0.2", "==2.6.*", f"{_CODEC}/pull/652.diff (README compatibility table)"),
        ("0.3", "==2.7.*", f"{_CODEC}/pull/652.diff (README compatibility table)"),
        ("0.4", "==2.7.*", f"{_CODEC}/pull/809.diff (README compatibility table)"),
        ("0.5", "==2.7.*", f"{_CODEC}/pull/809.diff (README compatibility table)"),
        ("0.6", "==2.8.*", f"{_CODEC}/pull/809.diff (README compatibility table)"),
        ("0.7", "==2.8.*", f"{_CODEC}/pull/1096.diff (README compatibility table)"),
        ("0.8", "==2.9.*", f"{_CODEC}/pull/1096.diff (README compatibility table)"),
        ("0.9", "==2.9.*", f"{_CODEC}/pull/1096.diff (README compatibility table)"),
        ("0.10", "==2.10.*", _CODEC_README),
        ("0.11", "==2.11.*", _CODEC_README),
        ("0.12", ">=2.11", _CODEC_README),
        ("0.13", ">=2.11", _CODEC_README),
        ("0.14", ">=2.11", _CODEC_README),
        ("0.15", ">=2.11", f"{_CODEC}/releases/tag/v0.15.0 (\"compatible with torch >= 2.11\")"),
        ("0.16", ">=2.11", _CODEC_README),
    ],
    # exact releases only: 0.14.0 and 0.14.1 were built against different torches
    "torchao": [
        ("0.12.0", ">=2.5.0,<2.8", f"{_AO}/issues/2919 (torchao release compatibility table: 2.7.1, 2.6.0, 2.5.0)"),
        ("0.13.0", "==2.8.0", _AO_TABLE),
        ("0.14.0", "==2.8.0", _AO_TABLE),
        ("0.14.1", "==2.9.0", _AO_TABLE),
        ("0.15.0", "==2.9.1", _AO_TABLE),
        ("0.16.0", "==2.10.0", _AO_TABLE),
        ("0.17.0", ">=2.11.0", _AO_MIN),
        ("0.18.0", ">=2.11.0", _AO_MIN),
    ],
    "torchrec": [
        ("0.8", "==2.4.*", _REC),
        ("1.0", "==2.5.*", _REC),
    ],
}
EXACT = {"torchao"}   # DOCS_ROWS of these name exact releases, not minors


def docs_row(name: str, version: Version) -> tuple[str, str] | None:
    """(torch specifier, source) a package's docs state for this release, or None."""
    text = str(version)
    for release, spec, source in DOCS_ROWS.get(name, ()):
        if text == release or (name not in EXACT and text.startswith(release + ".")):
            return spec, source
    return None


def index_url() -> str:
    """pip's index: PIP_INDEX_URL, else pip's configured index-url, else pip's default."""
    if os.environ.get("PIP_INDEX_URL"):
        return os.environ["PIP_INDEX_URL"].rstrip("/")
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                            check=False).stdout
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        if key.strip() in ("global.index-url", "install.index-url", ":env:.index-url"):
            return value.strip().strip("'\"").rstrip("/")
    from pip._internal.models.index import PyPI   # pip's own default, not written here

    return PyPI.simple_url.rstrip("/")


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self._href = ""

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._href = dict(attrs).get("href", "") or ""

    def handle_data(self, data):
        if self._href:
            self.links.append((data.strip(), self._href))
            self._href = ""


def files(index: str, name: str) -> list[tuple[str, str]]:
    """(filename, url) of every file the index lists for `name` (PEP 691 JSON, else the HTML page)."""
    url = f"{index}/{canonicalize_name(name)}/"
    request = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"})
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        body = response.read()
        kind = response.headers.get("Content-Type", "")
    if "json" in kind:
        doc = json.loads(body)
        return [(f["filename"], urljoin(url, f["url"]).split("#", 1)[0] + (
            f"#sha256={f['hashes']['sha256']}" if (f.get("hashes") or {}).get("sha256") else ""))
            for f in doc["files"] if not f.get("yanked")]
    parser = _Links()
    parser.feed(body.decode("utf-8", errors="replace"))
    return [(text, urljoin(url, href)) for text, href in parser.links]


class RangeFile(io.RawIOBase):
    """A remote file read by HTTP range requests (64 KiB blocks, kept): enough for zipfile."""

    BLOCK = 1 << 16

    def __init__(self, url: str) -> None:
        self.url = url.split("#", 1)[0]
        self.pos = 0
        self.blocks: dict[int, bytes] = {}
        request = urllib.request.Request(self.url, headers={"Range": "bytes=-1"})
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            total = response.headers.get("Content-Range", "").rpartition("/")[2]
        self.size = int(total)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else self.pos + offset if whence == 1 else self.size + offset
        return self.pos

    def _block(self, number: int) -> bytes:
        if number not in self.blocks:
            start = number * self.BLOCK
            end = min(self.size, start + self.BLOCK) - 1
            request = urllib.request.Request(self.url, headers={"Range": f"bytes={start}-{end}"})
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                self.blocks[number] = response.read()
        return self.blocks[number]

    def read(self, size: int = -1) -> bytes:
        end = self.size if size is None or size < 0 else min(self.size, self.pos + size)
        out = bytearray()
        while self.pos < end:
            block = self._block(self.pos // self.BLOCK)
            start = self.pos % self.BLOCK
            chunk = block[start:start + (end - self.pos)]
            if not chunk:
                break
            out += chunk
            self.pos += len(chunk)
        return bytes(out)

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


def requires(url: str) -> list[str]:
    """The `Requires-Dist` lines of the wheel at `url` (its METADATA member only)."""
    with zipfile.ZipFile(RangeFile(url)) as wheel:
        member = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        metadata = email.parser.BytesParser().parsebytes(wheel.read(member), headersonly=True)
    return metadata.get_all("Requires-Dist") or []


def _wheel_rank(filename: str) -> tuple:
    tags = filename[:-4].split("-")[-3:]
    return ("none-any" in "-".join(tags[1:]), "manylinux" in tags[-1] and "x86_64" in tags[-1], tags[0])


def releases(name: str, listed: list[tuple[str, str]]) -> dict[Version, tuple[str, str]]:
    """Final release -> (wheel file name, url) of the wheel picked for it."""
    chosen: dict[Version, tuple[str, str]] = {}
    for filename, url in listed:
        if not filename.endswith(".whl"):
            continue
        try:
            wheel_name, version, _, _ = parse_wheel_filename(filename)
        except (InvalidWheelFilename, InvalidVersion):
            continue
        if wheel_name != canonicalize_name(name) or version.is_prerelease or version.is_devrelease or version.local:
            continue
        best = chosen.get(version)
        if best is None or _wheel_rank(filename) > _wheel_rank(best[0]):
            chosen[version] = (filename, url)
    return dict(sorted(chosen.items()))


def torch_requirement(lines: list[str]) -> str:
    """The specifier of the unconditional (Linux, no extra) requirement on torch, "" when unbounded,
    None-like "-" when the release does not require torch at all."""
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) != "torch":
            continue
        if req.marker is not None and ("extra" in str(req.marker) or not req.marker.evaluate(
                {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64"})):
            continue
        return str(req.specifier)
    return "-"


def cuda_requirements(lines: list[str]) -> list[str]:
    """Unconditional requirements on NVIDIA wheels or triton (NOTE [cuda by metadata])."""
    out = []
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        name = canonicalize_name(req.name)
        if req.marker is not None and "extra" in str(req.marker):
            continue
        if name.startswith("nvidia-") or name == "triton" or re.search(r"-cu1\d+$", name):
            out.append(name)
    return sorted(set(out))


def gather(index: str, name: str, progress, newest: int = 0) -> dict:
    listed = files(index, name)
    picked = releases(name, listed)
    if newest:
        picked = dict(list(picked.items())[-newest:])
    rows: list[dict] = []
    cuda: set[str] = set()
    for version, (filename, url) in picked.items():
        try:
            lines = requires(url)
        except Exception as exc:  # noqa: BLE001 - one unreadable wheel is recorded, the rest go on
            progress(f"  {name} {version}: metadata not read ({type(exc).__name__}: {exc})")
            continue
        spec = torch_requirement(lines)
        cuda.update(cuda_requirements(lines))
        sha = url.split("#sha256=", 1)[1] if "#sha256=" in url else ""
        source = f"Requires-Dist of {filename}" + (f" (sha256 {sha[:16]}...)" if sha else "")
        stated = docs_row(canonicalize_name(name), version) if spec == "-" else None
        if stated is not None:   # the wheel declares no torch; the package's docs state it
            spec, source = stated
        _add(rows, str(version), spec, source)
        progress(f"  {name} {version}: torch{spec}")
    return {"rows": rows, "cuda_requires": sorted(cuda)}


def _add(rows: list[dict], version: str, spec: str, source: str) -> None:
    """Appends one release to the rows (a run of equal torch requirements grows; its source names
    the first and the last release's). A release whose requirement a package's docs state never
    joins a run read from metadata, nor the reverse: each run has one kind of source."""
    from_metadata = source.startswith("Requires-Dist")
    if rows and rows[-1]["torch"] == spec and rows[-1]["source"].startswith("Requires-Dist") == from_metadata:
        rows[-1]["last"] = version
        rows[-1]["releases"].append(version)
        rows[-1]["source"] = rows[-1]["source"].split(" ... ")[0] + " ... " + source.split(" ... ")[-1]
    else:
        rows.append({"first": version, "last": version, "torch": spec, "releases": [version], "source": source})


def reapply_docs(name: str, entry: dict) -> dict:
    """The shipped rows of `name` with DOCS_ROWS applied again, without reading the index: a release
    whose metadata declares no torch (`-`) takes what the package's docs state for it (`--docs-only`)."""
    rows: list[dict] = []
    for row in entry.get("rows") or ():
        parts = str(row["source"]).split(" ... ")
        documented = row["torch"] != "-" and not parts[0].startswith("Requires-Dist")
        for version in row["releases"]:
            spec = "-" if documented else str(row["torch"])   # a docs row is re-derived from DOCS_ROWS
            source = parts[0] if version == row["first"] else parts[-1] if version == row["last"] else \
                f"Requires-Dist of a {name} {version} wheel"
            if documented:
                source = "Requires-Dist of its wheels: no torch"
            stated = docs_row(canonicalize_name(name), Version(str(version))) if spec == "-" else None
            if stated is not None:
                spec, source = stated
            _add(rows, str(version), spec, source)
    return {**entry, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs="*", help="only these (default: every package of the script)")
    parser.add_argument("--dry-run", action="store_true", help="print the rows, write nothing")
    parser.add_argument("--docs-only", action="store_true",
                        help="apply the docs' tables (DOCS_ROWS) to the shipped rows again; no index is read")
    args = parser.parse_args(argv)
    doc = yaml.safe_load(OUT.read_text(encoding="utf-8")) if OUT.is_file() else {}
    packages = doc.get("packages") or {}
    if args.docs_only:
        for name in args.packages or sorted(DOCS_ROWS):
            packages[canonicalize_name(name)] = reapply_docs(name, packages.get(canonicalize_name(name)) or {})
        return _write({**doc, "packages": dict(sorted(packages.items()))}, args.dry_run)
    index = index_url()
    wanted = args.packages or [*TORCH_BOUND, *CUDA_CHECKED]
    for name in wanted:
        print(f"{name}:", file=sys.stderr)
        packages[canonicalize_name(name)] = gather(index, name, lambda text: print(text, file=sys.stderr),
                                                   CUDA_RELEASES if name in CUDA_CHECKED else 0)
    out = {
        "schema_version": 1,
        "gathered_on": date.today().isoformat(),
        "method": "each release's Requires-Dist on torch, read from one of its wheels' METADATA through pip's "
                  "configured package index (tools/gather_torch_constraints.py)",
        "packages": dict(sorted(packages.items())),
        "not_gathered": SDIST_ONLY,
    }
    return _write(out, args.dry_run)


def _write(out: dict, dry_run: bool) -> int:
    text = _HEADER + yaml.safe_dump(out, sort_keys=False, width=110)
    if dry_run:
        print(text)
    else:
        OUT.write_text(text, encoding="utf-8")
        print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)
    return 0


_HEADER = """\
# Packages that constrain torch: per run of releases, the torch requirement their wheels declare.
# Generated by tools/gather_torch_constraints.py from published metadata (edit the script, not this
# file). Read by opscan/scan/constraints.py for rule torch-held-back (OPS509) and, through
# `cuda_requires`, cuda-dependent-package (OPS510). `torch: "-"` means the release does not require
# torch; "" means it requires any torch. A version missing here is unknown and never judged.
"""

if __name__ == "__main__":
    sys.exit(main())
