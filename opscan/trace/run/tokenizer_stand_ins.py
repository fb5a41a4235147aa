"""Tokenizers a run stands in for (NOTE [stand-ins for data and weights] in stand_ins.py): tiktoken's
encodings and Hugging Face's `AutoTokenizer.from_pretrained` (and a tokenizer class's own, NOTE [a
tokenizer class of its own]) of a hub name whose files are not here.

NOTE [stand-in tokenizers]
A tokenizer's files are a download (tiktoken fetches GPT-2's BPE ranks on first use; a hub name's
`tokenizer.json` comes from the hub), and a contained child reaches no network. What a step's ops
depend on is the vocabulary's size (the embedding and the head) and the sequence lengths, not
which ids the text becomes. So a stand-in encodes text as its UTF-8 bytes (ids 0-255: within any
vocabulary the model is built for) and decodes them back, and reports the vocabulary size:
- tiktoken: `get_encoding(name)` / `encoding_for_model(model)` answer with `StandInEncoding`, whose
  `n_vocab` is the named encoding's published size (ENCODINGS, from tiktoken's own encoding
  definitions), else GPT-2's 50257, a stated assumption. tiktoken's encodings are always stood in for:
  their files lie outside the project (a cache folder) when they are not remote;
- transformers: `AutoTokenizer.from_pretrained(name)` loads as in a real run when the files are here
  (`local_files_only`), else answers with `StandInTokenizer`, whose `vocab_size` is the model
  config's when that config is here, else the default of the model type the name reads as (NOTE [a
  type read from the name] in hub_names.py: `bert-base-uncased`, 30522, the size of the model
  `AutoModel.from_pretrained` of the same name builds), else ASSUMED_VOCABULARY (each stated).
Each is named in the report with the line that asked and the size it assumed.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from opscan.trace.run import hub_names
from opscan.trace.run.stand_ins import Patches, StandIns

# n_vocab of tiktoken's encodings (tiktoken_ext/openai_public.py: mergeable ranks + special tokens)
ENCODINGS = {"gpt2": 50257, "r50k_base": 50257, "p50k_base": 50281, "p50k_edit": 50284,
             "cl100k_base": 100277, "o200k_base": 200019}
ASSUMED_VOCABULARY = 50257   # GPT-2's: when neither the encoding nor a config says
SPECIAL_IDS = 256            # ids the stand-in gives special tokens from (after the 256 byte ids)


def encode_bytes(text: str) -> list[int]:
    return list(str(text).encode("utf-8"))


def decode_bytes(ids) -> str:
    return bytes(int(i) % 256 for i in ids).decode("utf-8", errors="replace")


class StandInEncoding:
    """tiktoken.Encoding's interface on UTF-8 bytes (NOTE [stand-in tokenizers])."""

    def __init__(self, name: str, n_vocab: int) -> None:
        self.name, self.n_vocab = name, n_vocab
        self.max_token_value = n_vocab - 1
        self.eot_token = n_vocab - 1
        self.special_tokens_set = {"<|endoftext|>"}

    def encode(self, text: str, *args, **kwargs) -> list[int]:
        return encode_bytes(text)

    encode_ordinary = encode

    def encode_batch(self, texts, *args, **kwargs) -> list[list[int]]:
        return [encode_bytes(t) for t in texts]

    encode_ordinary_batch = encode_batch

    def decode(self, ids, *args, **kwargs) -> str:
        return decode_bytes(ids)

    def decode_batch(self, batch, *args, **kwargs) -> list[str]:
        return [decode_bytes(ids) for ids in batch]

    def __repr__(self) -> str:
        return f"<stand-in Encoding {self.name!r}>"


def install(stand_ins: StandIns, patches: Patches) -> dict[str, Callable]:
    """tiktoken's and transformers' tokenizers patched when the script imports them."""
    return {"tiktoken": lambda module: _tiktoken(module, stand_ins, patches),
            "transformers": lambda module: _transformers(module, stand_ins, patches)}


def _tiktoken(module, stand_ins: StandIns, patches: Patches) -> None:
    def get_encoding(name: str) -> StandInEncoding:
        size = ENCODINGS.get(name)
        said = f"{size} tokens (the encoding's own size)" if size else \
            f"{ASSUMED_VOCABULARY} tokens (assumed: GPT-2's; {name!r} is not a known encoding)"
        stand_ins.record("tokenizer", f"tiktoken.get_encoding({name!r})",
                         f"not downloaded: a stand-in encoding of text as UTF-8 bytes, vocabulary {said}")
        return StandInEncoding(name, size or ASSUMED_VOCABULARY)

    def encoding_for_model(model_name: str) -> StandInEncoding:
        try:
            from tiktoken.model import encoding_name_for_model   # a table in tiktoken: nothing read
            name = encoding_name_for_model(model_name)
        except (ImportError, KeyError):
            name = "gpt2"
        return get_encoding(name)

    patches.set(module, "get_encoding", get_encoding)
    patches.set(module, "encoding_for_model", encoding_for_model)


class StandInTokenizer:
    """The part of a Hugging Face tokenizer's interface a training script uses (NOTE [stand-in tokenizers])."""

    def __init__(self, name: str, vocab_size: int) -> None:
        self.name_or_path, self.vocab_size = name, vocab_size
        self.model_max_length = 1 << 30
        self.padding_side = "right"
        self.pad_token_id, self.eos_token_id, self.bos_token_id, self.unk_token_id = (
            SPECIAL_IDS, SPECIAL_IDS + 1, SPECIAL_IDS + 2, SPECIAL_IDS + 3)
        self.pad_token, self.eos_token, self.bos_token, self.unk_token = "<pad>", "</s>", "<s>", "<unk>"

    def __len__(self) -> int:
        return self.vocab_size

    def encode(self, text, *args, add_special_tokens: bool = True, max_length=None, truncation=False,
               **kwargs) -> list[int]:
        ids = encode_bytes(text)
        return ids[:max_length] if truncation and max_length else ids

    def decode(self, ids, *args, **kwargs) -> str:
        return decode_bytes(getattr(ids, "tolist", lambda: ids)())

    def batch_decode(self, batch, *args, **kwargs) -> list[str]:
        return [self.decode(ids) for ids in batch]

    def tokenize(self, text, *args, **kwargs) -> list[str]:
        """Whitespace-separated words (a word-piece tokenizer's count is at least this)."""
        return str(text).split()

    def convert_ids_to_tokens(self, ids, *args, **kwargs):
        return [self.unk_token for _ in ids] if isinstance(ids, list) else self.unk_token

    def convert_tokens_to_ids(self, tokens):
        return [self.unk_token_id for _ in tokens] if isinstance(tokens, list) else self.unk_token_id

    def add_special_tokens(self, *args, **kwargs) -> int:
        return 0

    def save_pretrained(self, *args, **kwargs) -> tuple:
        return ()

    def __call__(self, text, text_pair=None, *, padding=False, truncation=False, max_length=None,
                 return_tensors=None, **kwargs) -> dict:
        texts = [text] if isinstance(text, str) else list(text)
        rows = [self.encode(t, max_length=max_length, truncation=truncation) for t in texts]
        if padding == "max_length" and max_length:
            width = max_length
        elif padding:
            width = max((len(r) for r in rows), default=0)
        else:
            width = 0
        masks = [[1] * len(r) + [0] * max(0, width - len(r)) for r in rows]
        rows = [r + [self.pad_token_id] * max(0, width - len(r)) for r in rows]
        out: dict = {"input_ids": rows, "attention_mask": masks}
        if return_tensors == "pt":
            import torch

            out = {k: torch.tensor(v, dtype=torch.long) for k, v in out.items()}
        elif isinstance(text, str):
            out = {k: v[0] for k, v in out.items()}
        return _Encoding(out)


class _Encoding(dict):
    """A BatchEncoding's dict with attribute access and `.to(device)`."""

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def to(self, *args, **kwargs) -> _Encoding:
        return _Encoding({k: v.to(*args, **kwargs) if hasattr(v, "to") else v for k, v in self.items()})


def _transformers(module, stand_ins: StandIns, patches: Patches) -> None:
    try:
        from transformers.models.auto import tokenization_auto
    except ImportError:
        return
    _stand_in_from_pretrained(module, tokenization_auto.AutoTokenizer, stand_ins, patches)
    try:   # NOTE [a tokenizer class of its own]
        from transformers.tokenization_utils_base import PreTrainedTokenizerBase
    except ImportError:
        return
    _stand_in_from_pretrained(module, PreTrainedTokenizerBase, stand_ins, patches)


# NOTE [a tokenizer class of its own]
# Research code names its tokenizer class (`BertTokenizer.from_pretrained('bert-large-uncased')`,
# often picked from a table of model/tokenizer/name triples) as often as AutoTokenizer. Every
# concrete tokenizer inherits `from_pretrained` from PreTrainedTokenizerBase, so that one method is
# stood in for the same way: read as in a real run when its files are here or in the local cache,
# else a stand-in tokenizer named after the class that asked. Without it, the class's own
# constructor ran with no vocabulary file (`os.path.isfile(None)` in BertTokenizer).


def _stand_in_from_pretrained(module, owner, stand_ins: StandIns, patches: Patches) -> None:
    found = owner.__dict__.get("from_pretrained")
    original = found.__func__ if isinstance(found, (classmethod, staticmethod)) else None
    if original is None:
        return

    def from_pretrained(cls, name, *args, **kwargs):
        if isinstance(name, (str, os.PathLike)) and not stand_ins.answers(name):
            return original(cls, name, *args, **kwargs)   # its files are in the project: read as in a real run
        try:
            return original(cls, name, *args, **{**kwargs, "local_files_only": True})
        except (OSError, ValueError, TypeError):   # TypeError: a class built with no vocabulary file
            pass
        size, said = ASSUMED_VOCABULARY, f"{ASSUMED_VOCABULARY} tokens (assumed: GPT-2's; no config of it is here)"
        try:
            config = module.AutoConfig.from_pretrained(name, local_files_only=True)
            if isinstance(getattr(config, "vocab_size", None), int):
                size, said = config.vocab_size, f"{config.vocab_size} tokens (its config's vocab_size)"
        except (OSError, ValueError):
            found = hub_names.default_config(module, name) if isinstance(name, (str, os.PathLike)) else None
            if found is not None and isinstance(getattr(found[0], "vocab_size", None), int):
                size = found[0].vocab_size
                said = (f"{size} tokens (assumed: {type(found[0]).__name__}'s default, the model type {found[1]!r} "
                        "read from the name; NOTE [a type read from the name])")
        stand_ins.record("tokenizer", f"{cls.__name__}.from_pretrained({os.fspath(name)!r})",
                         f"not downloaded: a stand-in tokenizer of text as UTF-8 bytes, vocabulary {said}")
        return StandInTokenizer(os.fspath(name), size)

    patches.set(owner, "from_pretrained", classmethod(from_pretrained))
