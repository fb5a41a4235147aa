"""Custom ops of known libraries: which library a traced custom op belongs to, and the build of it
paired with the release's torch (NOTE [library ops]).

NOTE [library ops]
A custom op (`torchvision::nms`, `torchaudio::...`, `xformers::...`) is a kernel some library
registered. When that library is one opscan's tables know -- the torch companion table
(rules/data/torch-companions.yaml: torchvision, torchaudio, torchtext), the table of packages that
constrain torch (rules/data/torch-constraints.yaml) or the catalog of CUDA-only libraries
(opscan/plan/libraries.yaml) -- the op is that library's question, not the model's kernel to port to
NKI: its status is unknown (no Neuron kernel is listed for it), and its task is the library's
(`library:torchvision`): install the build paired with the release's torch (from the companion
table, for each torch minor the release pairs with) and probe its ops; a catalog library's task
keeps the catalog's replacement. Only an op of a namespace no table knows (the project's own
`torch.library` op) stays a kernel task. Ops a library dispatches at import or in a version check
never reach here (NOTE [ops of the step] in opscan/trace/recorder.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from opscan.plan.grouping import KnownLibrary


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def paired_builds(package: str, torch_minors: Iterable[str]) -> tuple[str, str]:
    """("torchvision 0.28 (torch 2.13) or 0.29 (torch 2.14)", the table's source) for the torch minors
    a release pairs with, from the companion table; ("", "") when it has no row for them."""
    from opscan.scan.dependencies import companions

    table = companions()
    pairs = table.pairs.get(_canonical(package), {})
    minors = sorted({".".join(m.split("+")[0].split(".")[:2]) for m in torch_minors})
    builds = [f"{version} (torch {minor})" for minor in minors for version, torch in sorted(pairs.items())
              if torch == minor]
    first, since = table.later.get(_canonical(package), ("", ""))
    if not builds and first and minors and all(_release(m) >= _release(since) for m in minors):
        builds = [f"{first} or later (every torch from {since} on)"]
    if not builds:
        return "", ""
    return f"{package} {' or '.join(builds)}", table.sources.get(_canonical(package), "")


def _release(minor: str) -> tuple[int, ...]:
    return tuple(int(p) for p in minor.split(".") if p.isdigit())


@lru_cache(maxsize=1)
def constrained_packages() -> frozenset[str]:
    """The (canonical) names of the packages in the table of packages that constrain torch
    (rules/data/torch-constraints.yaml), the keys of scan/constraints.py `table().releases`: the
    names are all an assessment asks of that table, and building its ~1,000 releases' versions took
    2/3 of the table's load (issue 40's warm scan)."""
    from packaging.utils import canonicalize_name

    from opscan.resources import rules_dir
    from opscan.strict_yaml import shipped_data

    doc = shipped_data((rules_dir() / "data" / "torch-constraints.yaml").read_text(encoding="utf-8"))
    return frozenset(canonicalize_name(name) for name in (doc.get("packages") or {}))


def known_libraries(ops: Iterable[str], torch_minors: Iterable[str], packages: Iterable[str] = ()
                    ) -> dict[str, KnownLibrary]:
    """op -> its library, for the custom ops whose namespace is a library opscan's tables know; and
    package -> the same, for the `packages` (library findings' subjects: `torch.ops.torchvision.nms`
    in the source) that are such a library."""
    ops, packages = list(ops), list(packages)
    if not ops and not packages:   # nothing to ask: the tables are not read (their load costs ~0.3 s)
        return {}
    from opscan.plan.libraries import shipped
    from opscan.scan.dependencies import companions

    minors = tuple(torch_minors)
    known = set(companions().pairs) | set(companions().ended) | constrained_packages()
    catalog = {_canonical(p) for entry in shipped().libraries for p in entry.packages}
    out = {}
    for op in ops:
        namespace, sep, _ = op.partition("::")
        if not sep or not namespace:
            continue
        if _canonical(namespace) in known | catalog:
            builds, source = paired_builds(namespace, minors)
            out[op] = KnownLibrary(namespace, builds, source)
    for package in packages:
        if _canonical(package) in known:
            builds, source = paired_builds(package, minors)
            out[package] = KnownLibrary(package, builds, source)
    return out
