"""Names a library removed since the project was written (NumPy's aliases, `torch._six`,
matplotlib's `cm.get_cmap`) are answered while the stand-ins run, each named with the project's line
that asked and what to write instead (NOTE [removed library names] in opscan/trace/run/removed_apis.py);
a name the library still has answers as itself, an unknown name still fails, a library's own use is
not answered, and nothing is answered without the stand-ins (`opscan run`)."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from opscan.trace.run.stand_in_hooks import installed  # noqa: E402
from opscan.trace.run.stand_ins import StandIns  # noqa: E402
from opscan.trace.sources import SourceFinder  # noqa: E402

OLD_NUMPY = not hasattr(np, "__getattr__") or hasattr(np, "Inf")
needs_numpy_2 = pytest.mark.skipif(OLD_NUMPY, reason="the installed NumPy still has the removed names")

OLD_CODE = """\
    import numpy as np

    def main():
        best = np.Inf
        mask = np.zeros(3, dtype=np.bool)   # NumPy 2 has np.bool again: answered as itself
        flags = np.array([1, 0], dtype=np.bool8)
        total = np.product([2, 3])
        halves = np.asfarray([1, 2]) / 2
        return best, mask.dtype, flags.dtype, total, halves.tolist(), np.float(2)
    """


def _run(root: Path, code: str, stand_ins: bool = True):
    path = root / "old.py"
    path.write_text(textwrap.dedent(code), encoding="utf-8")
    made = StandIns(str(root), SourceFinder(str(root)), str(path)) if stand_ins else None
    spec = importlib.util.spec_from_file_location(f"old_{abs(hash(str(root)))}_{stand_ins}", path)
    module = importlib.util.module_from_spec(spec)
    with installed(made):
        spec.loader.exec_module(module)
        result = module.main()
    return result, made.replaced if made else []


@needs_numpy_2
def test_removed_numpy_names_answer_what_they_meant_and_are_named_at_their_lines(tmp_path):
    (best, mask, flags, total, halves, two), replaced = _run(tmp_path, OLD_CODE)
    assert best == math.inf and mask == np.dtype(bool) and flags == np.dtype(bool)
    assert (total, halves, two) == (6, [0.5, 1.0], 2.0)
    assert [(r.kind, r.subject, r.line) for r in replaced] == [
        ("removed API", "np.Inf", 4), ("removed API", "np.bool8", 6),
        ("removed API", "np.product", 7), ("removed API", "np.asfarray", 8), ("removed API", "np.float", 9)]
    assert "write np.inf" in replaced[0].detail and "NumPy 2.0" in replaced[0].detail
    assert "write float" in replaced[-1].detail and "NumPy 1.24" in replaced[-1].detail


@needs_numpy_2
def test_an_unknown_numpy_name_still_fails_and_a_present_one_is_not_named(tmp_path):
    with pytest.raises(AttributeError):
        _run(tmp_path, """\
            import numpy as np

            def main():
                return np.not_a_numpy_name
            """)
    (value,), replaced = _run(tmp_path, """\
        import numpy as np

        def main():
            return (np.inf,)
        """)
    assert value == math.inf and replaced == []


@needs_numpy_2
def test_nothing_is_answered_without_the_stand_ins_and_the_patch_is_undone(tmp_path):
    with pytest.raises(AttributeError):
        _run(tmp_path, OLD_CODE, stand_ins=False)
    _run(tmp_path, OLD_CODE)
    assert not hasattr(np, "Inf")   # put back after the run


@needs_numpy_2
def test_a_librarys_own_use_of_a_removed_name_is_not_answered(tmp_path, monkeypatch):
    library = tmp_path / "site" / "oldlib.py"
    library.parent.mkdir()
    library.write_text("import numpy as np\n\ndef best():\n    return np.Inf\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(library.parent))
    monkeypatch.setattr("opscan.trace.run.stand_ins.library_roots", lambda: (str(library.parent),))
    project = tmp_path / "project"
    project.mkdir()
    with pytest.raises(AttributeError):
        _run(project, """\
            import oldlib

            def main():
                return oldlib.best()
            """)
    sys.modules.pop("oldlib", None)


def test_torch_six_is_found_when_torch_has_none_and_its_names_are_named(tmp_path):
    if importlib.util.find_spec("torch._six") is not None:
        pytest.skip("the installed torch still has torch._six")
    (classes, inf, abcs), replaced = _run(tmp_path, """\
        from torch._six import string_classes, inf
        import torch._six

        def main():
            return string_classes, inf, torch._six.container_abcs
        """)
    import collections.abc

    assert str in classes and inf == math.inf and abcs is collections.abc
    assert sorted(r.subject for r in replaced) == ["torch._six.container_abcs", "torch._six.inf",
                                                   "torch._six.string_classes"]
    assert "torch._six" not in sys.modules   # put back after the run
    with pytest.raises(ImportError):
        _run(tmp_path, "import torch._six\n\ndef main():\n    return 1\n", stand_ins=False)


def test_matplotlib_get_cmap_answers_where_matplotlib_removed_it(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    import matplotlib.cm as cm

    removed = "get_cmap" not in vars(cm)
    (name, size), replaced = _run(tmp_path, """\
        import matplotlib.cm as cm

        def main():
            cmap = cm.get_cmap('viridis', 8)
            return cmap.name, cmap.N
        """)
    assert (name, size) == ("viridis", 8)
    assert [r.subject for r in replaced] == (["matplotlib.cm.get_cmap"] if removed else [])
    assert ("get_cmap" in vars(cm)) is not removed
    del matplotlib


TRAIN = '''import numpy as np
import torch
from torch import nn


class EarlyStopping:
    def __init__(self):
        self.best = np.Inf


device = 'cuda' if torch.cuda.is_available() else 'cpu'
model = nn.Linear(8, 2).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
stopper = EarlyStopping()
labels = torch.from_numpy(np.zeros(4, dtype=np.int)).long().to(device)
for step in range(2):
    loss = nn.functional.cross_entropy(model(torch.randn(4, 8, device=device)), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
'''


@pytest.mark.slow
@needs_numpy_2
def test_opscan_path_runs_a_script_with_removed_numpy_names_to_its_step_and_names_them(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("# toy\n\n```\npython train.py\n```\n", encoding="utf-8")
    (repo / "train.py").write_text(TRAIN, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "opscan", str(repo), "--format", "json", "--exit-zero"],
                          capture_output=True, text=True, timeout=900, cwd=repo)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    (trace,) = [t for t in report["traces"] if t["target"] == "script:train.py"]
    assert trace["complete"] and trace["mode"] == "train"
    assert [(r["kind"], r["subject"], r["line"]) for r in trace["replaced"]] == [
        ("removed API", "np.Inf", 8), ("removed API", "np.int", 15)]
    assert report["verdict"]["step"]["kind"] == "project"
    assert any("aten::nll_loss_forward" in op["op"] for op in report["ops"])


@pytest.mark.extras   # pandas comes with CI's second environment (datasets)
def test_pandas_removed_methods_answer_what_their_release_notes_name(tmp_path):
    pd = pytest.importorskip("pandas")
    removed = [name for name, gone in (("append", not hasattr(pd.DataFrame, "append")),
                                       ("iteritems", not hasattr(pd.Series, "iteritems"))) if gone]
    if not removed:
        pytest.skip("the installed pandas still has append and iteritems")
    (rows, pairs, filled), replaced = _run(tmp_path, """\
        import pandas as pd

        def main():
            frame = pd.DataFrame({'a': [1, 2]})
            frame = frame.append({'a': 3}, ignore_index=True)
            pairs = list(pd.Series([5, 6]).iteritems())
            try:
                filled = pd.Series([None, 2.0, None]).fillna(method='bfill').tolist()
            except TypeError:   # a pandas 2.x still takes `method`: answered as itself
                filled = None
            return frame['a'].tolist(), pairs, filled
        """)
    assert rows == [1, 2, 3] and pairs == [(0, 5), (1, 6)]
    subjects = [(r.subject, r.line) for r in replaced]
    assert ("DataFrame.append", 5) in subjects and ("Series.iteritems", 6) in subjects
    if "fillna" in " ".join(s for s, _ in subjects):
        assert filled[:2] == [2.0, 2.0] and ("Series.fillna(method='bfill')", 8) in subjects
    assert not hasattr(pd.DataFrame, "append")   # put back after the run
