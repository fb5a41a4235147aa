"""Listings of an absent data folder whose code names the media kind it keeps (NOTE [the media kind a
listing's code names] in opscan/trace/run/listed_kinds.py): os.walk, os.listdir, os.scandir and
pathlib's listings answer synthetic names of that kind, which the image readers' stand-ins then
read; code that names no kind, or names a suffix only to build an output name, lists nothing."""

from __future__ import annotations

import importlib.util
import itertools
import os
import textwrap

import pytest

torch = pytest.importorskip("torch")

from opscan.trace.run.stand_in_hooks import installed  # noqa: E402
from opscan.trace.run.stand_ins import StandIns  # noqa: E402
from opscan.trace.sources import SourceFinder  # noqa: E402

_NUMBER = itertools.count()


@pytest.fixture()
def stand_ins(tmp_path):
    made = StandIns(str(tmp_path), SourceFinder(str(tmp_path)))
    with installed(made):
        yield made


def _project_module(tmp_path, source: str):
    """A module of the project (in tmp_path) under a name no other test uses."""
    name = f"listing_project_{next(_NUMBER)}"
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_os_walk_of_an_absent_folder_lists_the_suffix_its_code_compares_names_with(stand_ins, tmp_path):
    project = _project_module(tmp_path, """\
        import os
        def image_files(folder):
            found = []
            for root, dirs, files in os.walk(folder):
                for file in files:
                    if file.endswith(".png") or file.endswith(".jpg"):
                        found.append(os.path.join(root, file))
            return sorted(found)
        """)
    files = project.image_files("../BSD68/cropped/clean")
    assert len(files) == 64 and files[0] == os.path.join("../BSD68/cropped/clean", "000000.png")
    listed = [r for r in stand_ins.replaced if r.subject == "../BSD68/cropped/clean"]
    assert len(listed) == 1 and ".png" in listed[0].detail and listed[0].line == 4
    assert "listing_project_" in listed[0].detail and ":6" in listed[0].detail   # where the suffix is written
    assert not stand_ins.listed   # not an empty listing


def test_an_extensions_list_of_the_module_names_the_kind_and_an_asserted_isdir_holds(stand_ins, tmp_path):
    """The pix2pix / CycleGAN `make_dataset`: `assert os.path.isdir(dir)`, `os.walk`, `is_image_file`
    over a module-level IMG_EXTENSIONS; then `Image.open(path).convert('RGB')`."""
    project = _project_module(tmp_path, """\
        import os
        from PIL import Image
        IMG_EXTENSIONS = ['.ppm', '.jpg', '.JPG', '.png']
        def is_image_file(filename):
            return any(filename.endswith(extension) for extension in IMG_EXTENSIONS)
        def make_dataset(dir):
            images = []
            assert os.path.isdir(dir), '%s is not a valid directory' % dir
            for root, _, fnames in sorted(os.walk(dir)):
                for fname in fnames:
                    if is_image_file(fname):
                        images.append(os.path.join(root, fname))
            return images
        def load(path):
            return Image.open(path).convert('RGB')
        def checked_elsewhere(dir):
            return os.path.isdir(dir)
        """)
    images = project.make_dataset("./datasets/train/rainy_image/")
    assert len(images) == 64 and images[0].endswith("000000.jpg")   # .ppm: no stand-in reads it
    assert project.load(images[0]).size == (256, 256)
    assert not project.checked_elsewhere("./datasets/train/rainy_image/")   # not an assertion: as it is
    said = [(r.line, r.detail) for r in stand_ins.replaced if r.subject == "./datasets/train/rainy_image/"]
    assert [line for line, _ in said] == [8, 9] and "isdir" in said[0][1] and ".jpg" in said[1][1]


def test_a_gray_read_of_an_absent_image_has_one_channel(stand_ins, tmp_path):
    cv2 = pytest.importorskip("cv2")
    project = _project_module(tmp_path, """\
        import cv2
        def gray(path):
            return cv2.imread(path, 0)
        def color(path):
            return cv2.imread(path, cv2.IMREAD_COLOR)
        """)
    assert project.gray("../absent/000000.png").shape == (256, 256)   # cv2.IMREAD_GRAYSCALE
    assert project.color("../absent/000000.png").shape == (256, 256, 3)
    assert cv2.imread("../absent/000001.png").shape == (256, 256, 3)


def test_listdir_scandir_and_pathlib_listings_answer_the_named_kind(stand_ins, tmp_path):
    project = _project_module(tmp_path, """\
        import os
        import pathlib
        def by_listdir(folder):
            return [f for f in os.listdir(folder) if os.path.splitext(f)[1].lower() in ('.wav', '.flac')]
        def by_scandir(folder):
            with os.scandir(folder) as entries:
                return [e.path for e in entries if e.is_file() and e.name.split('.')[-1] in ['npy']]
        def by_iterdir(folder):
            return [p for p in pathlib.Path(folder).iterdir() if p.suffix == '.jpeg']
        def by_glob(folder):
            return sorted(pathlib.Path(folder).rglob('*.png'))
        """)
    assert project.by_listdir("/data/speech/train")[:2] == ["000000.wav", "000001.wav"]
    assert project.by_scandir("/data/arrays")[0] == os.path.join("/data/arrays", "000000.npy")
    assert project.by_iterdir("/data/photos")[0].name == "000000.jpeg"
    assert len(project.by_glob("/data/masks")) == 64
    assert {r.subject for r in stand_ins.replaced} >= {"/data/speech/train", "/data/arrays", "/data/photos",
                                                        "/data/masks"}


def test_code_that_names_no_kind_lists_nothing_and_a_present_folder_is_read_as_it_is(stand_ins, tmp_path):
    (tmp_path / "present").mkdir()
    (tmp_path / "present" / "a.png").write_bytes(b"")
    project = _project_module(tmp_path, """\
        import os
        import pathlib
        def anything(folder):
            return [os.path.join(r, f) for r, _, fs in os.walk(folder) for f in fs]
        def outputs(folder, out):
            names = [f for f in os.listdir(folder)]
            return [os.path.join(out, name + '.png') for name in names]   # a suffix built in: no kind
        def present(folder):
            return [f for f in os.listdir(folder) if f.endswith('.png')]
        def by_iterdir(folder):
            return list(pathlib.Path(folder).iterdir())
        """)
    assert project.anything("../absent/clean") == []
    with pytest.raises(FileNotFoundError):
        project.outputs("../absent/raw", "out")
    with pytest.raises(FileNotFoundError):
        project.by_iterdir("../absent/raw")
    assert project.present(str(tmp_path / "present")) == ["a.png"]
    assert not stand_ins.replaced
    assert [folder for folder, _, _ in stand_ins.listed] == ["../absent/clean"]   # named if the run stops on it


def test_class_folders_of_an_absent_root_are_listed_and_each_folder_answers_its_kind(stand_ins, tmp_path):
    """NOTE [class folders of an absent dataset]: a root listed for its folders (isdir asked, or listed
    again inside) gives synthetic class folders; their files come from the media-kind rules."""
    project = _project_module(tmp_path, """\
        import glob
        import os
        import pathlib
        def speakers(path):
            firsts = [path + x for x in os.listdir(path) if os.path.isdir(path + x)]
            return {f: sorted(glob.glob(f + '/*.wav')) for f in sorted(firsts)}
        def categories(root):
            files = []
            for category in sorted(os.listdir(root)):
                for name in os.listdir(os.path.join(root, category)):
                    if name.endswith('.png'):
                        files.append((category, name))
            return files
        def by_scandir(root):
            return [e.name for e in os.scandir(root) if e.is_dir()]
        def by_pathlib(root):
            return [p.name for p in pathlib.Path(root).iterdir() if p.is_dir()]
        def names_only(root):
            return os.listdir(root)
        def flat(root):
            return [(c, f) for c in os.listdir(root) for f in os.listdir(os.path.join(root, c)) if f.endswith('.jpg')]
        """)
    found = project.speakers("../vox1/")
    assert len(found) == 4 and all(len(files) == 64 and files[0].endswith(".wav") for files in found.values())
    assert os.path.isdir("../vox1/class_000") and not os.path.isfile("../vox1/class_000")
    pairs = project.categories("../absent/ModelNet")
    assert len(pairs) == 4 * 64 and pairs[0] == ("class_000", "000000.png")
    assert project.by_scandir("../absent/a") == project.by_pathlib("../absent/b") == \
        ["class_000", "class_001", "class_002", "class_003"]
    flat = project.flat("../absent/flat")   # both listings on one line: the class folder's lists its files
    assert len(flat) == 4 * 64 and flat[-1] == ("class_003", "000063.jpg")
    with pytest.raises(FileNotFoundError):   # keeps no folder and names no kind: nothing made up
        project.names_only("../absent/c")
    assert not os.path.isdir("../absent/c/class_000")
    listed = [r for r in stand_ins.replaced if "class folders" in r.detail]
    assert [r.subject for r in listed] == ["../vox1/", "../absent/ModelNet", "../absent/a", "../absent/b",
                                           "../absent/flat"]


def test_a_glob_of_absent_csv_tables_lists_names_the_table_readers_answer(stand_ins, tmp_path):
    """`glob(os.path.join(root, '*.csv'))` of an absent folder (one table per client, per station):
    synthetic names, each read by the table stand-ins (np.loadtxt here; pandas' read_csv too)."""
    project = _project_module(tmp_path, """\
        import glob
        import os
        import numpy as np
        def tables(root):
            paths = glob.glob(os.path.join(root, "*.csv"))
            assert len(paths) >= 2, "fewer tables than clients"
            return [np.loadtxt(p, delimiter=",") for p in sorted(paths)]
        """)
    tables = project.tables("../absent/clients")
    assert len(tables) == 64 and all(t.size > 1 for t in tables)


def test_a_listing_by_a_library_is_never_answered(stand_ins, tmp_path):
    """The stand-ins answer the project's listings only (this test's own file is not the project)."""
    assert list(os.walk("../absent/images")) == []
    with pytest.raises(FileNotFoundError):
        os.listdir("../absent/images")
    assert all(r.subject != "../absent/images" for r in stand_ins.replaced)


@pytest.mark.slow
def test_an_image_folder_listed_by_walk_feeds_the_training_step(tmp_path):
    """A run of a script whose dataset walks an absent folder keeping `.jpg` / `.png` files reaches its
    optimizer step on the synthetic images (PIL gray and RGB)."""
    from opscan.trace.run import run_script

    (tmp_path / "data.py").write_text(textwrap.dedent("""\
        import os
        import random
        import numpy as np
        import torch
        from PIL import Image
        class Images(torch.utils.data.Dataset):
            def __init__(self, folder):
                self.files = sorted(os.path.join(r, f) for r, _, fs in os.walk(folder) for f in fs
                                    if f.endswith(".jpg") or f.endswith(".png"))
            def __len__(self):
                return len(self.files)
            def __getitem__(self, i):
                gray = np.asarray(Image.open(self.files[i]).convert("L"))[:32, :32]
                rgb = np.asarray(Image.open(self.files[i]).convert("RGB"))[:32, :32]
                return torch.from_numpy(gray).float()[None] / 255, torch.from_numpy(rgb).float().permute(2, 0, 1) / 255
        def pick(dataset):
            return dataset[random.randint(0, len(dataset) - 1)]
        """), encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import torch
        from data import Images, pick
        dataset = Images("../BSD68/cropped/clean")
        gray, rgb = pick(dataset)
        model = torch.nn.Conv2d(1, 3, 3, padding=1).to("cuda")
        loss = torch.nn.functional.mse_loss(model(gray[None].to("cuda")), rgb[None].to("cuda"))
        loss.backward()
        torch.optim.SGD(model.parameters(), lr=0.1).step()
        """), encoding="utf-8")
    trace, _ = run_script(str(script), project_root=str(tmp_path), cwd=str(tmp_path), stand_ins=True)
    assert trace.complete and trace.steps == 1, trace.stopped_at
    assert {"aten::convolution", "aten::mse_loss"} <= {u.op for u in trace.ops}
    assert "../BSD68/cropped/clean" in {r.subject for r in trace.replaced}


def test_an_environment_reading_images_gets_the_size_its_observation_space_declares(stand_ins, tmp_path):
    """NOTE [the image size an environment declares] (media_stand_ins.py): an absent image read while an
    environment whose observation_space is an image's runs is that size; any other read keeps 256."""
    project = _project_module(tmp_path, """\
        import numpy as np
        from PIL import Image
        class Box:
            def __init__(self, shape):
                self.shape = shape
        def read(path):
            return np.asarray(Image.open(path).convert("L"))
        class DenoiseEnv:
            def __init__(self):
                self.observation_space = Box((1, 63, 63))
            def reset(self):
                return read("../BSD68/cropped/clean/000000.png")
        class VectorEnv:
            def __init__(self):
                self.observation_space = Box((4,))
            def reset(self):
                return read("../BSD68/cropped/clean/000001.png")
        """)
    assert project.DenoiseEnv().reset().shape == (63, 63)
    assert project.VectorEnv().reset().shape == (256, 256)
    assert project.read("../BSD68/cropped/clean/000002.png").shape == (256, 256)
    said = [r.detail for r in stand_ins.replaced]   # one line read them all: named once, by the first
    assert len(said) == 1 and "63x63" in said[0] and "observation_space" in said[0]
