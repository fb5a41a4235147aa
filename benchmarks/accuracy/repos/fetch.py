"""Fetches the repositories set (development and held-out parts): pinned releases of public model
repositories, checked by sha256.

`opscan REPO` with no configuration is measured on these (benchmarks/accuracy/repos/run.py, docs/repositories.md).
Two sources, both pinned:
- wheels (REPOSITORIES): `pip download --no-deps` of an exact version (the package's own code, as
  its repository ships it), checked against the sha256 below and unpacked into
  benchmarks/accuracy/repos/corpus/<name>/; the wheel's long description (the repository's README) is
  written back as README.md; a wheel built without one (its METADATA has no body) gets the
  README.md of the same release's source archive (SDIST_READMES, pinned by sha256 too);
- git repositories (GIT_REPOSITORIES): the pinned commit, exported with `git archive` from a local
  mirror (`--mirror DIR`, holding DIR/<owner>+<name>/repo, a bare git directory) or else cloned.
Everything lands in corpus/ (git-ignored: third-party code is never committed).

A user's environment has a repository's requirements installed, so the dependencies each wheel
declares (its METADATA `Requires-Dist`, markers evaluated for this interpreter, extras followed)
are unpacked into corpus/_site/, which run.py puts on PYTHONPATH. Those this interpreter already
has (torch, transformers, numpy, ...) are not fetched again: a dependency never brings a second
torch. The resolved set is pinned in dependencies.lock (file and sha256) beside this script;
`--relock` resolves it again, keeping every pin that still fits (delete the lock to resolve
everything at the newest). No weights are fetched.

    python benchmarks/accuracy/repos/fetch.py [--mirror DIR]   # fetch what is missing, verify, unpack
    python benchmarks/accuracy/repos/fetch.py --check          # exit 1 unless every repository is unpacked
    python benchmarks/accuracy/repos/fetch.py --relock         # resolve the dependencies again, rewrite the lock
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import io
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
DOWNLOADS = CORPUS / "_downloads"
SITE = CORPUS / "_site"
LOCK = HERE / "dependencies.lock"

# NOTE [parts]: each repository belongs to one part of the set. The development part is tuned on.
# A held-out part is never looked at while tuning and is run once, at the end, and reported apart;
# once run, it may be used for tuning (held-out 1 is development since) but its first result is
# what the docs report. `run.py --held-out` runs the current held-out part (HELD_OUT) only.
DEV = "development"
HELD_OUT_2 = "held out 2"
HELD_OUT_3 = "held out 3"
HELD_OUT_4 = "held out 4"
HELD_OUT = HELD_OUT_4
PARTS = (DEV, HELD_OUT_2, HELD_OUT_3, HELD_OUT_4)

# name (folder under corpus/), requirement, file pip saves, sha256, part
REPOSITORIES: list[tuple[str, str, str, str, str]] = [
    ("vit-pytorch", "vit-pytorch==1.26.11", "vit_pytorch-1.26.11-py3-none-any.whl",
     "2c4a17ceea6862bc3e4a2367ef6f07092750ef6aa96ca15ab54e8b96754543d5", DEV),
    ("x-transformers", "x-transformers==1.27.20", "x_transformers-1.27.20-py3-none-any.whl",
     "217a8aa0764f234b228622538115ff2927d01c91e8f4810db84f5a7837bde7c3", DEV),
    ("perceiver-pytorch", "perceiver-pytorch==0.11.0", "perceiver_pytorch-0.11.0-py3-none-any.whl",
     "4c21ef3dd6d7cbb87ec8b0f3ddfd80acd3225c5d41220c85762ca878bc752e26", DEV),
    ("mlp-mixer-pytorch", "mlp-mixer-pytorch==0.3.1", "mlp_mixer_pytorch-0.3.1-py3-none-any.whl",
     "84a10f77a3fb0a12067fac38890f67ef0153d88f1b2b2283b8efe705e7906a6b", DEV),
    ("linformer", "linformer==0.2.3", "linformer-0.2.3-py3-none-any.whl",
     "6e44ab72443014582c967d4323e8034e8e0f51e9a0ab360c22c4e4c47366f13e", DEV),
    ("conformer", "conformer==0.3.2", "conformer-0.3.2-py3-none-any.whl",
     "b957faa683e9e75061257f77407318428f2ad0fb5262bfc2e9b55fc2fffdfa03", DEV),
    ("g-mlp-pytorch", "g-mlp-pytorch==0.1.5", "g_mlp_pytorch-0.1.5-py3-none-any.whl",
     "d0974649baf1c9977d77a98c3ecbefcad5b0669d009138ad754dc1961a5987f1", DEV),
    ("tab-transformer-pytorch", "tab-transformer-pytorch==0.6.1", "tab_transformer_pytorch-0.6.1-py3-none-any.whl",
     "4f350e3e4c8f17869eb4825d5b0db8006078ce3ba645d80e768f6f9281b5d263", DEV),
    ("siren-pytorch", "siren-pytorch==0.1.7", "siren_pytorch-0.1.7-py3-none-any.whl",
     "9278ce9fde707716ea80dbaa8861a8c44a64ee76e0ac6793c76f54cd49166ed7", DEV),
    ("coca-pytorch", "coca-pytorch==0.1.0", "CoCa_pytorch-0.1.0-py3-none-any.whl",
     "d6160bc1d08f67236a8a6a8c90d69c27b15c19c6cd2e2d92524b35d10fed64ba", DEV),
    ("denoising-diffusion-pytorch", "denoising-diffusion-pytorch==2.3.4",
     "denoising_diffusion_pytorch-2.3.4-py3-none-any.whl",
     "1f779c01c9b77e45a63f2e6cd54c0e8e8bd6725f564a44fe3ee15795ef5bded2", DEV),
    # larger training repositories (the code of Lightning-AI/litgpt and pytorch/torchtune)
    ("litgpt", "litgpt==0.5.13", "litgpt-0.5.13-py3-none-any.whl",
     "da044b76c52cd44fc0564f6177ed6cf186dde24f711ce8e71e1fd9e9da5f02b2", DEV),
    ("torchtune", "torchtune==0.6.1", "torchtune-0.6.1-py3-none-any.whl",
     "bcbc4ee9774b5c5829a5ff13df851e0b0e32416c018af8db53faa3472ac256e7", DEV),
    # held out 1 (run once at commit 8d2980f, 2/6), then used for tuning: development since
    ("res-mlp-pytorch", "res-mlp-pytorch==0.0.6", "res_mlp_pytorch-0.0.6-py3-none-any.whl",
     "a39c3ffd702042e4dc4b6bc2aa2fe559bff106dbf1da4376d5a02ef838f224cf", DEV),
    ("transformer-in-transformer", "transformer-in-transformer==0.1.2",
     "transformer_in_transformer-0.1.2-py3-none-any.whl",
     "31c241823f6932e15aab7fd57b69ba87054389eff804c9cee946fb6bd1a00d6b", DEV),
    ("bottleneck-transformer-pytorch", "bottleneck-transformer-pytorch==0.1.4",
     "bottleneck_transformer_pytorch-0.1.4-py3-none-any.whl",
     "0268cf87d34b1a009edef1be8de5e2ee4905c8ad59c5393c7e9ce8e54fefb6d0", DEV),
    ("torchtitan", "torchtitan==0.3.0", "torchtitan-0.3.0-py3-none-any.whl",
     "5563ccf9a295b24e00a36087149e9c2d0686cecbd3972c31e67227029293af42", DEV),
    ("nanotron", "nanotron==0.4", "nanotron-0.4-py3-none-any.whl",
     "0c1834e91c17c651f430d46a1e779bc49991c33bda26cc237beae7d12b383ad9", DEV),
    # held out 2 (run once at commit 135727f, 3/5), then DiT and gpt-fast used for fixes: development since
    ("fair-esm", "fair-esm==2.0.0", "fair_esm-2.0.0-py3-none-any.whl",
     "7dcb58828a401155d1457d071a03800bd1a50331ddf24ac79ad1dd0f2ea682a2", DEV),
    ("performer-pytorch", "performer-pytorch==1.1.4", "performer_pytorch-1.1.4-py3-none-any.whl",
     "8c27835741950c7b5f39d8f98056416b752c4bce9426c4c4c4b9757ba7c55fc7", DEV),
    # held out 3 (chosen by the rule in docs/repositories.md before any opscan output; labels in
    # heldout3_labels.md): a pure-PyTorch Mamba (alxndrTL/mamba.py) and generic EfficientNets
    # (rwightman/gen-efficientnet-pytorch: it declares torchvision but never imports it)
    ("mambapy", "mambapy==1.2.0", "mambapy-1.2.0-py3-none-any.whl",
     "37372ae2b13621beb5f7d60c486efdedcd21f79a2608e3d5f47b937f3196c282", HELD_OUT_3),
    ("geffnet", "geffnet==1.0.2", "geffnet-1.0.2-py3-none-any.whl",
     "259013030bf429bc7a4fc4e8dc3fef6364e9750a6cee24d28e1674f8c3048d3a", HELD_OUT_3),
    # held out 4 (chosen by the rule in docs/repositories.md before any opscan output; labels in
    # heldout4_labels.md), the newest wheel on 2026-12-02: xLSTM language models (NX-AI/xlstm) and
    # a multi-scale neural audio codec (hubertsiuzdak/snac)
    ("xlstm", "xlstm==2.0.6", "xlstm-2.0.6-py3-none-any.whl",
     "8fcb24b45a447fa255bbe4b4306aa93e6d4bd7cf06a6cd08d9494986662a141a", HELD_OUT_4),
    ("snac", "snac==1.2.1", "snac-1.2.1-py3-none-any.whl",
     "96f90e221121ad03d6e3b060a787268b1efdbe424560a58f6f732df6d4914dc7", HELD_OUT_4),
]

# name (folder under corpus/), owner/name, commit, part
GIT_REPOSITORIES: list[tuple[str, str, str, str]] = [
    ("nanoGPT", "karpathy/nanoGPT", "3adf61e154c3fe3fca428ad6bc3818b27a3b8291", DEV),
    ("minGPT", "karpathy/minGPT", "37baab71b9abea1b76ab957409a1cc2fbfba8a26", DEV),   # held out 1
    # held out 2 (run once at commit 135727f), development since
    ("llama2.c", "karpathy/llama2.c", "350e04fe35433e6d2941dce5a1f53308f87058eb", DEV),
    ("DiT", "facebookresearch/DiT", "ed81ce2229091fd4ecc9a223645f95cf379d582b", DEV),
    ("gpt-fast", "pytorch-labs/gpt-fast", "32971d3129541c5bfb4f715abc33d1c5f408d204", DEV),
    # held out 3: the default branch's head on 2026-12-02 (none of them has a wheel on the index)
    ("whisper", "openai/whisper", "c0d2f624c09dc18e709e37c2ad90c039a4eb72a2", HELD_OUT_3),
    ("improved-diffusion", "openai/improved-diffusion", "1bc7bbbdc414d83d4abf2ad8cc1446dc36c4e4d5", HELD_OUT_3),
    ("dinov2", "facebookresearch/dinov2", "b8931f7bf91576930313be2c6d6af376033b35f0", HELD_OUT_3),
    ("nanochat", "karpathy/nanochat", "92d63d4e8bb4df75c3b71618f31ddde2378b2bcd", HELD_OUT_3),
    ("CLIP", "openai/CLIP", "d05afc436d78f1c48dc0dbf8e5980a9d471f35f6", HELD_OUT_3),
    ("waveglow", "NVIDIA/waveglow", "8afb643df59265016af6bd255c7516309d675168", HELD_OUT_3),
    # held out 4: the default branch's head on 2026-12-02
    ("LLMs-from-scratch", "rasbt/LLMs-from-scratch", "28c65cdfbc3338e2e040016eea4b7fdf556e4d57", HELD_OUT_4),
    ("s4", "state-spaces/s4", "e757cef57d89e448c413de7325ed5601aceaac13", HELD_OUT_4),
    ("edm", "NVlabs/edm", "008a4e5316c8e3bfe61a62f874bddba254295afb", HELD_OUT_4),
    ("minDiffusion", "cloneofsimo/minDiffusion", "00a3c8066d25a34d3d472ef6c87c7b6b238ea444", HELD_OUT_4),
    ("pytorch-cifar", "kuangliu/pytorch-cifar", "49b7aa97b0c12fe0d4054e670403a16b6b834ddd", HELD_OUT_4),
    ("hifi-gan", "jik876/hifi-gan", "4769534d45265d52a904b850da5a622601885777", HELD_OUT_4),
]


# NOTE [READMEs from source archives]
# Some releases' wheels carry no long description (setup.py sets only its content type), so their
# README, the repository's usage example, would be missing from the corpus although every user of
# the repository has it. For those, the same release's source archive (`pip download --no-binary`)
# is fetched, checked by sha256, and only its top-level README.md is taken: no code of it is used.
# name: (sdist file pip saves, sha256)
SDIST_READMES: dict[str, tuple[str, str]] = {
    "x-transformers": ("x_transformers-1.27.20.tar.gz",
                       "fb9773e98f29f229c648f867108a6fa7353df2de9ab68b82f1c1b07de7dfcc35"),
    "mlp-mixer-pytorch": ("mlp_mixer_pytorch-0.3.1.tar.gz",
                          "522fa32e0bb68eee2c7a3f91e4ef5fc5a3c20c2176c8f0f12d3ab062e38bab79"),
    "linformer": ("linformer-0.2.3.tar.gz", "747a4dc025a557d164b61170f140ec4aa37cfca3ce088318f3d5f39194cfcaba"),
    "conformer": ("conformer-0.3.2.tar.gz", "32ef34fa461ff32e1c33061025c0f583884f19d2f0aba200234f4e771f777eda"),
    "tab-transformer-pytorch": ("tab_transformer_pytorch-0.6.1.tar.gz",
                                "a8b7ca8b88c2a7c5d68ce0848f265c672ca05b64bc659ab68e3526a5fb668fe2"),
    "siren-pytorch": ("siren-pytorch-0.1.7.tar.gz", "06486736a6062283a3759f3dfc2845733c332d0a94186e6e786521f6f3ef12e9"),
    "coca-pytorch": ("CoCa-pytorch-0.1.0.tar.gz", "119c83812d140ad197cf4e992db8c373d908af0bffd0a87015546b6a1cf0a316"),
}


# requirements a repository's install instructions add to its metadata: torchtune's README says to
# install torchao beside it (its package does not declare it). 0.15.0 still has the
# torchao.dtypes.nf4tensor module torchtune 0.6 imports (0.18 moved it) and imports on torch 2.13
# (0.12 and 0.13 do not).
ALSO_REQUIRED: list[str] = ["torchao==0.15.0"]
# A git repository ships no wheel metadata: what its requirements.txt / setup.py name that this
# interpreter lacks is listed here, by hand (resolved and pinned like a wheel's Requires-Dist).
# whisper: numba and more-itertools (tiktoken is pinned already; triton is GPU-only, imported
# lazily). CLIP: ftfy (torchvision cannot load beside this torch build, see the docs). dinov2's
# training-only requirements (fvcore, iopath, submitit, xformers, cuml) and improved-diffusion's
# mpi4py (its dist_util only; it needs an MPI runtime) and waveglow's (tensorflow, librosa, ...: its
# training data loader and tacotron2 submodule only) are left out: the models do not import them.
ALSO_REQUIRED += ["numba", "more-itertools", "ftfy"]
# Held out 4 adds none: what its git repositories' model code imports is installed or pinned
# already (tiktoken, scipy, einops, pytorch-lightning; matplotlib, pandas, click, psutil, pillow
# here). Left out: LLMs-from-scratch's tensorflow (only gpt_download.py, reading the GPT-2 weights)
# and jupyterlab (its notebooks); hifi-gan's librosa and soundfile (its data loader, meldataset.py,
# like waveglow's); s4's hydra-core (its train.py and src/ only; hydra-core 1.3 requires
# omegaconf < 2.4, older than the pin the development set uses) and its optional pykeops and CUDA
# extension (models/s4 falls back without them); torchvision, which the training scripts of
# minDiffusion, pytorch-cifar and s4 (example.py) import for their datasets (no build loads beside
# this torch, see the docs; their model modules do not import it).


def names() -> list[tuple[str, str, str]]:
    """(name, version or commit, part) of every repository of the set, in table order."""
    rows = [(n, r.split("==")[1], p) for n, r, _f, _s, p in REPOSITORIES]
    rows += [(n, c[:12], p) for n, _r, c, p in GIT_REPOSITORIES]
    return sorted(rows, key=lambda row: PARTS.index(row[2]))   # stable: development first


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _pip_download(requirement: str, source: bool = False) -> None:
    DOWNLOADS.mkdir(parents=True, exist_ok=True)
    kind = ["--no-binary", ":all:"] if source else ["--only-binary", ":all:"]
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", *kind,
                    "--quiet", "--dest", str(DOWNLOADS), requirement], check=True)


def _download(requirement: str, filename: str, sha256: str) -> Path:
    target = DOWNLOADS / filename
    if not target.exists():
        _pip_download(requirement, source=filename.endswith(".tar.gz"))
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


def _sdist_readme(name: str, requirement: str, dest: Path) -> None:
    """README.md of the release's source archive into `dest` (NOTE [READMEs from source archives])."""
    filename, sha256 = SDIST_READMES[name]
    with tarfile.open(_download(requirement, filename, sha256)) as tf:
        member = next((m for m in tf.getmembers() if m.isfile() and m.name.count("/") == 1
                       and m.name.endswith("/README.md")), None)
        if member is None:
            raise SystemExit(f"fetch.py: {filename} has no top-level README.md")
        (dest / "README.md").write_bytes(tf.extractfile(member).read())


def _git(name: str, slug: str, commit: str, mirror: Path | None) -> None:
    """corpus/<name>/ as the tree of `commit`: from the mirror's bare git directory, else a clone."""
    with tempfile.TemporaryDirectory() as tmp:
        git_dir = mirror / slug.replace("/", "+") / "repo" if mirror is not None else Path(tmp) / "repo.git"
        if mirror is None:
            subprocess.run(["git", "clone", "--bare", "--quiet", f"https://github.com/{slug}", str(git_dir)],
                           check=True)
        done = subprocess.run(["git", "--git-dir", str(git_dir), "archive", "--format=tar", commit],
                              check=False, capture_output=True)
        tmp_dest = CORPUS / (name + ".partial")
        if done.returncode == 0:
            with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tf:
                tf.extractall(tmp_dest, filter="data")
        else:
            _export_present(git_dir, commit, tmp_dest)
    tmp_dest.rename(CORPUS / name)


def _export_present(git_dir: Path, commit: str, dest: Path) -> None:
    """The tree of `commit` file by file, leaving out the blobs the git directory lacks.

    NOTE [absent blobs]: a mirror snapshot may list its largest files without holding them
    (openai/whisper's notebook), and `git archive` then fails on the whole tree. The files the
    corpus needs are the code; each one left out is named on stderr."""
    git = ["git", "--git-dir", str(git_dir)]
    listing = subprocess.run([*git, "ls-tree", "-r", "-z", commit], check=True, capture_output=True).stdout
    for entry in filter(None, listing.split(b"\0")):
        meta, _tab, path = entry.decode("utf-8").partition("\t")
        mode, kind, obj = meta.split()
        if kind != "blob" or mode == "120000" or path.startswith("/") or ".." in Path(path).parts:
            continue
        blob = subprocess.run([*git, "cat-file", "blob", obj], check=False, capture_output=True)
        if blob.returncode != 0:
            print(f"fetch.py: {path} is not in the mirror (left out)", file=sys.stderr)
            continue
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob.stdout)
        if mode == "100755":
            target.chmod(0o755)


# --- dependencies -----------------------------------------------------------------------------------

def _installed(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _requires(wheel: Path, extras: set[str]) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as zf:
        meta = next(m for m in zf.namelist() if m.endswith(".dist-info/METADATA") and m.count("/") == 1)
        text = zf.read(meta).decode("utf-8").partition("\n\n")[0]
    out = []
    for line in re.findall(r"^Requires-Dist: (.+)$", text, re.MULTILINE):
        req = Requirement(line)
        if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in extras | {""}):
            out.append(req)
    return out


def _clashes(wheel: Path) -> list[str]:
    """The installed distributions whose version the wheel's requirements exclude, or whose build
    it was not compiled against (a CUDA torchvision pinning torch==2.13.0 beside torch 2.13.0+cpu)."""
    out = []
    for req in _requires(wheel, set()):
        if not _installed(req.name) or not req.specifier:
            continue
        installed = Version(importlib.metadata.version(req.name))
        pinned = [s for s in req.specifier if s.operator == "==" and "+" not in s.version]
        # torch 2.13.0+cpu is not the torch==2.13.0 a CUDA torchvision was compiled against
        if installed not in SpecifierSet(str(req.specifier), prereleases=True) or pinned and installed.local:
            out.append(f"{req.name}{req.specifier} (installed: {installed})")
    return out


def _versions(name: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pip", "index", "versions", name], check=False,
                          capture_output=True, text=True)
    found = re.search(r"Available versions: (.+)", done.stdout)
    return [v.strip() for v in found.group(1).split(",")] if found else []


def _fetch_one(req: Requirement) -> Path | None:
    """The newest wheel of `req` whose own requirements fit what is installed here, else None."""
    key = canonicalize_name(req.name)
    def tries():
        yield str(req.specifier)   # the newest first; older ones only when it clashes
        yield from [f"=={v}" for v in _versions(req.name) if v in req.specifier][1:12]

    for spec in tries():
        before = set(DOWNLOADS.glob("*.whl"))
        try:
            _pip_download(f"{req.name}{spec}")
        except subprocess.CalledProcessError:
            continue
        new = set(DOWNLOADS.glob("*.whl")) - before
        wanted = Requirement(f"{req.name}{spec}").specifier
        got = sorted(new or [p for p in DOWNLOADS.glob("*.whl") if canonicalize_name(parse_wheel_filename(p.name)[0])
                             == key and parse_wheel_filename(p.name)[1] in wanted])
        if got and not _clashes(got[-1]):
            return got[-1]
        if got:
            print(f"fetch.py: {got[-1].name} needs {', '.join(_clashes(got[-1]))}; trying an older one",
                  file=sys.stderr)
    return None


def _locked() -> tuple[dict[str, tuple[str, str, str]], set[str]]:
    """The lock's pins by package name, and the names it records as left out."""
    pins: dict[str, tuple[str, str, str]] = {}
    left_out: set[str] = set()
    for line in LOCK.read_text(encoding="utf-8").splitlines() if LOCK.exists() else []:
        if line.startswith("# left out: "):
            left_out.add(canonicalize_name(line.removeprefix("# left out: ").split()[0]))
        elif line.strip() and not line.startswith("#"):
            requirement, filename, sha256 = line.split()
            pins[canonicalize_name(requirement.split("==")[0])] = (requirement, filename, sha256)
    return pins, left_out


def _resolve(wheels: list[Path], pins: dict[str, tuple[str, str, str]],
             left_out: set[str]) -> tuple[list[tuple[str, str, str]], list[str]]:
    """(requirement, file, sha256) of every dependency not installed here, found by following
    Requires-Dist, and the names of those no wheel fits. A pin of the lock that satisfies the
    requirement is kept, and a name the lock left out stays out (NOTE [keep pins])."""
    seen: dict[str, tuple[str, str, str]] = {}
    queue: list = [(None, set())] + [(w, set()) for w in wheels]
    while queue:
        wheel, extras = queue.pop(0)
        for req in _requires(wheel, extras) if wheel is not None else [Requirement(r) for r in ALSO_REQUIRED]:
            key = canonicalize_name(req.name)
            if key in seen or _installed(req.name):
                continue
            pinned = pins.get(key)
            if pinned and Version(pinned[0].split("==")[1]) in SpecifierSet(str(req.specifier), prereleases=True):
                path = _download(*pinned)
            elif key in left_out:
                path = None
            else:
                path = _fetch_one(req)
            if path is None:
                print(f"fetch.py: no wheel of {req} fits this environment (left out)", file=sys.stderr)
                seen[key] = ("", "", "")
                continue
            seen[key] = (f"{req.name}=={parse_wheel_filename(path.name)[1]}", path.name, _sha256(path))
            queue.append((path, set(req.extras)))
    return sorted(v for v in seen.values() if v[0]), sorted(k for k, v in seen.items() if not v[0])


def _dependencies(relock: bool) -> None:
    # NOTE [keep pins]: --relock resolves the dependencies of every repository again (a repository
    # added to the set brings its own), but keeps each pin of the lock that still satisfies what
    # requires it, so adding a repository does not move the others' dependencies to newer releases.
    # Delete the lock to resolve everything at the newest.
    if relock or not LOCK.exists():
        pins, left_out = _locked()
        wheels = [DOWNLOADS / f for _n, _r, f, _s, _p in REPOSITORIES]
        rows, missing = _resolve(wheels, pins, left_out)
        lines = [" ".join(row) for row in rows] + [f"# left out: {name} (no wheel fits this environment)"
                                                     for name in missing]
        LOCK.write_text("# requirement file sha256 (resolved by fetch.py --relock; see its docstring)\n"
                        + "\n".join(lines) + "\n", encoding="utf-8")
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        requirement, filename, sha256 = line.split()
        marker = SITE / ".unpacked" / filename
        if not marker.exists():
            with zipfile.ZipFile(_download(requirement, filename, sha256)) as zf:
                zf.extractall(SITE)
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 unless every repository is unpacked")
    parser.add_argument("--mirror", type=Path, help="a folder of bare git mirrors (DIR/<owner>+<name>/repo)")
    parser.add_argument("--relock", action="store_true", help="resolve the dependencies anew (dependencies.lock)")
    args = parser.parse_args(argv)
    missing = [name for name, *_ in names() if not (CORPUS / name).is_dir()]
    if args.check:
        print("missing: " + ", ".join(missing) if missing else "all unpacked")
        return 1 if missing else 0
    for name, requirement, filename, sha256, _part in REPOSITORIES:
        archive = _download(requirement, filename, sha256)
        if not (CORPUS / name).is_dir():
            _unpack(archive, CORPUS / name)
            print(f"unpacked {name}")
        if name in SDIST_READMES and not (CORPUS / name / "README.md").exists():
            _sdist_readme(name, requirement, CORPUS / name)
            print(f"README.md of {name} from its source archive")
    for name, slug, commit, _part in GIT_REPOSITORIES:
        if not (CORPUS / name).is_dir():
            _git(name, slug, commit, args.mirror)
            print(f"exported {name} at {commit[:12]}")
    _dependencies(args.relock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
