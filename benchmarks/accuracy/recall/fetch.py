"""Fetches the recall corpus: pinned releases of public PyTorch packages, checked by sha256.

The code is downloaded at run time with `pip download --no-deps` (exact version, one file each),
verified against the sha256 pinned below and unpacked into benchmarks/accuracy/recall/corpus/<name>/
(git-ignored: third-party code is never committed). Wheels of packages with compiled parts are
asked for the CPython 3.11 manylinux x86_64 build, so the file (and its hash) is the same on any
machine. Compiled objects (.so) are not unpacked: the scan reads sources only.

    python benchmarks/accuracy/recall/fetch.py            # fetch what is missing, verify, unpack
    python benchmarks/accuracy/recall/fetch.py --check    # exit 1 unless every package is unpacked

The labels in labels.csv refer to paths inside corpus/<name>/ (the unpacked archive's own layout).
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
DOWNLOADS = CORPUS / "_downloads"

_BINARY = ["--only-binary", ":all:", "--python-version", "3.11", "--platform", "manylinux2014_x86_64",
           "--platform", "manylinux_2_28_x86_64"]

# name (folder under corpus/), requirement, file pip saves, sha256, extra pip arguments
PACKAGES: list[tuple[str, str, str, str, list[str]]] = [
    ("transformers", "transformers==4.46.3", "transformers-4.46.3-py3-none-any.whl",
     "a12ef6f52841fd190a3e5602145b542d03507222f2c64ebb7ee92e8788093aef", []),
    ("diffusers", "diffusers==0.31.0", "diffusers-0.31.0-py3-none-any.whl",
     "cbc498ae63f4abfc7c3a07649cdcbee229ef2f9a9a1f0d19c9bbaf22f8d30c1f", []),
    ("peft", "peft==0.13.2", "peft-0.13.2-py3-none-any.whl",
     "d4e0951ec78eac11c45a051801c569913436888c578d48e5ce86996b715bc6ef", []),
    ("lightning", "lightning==2.4.0", "lightning-2.4.0-py3-none-any.whl",
     "560163af9711cf59055c448232c473150a299089efce0d2be3cc3288082d8768", []),
    ("trl", "trl==0.12.1", "trl-0.12.1-py3-none-any.whl",
     "502b958ac95313bd3e1a31ce91bc852b14f90303bc9b973ede1ee959f40c5c5a", []),
    ("fairscale", "fairscale==0.4.13", "fairscale-0.4.13.tar.gz",
     "1b797825c427f5dba92253fd0d8daa574e8bd651a2423497775fab1b30cfb768", ["--no-binary", ":all:"]),
    ("torchao", "torchao==0.6.1",
     "torchao-0.6.1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
     "ffe91fa7e4a5a9dda226f25d54519f28c0b56344801a01df8859cbc91821650f", _BINARY),
    ("xformers", "xformers==0.0.28.post3", "xformers-0.0.28.post3-cp311-cp311-manylinux_2_28_x86_64.whl",
     "825563e129f6b22885c2a91e464ff617382f4d78876cc92d96ff618e875aaee3", _BINARY),
    ("megatron-core", "megatron-core==0.9.0",
     "megatron_core-0.9.0-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
     "b2c73c9e6fa58c93f3b1833ffd32bc08dc29b5d28fda7375c5a5e3a8aaeb3db8", _BINARY),
    # added for issue 26 (device dispatch over other accelerators): never scanned before
    ("accelerate", "accelerate==1.1.1", "accelerate-1.1.1-py3-none-any.whl",
     "61edd81762131b8d4bede008643fa1e1f3bf59bec710ebda9771443e24feae02", []),
    ("mmengine", "mmengine==0.10.5", "mmengine-0.10.5-py3-none-any.whl",
     "7c204dde312008a8a1afa09437408fde00675d326c73bcaac688c46dfb633cad", []),
    ("ultralytics", "ultralytics==8.3.40", "ultralytics-8.3.40-py3-none-any.whl",
     "68eab78f4bdcd7ab2f62f5fe5a394958dd8507c47359a7f7930ab617ffba4302", []),
    # held-out 2 (issue 26): three packages opscan had never scanned, labelled before the first scan
    ("deepspeed", "deepspeed==0.16.0", "deepspeed-0.16.0.tar.gz",
     "166c7151799d1e6cce1bc338199fc0c0e450db4cc4549cb457b99299ebff54ac", ["--no-binary", ":all:"]),
    ("bitsandbytes", "bitsandbytes==0.42.0", "bitsandbytes-0.42.0.tar.gz",
     "fc1505f184f0d275766f2a6c663f1a43b734c1409b5c5a406f3a6073d9f329fd", ["--no-binary", ":all:"]),
    ("mosaicml", "mosaicml==0.27.0", "mosaicml-0.27.0-py3-none-any.whl",
     "b771129449e9af4c82849b09cd12a6d902f64b117efbf71c6116b7bd62c93b53", []),
    # held-out 3 (issue 26): three more packages opscan had never scanned, labelled before the first scan
    ("colossalai", "colossalai==0.4.6", "colossalai-0.4.6.tar.gz",
     "1fdc05d56580bfe904d1098ee2dbf70d2d538cae9f5af787c8e77a04325269ba", ["--no-binary", ":all:"]),
    ("sglang", "sglang==0.3.6", "sglang-0.3.6-py3-none-any.whl",
     "00b98a4d81d7a0773faaafc6b8bf997e52c539ddf0ca7f2ad15133d5feb62740", []),
    ("liger-kernel", "liger-kernel==0.4.2", "liger_kernel-0.4.2-py3-none-any.whl",
     "40fc8605343e89a58b2623ace8448f434bee51370cb05deda8630a70e8bf4d34", []),
]

_SKIP_SUFFIXES = (".so", ".pyd", ".dll", ".dylib")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download(requirement: str, filename: str, extra: list[str]) -> Path:
    target = DOWNLOADS / filename
    if not target.exists():
        DOWNLOADS.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", str(DOWNLOADS),
               *extra, requirement]
        subprocess.run(cmd, check=True)
    if not target.exists():
        raise SystemExit(f"fetch.py: pip did not save {filename} for {requirement}")
    return target


def _unpack(archive: Path, dest: Path) -> None:
    tmp = dest.with_name(dest.name + ".partial")
    if tmp.exists():
        _rmtree(tmp)
    tmp.mkdir(parents=True)
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if info.is_dir() or info.filename.endswith(_SKIP_SUFFIXES) or ".dist-info/" in info.filename:
                    continue
                zf.extract(info, tmp)
    else:
        with tarfile.open(archive) as tf:
            members = [m for m in tf.getmembers() if m.isfile() and not m.name.endswith(_SKIP_SUFFIXES)]
            # strip the single top folder (name-version/) so paths start at the package layout
            for m in members:
                m.name = m.name.split("/", 1)[1] if "/" in m.name else m.name
            tf.extractall(tmp, members=members, filter="data")
    tmp.rename(dest)


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that every package is unpacked")
    args = parser.parse_args(argv)
    missing = [name for name, *_ in PACKAGES if not (CORPUS / name).is_dir()]
    if args.check:
        for name in missing:
            print(f"missing: corpus/{name} (run benchmarks/accuracy/recall/fetch.py)")
        return 1 if missing else 0
    for name, requirement, filename, sha, extra in PACKAGES:
        dest = CORPUS / name
        if dest.is_dir():
            continue
        archive = _download(requirement, filename, extra)
        got = _sha256(archive)
        if got != sha:
            archive.unlink()
            raise SystemExit(f"fetch.py: {filename}: sha256 {got} does not match the pinned {sha}")
        _unpack(archive, dest)
        print(f"unpacked {requirement} -> corpus/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
