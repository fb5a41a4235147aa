"""Which project code building a target runs, in one line for the report (stdlib only).

`built_by(target)` says what ran ("built by running README.md block 1"), or "" when building the
target runs no code of the project: a model folder (config.json read by transformers' own
classes), a `.pt2` file (loaded, never run), a timm name. `opscan PATH --no-project-code` keeps
only configured models and the targets for which it is "" (docs/reliability.md).
"""

from __future__ import annotations


def built_by(target: str, trust_remote_code: bool = False) -> str:
    """The line the report shows for a model built by running project code; "" when none ran."""
    kind, _, spec = target.partition(":")
    if kind in ("pt2", "timm") or (kind == "hf" and not trust_remote_code):
        return ""
    if kind == "hf":
        return f"built by running the remote code of {spec} (trust-remote-code)"
    if kind == "script":
        return f"ran the script {spec}"
    if kind == "repo":
        if "::" in spec:
            file, _, test = spec.partition("::")
            return f"built by running the test {file}::{test}"
        where, hash_, block = spec.rpartition("#")
        if hash_ and where:
            return f"built by running {where}'s __main__ block" if block == "main" else \
                f"built by running {where} block {block}"
        file, _, name = spec.rpartition(":")
        return f"built by importing {file} and calling {name}"
    if ":" in spec or kind:   # file.py:NAME or pkg.module:NAME (a configured factory)
        module, _, name = target.rpartition(":")
        return f"built by importing {module} and calling {name}"
    return ""


def runs_project_code(target: str, trust_remote_code: bool = False) -> bool:
    return bool(built_by(target, trust_remote_code))
