"""VCS URLs installed without a name (`pip install git+https://github.com/OWNER/REPO.git#subdirectory=...`):
the name and repository inferred from the URL. scan/manifests.py makes the entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

# NOTE [nameless VCS URLs]
# `pip install git+https://github.com/NVlabs/tiny-cuda-nn.git@<ref>#subdirectory=bindings/torch` names
# no distribution: pip learns it only by building the checkout, which opscan never does. The name is
# inferred from the URL: the `#egg=` fragment when given (pip's older spelling of the name), else
# the repository's own name (the last path part without `.git` and the `@ref`). The entry keeps
# `inferred` (the repository, `github.com/owner/repo`) so the judge can say the name is inferred and
# can also match the repository against the catalog's home pages (NOTE [catalog repositories] in
# scan/dependencies.py). A variable in the ref (`@v${GSPLAT_VERSION}`) does not hide the name; one in
# the repository path does (no entry). The name is never used to claim a version, nor judged by
# published metadata (it is no proven distribution name).
_VCS = ("git+", "hg+", "svn+", "bzr+")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class Inferred:
    name: str          # as written (`#egg=` or the repository's name), not yet canonical
    repository: str    # host/owner/repo, lower case (`github.com/nvlabs/tiny-cuda-nn`)


def is_vcs(token: str) -> bool:
    """Whether a shell or requirements token is a VCS URL (`git+https://...`, quoted or not)."""
    return token.strip().strip("'\"").lower().startswith(_VCS)


def inferred_name(token: str) -> Inferred | None:
    """The name and repository of a VCS URL without a name, or None (NOTE [nameless VCS URLs])."""
    url = token.strip().strip("'\"")
    if not url.lower().startswith(_VCS):
        return None
    base, _, fragment = url.partition("#")
    parts = urlsplit(base.split("+", 1)[1])
    host, path = parts.netloc.rsplit("@", 1)[-1], parts.path
    if not parts.netloc and ":" in path:   # git+git@github.com:owner/repo.git (scp-like)
        host, path = path.split(":", 1)
        host = host.rsplit("@", 1)[-1]
    path = path.split("@", 1)[0].rstrip("/")
    segments = [s for s in path.split("/") if s]
    repo = segments[-1].removesuffix(".git") if segments else ""
    egg = re.search(r"(?:^|&)egg=([A-Za-z0-9][A-Za-z0-9._-]*)", fragment)
    name = egg[1] if egg else repo
    if not name or "$" in path or not _NAME.fullmatch(name):
        return None
    return Inferred(name, "/".join([host] + segments[-2:-1] + [repo]).lower())
