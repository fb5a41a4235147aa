"""Which project code building a target runs, in one line for the report (stdlib and records only).

`built_by(target)` says what ran ("built by running README.md block 1"), or "" when building the
target runs no code of the project: a model folder (config.json read by transformers' own
classes), a `.pt2` file (loaded, never run), a timm name. `opscan PATH --no-project-code` keeps
only configured models and the targets for which it is "" (docs/reliability.md).
"""

from __future__ import annotations

from opscan.records import Target, TargetKind


def built_by(target: str, trust_remote_code: bool = False) -> str:
    """The line the report shows for a model built by running project code; "" when none ran."""
    parsed = Target.of(target)
    if parsed is None:
        return ""
    kind, spec = parsed.kind, parsed.spec
    if kind in (TargetKind.EXPORT, TargetKind.TIMM) or (kind is TargetKind.HF and not trust_remote_code):
        return ""
    if kind is TargetKind.HF:
        return f"built by running the remote code of {spec} (trust-remote-code)"
    if kind is TargetKind.SCRIPT:
        return f"ran the script {spec}"
    if kind is TargetKind.REPO:
        if "::" in spec:
            file, _, test = spec.partition("::")
            return f"built by running the test {file}::{test}"
        where, hash_, block = spec.rpartition("#")
        if hash_ and where:
            return f"built by running {where}'s __main__ block" if block == "main" else \
                f"built by running {where} block {block}"
        file, _, name = spec.rpartition(":")
        return f"built by importing {file} and calling {name}"
    return f"built by importing {parsed.where} and calling {parsed.name}"   # file.py:NAME or pkg.module:NAME


def runs_project_code(target: str, trust_remote_code: bool = False) -> bool:
    return bool(built_by(target, trust_remote_code))
