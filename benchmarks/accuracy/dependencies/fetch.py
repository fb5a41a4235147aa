"""Fetches the dependency-manifest corpus: sdists of public ML packages, pinned and sha256-checked.

Sdists carry the manifests a port edits (setup.py, setup.cfg, pyproject.toml, requirements files,
environment files). Each is downloaded at run time with `pip download --no-deps --no-binary :all:
--no-build-isolation` (pip prepares the package's metadata, which runs its build backend: run it in
a throw-away environment), checked against the sha256 below and unpacked into
benchmarks/accuracy/dependencies/corpus/<name>/ (git-ignored: third-party files are never committed).
The unpacking and checks are benchmarks/accuracy/recall/fetch.py's.

    python benchmarks/accuracy/dependencies/fetch.py            # fetch what is missing, verify, unpack
    python benchmarks/accuracy/dependencies/fetch.py --check    # exit 1 unless every package is unpacked
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "recall"))

import fetch as recall_fetch  # noqa: E402  (benchmarks/accuracy/recall/fetch.py: download, sha256, unpack)

CORPUS = HERE / "corpus"
_SDIST = ["--no-binary", ":all:", "--no-build-isolation"]

# name (folder under corpus/), requirement, file pip saves, sha256, part (dev: labels_dev.csv; heldout: never tuned on)
PACKAGES: list[tuple[str, str, str, str, str]] = [
    ("audiocraft", "audiocraft==1.3.0", "audiocraft-1.3.0.tar.gz",
     "d82ade3eb4f934ee1adb438ae687a2bf59d33ca4a20039beab072548c038ac80", "dev"),
    ("colossalai", "colossalai==0.4.6", "colossalai-0.4.6.tar.gz",
     "1fdc05d56580bfe904d1098ee2dbf70d2d538cae9f5af787c8e77a04325269ba", "dev"),
    ("fairscale", "fairscale==0.4.13", "fairscale-0.4.13.tar.gz",
     "1b797825c427f5dba92253fd0d8daa574e8bd651a2423497775fab1b30cfb768", "dev"),
    ("bitsandbytes", "bitsandbytes==0.42.0", "bitsandbytes-0.42.0.tar.gz",
     "fc1505f184f0d275766f2a6c663f1a43b734c1409b5c5a406f3a6073d9f329fd", "dev"),
    ("salesforce-lavis", "salesforce-lavis==1.0.2", "salesforce-lavis-1.0.2.tar.gz",
     "778f6be1717a6e60ca7787f164bd04f8f361694baf04154805e9ac9c27a08a37", "dev"),
    ("peft", "peft==0.13.2", "peft-0.13.2.tar.gz",
     "0e0cbd40ebdf5fe4ea79f255880d02f96712d18899509369a2cc5768ad46d672", "dev"),
    ("unsloth", "unsloth==2024.8", "unsloth-2024.8.tar.gz",
     "20f555588d16811a2e585636551bd31fde526b92d5f336b8501d9dc8daa47f8d", "heldout"),
    ("sglang", "sglang==0.3.6", "sglang-0.3.6.tar.gz",
     "25225d526a080f34984ad79cedb418c264562b3cb2b1a33a12218208374426f8", "heldout"),
    ("xformers", "xformers==0.0.23", "xformers-0.0.23.tar.gz",
     "9dbc9a4a2a426e6e006417e762c54e3eb32265dde1091419d13fa683ab70559b", "heldout"),
    ("descript-audio-codec", "descript-audio-codec==1.0.0", "descript-audio-codec-1.0.0.tar.gz",
     "56a5a541128686821570756512d405534e9d7a978b34adf2510cfe981f0b00e0", "heldout"),
]


def _direct(requirement: str, filename: str) -> Path | None:
    """The sdist downloaded as a file from pip's configured index (no build step runs: `pip download`
    of an sdist prepares its metadata, which runs the package's build backend); None when the index
    does not list it (then pip downloads it, as before)."""
    import urllib.request

    sys.path.insert(0, str(HERE.parents[2] / "tools"))
    from gather_torch_constraints import files, index_url  # pip's index, read at run time

    name = requirement.split("==", 1)[0]
    url = next((u for f, u in files(index_url(), name) if f == filename), None)
    if url is None:
        return None
    target = recall_fetch.DOWNLOADS / filename
    target.parent.mkdir(parents=True, exist_ok=True)
    with urllib.request.urlopen(url.split("#", 1)[0], timeout=300) as response:
        target.write_bytes(response.read())
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that every package is unpacked")
    args = parser.parse_args(argv)
    missing = [name for name, *_ in PACKAGES if not (CORPUS / name).is_dir()]
    if args.check:
        for name in missing:
            print(f"missing: corpus/{name} (run benchmarks/accuracy/dependencies/fetch.py)")
        return 1 if missing else 0
    recall_fetch.DOWNLOADS = CORPUS / "_downloads"
    for name, requirement, filename, sha, _part in PACKAGES:
        dest = CORPUS / name
        if dest.is_dir():
            continue
        archive = _direct(requirement, filename) or recall_fetch._download(requirement, filename, _SDIST)
        got = recall_fetch._sha256(archive)
        if got != sha:
            archive.unlink()
            raise SystemExit(f"fetch.py: {filename}: sha256 {got} does not match the pinned {sha}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        recall_fetch._unpack(archive, dest)
        print(f"unpacked {requirement} -> corpus/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
