"""The data and weight stand-ins of a run of the project's training command (NOTE [stand-ins for data
and weights] in opscan/trace/run/stand_ins.py): each reader answers absent, outside or remote data with
samples of the right type and shape, weights with the model's own initialisation, and is named;
what is inside the project is read as it is."""

from __future__ import annotations

import json
import os
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from opscan.trace.run.stand_in_hooks import installed  # noqa: E402
from opscan.trace.run.stand_ins import StandIns  # noqa: E402
from opscan.trace.sources import SourceFinder  # noqa: E402


@pytest.fixture()
def stand_ins(tmp_path):
    made = StandIns(str(tmp_path), SourceFinder(str(tmp_path)))
    with installed(made):
        yield made


def _subjects(stand_ins) -> list[tuple[str, str]]:
    return [(r.kind, r.subject) for r in stand_ins.replaced]


def test_an_absent_token_file_reads_as_synthetic_tokens_of_its_dtype(stand_ins, tmp_path):
    data = np.memmap(tmp_path / "data" / "train.bin", dtype=np.uint16, mode="r")
    assert data.dtype == np.uint16 and data.ndim == 1 and len(data) > 100_000 and data.max() < 64
    tokens = np.fromfile(str(tmp_path / "val.bin"), dtype=np.int32)
    assert tokens.dtype == np.int32 and len(tokens) > 0
    shaped = np.memmap(tmp_path / "x.bin", dtype=np.float32, mode="r", shape=(4, 8))
    assert shaped.shape == (4, 8)
    assert [s for _, s in _subjects(stand_ins)] == [str(tmp_path / "data" / "train.bin"), str(tmp_path / "val.bin"),
                                                    str(tmp_path / "x.bin")]
    assert all(r.kind == "data" and "synthetic" in r.detail for r in stand_ins.replaced)


def test_a_token_file_inside_the_project_is_read_as_it_is(stand_ins, tmp_path):
    path = tmp_path / "train.bin"
    np.arange(10, dtype=np.uint16).tofile(path)
    assert np.memmap(path, dtype=np.uint16, mode="r").tolist() == list(range(10))
    assert np.fromfile(path, dtype=np.uint16).tolist() == list(range(10))
    assert stand_ins.replaced == []


def test_a_file_outside_the_project_is_not_read(tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside") / "train.bin"
    np.arange(10, dtype=np.uint16).tofile(outside)
    project = tmp_path_factory.mktemp("project")
    made = StandIns(str(project), SourceFinder(str(project)))
    with installed(made):
        data = np.memmap(outside, dtype=np.uint16, mode="r")
    assert len(data) != 10 and made.replaced[0].subject == str(outside)


def test_weights_that_are_absent_or_remote_leave_the_model_its_own_initialisation(stand_ins, tmp_path):
    model = torch.nn.Linear(4, 4)
    before = model.weight.detach().clone()
    checkpoint = torch.load(tmp_path / "pretrained" / "backbone.pth")
    model.load_state_dict(checkpoint["model"])                        # keys of absent weights are absent too
    model.load_state_dict(torch.hub.load_state_dict_from_url("https://example.invalid/r.pth"))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer.load_state_dict(checkpoint["optimizer"])
    assert torch.equal(model.weight, before)
    assert _subjects(stand_ins) == [("pretrained", f"torch.load({str(tmp_path / 'pretrained' / 'backbone.pth')!r})"),
                                    ("pretrained", "load_state_dict_from_url")]
    with pytest.raises(RuntimeError):   # real weights that do not fit still fail as they would
        model.load_state_dict({"weight": torch.zeros(2, 2)})


def test_a_checkpoint_inside_the_project_is_read(stand_ins, tmp_path):
    torch.save({"weight": torch.ones(2, 2)}, tmp_path / "ckpt.pt")
    assert torch.equal(torch.load(tmp_path / "ckpt.pt")["weight"], torch.ones(2, 2))
    assert stand_ins.replaced == []


def test_an_absent_image_or_clip_a_manifest_names_is_synthetic(stand_ins, tmp_path):
    from PIL import Image

    (tmp_path / "manifest.json").write_text(json.dumps([{"image": "images/0001.jpg"}]), encoding="utf-8")
    name = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))[0]["image"]
    image = Image.open(os.path.join(tmp_path, name))
    assert image.size == (256, 256) and image.mode == "RGB"
    real = tmp_path / "real.png"
    Image.new("L", (3, 5)).save(real)
    assert Image.open(real).size == (3, 5)
    assert _subjects(stand_ins) == [("data", "PIL.Image.open")]


def test_from_pretrained_builds_a_model_from_its_config_when_the_weights_are_absent(stand_ins, tmp_path):
    transformers = pytest.importorskip("transformers")
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_layer": 1, "n_head": 2, "n_embd": 8,
                                                    "vocab_size": 32, "n_positions": 16}), encoding="utf-8")
    model = transformers.AutoModelForCausalLM.from_pretrained(str(folder))
    assert type(model).__name__ == "GPT2LMHeadModel" and model.config.n_embd == 8
    direct = transformers.GPT2LMHeadModel.from_pretrained(str(folder))
    assert direct.config.n_layer == 1
    assert [s for _, s in _subjects(stand_ins)][0].startswith("AutoModelForCausalLM.from_pretrained(")
    with pytest.raises(OSError, match="architecture is not known"):
        transformers.AutoModel.from_pretrained("nobody/not-a-model-here")


@pytest.mark.slow   # builds GPT-2's default size (124M parameters) for real
def test_from_pretrained_of_a_hub_name_builds_a_concrete_class_from_its_config_defaults(stand_ins):
    transformers = pytest.importorskip("transformers")
    model = transformers.GPT2LMHeadModel.from_pretrained("nobody/gpt2-not-here")
    assert type(model).__name__ == "GPT2LMHeadModel"
    assert model.config.n_layer == transformers.GPT2Config().n_layer
    detail = stand_ins.replaced[-1].detail
    assert "GPT2Config's defaults" in detail and "assumed" in detail
    with pytest.raises(OSError, match="architecture is not known"):   # an Auto class: the name says it, or nothing
        transformers.AutoModelForCausalLM.from_pretrained("nobody/not-a-model-here")


def test_the_stand_ins_are_put_back_after_the_run(tmp_path):
    before = (np.memmap, np.load, torch.load, torch.nn.Module.load_state_dict)
    with installed(StandIns(str(tmp_path), SourceFinder(str(tmp_path)))):
        assert np.memmap is not before[0] and torch.load is not before[2]
    assert (np.memmap, np.load, torch.load, torch.nn.Module.load_state_dict) == before


@pytest.mark.extras
def test_torchvision_datasets_absent_or_downloading_are_synthetic(stand_ins, tmp_path):
    datasets = pytest.importorskip("torchvision.datasets")
    from torchvision import transforms

    cifar = datasets.CIFAR10(root=str(tmp_path / "data"), train=True, download=True, transform=transforms.ToTensor())
    image, label = cifar[0]
    assert tuple(image.shape) == (3, 32, 32) and image.dtype == torch.float32 and 0 <= label < 10
    mnist = datasets.MNIST(root="/datasets/mnist", download=False)   # outside the project: not read
    assert mnist[0][0].size == (28, 28) and len(mnist) == 1024
    folder = datasets.ImageFolder(str(tmp_path / "imagenet" / "train"), transform=transforms.RandomResizedCrop(64))
    assert tuple(folder[3][0].size) == (64, 64) and len(folder.classes) == 10
    folder = f"ImageFolder {tmp_path / 'imagenet' / 'train'}"
    assert [s for _, s in _subjects(stand_ins)] == ["CIFAR10", "MNIST", folder]
    assert "3x32x32 uint8 images, 10 classes" in stand_ins.replaced[0].detail


@pytest.mark.extras
def test_an_absent_folder_given_its_own_loader_is_read_by_that_loader(stand_ins, tmp_path):
    datasets = pytest.importorskip("torchvision.datasets")
    read = []

    def features(path):   # the script's loader: filter banks of an audio file, as arrays
        read.append(path)
        return torch.zeros(1, 64, 64)

    folder = datasets.DatasetFolder(root=str(tmp_path / "LibriSpeech"), loader=features, extensions=(".flac", ".wav"))
    sample, label = folder[2]
    assert tuple(sample.shape) == (1, 64, 64) and 0 <= label < len(folder.classes)
    assert read and read[0].endswith(".flac") and read[0].startswith(str(tmp_path / "LibriSpeech"))
    assert "own loader" in stand_ins.replaced[0].detail


@pytest.mark.extras
def test_load_dataset_of_the_hub_is_synthetic_with_the_datasets_columns(stand_ins):
    datasets = pytest.importorskip("datasets")
    glue = datasets.load_dataset("glue", "sst2")
    assert set(glue) == {"train", "validation", "test"} and glue["train"].column_names == ["sentence", "label", "idx"]
    text = datasets.load_dataset("wikitext", "wikitext-2-raw-v1", split="train")
    assert text.column_names == ["text"] and len(text) > 0
    assert [s for _, s in _subjects(stand_ins)] == ["load_dataset('glue', 'sst2')",
                                                    "load_dataset('wikitext', 'wikitext-2-raw-v1')"]


@pytest.mark.slow
def test_a_training_script_whose_tokens_and_weights_are_absent_runs_its_step(tmp_path):
    """nanoGPT's way of reading tokens (np.memmap of data/train.bin) and a pretrained checkpoint
    loaded before training: neither is here; the run reaches its optimizer step and names both."""
    from opscan.trace.run import run_script

    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import os
        import numpy as np
        import torch
        import torch.nn.functional as F
        block, batch, vocab = 16, 4, 65
        data = np.memmap(os.path.join("data", "shakespeare", "train.bin"), dtype=np.uint16, mode="r")
        model = torch.nn.Sequential(torch.nn.Embedding(vocab, 32), torch.nn.Linear(32, vocab))
        model.load_state_dict(torch.load("pretrained/init.pt", map_location="cpu"))
        model = model.to("cuda")
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        for it in range(100):
            ix = torch.randint(len(data) - block, (batch,))
            x = torch.stack([torch.from_numpy(data[i:i + block].astype(np.int64)) for i in ix]).to("cuda")
            logits = model(x)
            loss = F.cross_entropy(logits.view(-1, vocab), x.view(-1))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        """), encoding="utf-8")
    trace, notes = run_script(str(script), project_root=str(tmp_path), cwd=str(tmp_path), stand_ins=True)
    assert trace.complete and trace.steps == 1, trace.stopped_at
    ops = {u.op for u in trace.ops}
    assert {"aten::embedding", "aten::nll_loss_forward", "aten::_fused_adamw_"} & ops == \
        {"aten::embedding", "aten::nll_loss_forward"}   # AdamW of the imitated device: foreach, not fused
    assert [(r.kind, r.path, r.line) for r in trace.replaced] == [("data", "train.py", 6),
                                                                  ("pretrained", "train.py", 8)]


def test_an_absent_clip_is_long_enough_for_a_speech_pipelines_crop(stand_ins, tmp_path):
    import types

    from opscan.trace.run import media_stand_ins
    from opscan.trace.run.stand_ins import Patches

    soundfile = types.SimpleNamespace(read=lambda *a, **k: (_ for _ in ()).throw(OSError("absent")))
    patches = Patches()
    media_stand_ins.install(stand_ins, patches)["soundfile"](soundfile)
    try:
        wave, rate = soundfile.read(str(tmp_path / "LibriSpeech" / "103" / "1.flac"), dtype="float32")
    finally:
        patches.undo()
    kept = wave[int(0.25 * rate):-int(0.25 * rate)]   # trimmed, then 64 frames of 10 ms taken
    assert rate == 16000 and wave.dtype == np.float32 and len(kept) >= 64 * rate // 100
    assert stand_ins.replaced[-1].subject == "soundfile.read" and "assumed" in stand_ins.replaced[-1].detail


def test_a_stop_on_a_refused_connection_names_the_download_and_its_host(tmp_path):
    """NOTE [a download no stand-in knows]: requests' ConnectionError (an OSError whose text names
    the host) and urllib's URLError around a refused socket read as a download; an absent file and
    any other error do not."""
    import urllib.error

    from opscan.trace.run.stand_ins import unanswered

    made = StandIns(str(tmp_path), SourceFinder(str(tmp_path)))

    class ConnectionError(OSError):   # requests.exceptions.ConnectionError's name and base
        pass

    said = unanswered(ConnectionError("HTTPSConnectionPool(host='github.com', port=443): Max retries "
                                      "exceeded with url: /org/data/blob/master/shapes.npz?raw=true"), made)
    assert "github.com" in said and "download" in said
    wrapped = urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))
    assert "download" in unanswered(wrapped, made)
    assert unanswered(ValueError("empty range for randrange()"), made) == ""
    assert "download" not in unanswered(FileNotFoundError(2, "No such file", "data/x.gz"), made)


@pytest.mark.slow
def test_a_script_downloading_its_data_stops_with_the_download_named(tmp_path):
    from opscan.trace.run import run_script

    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import urllib.request
        import torch
        data = urllib.request.urlopen("http://127.0.0.1:9/dsprites.npz").read()
        model = torch.nn.Linear(4, 2)
        torch.optim.SGD(model.parameters(), lr=0.1).step()
        """), encoding="utf-8")
    trace, _ = run_script(str(script), project_root=str(tmp_path), cwd=str(tmp_path), stand_ins=True)
    assert not trace.complete and trace.steps == 0
    assert "download" in trace.stopped_at and "127.0.0.1" in trace.stopped_at


def test_an_empty_listing_of_an_absent_folder_is_named_when_the_run_stops_on_it(stand_ins, tmp_path):
    """NOTE [an empty listing of absent data]: os.walk and glob of a folder not here list nothing
    (nothing is stood in for) and the stop on the empty dataset names the folder."""
    import glob

    from opscan.trace.run.stand_ins import unanswered

    (tmp_path / "present").mkdir()
    assert list(os.walk(tmp_path / "present")) == [(str(tmp_path / "present"), [], [])]
    assert glob.glob(str(tmp_path / "present" / "*.png")) == []
    assert unanswered(ValueError("empty range for randrange() (0, 0, 0)"), stand_ins) == ""   # it exists
    assert list(os.walk("../BSD68/cropped/clean")) == []
    assert glob.glob("/path/to/ukb/*/T1/T1_brain.nii.gz") == []
    said = unanswered(ValueError("empty range for randrange() (0, 0, 0)"), stand_ins)
    assert "../BSD68/cropped/clean" in said and "/path/to/ukb" not in said   # the first listing
    assert [folder for folder, _, _ in stand_ins.listed] == ["../BSD68/cropped/clean", "/path/to/ukb"]
    assert not stand_ins.replaced   # named in the stop reason, not stood in for


@pytest.mark.slow
def test_a_dataset_of_an_absent_folder_stops_with_the_folder_named(tmp_path):
    from opscan.trace.run import run_script

    (tmp_path / "env.py").write_text(textwrap.dedent("""\
        import os
        import random
        class Images:
            def __init__(self, folder):
                self.files = [os.path.join(r, f) for r, _, fs in os.walk(folder) for f in fs if f[0] != "."]
            def __len__(self):
                return len(self.files)
        def reset(dataset):
            return dataset.files[random.randint(0, len(dataset) - 1)]
        """), encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import torch
        from env import Images, reset
        dataset = Images("../BSD68/cropped/clean")
        first = reset(dataset)
        model = torch.nn.Linear(4, 2)
        torch.optim.SGD(model.parameters(), lr=0.1).step()
        """), encoding="utf-8")
    trace, _ = run_script(str(script), project_root=str(tmp_path), cwd=str(tmp_path), stand_ins=True)
    assert not trace.complete and trace.steps == 0
    assert "../BSD68/cropped/clean" in trace.stopped_at and "env.py:5" in trace.stopped_at
