"""Data and weights a run of the project's training command stands in for: what lies outside the
project, is absent, or would be downloaded is answered by synthetic data of the right types and
shapes, or by the model's own initialisation; each one recorded (records.Replacement).

NOTE [stand-ins for data and weights]
`opscan PATH` runs the project's training command (opscan/pipeline/entry_step.py) on a machine that
has neither its dataset nor its pretrained weights, and must not read what lies outside the
project nor download anything. The ops of a step depend on the types and shapes of what the step
reads, not on its values, so each common way of reading data or weights gets an answer of the
right kind when what it asks for is absent, outside the project, or remote:
- data (data_stand_ins.py): torchvision's datasets and ImageFolder, Hugging Face
  `datasets.load_dataset`, `np.memmap` / `np.load` / `np.fromfile` token files; and the media a
  manifest (CSV, JSON) names (media_stand_ins.py): `PIL.Image.open`, `cv2.imread`,
  `soundfile.read`, `torchaudio.load`, `librosa.load`; and files the script opens itself
  (file_stand_ins.py): `h5py.File`, vocabulary files, paths relative to the script's own folder;
  JSON, JSON lines, pickles and text tables shaped by how the project's code uses them
  (table_stand_ins.py: NOTE [data shaped by its use]); a glob of an absent media folder, a listing
  whose code names the media kind it keeps (listed_kinds.py) and an output folder's absent parents
  (listings.py); nltk's data packages (nltk_stand_ins.py); an RL environment's rendering with no
  screen (rendering.py);
- weights (pretrained.py): `torch.hub.load_state_dict_from_url` (torchvision's `weights=` and
  `pretrained=True`), `torch.hub.load`, timm's `pretrained=True`, transformers' `from_pretrained`
  of a model whose config is here but whose weights are not, `torch.load` of a missing checkpoint:
  the model keeps its own initialisation (the trace needs shapes, not values).
A file that exists inside the project is read as in a real run (an empty placeholder of data apart:
NOTE [an empty placeholder of data]): the stand-ins never change what a run with its data in place
does (`opscan run` keeps them off: it runs where the data is). Each answer is named in the report
with the script line that asked ("CIFAR10: 1024 synthetic 3x32x32 uint8 images, 10 classes
(train.py:21)"). Libraries are patched when the script imports them (an
import hook), never imported by opscan: a script that does not use torchvision never loads it.
The synthetic values come from their own generator (seed 0), never the script's random streams.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable

from opscan.records import Replacement

SAMPLES = 1024   # synthetic samples of a dataset stood in for: enough batches for a step and an eval pass


class StandIns:
    """What a run stood in for, and the one rule of when it does (NOTE [stand-ins for data and weights])."""

    def __init__(self, project_root: str | None, finder, script: str | None = None) -> None:
        self.root = os.path.realpath(project_root) if project_root else ""
        self.script_dir = os.path.dirname(os.path.abspath(script)) if script else ""   # file_stand_ins.py
        self.finder = finder
        self.replaced: list[Replacement] = []
        self._seen: set[tuple[str, str, int]] = set()
        self.listed: list[tuple[str, str, int]] = []   # listings.py: (absent folder, path, line)
        self.folders: set[str] = set()   # listings.py: synthetic class folders (absolute, normalised)
        self.kept: tuple[str, ...] = ()   # folders whose files the run wrote itself (outside_writes.py)
        self.written: Callable[[str], object] = lambda path: None   # outside_writes.py: its copy of path
        self.posix_form: Callable[[str], str | None] = lambda path: None   # windows_paths.py: `a\\b` read as a/b

    def answers(self, path) -> bool:
        """Whether a read of `path` is stood in for: not a file or folder of the project (absent, or outside it)."""
        if path is None:
            return False
        try:
            text = os.fspath(path)
        except TypeError:
            return False
        if not isinstance(text, str) or not text:
            return False
        if "://" in text:   # a URL: a download
            return True
        # NOTE [a path written with Windows separators]: decided on the form the run reads
        full = os.path.realpath(os.path.expanduser(self.posix_form(text) or text))
        inside = not self.root or full == self.root or full.startswith(self.root + os.sep)
        if not inside and (_under(full, self.kept) and os.path.exists(full) or self.written(text)):
            return False   # written by this run (NOTE [writes outside the project])
        if not inside and _under(full, library_roots()):   # NOTE [a library's own files]
            return False
        return not (inside and os.path.exists(full)) or (inside and _placeholder(full))

    def record(self, kind: str, subject: str, detail: str) -> None:
        """Name one stand-in at the innermost line of the project's code that asked for it."""
        path, line = self._line()
        key = (subject, path, line)
        if key not in self._seen:
            self._seen.add(key)
            self.replaced.append(Replacement(kind, subject, detail, path, line))

    def empty_listing(self, folder: str) -> None:
        """Remember a listing of an absent folder at the project's line that asked (listings.py)."""
        path, line = self._line()
        if not any(seen == folder for seen, _, _ in self.listed):
            self.listed.append((folder, path, line))

    def asked_by_library(self, frame) -> bool:
        """Whether `frame` (the caller of a patched reader) is installed code: a synthetic file answers
        the project's reads, never a library's own (NOTE [a library's own files])."""
        name = frame.f_code.co_filename if frame is not None else ""
        return bool(name) and _under(os.path.realpath(name), library_roots())

    def _line(self) -> tuple[str, int]:
        frame = sys._getframe(2)
        while frame is not None:
            name = frame.f_code.co_filename
            if self.root and os.path.abspath(name).startswith(self.root + os.sep) and self.finder.is_user(name):
                return self.finder.name(name), frame.f_lineno
            frame = frame.f_back
        return "", 0


def unanswered(exc: BaseException, stand_ins: StandIns) -> str:
    """"; no stand-in for FILE ..." when a run stopped on an absent file no stand-in answers, "; a
    download from HOST ..." when it stopped on a connection the contained run refuses (NOTE [a
    download no stand-in knows]), else ""."""
    host = _refused_host(exc)
    if host is not None:
        return (f"; a download from {host or 'the network'}: the contained run has no network, and no "
                "stand-in knows what the project's own code fetches there (put the file in the project, "
                "or pass --entry with a command that reads local data)")
    name = getattr(exc, "filename", None)
    if isinstance(exc, (ValueError, IndexError, ZeroDivisionError, StopIteration)) and stand_ins.listed:
        # the errors of an empty dataset (listings.py)
        folder, path, line = stand_ins.listed[0]
        where = f" ({path}:{line})" if path else ""
        return (f"; the project's code listed {folder}{where}, which is not here: its dataset is empty "
                "(no stand-in lists synthetic files: NOTE [an empty listing of absent data])")
    if not isinstance(exc, FileNotFoundError) or not isinstance(name, (str, os.PathLike)) \
            or not stand_ins.answers(name):
        return ""
    return (f"; no stand-in for {os.fspath(name)}: a file the project's own code opens, in a format no "
            "stand-in knows (its structure is not written where opscan reads)")


# NOTE [a download no stand-in knows]
# A script that fetches its data itself (`requests.get` of a `.npz` on a code host, `urllib`'s
# `urlretrieve`) reaches a socket the containment refuses; the library then raises its own
# connection error (requests' ConnectionError, urllib's URLError, a bare OSError) deep in its
# adapters, and the stop reason named that library's line alone. The reason now says what it is:
# a download, from which host (read from the error's text, or a `host` of the library's frames in
# its traceback, through its chain), that no stand-in answers.
# Told by the error's class (a connection or URL error of the library, or the socket errors) in
# the exception or its causes; a file that is absent stays the absent-file reason above.
_REAL_STAT = os.stat   # the real call, never a patched one (the stand-ins patch os.stat while they run)


def really_exists(path: str) -> bool:
    """Whether `path` exists, asked of the real `os.stat` (never a stand-in's answer)."""
    try:
        _REAL_STAT(path)
    except (OSError, ValueError):
        return False
    return True


_CONNECTION_ERRORS = ("ConnectionError", "URLError", "MaxRetryError", "NewConnectionError",
                      "ConnectTimeout", "gaierror", "ConnectionRefusedError", "NameResolutionError")


def _refused_host(exc: BaseException) -> str | None:
    """The host a connection error names ("" when it names none), or None when `exc` is not one."""
    import re

    seen: set[int] = set()
    current: BaseException | None = exc
    found = False
    text = ""
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        tb = current.__traceback__
        while tb is not None:   # the library's own frames: urllib's `host`, http.client's
            host = tb.tb_frame.f_locals.get("host")
            if isinstance(host, str) and host:
                text += f" host='{host}'"
            tb = tb.tb_next
        if any(type(current).__name__ == name or
               any(base.__name__ == name for base in type(current).__mro__) for name in _CONNECTION_ERRORS):
            found = True
        text += " " + str(current)
        current = current.__cause__ or current.__context__
    if not found:
        return None
    match = re.search(r"host='([^']+)'", text) or re.search(r"\w+://([^/\s:'\"]+)", text)
    return match.group(1) if match else ""


def library_roots() -> tuple[str, ...]:
    """The folders of the running interpreter's installed code: its prefixes, stdlib and site-packages.

    NOTE [a library's own files]
    The stand-ins answer for data outside the project, never for the installed code's own files: a
    library reading its package data (librosa's pooch registry `registry.txt`, a tokenizer's merges,
    a font) reads the real file, whether it exists or not, as in any run. Without this the `.txt`
    and vocabulary stand-ins of file_stand_ins.py answered librosa's registry with synthetic text.
    Nor does a synthetic text or vocabulary file answer a read that installed code makes itself
    (`StandIns.asked_by_library`): a library reading a cache file outside any site-packages
    (transformers' hub cache, a `version.txt`) reads the real file, or fails as it would.
    """
    if not _LIBRARY_ROOTS:
        import site
        import sysconfig

        folders = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
        folders.update(sysconfig.get_paths().get(key, "") for key in ("stdlib", "platstdlib", "purelib", "platlib"))
        with contextlib.suppress(AttributeError):
            folders.update(site.getsitepackages())
        with contextlib.suppress(AttributeError):
            folders.add(site.getusersitepackages())
        # a child started by the interpreter's real path sees its environment's site-packages only on
        # sys.path, not in sys.prefix or site's answers
        folders.update(p for p in sys.path if os.path.basename(p.rstrip(os.sep)) in ("site-packages", "dist-packages"))
        _LIBRARY_ROOTS.extend(sorted({os.path.realpath(f) for f in folders if f and f != os.sep}))
    return tuple(_LIBRARY_ROOTS)


_LIBRARY_ROOTS: list[str] = []


# NOTE [an empty placeholder of data]
# A repository may ship its data files empty, to be filled by a download or a preparation step
# (`data/demo.train`, `demo.dev`, `demo.test`: zero bytes each). Read as they are, the corpus reader
# finds no sample and the run stops far away (`data[0]`: IndexError). A zero-byte file of the project
# that is not code or configuration is read as absent data, so the stand-ins answer it; a file with
# any content is always read as it is, and `opscan run` (no stand-ins) reads it empty as a real run.
_NOT_DATA = (".py", ".pyi", ".cfg", ".toml", ".ini", ".yaml", ".yml", ".sh", ".md", ".rst", ".typed")


def _placeholder(path: str) -> bool:
    try:
        return os.path.isfile(path) and os.path.getsize(path) == 0 and not path.lower().endswith(_NOT_DATA)
    except OSError:
        return False


def _under(path: str, folders: tuple[str, ...]) -> bool:
    return any(path == folder or path.startswith(folder + os.sep) for folder in folders)


class Patches:
    """Attributes set for the run and put back after it (also on modules imported during the run)."""

    def __init__(self) -> None:
        self._undo: list[tuple[object, str, bool, object]] = []

    def set(self, owner, name: str, value) -> None:
        had = name in vars(owner)
        self._undo.append((owner, name, had, vars(owner).get(name)))
        setattr(owner, name, value)

    def on_undo(self, undo: Callable[[], object]) -> None:
        """`undo()` called when the patches are put back, in its turn (last set, first undone)."""
        self._undo.append((undo, "", False, None))

    def undo(self) -> None:
        for owner, name, had, previous in reversed(self._undo):
            if not name:
                owner()
            elif had:
                setattr(owner, name, previous)
            else:
                with contextlib.suppress(AttributeError):
                    delattr(owner, name)
        self._undo.clear()
