"""A lock file's finding that its manifest already reports is reported once (NOTE [manifests in the
scan] in file_scan.py)."""

from __future__ import annotations

from dataclasses import replace

from opscan.scan.results import FileResult


# The lock files and the manifests whose versions they resolve (NOTE [manifests in the scan]).
_LOCKS = {"uv.lock": ("pyproject.toml",), "poetry.lock": ("pyproject.toml",), "pdm.lock": ("pyproject.toml",),
          "Pipfile.lock": ("Pipfile",)}


def dedupe_locks(results: list[FileResult]) -> list[FileResult]:
    """A lock's finding on a package its manifest (same folder) already reports, under the same
    rule, is dropped: the manifest's line is the one to change, the lock follows (reported once)."""
    by_path = {r.path: r for r in results}
    out = []
    for result in results:
        folder, _, base = result.path.rpartition("/")
        owners = [by_path.get(f"{folder}/{m}" if folder else m) for m in _LOCKS.get(base, ())]
        reported = {(f.rule, f.subject.split(" ")[0]) for owner in owners if owner is not None for f in owner.findings}
        # the manifest's CUDA index (OPS504 on "index") is the cause of every CUDA build its lock resolves
        indexed = {f.rule for owner in owners if owner is not None for f in owner.findings if f.subject == "index"}
        if reported and result.findings:
            kept = [(f, r) for f, r in zip(result.findings, result.requires or [()] * len(result.findings))
                    if (f.rule, f.subject.split(" ")[0]) not in reported and f.rule not in indexed]
            if len(kept) != len(result.findings):
                result = replace(result, findings=tuple(f for f, _ in kept), requires=tuple(r for _, r in kept))
        out.append(result)
    return out
