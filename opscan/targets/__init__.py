"""Model targets: how to build a model and its example inputs from a target string, for the engine.

`file.py:NAME` / `package.module:NAME` (python factories and classes), `hf:PATH` (transformers,
opscan/targets/hf/), `timm:NAME`, and `pt2:FILE` (exported programs, loaded without running).
Below it sits the engine (opscan/trace/: targets import trace, never the reverse); above it the
zoo's orchestration (opscan/zoo/), which targets never import (tests/test_architecture.py).

Importing this package imports nothing heavy: folders.py (the one config.json reader and
classifier, used by opscan/targets/discovery.py) is stdlib only; torch comes with the first trace.

Public API:

    trace_target(target, *, mode="train", device="neuron", profile=None, optimizer="adamw",
                 optimizer_impl=None, amp=None, inputs=(), batch=None, seq_len=None,
                 project_root=None, fsdp=None, trust_remote_code=False, gpu_only=()) -> opscan.records.ModelTrace
        # loader.py; the signature is pinned by tests/targets/test_targets_api.py
    read_config(path) -> FolderConfig                       # folders.py: kind "hf-folder" | "timm-folder" | ""
Module map: folders (config.json) ; loader (target string -> spec.Built -> opscan.trace.tracer)
-> empty (empty weights), hf/ (builder, inputs, layouts, architectures, shapes; repair,
upstream, defaults for the zoo's default configs) ; export (pt2: loading). A repository with no
configuration: discovery -> recipes, registries, hubconf, repo_tests, train_scripts (the training
scripts: what they build, factories picked by name, the step plans) and train_step (the step a
script constructs), all read statically in the parent; repository -> construct, config_files (configs
from the repository's config files), shrinking (retry unshrunk), in the contained child.
"""

from __future__ import annotations

from opscan.targets.folders import FolderConfig, read_config


def trace_target(target: str, **options):
    """Build and trace `target` (imports torch); see opscan.targets.loader.trace_target."""
    from opscan.targets.loader import trace_target as run

    return run(target, **options)


__all__ = ["FolderConfig", "read_config", "trace_target"]
