"""Files a run of the project's training command opens itself (NOTE [files opened by the script] in
opscan/trace/run/file_stand_ins.py), torchvision's datasets from their table (NOTE [torchvision's
datasets]) and a script inside its own package (NOTE [a script inside its package])."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from opscan.trace.run import file_stand_ins  # noqa: E402
from opscan.trace.run.package_root import package_root  # noqa: E402
from opscan.trace.run.stand_in_hooks import installed  # noqa: E402
from opscan.trace.run.stand_ins import Patches, StandIns  # noqa: E402
from opscan.trace.run.torchvision_table import ROWS  # noqa: E402
from opscan.trace.sources import SourceFinder  # noqa: E402

REPOS = Path(__file__).parent / "repos"


@pytest.fixture()
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lm").mkdir()
    script = tmp_path / "lm" / "train.py"
    script.write_text("", encoding="utf-8")
    made = StandIns(str(tmp_path), SourceFinder(str(tmp_path)), str(script))
    with installed(made):
        yield made


def test_an_absent_vocabulary_file_opens_as_a_vocabulary_whose_ids_match_the_token_stand_ins(project):
    with open("data/vocab.json") as handle:
        word2idx = json.load(handle)
    assert len(word2idx) == 64 and word2idx["<unk>"] == 1 and sorted(word2idx.values()) == list(range(64))
    with open("data/word2idx.pkl", "rb") as handle:
        assert pickle.load(handle) == word2idx
    with open("vocab.txt") as handle:
        assert [line.strip() for line in handle][:2] == ["<pad>", "<unk>"]
    assert [r.subject for r in project.replaced] == ["data/vocab.json", "data/word2idx.pkl", "vocab.txt"]


def test_other_absent_files_fail_as_they_would_and_writes_are_untouched(project, tmp_path):
    with pytest.raises(FileNotFoundError):
        open("data/train_captions.csv")
    with pytest.raises(FileNotFoundError):
        open("data/features.pkl", "rb")
    with pytest.raises(FileNotFoundError):   # a tokenizer is not a vocabulary of words
        open("tokenizer.json")
    with open("vocab.json", "w") as handle:   # a vocabulary the script writes is written
        handle.write("{}")
    assert json.loads((tmp_path / "vocab.json").read_text()) == {} and project.replaced == []


def test_an_absent_text_corpus_reads_as_plain_text_and_a_binary_read_still_fails(project):
    """A character-level language model's `open('data/tiny_shakespeare.txt').read()`."""
    with open("data/tiny_shakespeare.txt", encoding="utf-8") as handle:
        text = handle.read()
    assert len(text) == file_stand_ins.TEXT_CHARS and 20 < len(set(text)) < 40 and text.count("\n") > 1000
    assert set(text.split()) <= set(file_stand_ins.TEXT_WORDS)
    with open("data/input.txt") as handle:   # the same text every time: the stand-ins' own generator
        assert handle.read() == text
    with pytest.raises(FileNotFoundError):
        open("data/ml-1m.txt", "rb")
    assert [(r.kind, r.subject) for r in project.replaced] == [("data", "data/tiny_shakespeare.txt"),
                                                              ("data", "data/input.txt")]
    assert "assumed" in project.replaced[0].detail


def test_a_relative_path_only_the_scripts_folder_holds_is_read_from_there(project, tmp_path):
    (tmp_path / "lm" / "data").mkdir()
    (tmp_path / "lm" / "data" / "ind.x").write_text("from the script's folder", encoding="utf-8")
    with open("data/ind.x") as handle:
        assert handle.read() == "from the script's folder"
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "ind.x").write_text("from the working directory", encoding="utf-8")
    with open("data/ind.x") as handle:   # present where the run is: read there, as in a real run
        assert handle.read() == "from the working directory"
    assert [(r.subject, r.detail.split(" (")[0]) for r in project.replaced] == [
        ("data/ind.x", f"read from {os.path.join('lm', 'data', 'ind.x')}")]


def test_an_absent_hdf5_file_answers_each_dataset_with_token_ids(tmp_path):
    class File:   # h5py's class, as far as the stand-in uses it: subclassed, real files opened
        def __init__(self, name, mode="r"):
            self.name = name

    module = types.ModuleType("h5py")
    module.File = File
    made, patches = StandIns(str(tmp_path), SourceFinder(str(tmp_path))), Patches()
    file_stand_ins._h5py(module, made, patches)
    try:
        handle = module.File(str(tmp_path / "processed_train.h5"), "r")
        train = handle["train"][:]
        assert train.dtype == np.int64 and train.ndim == 1 and len(train) > 100_000 and train.max() < 64
        assert handle["train"][10:20].shape == (10,) and len(handle["valid"]) == len(train)
        (tmp_path / "real.h5").write_bytes(b"\x89HDF\r\n\x1a\n")   # not empty: an empty one is a placeholder
        real = module.File(str(tmp_path / "real.h5"), "r")   # present: the real class opens it
        written = module.File(str(tmp_path / "out.h5"), "w")
        assert isinstance(real, File) and isinstance(written, File)
        assert [r.subject for r in made.replaced] == [f"h5py.File({str(tmp_path / 'processed_train.h5')!r})"]
    finally:
        patches.undo()
    assert module.File is File


def test_the_torchvision_table_gives_every_row_a_source_and_a_known_kind():
    for name, row in ROWS.items():
        assert row.source and row.layout in {"mnist", "cifar", "chw", "folder", "sample"}, name
        assert row.target in {"class", "celeba", "captions", "mask"} and row.height > 0 and row.width > 0, name
        assert row.classes > 0 or row.target == "captions", name


def test_a_script_inside_its_package_gets_the_project_root_on_its_import_path(tmp_path):
    shutil.copytree(REPOS / "package_script", tmp_path / "repo")
    root = tmp_path / "repo"
    path, note = package_root(str(root / "graphnet" / "train.py"), str(root))
    assert path == os.path.realpath(root) and "`graphnet`" in note
    (root / "run.py").write_text("from graphnet.model import GraphEncoder\n", encoding="utf-8")
    assert package_root(str(root / "run.py"), str(root)) == ("", "")            # at the root: python finds it
    (root / "graphnet" / "alone.py").write_text("import torch\n", encoding="utf-8")
    assert package_root(str(root / "graphnet" / "alone.py"), str(root)) == ("", "")   # imports no package of its own


@pytest.mark.slow
def test_a_package_script_that_reads_beside_itself_takes_its_step(tmp_path):
    """`python graphnet/train.py` from the root: `from graphnet.model import ...` and
    `open('data/edges.txt')` (under graphnet/) both fail as written; the run imports the package,
    reads the file where the script's folder holds it, takes its step and says both."""
    from opscan.trace.run import run_script

    shutil.copytree(REPOS / "package_script", tmp_path / "repo")
    root = tmp_path / "repo"
    trace, notes = run_script(str(root / "graphnet" / "train.py"), project_root=str(root), cwd=str(root),
                              stand_ins=True, device="cpu")
    assert trace.complete and trace.steps == 1, trace.stopped_at
    assert {"aten::mm", "aten::binary_cross_entropy_with_logits"} <= {u.op for u in trace.ops}
    assert any("import path" in n and "graphnet" in n for n in notes)
    assert [(r.subject, r.path) for r in trace.replaced] == [("data/edges.txt", "graphnet/data_utils.py")]
    plain, _ = run_script(str(root / "graphnet" / "train.py"), project_root=str(root), cwd=str(root), device="cpu")
    assert not plain.complete and "graphnet" in plain.stopped_at   # `opscan run` runs the command as written


@pytest.mark.extras
@pytest.mark.slow
def test_an_absent_celeba_trains_a_step_on_synthetic_faces(tmp_path):
    """A diffusion script's way of reading CelebA (catching the error and returning when it is
    absent): the table's row answers, 3x218x178 images through the script's own transforms."""
    pytest.importorskip("torchvision")
    from opscan.trace.run import run_script

    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import torch
        from torch.utils.data import DataLoader
        from torchvision import datasets, transforms

        def main():
            tf = transforms.Compose([transforms.Resize(32), transforms.CenterCrop(32), transforms.ToTensor()])
            try:
                data = datasets.CelebA(root="data", split="train", download=False, transform=tf)
            except Exception as exc:
                print("no CelebA:", exc)
                return
            image, attrs = data[0]
            assert tuple(image.shape) == (3, 32, 32) and tuple(attrs.shape) == (40,)
            net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.Conv2d(8, 3, 3, padding=1))
            optimizer = torch.optim.Adam(net.parameters(), lr=1e-4)
            for x, _ in DataLoader(data, batch_size=4, shuffle=True):
                loss = torch.nn.functional.mse_loss(net(x), x)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()

        if __name__ == "__main__":
            main()
        """), encoding="utf-8")
    trace, _ = run_script(str(script), project_root=str(tmp_path), cwd=str(tmp_path), stand_ins=True, device="cpu")
    assert trace.complete and trace.steps == 1, trace.stopped_at
    assert [(r.subject, r.path, r.line) for r in trace.replaced] == [("CelebA", "train.py", 8)]
    assert "3x218x178" in trace.replaced[0].detail


@pytest.mark.extras
def test_h5py_itself_opens_an_absent_file_as_token_datasets_and_a_real_file_as_it_is(project, tmp_path):
    h5py = pytest.importorskip("h5py")
    with h5py.File(str(tmp_path / "made.h5"), "w") as out:   # written for real
        out.create_dataset("train", data=np.arange(5))
    assert h5py.File(str(tmp_path / "made.h5"), "r")["train"][:].tolist() == list(range(5))
    assert len(h5py.File("processed_valid.h5", "r")["valid"][:]) > 100_000
    assert [r.subject for r in project.replaced] == ["h5py.File('processed_valid.h5')"]


@pytest.mark.slow
def test_a_run_stopped_by_an_absent_file_no_stand_in_knows_says_so(tmp_path):
    from opscan.trace.run import run_script

    script = tmp_path / "train.py"
    script.write_text("import pickle\nwith open('datasets/graphs.pkl', 'rb') as f:\n    adj, x, y = pickle.load(f)\n",
                      encoding="utf-8")
    trace, _ = run_script(str(script), project_root=str(tmp_path), cwd=str(tmp_path), stand_ins=True, device="cpu")
    assert not trace.complete and "no stand-in for datasets/graphs.pkl" in trace.stopped_at
    plain, _ = run_script(str(script), project_root=str(tmp_path), cwd=str(tmp_path), device="cpu")
    assert "FileNotFoundError" in plain.stopped_at and "no stand-in" not in plain.stopped_at


def test_a_librarys_own_package_data_is_read_as_it_is_never_stood_in(tmp_path, monkeypatch):
    """NOTE [a library's own files]: librosa's pooch `registry.txt` read with open() in the child
    was answered with synthetic text ("Invalid entry in Pooch registry file")."""
    import sysconfig

    from opscan.trace.run import stand_ins as stand_ins_module

    site = tmp_path / "site-packages"
    (site / "audiolib" / "data").mkdir(parents=True)
    (site / "audiolib" / "data" / "registry.txt").write_text("clip.ogg sha256:00ff\n", encoding="utf-8")
    (site / "audiolib" / "vocab.json").write_text('{"a": 0}', encoding="utf-8")
    project_dir = tmp_path / "project"
    project_dir.mkdir()
    monkeypatch.chdir(project_dir)
    monkeypatch.setattr(stand_ins_module, "_LIBRARY_ROOTS",
                        [*stand_ins_module.library_roots(), os.path.realpath(site)])
    assert os.path.realpath(sysconfig.get_paths()["purelib"]) in stand_ins_module.library_roots()
    made = StandIns(str(project_dir), SourceFinder(str(project_dir)), str(project_dir / "train.py"))
    with installed(made):
        with open(site / "audiolib" / "data" / "registry.txt") as handle:
            assert handle.read() == "clip.ogg sha256:00ff\n"
        with open(site / "audiolib" / "vocab.json") as handle:
            assert json.load(handle) == {"a": 0}
        with pytest.raises(FileNotFoundError):   # a library's absent file fails as it would
            open(site / "audiolib" / "data" / "missing.txt")
        with open(tmp_path / "elsewhere" / "corpus.txt") as handle:   # data outside the project: stood in
            assert len(handle.read()) == file_stand_ins.TEXT_CHARS
    assert [r.subject for r in made.replaced] == [str(tmp_path / "elsewhere" / "corpus.txt")]


def test_a_project_module_named_like_a_patched_library_is_imported_untouched(tmp_path, monkeypatch):
    """NOTE [only the real library is patched]: CycleGAN-pytorch's own `datasets.py` met the Hugging
    Face stand-in ("partially initialized module 'datasets' has no attribute 'load_dataset'")."""
    import importlib
    import sys

    import PIL.Image

    from opscan.trace.run.stand_in_hooks import is_library

    own = {"datasets": "class ImageDataset:\n    pass\n",
           "h5py": "def File(name, mode='r'):\n    return ('own', name)\n",
           "wandb": "def init(**kwargs):\n    return 'own run'\n",
           "tiktoken": "def get_encoding(name):\n    return 'own encoding'\n",
           "transformers": "class AutoModel:\n    pass\n"}
    for name, text in own.items():
        (tmp_path / f"{name}.py").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    saved = {name: sys.modules.pop(name) for name in own if name in sys.modules}
    made = StandIns(str(tmp_path), SourceFinder(str(tmp_path)), str(tmp_path / "train.py"))
    real_open = PIL.Image.open
    try:
        with installed(made):
            modules = {name: importlib.import_module(name) for name in own}
            assert PIL.Image.open is not real_open   # the installed library is still patched
        assert PIL.Image.open is real_open
        assert all(os.path.dirname(m.__file__) == str(tmp_path) for m in modules.values())
        assert modules["h5py"].File("x.h5") == ("own", "x.h5") and modules["wandb"].init() == "own run"
        assert modules["tiktoken"].get_encoding("gpt2") == "own encoding"
        assert hasattr(modules["datasets"], "ImageDataset") and made.replaced == []
        assert not is_library(modules["datasets"].__spec__, str(tmp_path))
        assert is_library(PIL.Image.__spec__, str(tmp_path))
    finally:
        for name in own:
            sys.modules.pop(name, None)
        sys.modules.update(saved)


def test_a_module_beside_the_script_importing_the_package_puts_the_root_on_the_import_path(tmp_path):
    """gpackage-gcn-torch: `cd pygcn && python train_gdp.py`, whose `from models_gdp import GCN` has
    `from pygcn.layers import GraphConvolution` (the package installed by setup.py)."""
    root = tmp_path / "repo"
    (root / "pygcn").mkdir(parents=True)
    (root / "pygcn" / "__init__.py").write_text("", encoding="utf-8")
    (root / "pygcn" / "layers.py").write_text("import torch\n", encoding="utf-8")
    (root / "pygcn" / "models_gdp.py").write_text("from pygcn.layers import torch\n", encoding="utf-8")
    (root / "pygcn" / "train_gdp.py").write_text("import os\nfrom models_gdp import torch\n", encoding="utf-8")
    (root / "pygcn" / "other.py").write_text("import os, json\n", encoding="utf-8")
    path, note = package_root(str(root / "pygcn" / "train_gdp.py"), str(root))
    assert path == os.path.realpath(root) and "`pygcn`" in note
    assert package_root(str(root / "pygcn" / "other.py"), str(root)) == ("", "")   # imports neither


def test_a_librarys_own_read_of_an_absent_text_file_is_never_answered(tmp_path, monkeypatch):
    """Held-out 8: transformers read a cache `version.txt` (absent in the child) and got synthetic
    words ("invalid literal for int()"); a synthetic file answers the project's reads only."""
    from opscan.trace.run import stand_ins as stand_ins_module

    site = tmp_path / "site-packages"
    (site / "cachelib").mkdir(parents=True)
    (site / "cachelib" / "__init__.py").write_text(
        "def version(path):\n    with open(path) as handle:\n        return int(handle.read())\n", encoding="utf-8")
    project_dir = tmp_path / "project"
    project_dir.mkdir()
    monkeypatch.chdir(project_dir)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(stand_ins_module, "_LIBRARY_ROOTS", [])   # recomputed with the site-packages on sys.path
    import importlib

    cachelib = importlib.import_module("cachelib")
    assert os.path.realpath(site) in stand_ins_module.library_roots()
    made = StandIns(str(project_dir), SourceFinder(str(project_dir)), str(project_dir / "train.py"))
    with installed(made):
        with pytest.raises(FileNotFoundError):
            cachelib.version(str(tmp_path / "cache" / "version.txt"))
        with open(tmp_path / "elsewhere" / "corpus.txt") as handle:   # the project's own read: stood in
            assert len(handle.read()) == file_stand_ins.TEXT_CHARS
    assert [r.subject for r in made.replaced] == [str(tmp_path / "elsewhere" / "corpus.txt")]
