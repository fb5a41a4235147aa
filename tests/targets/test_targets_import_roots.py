"""Repository files imported as their training script imports them (NOTE [namespace packages and own
folders] in opscan/targets/import_roots.py): a folder of modules with no `__init__.py` and relative
imports between them; a file whose own folder holds a module folder named like a root package."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from opscan.errors import MissingModulesError
from opscan.targets.repository import load


@pytest.fixture()
def clean(monkeypatch):
    """sys.path and the modules a test imports put back after it."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def test_a_module_of_a_folder_without_init_imports_its_siblings_relatively(tmp_path, clean):
    root = _write(tmp_path, {
        "lmsrc42/models/transformer.py": "from .block import Block\nclass SmallLM:\n    block = Block\n",
        "lmsrc42/models/block.py": "class Block:\n    pass\n",
        "train.py": "from lmsrc42.models.transformer import SmallLM\n"})
    module = load(root / "lmsrc42" / "models" / "transformer.py", root)
    assert module.SmallLM.block.__name__ == "Block"


def test_a_files_own_module_folder_comes_before_a_root_package_of_that_name(tmp_path, clean, monkeypatch):
    root = _write(tmp_path, {
        "optim42/__init__.py": "from .sam import SAM\n",
        "optim42/sam.py": "class SAM:\n    pass\n",
        "language/modeling/optim42/sophia.py": "class SophiaG:\n    pass\n",
        "language/modeling/model.py": "from optim42.sophia import SophiaG\nclass GPT:\n    opt = SophiaG\n",
        "image/train.py": "from optim42 import SAM\n"})
    import importlib

    monkeypatch.syspath_prepend(str(root))
    assert importlib.import_module("optim42").SAM   # the root package, imported first by another file
    module = load(root / "language" / "modeling" / "model.py", root)
    assert module.GPT.opt.__name__ == "SophiaG"
    assert importlib.import_module("optim42.sam").SAM.__name__ == "SAM"   # the root's modules still found


def test_a_module_importing_a_package_of_the_folder_its_readme_runs_from_imports(tmp_path, clean):
    """`cd generative && python network.py`: generative/src42q/models/seq2seq.py imports `src42q.modules`,
    a top-level package only generative/ holds (NOTE [the folder the README runs from])."""
    root = _write(tmp_path, {
        "generative/README.md": "cd generative && python network.py\n",
        "generative/src42q/models/seq2seq.py": "from src42q.modules.embedder import Embedder\n"
                                             "class Seq2Seq:\n    embedder = Embedder\n",
        "generative/src42q/modules/embedder.py": "WHERE = 'generative'\nclass Embedder:\n    pass\n",
        "retrieval/src42q/modules/embedder.py": "WHERE = 'retrieval'\nclass Embedder:\n    pass\n",
        "generative/network.py": "from src42q.models.seq2seq import Seq2Seq\n"})
    module = load(root / "generative" / "src42q" / "models" / "seq2seq.py", root)
    assert module.Seq2Seq.embedder.__name__ == "Embedder"
    assert sys.modules["src42q.modules.embedder"].WHERE == "generative"   # the nearest folder, not another's
    assert str(root / "retrieval") not in sys.path


def test_a_module_importing_what_no_folder_of_the_project_holds_still_fails_as_missing(tmp_path, clean):
    root = _write(tmp_path, {
        "generative/src43q/models/seq2seq.py": "from absent43q.modules import Embedder\n",
        "generative/src43q/__init__.py": ""})
    with pytest.raises(MissingModulesError, match="absent43q"):
        load(root / "generative" / "src43q" / "models" / "seq2seq.py", root)
    assert str(root / "generative") not in sys.path
