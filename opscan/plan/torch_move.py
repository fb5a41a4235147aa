"""The task that moves torch: which pins govern the installed package, its size, title and action,
and the install lines that end it (NOTE [torch move])."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from opscan.records import Finding, TaskKind, Category

INSTALL_FACTS = Path(__file__).with_name("neuron-install.yaml")
_NOT_STATED = frozenset({"", "unknown"})   # an install line no page gives (neuron-install.yaml)
_TORCH_SUBJECT = re.compile(r"^torch (?P<pin>\d+\.\d+) to (?P<paired>\d+\.\d+(?:/\d+\.\d+)*)$")

# NOTE [torch move]
# One task moves torch (task kind torch-version: OPS501-OPS504 and the packages that hold torch
# back, OPS509). Its size comes from the pins that GOVERN the installed package: the requirements a
# `pip install` of the project reads (pyproject.toml, setup.py, setup.cfg, requirements files,
# Pipfile, the locks, a conda environment or Dockerfile at the root), outside extras and dependency
# groups (guarded findings) and outside example, documentation, CI, test and benchmark folders and
# files (`requirements-dev.txt`, `docs/requirements.txt`, `examples/*/Dockerfile`). Those other pins
# are listed and edited (their edits are counted), but they do not make the move longer: a project
# whose runtime requirement is `torch>=2.4` and whose test extra pins `torch==2.4.0` needs no
# upgrade, only the edit. When a governing pin keeps torch off the pairing the task is an UPGRADE:
# it comes first in the plan (ordering.UPGRADE_FIRST: every other task is done and tested on the
# torch it brings), names the packages that must move with it (the torch-version findings' other
# subjects) and ends with the install lines of the release (neuron-install.yaml, each with its
# source; a pair whose exact line no page gives is said to be unknown, with its repository).
_NOT_GOVERNING = frozenset({
    "example", "examples", "sample", "samples", "demo", "demos", "doc", "docs", "documentation", "tutorial",
    "tutorials", "notebook", "notebooks", "ci", ".github", ".circleci", ".gitlab", ".buildkite", "test", "tests",
    "testing", "benchmark", "benchmarks", "bench", "dev", "lint", "contrib", "third_party", "3rdparty", "vendor",
})
_ROOT_ONLY = re.compile(r"(^|[-_.])(dockerfile|containerfile|environment|env|conda)([-_.]|$)", re.I)


def governs(finding: Finding) -> bool:
    """Whether a dependency finding sits on a pin that governs the installed package (NOTE [torch move])."""
    if finding.category is not Category.DEPENDENCY or finding.guarded:
        return False
    parts = finding.location.path.split("/")
    words = {w.lower() for part in parts for w in re.split(r"[-_.]", part) if w}
    if words & _NOT_GOVERNING or {p.lower() for p in parts[:-1]} & _NOT_GOVERNING:
        return False
    return len(parts) == 1 or not _ROOT_ONLY.search(parts[-1])


def torch_distance(subject: str) -> tuple[str, str, int] | None:
    """(pinned minor, nearest paired minor, minor versions between) from an OPS501 subject
    (`torch 2.0 to 2.13/2.14`, NOTE [torch pins] in scan/dependencies.py); None for other subjects.
    torch 1.x counts 1.13 -> 2.0 as one step."""
    match = _TORCH_SUBJECT.match(subject)
    if not match:
        return None

    def ordinal(minor: str) -> int:
        major, rest = (int(p) for p in minor.split("."))
        return rest if major >= 2 else rest - 14

    pin = ordinal(match["pin"])
    paired = min(match["paired"].split("/"), key=lambda m: abs(ordinal(m) - pin))
    return match["pin"], paired, abs(ordinal(paired) - pin)


def paired(findings: list[Finding]) -> str:
    """"2.13/2.14" as the findings' subjects name the pairing, or ""."""
    for finding in findings:
        match = _TORCH_SUBJECT.match(finding.subject)
        if match:
            return match["paired"]
    return ""


def upgrade(findings: list[Finding]) -> tuple[str, str, int] | None:
    """The farthest governing torch pin's distance (pin, paired, steps), or None: no upgrade needed."""
    distances = [d for d in (torch_distance(f.subject) for f in findings if governs(f)) if d is not None]
    return max(distances, key=lambda d: d[2]) if distances else None


def title(findings: list[Finding], sites: str) -> str:
    """The task's title, one sentence with no word doubled (tests/plan/test_plan_torch_move.py)."""
    torch = paired(findings)
    if upgrade(findings) is None:
        return f"align torch pins and CUDA builds with the release's torch{f' {torch}' if torch else ''} ({sites})"
    return f"upgrade to torch {torch} and the packages built for it ({sites})" if torch else \
        f"upgrade torch and the packages built for it to the release's pairing ({sites})"


def moving_packages(findings: list[Finding]) -> list[str]:
    """The packages that must move with torch: the other subjects of the task's package findings."""
    names = {f.subject for f in findings if f.subject and f.subject != "index" and not f.subject.startswith("torch ")
             and f.subject != "torch" and f.rule != "OPS504"}
    return sorted(names)


@dataclass(frozen=True)
class InstallFacts:
    """neuron-install.yaml: per paired torch minor, torch-neuronx's version and its install line."""

    pairs: dict[str, tuple[str, str, str]]   # torch minor -> (torch-neuronx version, install line or "", source url)
    repositories: dict[str, str]
    caveats: tuple[tuple[str, str], ...]     # (text, source url)
    sources: dict[str, str]                  # source id -> url


@lru_cache(maxsize=1)
def install_facts() -> InstallFacts:
    """The shipped install facts (read once)."""
    from opscan.strict_yaml import shipped_data

    doc = shipped_data(INSTALL_FACTS.read_text(encoding="utf-8"))
    urls = {s["id"]: s["url"] for s in doc["sources"]}
    pairs = {}
    for pair in doc["pairs"]:
        written = " ".join(str(pair.get("install") or "").split())
        line = "" if written in _NOT_STATED else written
        source = urls[pair.get("install_source", pair["source"])]
        pairs[str(pair["torch"])] = (str(pair["torch_neuronx"]), line, source)
    caveats = tuple((" ".join(str(c["value"]).split()), urls[c["source"]]) for c in doc.get("caveats", ()))
    return InstallFacts(pairs, {str(k): str(v) for k, v in doc["repositories"].items()}, caveats, urls)


def install_text(minors: list[str]) -> tuple[str, tuple[str, ...]]:
    """The install lines that end an upgrade, for the paired torch minors, and their sources."""
    facts = install_facts()
    parts, sources = [], []
    for minor in minors:
        known = facts.pairs.get(minor)
        if known is None:
            parts.append(f"torch {minor}: no install facts shipped for it (unknown)")
            continue
        version, line, source = known
        sources.append(source)
        if line:
            parts.append(f"torch {minor} with torch-neuronx {version}: `{line}`")
        else:
            parts.append(f"torch {minor} with torch-neuronx {version} from the Neuron repository "
                         f"({facts.repositories.get('neuron', '?')}) and torch from PyTorch's CPU index "
                         f"({facts.repositories.get('torch_cpu', '?')}): the exact install line is unknown")
    for text, source in facts.caveats:
        parts.append(f"note: {text}")
        sources.append(source)
    return "; ".join(parts), tuple(dict.fromkeys(sources))


def action(base: str, findings: list[Finding]) -> tuple[str, tuple[str, ...]]:
    """The task's action: what moves with torch, then (for an upgrade) the install lines, and their sources."""
    text = base
    moving = moving_packages(findings)
    if moving:
        text += f"; move with it: {', '.join(moving)} (each finding names the first release that fits)"
    if upgrade(findings) is None:
        return text, ()
    minors = paired(findings).split("/") if paired(findings) else []
    lines, sources = install_text(minors)
    return f"{text}; then install the release: {lines}", sources


KIND = TaskKind.TORCH_VERSION
