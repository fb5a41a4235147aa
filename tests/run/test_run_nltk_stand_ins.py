"""nltk's data packages stood in for when they are not installed (NOTE [nltk data that is not
installed] in opscan/trace/run/nltk_stand_ins.py): the tokenizers, stop words and lemmatizer answer
with stated stand-ins only when nltk raises LookupError; an installed resource is used as it is."""

from __future__ import annotations

import sys

import pytest

from opscan.trace.run.stand_in_hooks import installed
from opscan.trace.run.stand_ins import StandIns
from opscan.trace.sources import SourceFinder

# an nltk-like library: each resource is "installed" when its name is in INSTALLED
_FILES = {
    "__init__.py": "from nltk.tokenize import *\nfrom nltk.stem import *\nfrom nltk import corpus, tokenize, stem\n",
    "data.py": "INSTALLED = set()\ndef find(name):\n    if name not in INSTALLED:\n"
               "        raise LookupError('Resource ' + name + ' not found.')\n",
    "tokenize/__init__.py": "from nltk import data\n__all__ = ['word_tokenize', 'sent_tokenize']\n"
                            "def word_tokenize(text, language='english', preserve_line=False):\n"
                            "    data.find('punkt_tab')\n    return ['REAL'] + text.split()\n"
                            "def sent_tokenize(text, language='english'):\n"
                            "    data.find('punkt_tab')\n    return ['REAL', text]\n",
    "corpus/__init__.py": "from nltk import data\nclass LazyCorpusLoader:\n    name = 'stopwords'\n"
                          "    def words(self, fileids=None):\n        data.find('stopwords')\n"
                          "        return ['the', 'a']\nstopwords = LazyCorpusLoader()\n",
    "stem/__init__.py": "from nltk.stem.wordnet import WordNetLemmatizer\n",
    "stem/wordnet.py": "from nltk import data\nclass WordNetLemmatizer:\n"
                       "    def lemmatize(self, word, pos='n'):\n        data.find('wordnet')\n"
                       "        return word.rstrip('s')\n",
}


@pytest.fixture()
def project(tmp_path, monkeypatch):
    """The nltk-like library, installed outside the project (tmp_path/project)."""
    for name, text in _FILES.items():
        path = tmp_path / "site" / "nltk" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (tmp_path / "project").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    _forget()
    yield tmp_path / "project"
    _forget()


def _forget() -> None:
    for name in [m for m in sys.modules if m == "nltk" or m.startswith("nltk.")]:
        del sys.modules[name]


def test_absent_nltk_resources_answer_with_stated_stand_ins(project):
    made = StandIns(str(project), SourceFinder(str(project)))
    with installed(made):
        from nltk import sent_tokenize, word_tokenize
        from nltk.corpus import stopwords
        from nltk.stem import WordNetLemmatizer

        assert word_tokenize("The cat sat, on the mat.") == ["The", "cat", "sat", ",", "on", "the", "mat", "."]
        assert sent_tokenize("One here. Two there! Three?") == ["One here.", "Two there!", "Three?"]
        assert stopwords.words("english") == [] and stopwords.name == "stopwords"
        assert WordNetLemmatizer().lemmatize("cars") == "cars"
        import nltk.tokenize
        assert nltk.tokenize.word_tokenize("a b") == ["a", "b"]
    assert sorted(r.subject for r in made.replaced) == ["nltk WordNetLemmatizer.lemmatize", "nltk sent_tokenize",
                                                        "nltk stopwords.words", "nltk word_tokenize"]
    assert all(r.kind == "data" and "assumption" in r.detail for r in made.replaced)
    import nltk
    with pytest.raises(LookupError):   # put back after the run
        nltk.word_tokenize("a b")
    with pytest.raises(LookupError):
        nltk.stem.WordNetLemmatizer().lemmatize("cars")


def test_an_installed_nltk_resource_is_used_and_no_stand_in_runs_without_stand_ins(project):
    made = StandIns(str(project), SourceFinder(str(project)))
    with installed(made):
        import nltk.data
        from nltk import word_tokenize
        from nltk.corpus import stopwords
        from nltk.stem import WordNetLemmatizer

        nltk.data.INSTALLED.update({"punkt_tab", "stopwords", "wordnet"})
        assert word_tokenize("a b") == ["REAL", "a", "b"]
        assert stopwords.words("english") == ["the", "a"]
        assert WordNetLemmatizer().lemmatize("cars") == "car"
    assert made.replaced == []
    _forget()
    with installed(None):   # `opscan run`: no stand-ins
        from nltk import word_tokenize
        with pytest.raises(LookupError):
            word_tokenize("a b")


def test_the_real_nltk_without_its_data(tmp_path):
    nltk = pytest.importorskip("nltk")
    try:
        nltk.word_tokenize("a b")
        pytest.skip("nltk's punkt is installed here")
    except LookupError:
        pass
    made = StandIns(str(tmp_path), SourceFinder(str(tmp_path)))
    with installed(made):
        assert nltk.word_tokenize("Hello, world.") == ["Hello", ",", "world", "."]
    assert {"nltk sent_tokenize", "nltk word_tokenize"} & {r.subject for r in made.replaced}
