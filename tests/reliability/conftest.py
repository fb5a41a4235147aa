"""The hostile-input corpus, generated at test time: every odd file a real repository may hold.

`corpus` is a tree where each bad file sits next to `good_*.py` files whose findings are known,
so a test can check both that the bad file gets a clear, located diagnostic and that the rest of
the run still yields exactly its findings. Nothing large is committed: the 10 MB file is written here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.corpus import CORPUS, GOOD, write_tree


@pytest.fixture(scope="session", autouse=True)
def _private_scan_cache(tmp_path_factory):
    """Scans in these tests cache into a folder of their own, never the user's ~/.cache/opscan.
    Tests that change the scanner's behaviour (monkeypatches) also pass --no-cache."""
    old = os.environ.get("OPSCAN_CACHE_DIR")
    os.environ["OPSCAN_CACHE_DIR"] = str(tmp_path_factory.mktemp("opscan-cache"))
    yield
    if old is None:
        os.environ.pop("OPSCAN_CACHE_DIR", None)
    else:
        os.environ["OPSCAN_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> Path:
    """The whole hostile corpus plus the good files (without the 10 MB file)."""
    root = tmp_path_factory.mktemp("corpus")
    write_tree(root, {rel: data for rel, (data, _) in CORPUS.items()})
    write_tree(root, GOOD)
    return root


@pytest.fixture(scope="session")
def scan_json():
    """Run `opscan scan ROOT --format json ...` in-process; returns (exit code, document, stderr)."""
    import contextlib
    import io

    from opscan.cli import main

    def run(root: Path, *extra: str) -> tuple[int, dict, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["scan", str(root), "--format", "json", "--no-fix-check", *extra])
        text = out.getvalue()
        doc = json.loads(text) if text.strip() else {}
        return code, doc, err.getvalue()

    return run
