"""Project facts the per-file scan needs: compiled extension modules declared in setup.py / pyproject.

setup.py is parsed, never run: the names come from the first argument (or `name=`) of calls to
`Extension`, `CppExtension`, `CUDAExtension`, `SyclExtension`, `Pybind11Extension`. Names built at
run time (f-strings, variables) are not known statically and are skipped.
"""

from __future__ import annotations

import ast
import os
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass

EXTENSION_CALLS = ("Extension", "CppExtension", "CUDAExtension", "SyclExtension", "Pybind11Extension",
                   "CUDAExtensionWithArch")


@dataclass(frozen=True)
class Project:
    """What the scan knows about the scanned tree as a whole."""

    extensions: frozenset[str] = frozenset()   # dotted module names of compiled extensions
    packages: frozenset[str] = frozenset()     # top-level modules of the scanned tree itself
    # the tree's own thin wrappers of kernel-registration / custom-op lookup APIs, as
    # "dotted.module.function=RULEID" (found by a first pass: wrappers.py NOTE [wrappers across files])
    wrappers: frozenset[str] = frozenset()
    # files other requirements files include with `-r`/`-c` whose names do not say they are one
    # (`-r extra.txt`): scanned as requirements files (file_scan.py NOTE [manifests in the scan])
    requirements: frozenset[str] = frozenset()


EMPTY = Project()


def setup_py_extensions(data: bytes) -> set[str]:
    """Extension module names declared in a setup.py (statically; unparsable files give none)."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        leaf = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if leaf not in EXTENSION_CALLS:
            continue
        value = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "name"), None)
        if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value:
            names.add(value.value)
    return names


def pyproject_extensions(data: bytes) -> set[str]:
    """`[tool.setuptools] ext-modules = [{name = ...}]` entries of a pyproject.toml."""
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return set()
    # each level checked: `tool = "x"` or `ext-modules = 3` is valid TOML and once ended the whole scan
    tool = doc.get("tool")
    setuptools = tool.get("setuptools") if isinstance(tool, dict) else None
    modules = setuptools.get("ext-modules") if isinstance(setuptools, dict) else None
    return {m["name"] for m in modules if isinstance(m, dict) and isinstance(m.get("name"), str)} \
        if isinstance(modules, list) else set()


def local_packages(root_name: str, root_is_package: bool, relpaths: Iterable[str]) -> frozenset[str]:
    """Top-level modules the scanned tree defines: its own packages are not third-party imports.

    The root itself when it is a package, its top-level packages and modules, and those under
    `src/` (the src layout).
    """
    names = {root_name} if root_is_package and root_name else set()
    for rel in relpaths:
        parts = rel.split("/")
        if parts[0] == "src" and len(parts) > 1:
            parts = parts[1:]
        if len(parts) >= 2 and parts[-1] == "__init__.py" and len(parts) == 2:
            names.add(parts[0])
        elif len(parts) == 1 and parts[0].endswith(".py"):
            names.add(parts[0][:-3])
    return frozenset(n for n in names if n.isidentifier())


def packages_on_disk(root: str | os.PathLike[str]) -> frozenset[str]:
    """local_packages() for a folder on disk: its own top level (and `src/`), whatever is scanned."""
    from pathlib import Path

    root = Path(root)
    rels: list[str] = []
    for base, prefix in ((root, ""), (root / "src", "src/")):
        try:
            entries = list(base.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir() and (entry / "__init__.py").is_file():
                rels.append(f"{prefix}{entry.name}/__init__.py")
            elif entry.suffix == ".py" and not prefix:
                rels.append(entry.name)
    return local_packages(root.name, (root / "__init__.py").is_file(), rels)


def project_from_files(files: dict[str, bytes], packages: frozenset[str] = frozenset()) -> Project:
    """Build the Project from the build files among `files` (relative path -> bytes)."""
    names: set[str] = set()
    for relpath, data in files.items():
        base = relpath.rsplit("/", 1)[-1]
        if base == "setup.py":
            names |= setup_py_extensions(data)
        elif base == "pyproject.toml":
            names |= pyproject_extensions(data)
    return Project(frozenset(names), packages)
