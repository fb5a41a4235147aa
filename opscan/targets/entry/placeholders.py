"""Capitalised placeholders of a written command (`python run.py -r -m CONFIG_FILE`, `python
train.py -d celeba PATH`), read as the author meant them (NOTE [capitalised placeholders]). Stdlib
only; reads the project's file index, never runs anything.

NOTE [capitalised placeholders]
READMEs write where the reader puts a value in capitals: `-m CONFIG_FILE`, `--data_dir DATA_DIR`,
a positional `PATH`. Run as written, the script gets the word itself. A word is such a placeholder
when it is all capitals (letters, digits, `_`), one of its parts names what goes there (`PATH`,
`FILE`, `DIR`, `FOLDER`, `ROOT`, `CONFIG`, `CFG`, `CKPT`, `CHECKPOINT`, `YOUR`), and no file or
folder of that name exists where the command runs (`--pattern TRAIN` and `--split TEST` are values,
not placeholders). Then:
- a config placeholder (a part `CONFIG`, `CFG` or `CONF`) that is the value of an option the script
  declares with a literal default naming a file of the project (`add_argument('--cfg_file',
  default='config/extractor/ours.yml')`) is dropped with its option: the authors' own default
  applies, said as assumed (a config folder often holds a `base.yml` that others extend, so its
  first file is a worse guess than the one the script picks itself);
- any other config placeholder where the project has a config folder (`config/`, `configs/`,
  `conf/`, `cfg/` beside the command) is its first config file in name order
  (`config/bert_hinge.json`), said as assumed;
- any other placeholder is dropped with the option it is the value of, as an `<int>` is (NOTE
  [placeholders] in shell_words.py): the option's default applies, or a required positional is
  filled from the script's declaration (NOTE [required options filled]).
An option written with its value in one word (`--cfg_file=CONFIG_FILE`) is read the same way: the
value is the placeholder, the option the one it is the value of.
A command that passes a config system's override list (yacs' and detectron2's `KEY VALUE` pairs
after the options: `OURS.ALPHA "8.0" OUTPUT_DIR "/data/..."`, told by a capitalised dotted key such
as `OURS.ALPHA` or `MODEL.DEVICE_ID`) has no capitalised placeholders: its capitalised words are
keys (`OUTPUT_DIR`), and dropping one would leave the list of an odd length.
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath

_CAPITALS = re.compile(r"[A-Z][A-Z0-9_]*[A-Z0-9]")
_KEY = re.compile(r"[A-Z][A-Z0-9_]*(\.[A-Z][A-Z0-9_]*)+")   # a yacs key: MODEL.DEVICE_ID
_SAYS = frozenset({"PATH", "FILE", "DIR", "FOLDER", "ROOT", "CONFIG", "CFG", "CONF", "CKPT", "CHECKPOINT", "YOUR"})
_CONFIG = frozenset({"CONFIG", "CFG", "CONF"})
_CONFIG_FOLDERS = ("config", "configs", "conf", "cfg")
_CONFIG_FILES = (".json", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".py")


def filled(index, words: list[str], cwd: str, first: int, tree: ast.Module | None = None) -> tuple[list[str], str]:
    """(the words with their capitalised placeholders answered, what was assumed) for the words from
    `first` on (the script's arguments) of a command run from `cwd`; `tree` is the script's source,
    read for its options' defaults (NOTE [capitalised placeholders])."""
    out = list(words[:first])
    said: list[str] = []
    if any(_KEY.fullmatch(word) for word in words[first:]):   # an override list: keys, not placeholders
        return list(words), ""
    for word in words[first:]:
        option, joined, value = word.partition("=") if word.startswith("-") else ("", "", word)
        if not _is_placeholder(index, value, cwd):
            out.append(word)
            continue
        if not joined:
            option = out[-1] if len(out) > first and out[-1].startswith("-") and "=" not in out[-1] else ""
        if _CONFIG & set(value.split("_")):
            default = _own_default(index, tree, option, cwd) if option else ""
            if default:
                if not joined:
                    out.pop()
                said.append(f"{option} {value} left out: the script's own default {default} applies (assumed)")
                continue
            config = _first_config(index, cwd)
            if config:
                out.append(f"{option}={config}" if joined else config)
                said.append(f"{value} read as {config}, the first config file there (assumed)")
                continue
        if option:
            said.append(f"{option} {value} left out (a placeholder: the default applies)")
            if not joined:
                out.pop()
        else:
            said.append(f"{value} left out (a placeholder)")
    return out, "; ".join(said)


def _own_default(index, tree: ast.Module | None, option: str, cwd: str) -> str:
    """The literal default of `option` in the script's `add_argument` declarations when it names a
    file of the project (relative to `cwd`), or ``."""
    if tree is None:
        return ""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        flags = {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
        if option not in flags:
            continue
        default = next((k.value for k in node.keywords if k.arg == "default"), None)
        if not (isinstance(default, ast.Constant) and isinstance(default.value, str) and default.value):
            return ""
        rel = str(PurePosixPath(cwd) / default.value) if cwd else default.value
        path = index.root / rel
        return default.value if path.is_file() and path.resolve().is_relative_to(index.root.resolve()) else ""
    return ""


def _is_placeholder(index, word: str, cwd: str) -> bool:
    if not _CAPITALS.fullmatch(word) or not _SAYS & set(word.split("_")):
        return False
    rel = str(PurePosixPath(cwd) / word) if cwd else word
    return not (index.root / rel).exists()


def _first_config(index, cwd: str) -> str:
    """The first config file (name order) of the command folder's config folder, relative to it."""
    base = index.root / cwd if cwd else index.root
    for name in _CONFIG_FOLDERS:
        folder = base / name
        if not folder.is_dir():
            continue
        files = sorted(p.name for p in folder.iterdir() if p.is_file() and p.suffix.lower() in _CONFIG_FILES)
        if files:
            return f"{name}/{files[0]}"
    return ""
