"""Small fake data files in the formats the development set's scripts read (cases.py `data`).

Each maker writes into the script's working folder what the script opens there, with deterministic
contents: the scripts run their real data-loading code on it.
"""

from __future__ import annotations

import gzip
import pickle
import struct
import zlib
from pathlib import Path

import numpy as np


def shakespeare_char(cwd: Path) -> None:
    """nanoGPT's data/shakespeare_char: uint16 train.bin / val.bin and meta.pkl (65 characters)."""
    folder = cwd / "data" / "shakespeare_char"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    rng.integers(0, 65, size=4000).astype(np.uint16).tofile(folder / "train.bin")
    rng.integers(0, 65, size=1000).astype(np.uint16).tofile(folder / "val.bin")
    chars = [chr(c) for c in range(32, 97)]
    meta = {"vocab_size": 65, "itos": dict(enumerate(chars)), "stoi": {c: i for i, c in enumerate(chars)}}
    (folder / "meta.pkl").write_bytes(pickle.dumps(meta))


def wikitext(cwd: Path) -> None:
    """word_language_model's ./data/wikitext-2/{train,valid,test}.txt: a few lines of words."""
    folder = cwd / "data" / "wikitext-2"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(50)]
    for name, lines in (("train", 40), ("valid", 10), ("test", 10)):
        text = "\n".join(" ".join(rng.choice(words, size=12)) for _ in range(lines)) + "\n"
        (folder / f"{name}.txt").write_text(text)


def _idx(path: Path, array: np.ndarray) -> None:
    dims = struct.pack(">" + "I" * array.ndim, *array.shape)
    code = {1: 0x08}[array.dtype.itemsize]
    path.write_bytes(struct.pack(">HBB", 0, code, array.ndim) + dims + array.tobytes())


def mnist(cwd: Path) -> None:
    """torchvision's MNIST raw files in ../data/MNIST/raw: 64 training and 32 test images."""
    folder = cwd.parent / "data" / "MNIST" / "raw"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for prefix, n in (("train", 64), ("t10k", 32)):
        _idx(folder / f"{prefix}-images-idx3-ubyte", rng.integers(0, 256, size=(n, 28, 28)).astype(np.uint8))
        _idx(folder / f"{prefix}-labels-idx1-ubyte", rng.integers(0, 10, size=(n,)).astype(np.uint8))
    for path in list(folder.iterdir()):   # torchvision also accepts the .gz the download leaves
        if path.suffix != ".gz":
            (folder / (path.name + ".gz")).write_bytes(gzip.compress(path.read_bytes()))


def sine_waves(cwd: Path) -> None:
    """time_sequence_prediction's traindata.pt: as its generate_sine_wave.py, 8 waves of 200 points."""
    import torch

    rng = np.random.default_rng(2)
    x = np.arange(200)[None, :] + rng.integers(-80, 80, size=(8, 1))
    torch.save(np.sin(x / 20.0).astype("float64"), cwd / "traindata.pt")


def cora(cwd: Path) -> None:
    """The Cora files pytorch/examples' gat reads from ./cora (it downloads them only when missing):
    cora.content (`id feature... label`, tab-separated) and cora.cites (`cited citing` ids). 1700
    nodes, as the script's split takes 1600 for test and validation; 32 binary features, 7 labels."""
    folder = cwd / "cora"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    ids = rng.choice(np.arange(1000, 1_000_000), size=1700, replace=False)
    labels = ["Case_Based", "Genetic_Algorithms", "Neural_Networks", "Probabilistic_Methods",
              "Reinforcement_Learning", "Rule_Learning", "Theory"]
    features = rng.integers(0, 2, size=(len(ids), 32))
    features[:, 0] = 1   # every paper has a word, as in Cora (the script divides by the row sums)
    rows = ["\t".join([str(i), *map(str, f), labels[rng.integers(0, len(labels))]]) for i, f in zip(ids, features)]
    (folder / "cora.content").write_text("\n".join(rows) + "\n")
    edges = rng.choice(ids, size=(3000, 2))
    (folder / "cora.cites").write_text("\n".join(f"{a}\t{b}" for a, b in edges) + "\n")


def hf_clm(cwd: Path) -> None:
    """A from-scratch causal LM run of Hugging Face's examples: a tiny GPT-2 config folder, a word-level
    tokenizer folder (built offline with the `tokenizers` library) and train/validation text files."""
    import json

    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(60)]
    specials = ["<unk>", "<|endoftext|>"]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(specials + words)}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<|endoftext|>",
                            eos_token="<|endoftext|>").save_pretrained(cwd / "tiny-tokenizer")
    (cwd / "tiny-gpt2").mkdir(exist_ok=True)
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": len(specials) + len(words),
              "n_positions": 64, "n_embd": 32, "n_layer": 2, "n_head": 2, "bos_token_id": 1, "eos_token_id": 1}
    (cwd / "tiny-gpt2" / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    for name, lines in (("train", 24), ("valid", 8)):
        text = "\n".join(" ".join(rng.choice(words, size=10)) for _ in range(lines)) + "\n"
        (cwd / f"{name}.txt").write_text(text)


def _png(path: Path, rgb: np.ndarray) -> None:
    """An 8-bit RGB PNG (no image library needed)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    height, width, _ = rgb.shape
    rows = b"".join(b"\x00" + rgb[y].tobytes() for y in range(height))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def image_folder(cwd: Path) -> None:
    """An ImageFolder in ./data: train/ and validation/ (timm's default split names), two classes
    of 40x40 RGB PNGs (12 training images and 2 validation images per class)."""
    rng = np.random.default_rng(0)
    for split, n in (("train", 12), ("validation", 2)):
        for label in ("cat", "dog"):
            folder = cwd / "data" / split / label
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(n):
                _png(folder / f"{label}_{i:03d}.png", rng.integers(0, 256, size=(40, 40, 3)).astype(np.uint8))


MAKERS = {"shakespeare_char": shakespeare_char, "wikitext": wikitext, "mnist": mnist, "sine_waves": sine_waves,
          "cora": cora, "hf_clm": hf_clm, "image_folder": image_folder}
