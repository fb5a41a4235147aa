"""Repositories a Dockerfile clones and then installs from source (`git clone URL` ... `pip install .`).

NOTE [cloned checkouts] says what is claimed; scan/docker_manifests.py feeds the instructions.
"""

from __future__ import annotations

import re
import shlex

from packaging.utils import canonicalize_name

from opscan.scan.manifests import Entry
from opscan.scan.vcs_urls import inferred_name

# NOTE [cloned checkouts]
# `RUN git clone https://github.com/OWNER/REPO.git` then `WORKDIR .../REPO` (or `cd REPO` in a RUN)
# and `pip install .` (or `-e .`) installs the clone from source. opscan reads no network, so the
# checkout itself (its setup.py, its name) is unknown. What the file does say is which repository
# the folder is: the clone's folder (the repository's name, or the folder given after the URL). The
# install is an entry of kind `path`, named after that repository and keeping it as `inferred`
# (`github.com/owner/repo`), so it is judged only against the catalog of CUDA-only libraries, by the
# repository's name or by a catalog row whose source is that repository's home page (NOTE [catalog
# repositories] in scan/dependencies.py), at the install's line; a clone the catalog does not name
# gives no finding (nothing is claimed of an unknown checkout), nor does `pip install .` of a folder
# no clone of the file made (the project's own source), nor a clone whose URL holds a variable the
# file does not resolve. The current folder is followed through WORKDIR and `cd` (a `cd` in one RUN
# ends with it, as the shell's does); `cd ..`, `cd -` or a variable makes it unknown.
_CLONE = re.compile(r"^git\s+clone\b")


class Clones:
    """The repositories cloned so far and the current folder (NOTE [cloned checkouts])."""

    def __init__(self) -> None:
        self.folders: dict[str, tuple[str, str]] = {}   # folder name -> (URL, github.com/owner/repo)
        self.workdir = "/"   # Docker's default

    def workdir_to(self, path: str) -> None:
        self.workdir = _moved(self.workdir, path.strip().strip("'\""))

    def run(self, rest: str, line: int) -> list[Entry]:
        """The cloned checkouts a RUN installs from source, and the clones it makes."""
        out: list[Entry] = []
        here = self.workdir
        for command in re.split(r"&&|\|\||;", rest):
            try:
                words = shlex.split(command, posix=True)
            except ValueError:
                words = command.split()
            text = " ".join(words)
            if _CLONE.match(text):
                self._clone(words[2:])
            elif words[:1] == ["cd"]:
                here = _moved(here, words[1] if len(words) > 1 else "")
            elif re.search(r"(?:^|\s)(?:[\w.-]*/)*(?:uv\s+)?pip[\d.]*\s+install\s", text) and \
                    any(word in (".", "./") for word in words):
                folder = here.rstrip("/").rsplit("/", 1)[-1]
                if folder in self.folders:
                    url, repository = self.folders[folder]
                    out.append(Entry(line, "path", canonicalize_name(folder), url=url, text=".",
                                     inferred=repository))
        return out

    def _clone(self, words: list[str]) -> None:
        options_with_values = ("-b", "--branch", "--depth", "-o", "--origin", "-c", "--config", "--reference",
                               "--jobs", "-j", "--filter", "--shallow-since", "--shallow-exclude", "--separate-git-dir")
        args: list[str] = []
        skip = False
        for word in words:
            if skip:
                skip = False
            elif word in options_with_values:
                skip = True
            elif not word.startswith("-"):
                args.append(word)
        if not args or "$" in args[0]:
            return
        inferred = inferred_name("git+" + args[0])
        if inferred is None:
            return
        folder = args[1].rstrip("/").rsplit("/", 1)[-1] if len(args) > 1 else \
            args[0].rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
        if folder and "$" not in folder:
            self.folders[folder] = (args[0], inferred.repository)


def _moved(here: str, path: str) -> str:
    """The folder after `cd path` from `here` ("" = unknown)."""
    if not path or "$" in path or path in ("-", "~") or ".." in path.split("/"):
        return ""
    if path.startswith("/"):
        return path
    return f"{here.rstrip('/')}/{path}" if here else ""
