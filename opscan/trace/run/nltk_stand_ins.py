"""nltk's data packages a run stands in for when they are not installed (NOTE [stand-ins for data and
weights] in stand_ins.py).

NOTE [nltk data that is not installed]
nltk's tokenizers, stop words and lemmatizer read data packages that `nltk.download(...)` installs
outside the project (`punkt` / `punkt_tab` for `word_tokenize` and `sent_tokenize`, `stopwords`,
`wordnet` for `WordNetLemmatizer`); where none is installed the call raises nltk's LookupError
("Resource punkt_tab not found") and the run stopped in the data pipeline, before its first
optimizer step. The contained child downloads nothing, so, while a command runs with stand-ins,
each of these answers with a stated stand-in, only when nltk itself raises LookupError (the
resource is absent: an installed resource is always used):
- `sent_tokenize`: the text split after `.`, `!` or `?` followed by white space; nltk's own
  `word_tokenize` splits its text into sentences with it, then tokenizes each with its Treebank
  tokenizer, which needs no data (so its tokens are nltk's, the sentences the stand-in's);
- `word_tokenize`, where it still raises: words and punctuation marks (`\\w+|[^\\w\\s]`);
- `stopwords.words(...)`: an empty list (no word is dropped);
- `WordNetLemmatizer().lemmatize(word)`: the word itself.
The token counts and vocabulary differ from the real resources' (sizes of embeddings built from the
vocabulary may too); the ops of the step are those of the same model on tokens. Each is named in
the report as an assumption ("stood in for data: nltk sent_tokenize: ..."). nltk is patched when
the script imports it, never imported by opscan.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from opscan.trace.run.stand_ins import Patches, StandIns

_WORDS = re.compile(r"\w+|[^\w\s]")
_SENTENCES = re.compile(r"(?<=[.!?])\s+")
_ASSUMED = "an assumption: nltk's data package is not installed and the contained run downloads nothing"


def install(stand_ins: StandIns, patches: Patches) -> dict[str, Callable]:
    """nltk patched when the script imports it (its tokenize, corpus and stem modules load with it)."""
    return {"nltk": lambda module: _nltk(module, stand_ins, patches)}


def _nltk(module, stand_ins: StandIns, patches: Patches) -> None:
    import sys

    tokenize = sys.modules.get("nltk.tokenize")
    answers = {"word_tokenize": (lambda text, *a, **k: _WORDS.findall(text),
                                 "words and punctuation marks (a regular expression)"),
               "sent_tokenize": (lambda text, *a, **k: [s for s in _SENTENCES.split(text.strip()) if s],
                                 "the text split after . ! or ?")}
    for name, (answer, said) in answers.items():
        original = getattr(tokenize, name, None) if tokenize is not None else None
        if not callable(original):
            continue
        wrapped = _when_absent(original, answer, f"nltk {name}", said, stand_ins)
        patches.set(tokenize, name, wrapped)
        if getattr(module, name, None) is original:
            patches.set(module, name, wrapped)
    corpus = sys.modules.get("nltk.corpus")
    loader = getattr(corpus, "stopwords", None) if corpus is not None else None
    if loader is not None:
        patches.set(corpus, "stopwords", _Stopwords(loader, stand_ins))
    wordnet = sys.modules.get("nltk.stem.wordnet")
    lemmatizer = getattr(wordnet, "WordNetLemmatizer", None) if wordnet is not None else None
    if lemmatizer is not None and callable(vars(lemmatizer).get("lemmatize")):
        original = vars(lemmatizer)["lemmatize"]
        patches.set(lemmatizer, "lemmatize", _when_absent(
            original, lambda self, word, *a, **k: word, "nltk WordNetLemmatizer.lemmatize", "each word itself",
            stand_ins))


def _when_absent(original: Callable, answer: Callable, subject: str, said: str, stand_ins: StandIns) -> Callable:
    absent: list[bool] = []   # once nltk said the resource is not here, it is not asked again

    @functools.wraps(original)
    def call(*args, **kwargs):
        if not absent:
            try:
                return original(*args, **kwargs)
            except LookupError:
                absent.append(True)
        stand_ins.record("data", subject, f"{said} ({_ASSUMED}: NOTE [nltk data that is not installed])")
        return answer(*args, **kwargs)
    return call


class _Stopwords:
    """nltk's `stopwords` corpus: an empty list of each language when its package is not installed."""

    def __init__(self, loader, stand_ins: StandIns) -> None:
        self._loader = loader
        self._stand_ins = stand_ins
        self._absent = False

    def words(self, *args, **kwargs) -> list[str]:
        if not self._absent:
            try:
                return self._loader.words(*args, **kwargs)
            except LookupError:
                self._absent = True
        self._stand_ins.record("data", "nltk stopwords.words", f"an empty stop-word list ({_ASSUMED}: NOTE "
                               "[nltk data that is not installed])")
        return []

    def __getattr__(self, name: str):
        return getattr(self._loader, name)
