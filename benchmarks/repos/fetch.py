"""Fetches the repositories development set: pinned releases of public model repositories, checked by sha256.

`opscan REPO` with no configuration is measured on these (benchmarks/repos/run.py, docs/repositories.md).
The code is downloaded at run time with `pip download --no-deps` (exact version, one wheel each:
the package's own model code, as its repository ships it), verified against the sha256 pinned
below and unpacked into benchmarks/repos/corpus/<name>/ (git-ignored: third-party code is never
committed); the wheel's long description (the repository's README) is written back as README.md.
Dependencies the model code imports (DEPENDENCIES) are unpacked into corpus/_site/,
which run.py puts on PYTHONPATH: a user's environment has them installed. No weights are fetched.

    python benchmarks/repos/fetch.py            # fetch what is missing, verify, unpack
    python benchmarks/repos/fetch.py --check    # exit 1 unless every package is unpacked
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
DOWNLOADS = CORPUS / "_downloads"
SITE = CORPUS / "_site"

# name (folder under corpus/), requirement, file pip saves, sha256, held out (never tuned on)
REPOSITORIES: list[tuple[str, str, str, str, bool]] = [
    ("vit-pytorch", "vit-pytorch==1.26.11", "vit_pytorch-1.26.11-py3-none-any.whl",
     "2c4a17ceea6862bc3e4a2367ef6f07092750ef6aa96ca15ab54e8b96754543d5", False),
    ("x-transformers", "x-transformers==1.27.20", "x_transformers-1.27.20-py3-none-any.whl",
     "217a8aa0764f234b228622538115ff2927d01c91e8f4810db84f5a7837bde7c3", False),
    ("perceiver-pytorch", "perceiver-pytorch==0.11.0", "perceiver_pytorch-0.11.0-py3-none-any.whl",
     "4c21ef3dd6d7cbb87ec8b0f3ddfd80acd3225c5d41220c85762ca878bc752e26", False),
    ("mlp-mixer-pytorch", "mlp-mixer-pytorch==0.3.1", "mlp_mixer_pytorch-0.3.1-py3-none-any.whl",
     "84a10f77a3fb0a12067fac38890f67ef0153d88f1b2b2283b8efe705e7906a6b", False),
    ("linformer", "linformer==0.2.3", "linformer-0.2.3-py3-none-any.whl",
     "6e44ab72443014582c967d4323e8034e8e0f51e9a0ab360c22c4e4c47366f13e", False),
    ("conformer", "conformer==0.3.2", "conformer-0.3.2-py3-none-any.whl",
     "b957faa683e9e75061257f77407318428f2ad0fb5262bfc2e9b55fc2fffdfa03", False),
    ("g-mlp-pytorch", "g-mlp-pytorch==0.1.5", "g_mlp_pytorch-0.1.5-py3-none-any.whl",
     "d0974649baf1c9977d77a98c3ecbefcad5b0669d009138ad754dc1961a5987f1", False),
    ("tab-transformer-pytorch", "tab-transformer-pytorch==0.6.1", "tab_transformer_pytorch-0.6.1-py3-none-any.whl",
     "4f350e3e4c8f17869eb4825d5b0db8006078ce3ba645d80e768f6f9281b5d263", False),
    ("siren-pytorch", "siren-pytorch==0.1.7", "siren_pytorch-0.1.7-py3-none-any.whl",
     "9278ce9fde707716ea80dbaa8861a8c44a64ee76e0ac6793c76f54cd49166ed7", False),
    ("coca-pytorch", "coca-pytorch==0.1.0", "CoCa_pytorch-0.1.0-py3-none-any.whl",
     "d6160bc1d08f67236a8a6a8c90d69c27b15c19c6cd2e2d92524b35d10fed64ba", False),
    ("denoising-diffusion-pytorch", "denoising-diffusion-pytorch==2.3.4",
     "denoising_diffusion_pytorch-2.3.4-py3-none-any.whl",
     "1f779c01c9b77e45a63f2e6cd54c0e8e8bd6725f564a44fe3ee15795ef5bded2", False),
    # held out: never looked at while tuning; reported apart
    ("res-mlp-pytorch", "res-mlp-pytorch==0.0.6", "res_mlp_pytorch-0.0.6-py3-none-any.whl",
     "a39c3ffd702042e4dc4b6bc2aa2fe559bff106dbf1da4376d5a02ef838f224cf", True),
    ("transformer-in-transformer", "transformer-in-transformer==0.1.2",
     "transformer_in_transformer-0.1.2-py3-none-any.whl",
     "31c241823f6932e15aab7fd57b69ba87054389eff804c9cee946fb6bd1a00d6b", True),
    ("bottleneck-transformer-pytorch", "bottleneck-transformer-pytorch==0.1.4",
     "bottleneck_transformer_pytorch-0.1.4-py3-none-any.whl",
     "0268cf87d34b1a009edef1be8de5e2ee4905c8ad59c5393c7e9ce8e54fefb6d0", True),
]

# what the model code imports besides torch (installed in a user's environment)
DEPENDENCIES: list[tuple[str, str, str]] = [
    ("einops==0.8.2", "einops-0.8.2-py3-none-any.whl",
     "54058201ac7087911181bfec4af6091bb59380360f069276601256a76af08193"),
]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download(requirement: str, filename: str, sha256: str) -> Path:
    target = DOWNLOADS / filename
    if not target.exists():
        DOWNLOADS.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                        "--quiet", "--dest", str(DOWNLOADS), requirement], check=True)
    if not target.exists():
        raise SystemExit(f"fetch.py: pip did not save {filename} for {requirement}")
    got = _sha256(target)
    if got != sha256:
        raise SystemExit(f"fetch.py: {filename}: sha256 {got}, expected {sha256}")
    return target


def _unpack(archive: Path, dest: Path) -> None:
    tmp = dest.with_name(dest.name + ".partial")
    with zipfile.ZipFile(archive) as zf:
        for member in zf.namelist():
            if ".dist-info/" in member and not member.endswith("METADATA"):
                continue
            if member.startswith("/") or ".." in Path(member).parts:
                raise SystemExit(f"fetch.py: unsafe path {member!r} in {archive.name}")
            zf.extract(member, tmp)
    metadata = next(tmp.glob("*.dist-info/METADATA"), None)
    body = metadata.read_text(encoding="utf-8").partition("\n\n")[2] if metadata else ""
    if body.strip() and not (tmp / "README.md").exists():   # the repository's README (long_description)
        (tmp / "README.md").write_text(body, encoding="utf-8")
    tmp.rename(dest)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 unless every package is unpacked")
    args = parser.parse_args(argv)
    missing = [name for name, *_ in REPOSITORIES if not (CORPUS / name).is_dir()]
    if args.check:
        print("missing: " + ", ".join(missing) if missing else "all unpacked")
        return 1 if missing else 0
    for name, requirement, filename, sha256, _held in REPOSITORIES:
        if not (CORPUS / name).is_dir():
            _unpack(_download(requirement, filename, sha256), CORPUS / name)
            print(f"unpacked {name}")
    for requirement, filename, sha256 in DEPENDENCIES:
        SITE.mkdir(parents=True, exist_ok=True)
        if not (SITE / requirement.split("==")[0]).is_dir():
            with zipfile.ZipFile(_download(requirement, filename, sha256)) as zf:
                zf.extractall(SITE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
