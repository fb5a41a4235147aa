"""benchmarks/accuracy/scripts: every case names a pinned repository, a known Python and a data maker; the
fake Cora files read as pytorch/examples' gat reads them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "benchmarks" / "accuracy" / "scripts"


@pytest.fixture(scope="module")
def modules():
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(SCRIPTS))
        import cases
        import fake_data
        yield cases, fake_data


def test_cases_name_pinned_repositories_known_pythons_and_makers(modules) -> None:
    cases, fake_data = modules
    names = [c.name for c in cases.CASES]
    assert len(names) == len(set(names))
    for case in cases.CASES:
        assert len(cases.COMMITS[case.repo]) == 40
        assert case.python in ("main", "vision")
        assert not case.data or case.data in fake_data.MAKERS
    assert {"examples-gat", "examples-regression", "makemore-transformer"} <= \
        {c.name for c in cases.CASES if c.held_out}


def test_fake_cora_reads_as_the_gat_script_reads_it(modules, tmp_path) -> None:
    _cases, fake_data = modules
    fake_data.cora(tmp_path)
    content = np.genfromtxt(tmp_path / "cora" / "cora.content", dtype=np.dtype(str))
    cites = np.genfromtxt(tmp_path / "cora" / "cora.cites", dtype=np.int32)
    features = content[:, 1:-1].astype(np.int32)
    assert content.shape[0] > 1600   # the script's test and validation split take the first 1600
    assert features.sum(axis=1).min() > 0
    assert len(np.unique(content[:, -1])) == 7
    ids = set(content[:, 0].astype(np.int32))
    assert cites.shape[1] == 2 and set(cites.ravel()) <= ids
    again = tmp_path / "again"
    again.mkdir()
    fake_data.cora(again)
    assert (again / "cora" / "cora.content").read_bytes() == (tmp_path / "cora" / "cora.content").read_bytes()
