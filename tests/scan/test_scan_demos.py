"""Demo blocks of library modules are reported apart, as warnings naming the block (NOTE [demo blocks])."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from opscan.records import Severity
from opscan.scan import load_rules, scan_memory, scan_paths
from opscan.scan.cache import ResultCache

RULES = load_rules()

VIT = '''\
import torch


class ViT(torch.nn.Module):
    def forward(self, x):
        return x


if __name__ == '__main__':
    model = ViT().cuda()
    x = torch.randn(2, 3).cuda()
    print(model(x).shape)
'''
TRAIN = "import torch\nfrom models.vit import ViT\n\nmodel = ViT().cuda()\n"


def judged(files: dict[str, str]) -> list[tuple[str, int, str]]:
    found = scan_memory({k: textwrap.dedent(v) for k, v in files.items()}, RULES).findings
    return [(f.location.path, f.location.line, f.severity) for f in found]


def test_a_demo_block_of_an_imported_module_is_a_warning_naming_the_block():
    found = scan_memory({"models/__init__.py": "", "models/vit.py": VIT, "train.py": TRAIN}, RULES).findings
    assert [(f.location.path, f.location.line, f.rule, f.severity) for f in found] == [
        ("models/vit.py", 10, "OPS105", Severity.WARNING), ("models/vit.py", 11, "OPS105", Severity.WARNING),
        ("train.py", 4, "OPS105", Severity.ERROR)]
    assert "`__main__` demo block, lines 9-12" in found[0].message


@pytest.mark.parametrize("importer", [
    "from models.vit import ViT\n",
    "from models import vit\n",
    "import models.vit as v\n",
    "from .vit import ViT\n",          # models/other.py, relative
])
def test_every_form_of_import_makes_it_a_library_module(importer):
    where = "models/other.py" if importer.startswith("from .") else "other.py"
    got = judged({"models/__init__.py": "", "models/vit.py": VIT, where: importer})
    assert [s for p, _, s in got if p == "models/vit.py"] == [Severity.WARNING] * 2


@pytest.mark.parametrize("extra", [
    {},                                                                        # nobody imports it
    {"train.py": TRAIN, "README.md": "```sh\npython models/vit.py --demo\n```\n"},   # the README runs it
    {"train.py": TRAIN, "scripts/demo.sh": "torchrun -m models.vit\n"},           # a script runs it
    {"train.py": TRAIN, "pyproject.toml": '[project]\nname = "m"\n[project.scripts]\nvit = "models.vit:main"\n'},
])
def test_a_module_run_as_a_script_or_imported_by_nobody_keeps_its_blockers(extra):
    got = judged({"models/__init__.py": "", "models/vit.py": VIT, **extra})
    assert [s for p, _, s in got if p == "models/vit.py"] == [Severity.ERROR] * 2


def test_a_scan_of_the_library_file_alone_reads_who_imports_it(tmp_path: Path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models/__init__.py").write_text("")
    (tmp_path / "models/vit.py").write_text(VIT)
    (tmp_path / "train.py").write_text(TRAIN)
    alone = scan_paths(tmp_path, [tmp_path / "models/vit.py"], RULES, check_fixes=False).findings
    assert [f.severity for f in alone] == [Severity.WARNING] * 2


def test_the_cached_scan_gives_the_same_answer(tmp_path: Path):
    tree = tmp_path / "tree"
    (tree / "models").mkdir(parents=True)
    (tree / "models/__init__.py").write_text("")
    (tree / "models/vit.py").write_text(VIT)
    (tree / "train.py").write_text(TRAIN)
    runs = []
    for _ in range(2):
        cache = ResultCache(tmp_path / "cache", "salt")
        runs.append(scan_paths(tree, rules=RULES, check_fixes=False, cache=cache).findings)
    assert runs[0] == runs[1]
    assert [f.severity for f in runs[1]] == [Severity.WARNING, Severity.WARNING, Severity.ERROR]
