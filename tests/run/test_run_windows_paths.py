"""A path written with Windows separators is read as the project's own file on POSIX while the
stand-ins run (NOTE [a path written with Windows separators] in opscan/trace/run/windows_paths.py);
a path absent in both forms stays absent data, and nothing changes without the stand-ins."""

from __future__ import annotations

import importlib.util
import os
import textwrap

import pytest

torch = pytest.importorskip("torch")

from opscan.trace.run.stand_in_hooks import installed  # noqa: E402
from opscan.trace.run.stand_ins import StandIns  # noqa: E402
from opscan.trace.sources import SourceFinder  # noqa: E402

LOADER = """\
    import os
    import torch

    def main():
        assert os.path.exists('data\\\\train.pt'), 'data\\\\train.pt does not exist!'
        table = torch.load('data\\\\train.pt')
        with open('data\\\\notes.txt') as handle:
            notes = handle.read()
        return (len(table), table[0].tolist(), notes, os.path.isdir('data'), sorted(os.listdir('data')),
                os.path.isfile('data\\\\missing.bin'))
    """


def _run(root, code: str, stand_ins: bool = True):
    path = root / "loader.py"
    path.write_text(textwrap.dedent(code), encoding="utf-8")
    made = StandIns(str(root), SourceFinder(str(root)), str(path)) if stand_ins else None
    spec = importlib.util.spec_from_file_location(f"loader_{abs(hash(str(root)))}_{stand_ins}", path)
    module = importlib.util.module_from_spec(spec)
    with installed(made):
        spec.loader.exec_module(module)
        result = module.main()
    return result, made.replaced if made else []


@pytest.fixture()
def root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    torch.save(torch.ones(3, 2), tmp_path / "data" / "train.pt")
    (tmp_path / "data" / "notes.txt").write_text("real notes\n", encoding="utf-8")
    return tmp_path


def test_a_windows_path_of_a_project_file_is_read_as_that_file_and_named(root):
    (length, columns, notes, is_dir, listed, missing), replaced = _run(root, LOADER)
    assert (length, columns, notes) == (3, [1.0, 1.0], "real notes\n")   # the real file, not a stand-in
    assert is_dir and listed == ["notes.txt", "train.pt"] and missing is False
    assert sorted((r.kind, r.subject) for r in replaced) == [("data", "data\\notes.txt"), ("data", "data\\train.pt")]
    assert all("data/" in r.detail for r in replaced)


def test_a_file_whose_name_holds_a_backslash_is_read_as_it_is(root):
    torch.save(torch.zeros(1, 2), root / "data\\train.pt")   # a real POSIX name with a backslash
    (length, columns, *_), replaced = _run(root, LOADER)
    assert (length, columns) == (1, [0.0, 0.0])
    assert [r.subject for r in replaced] == ["data\\notes.txt"]


def test_a_windows_path_absent_in_both_forms_stays_absent(root):
    os.remove(root / "data" / "train.pt")
    (exists, isfile), replaced = _run(root, """\
        import os

        def main():
            return os.path.exists('data\\\\train.pt'), os.path.isfile('data\\\\train.pt')
        """)
    assert (exists, isfile, replaced) == (False, False, [])


def test_nothing_is_translated_without_the_stand_ins(root):
    with pytest.raises(AssertionError, match="does not exist"):
        _run(root, LOADER, stand_ins=False)
    assert not os.path.exists("data\\train.pt")   # patches are put back after a run with them
    _run(root, LOADER)
    assert not os.path.exists("data\\train.pt")


CHECKS = """\
    import os, sys
    import torch

    def main():
        assert os.path.exists('data/absent.pt'), 'data/absent.pt does not exist!'
        if not os.path.isfile('data/other.pt'):
            print('missing data/other.pt')
            raise FileNotFoundError('data/other.pt')
        made = False
        if not os.path.exists('out/run1'):
            made = True
        resumed = os.path.isfile('ckpt/last.pt')
        return made, resumed, os.path.exists('data/absent.pt')
    """


def test_an_asserted_existence_of_absent_data_is_answered_and_other_checks_are_not(root):
    # NOTE [an asserted existence of absent data] in opscan/trace/run/existence_checks.py
    (made, resumed, plain), replaced = _run(root, CHECKS)
    assert made is True and resumed is False and plain is False   # a folder to make, no resume, a plain check
    assert sorted(r.subject for r in replaced) == ["data/absent.pt", "data/other.pt"]


def test_an_asserted_existence_fails_as_it_would_without_the_stand_ins(root):
    with pytest.raises(AssertionError, match="does not exist"):
        _run(root, CHECKS, stand_ins=False)
