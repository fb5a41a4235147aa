"""The TOML manifests: pyproject.toml (PEP 621, dependency groups, Poetry, uv, PDM), Pipfile and the locks.

Read with `tomllib` (and `json` for Pipfile.lock) into scan/manifests.py's `Entry` records; lines
are found in the text (NOTE [manifest entries] in manifests.py).
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import replace
from typing import Any
from urllib.parse import unquote

from packaging.markers import Marker
from packaging.utils import canonicalize_name

from opscan.scan.manifests import (Entry, Problem, TextLines, find_links_torch, installs_on_linux, requirement,
                                    wheel_version)


def _toml(text: str) -> dict[str, Any] | Problem:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"line (\d+)", str(exc))
        line = int(match[1]) if match else (text.count("\n") + 1 if "end of document" in str(exc) else 1)
        return Problem(line, f"not valid TOML: {exc}")


def _table(doc: dict[str, Any], key: str) -> dict[str, Any]:
    """`doc[key]` when it is a table, else an empty one (a hand-written `tool = "x"` is no table)."""
    value = doc.get(key)
    return value if isinstance(value, dict) else {}


def _quoted_line(lines: TextLines, value: str, after: int) -> int:
    for quote in ('"', "'"):
        line = lines.find(f"{quote}{value}{quote}", after)
        if line:
            return line
    return lines.find(value, after) or lines.line_at(after)


def _requirement_list(values: object, lines: TextLines, after: int, entries: list[Entry], problems: list[Problem],
                      optional: bool = False, extra: str = "") -> None:
    if not isinstance(values, list):
        return
    for value in values:
        if not isinstance(value, str):
            continue   # a {include-group = ...} table of dependency groups
        got = requirement(value, _quoted_line(lines, value, after))
        if isinstance(got, Entry):
            entries.append(replace(got, optional=optional, extra=extra) if optional else got)
        elif isinstance(got, Problem):
            problems.append(got)


def poetry_specifier(constraint: str) -> str:
    """A Poetry constraint (`^2.0.1`, `~2.1`, `2.0.*`, `>=2,<3`, `2.0.1`) as a PEP 440 specifier."""
    constraint = constraint.strip()
    if constraint in ("", "*"):
        return ""
    out = []
    for part in re.split(r"\s*,\s*|\s+(?=[<>=!~^])", constraint):
        part = part.strip()
        if not part:
            continue
        if part[0] in "^~" and not part.startswith("~="):
            caret = part[0] == "^"
            numbers = [int(p) if p.isdigit() else 0 for p in part[1:].strip().split(".")]
            lower = ".".join(str(n) for n in numbers)
            if caret:
                index = next((i for i, n in enumerate(numbers) if n != 0), len(numbers) - 1)
            else:
                index = min(1, len(numbers) - 1) if len(numbers) > 1 else 0
            upper = numbers[:index + 1]
            upper[-1] += 1
            out += [f">={lower}", f"<{'.'.join(map(str, upper))}"]
        elif part[0].isdigit():
            out.append(f"=={part}")
        else:
            out.append(part)
    return ",".join(out)


def _poetry_dependencies(table: object, lines: TextLines, after: int, entries: list[Entry],
                         optional: bool = False) -> None:
    if not isinstance(table, dict):
        return
    for name, value in table.items():
        if name == "python":
            continue
        line = lines.find(rf"^[ \t]*[\"']?{re.escape(name)}[\"']?[ \t]*=", after, regex=True) or lines.line_at(after)
        for item in value if isinstance(value, list) else [value]:
            spec, url, extra = "", "", optional
            marker: Marker | None = None
            if isinstance(item, str):
                spec = poetry_specifier(item)
            elif isinstance(item, dict):
                spec = poetry_specifier(str(item.get("version", "")))
                extra = extra or bool(item.get("optional"))
                url = str(item.get("url", "") or item.get("git", "") or "")
                if item.get("markers"):
                    try:
                        marker = Marker(str(item["markers"]))
                    except Exception:  # noqa: BLE001 - an unreadable marker: keep the dependency
                        marker = None
                if str(item.get("platform", "linux")) not in ("linux", ""):
                    continue
            if not installs_on_linux(marker):
                continue
            entries.append(Entry(line, "requirement", canonicalize_name(name), spec, url=url,
                                 text=f"{name} = {item!r}" if not isinstance(item, str) else f"{name} = {item}",
                                 optional=extra))


def _sources(items: object, lines: TextLines, entries: list[Entry], key: str = "url") -> None:
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get(key), str):
            url = item[key]
            entries.append(Entry(_quoted_line(lines, url, 0), "index", name=str(item.get("name", "")), url=url,
                                 text=url))


def read_pyproject(text: str) -> tuple[list[Entry], list[Problem]]:
    """PEP 621 dependencies and extras, dependency groups, build requirements, Poetry's
    dependencies, groups and sources, `[tool.uv]` sources and indexes, PDM's sources."""
    doc = _toml(text)
    if isinstance(doc, Problem):
        return [], [doc]
    lines = TextLines(text)
    entries: list[Entry] = []
    problems: list[Problem] = []
    project = _table(doc, "project")
    _requirement_list(project.get("dependencies"), lines, lines.section("project"), entries, problems)
    extras = project.get("optional-dependencies")
    if isinstance(extras, dict):
        after = lines.section("project.optional-dependencies")
        for name, values in extras.items():
            _requirement_list(values, lines, after, entries, problems, optional=True, extra=str(name))
    groups = doc.get("dependency-groups")
    if isinstance(groups, dict):
        after = lines.section("dependency-groups")
        for name, values in groups.items():
            _requirement_list(values, lines, after, entries, problems, optional=True, extra=str(name))
    build = doc.get("build-system")
    if isinstance(build, dict):
        _requirement_list(build.get("requires"), lines, lines.section("build-system"), entries, problems)
    tool = _table(doc, "tool")
    poetry = _table(tool, "poetry")
    if poetry:
        _poetry_dependencies(poetry.get("dependencies"), lines, lines.section("tool.poetry.dependencies"), entries)
        _poetry_dependencies(poetry.get("dev-dependencies"), lines, lines.section("tool.poetry.dev-dependencies"),
                             entries, optional=True)
        for name, group in _table(poetry, "group").items():
            if isinstance(group, dict):
                _poetry_dependencies(group.get("dependencies"), lines,
                                     lines.section(f"tool.poetry.group.{name}.dependencies"), entries,
                                     optional=bool(group.get("optional")) or name != "main")
        _sources(poetry.get("source"), lines, entries)
    uv = _table(tool, "uv")
    if uv:
        _sources(uv.get("index"), lines, entries)
        _uv_sources(uv.get("sources"), lines, lines.section("tool.uv.sources"), entries)
        for key in ("dev-dependencies", "constraint-dependencies", "override-dependencies"):
            _requirement_list(uv.get(key), lines, lines.section("tool.uv"), entries, problems,
                              optional=key == "dev-dependencies")
        _uv_locations(uv, lines, entries)
        _uv_locations(_table(uv, "pip"), lines, entries)
    _own_tool_dependencies(project, tool, lines, entries, problems)
    pdm = _table(tool, "pdm")
    if pdm:
        _sources(pdm.get("source"), lines, entries)
        dev = pdm.get("dev-dependencies")
        if isinstance(dev, dict):
            for values in dev.values():
                _requirement_list(values, lines, lines.section("tool.pdm.dev-dependencies"), entries, problems,
                                  optional=True)
    return entries, problems


# NOTE [dynamic dependencies in the project's own table]
# A project whose `[project] dynamic` lists "dependencies" has them filled by its build backend
# (PEP 621). When the backend is the project's own (an in-tree backend, `backend-path`, reading
# `[tool.<its name>...]`), that table is where the base dependencies are written: a `dependencies`
# array of strings in a table under `[tool.<project name>]` (the name as `[project] name` spells it,
# or canonical) is read as the base dependencies, at its lines. Nothing else of a tool table is
# read: another tool's `dependencies` key (`[tool.foo] dependencies`) is that tool's, and a project
# that does not declare its dependencies dynamic has them in `[project]`.
def _own_tool_dependencies(project: dict[str, Any], tool: dict[str, Any], lines: TextLines,
                           entries: list[Entry], problems: list[Problem]) -> None:
    dynamic = project.get("dynamic")
    name = project.get("name")
    if not isinstance(dynamic, list) or "dependencies" not in dynamic or not isinstance(name, str):
        return
    own = next((key for key in tool if key == name or canonicalize_name(key) == canonicalize_name(name)), None)
    stack: list[tuple[str, object]] = [(f"tool.{own}", tool[own])] if own is not None else []
    while stack:
        header, table = stack.pop()
        if not isinstance(table, dict):
            continue
        values = table.get("dependencies")
        if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
            _requirement_list(values, lines, lines.section(header), entries, problems)
        stack += [(f"{header}.{key}", value) for key, value in sorted(table.items(), reverse=True)]


# NOTE [uv locations]
# uv reads where it installs from in `[tool.uv]` (its project interface) and `[tool.uv.pip]` (its pip
# interface): `index-url` (one URL), `extra-index-url` and `find-links` (lists of URLs or paths;
# find-links are flat pages or folders of wheels, like pip's `--find-links`), beside the
# `[[tool.uv.index]]` tables (uv's settings reference, https://docs.astral.sh/uv/reference/settings/).
# Each is an index entry at its quoted line, judged by the index rule's URL patterns (OPS504); a
# find-links page of one torch's builds (`.../torch-2.1.0+cu121.html`) is also judged as a torch pin,
# as in a requirements file. PDM's find-links are `[[tool.pdm.source]]` tables with
# `type = "find_links"` (read with the other sources); pip reads no pyproject.toml table of settings.
def _uv_locations(table: dict[str, Any], lines: TextLines, entries: list[Entry]) -> None:
    """Index entries of `index-url`, `extra-index-url` and `find-links` in a uv table (NOTE [uv locations])."""
    for key in ("index-url", "extra-index-url", "find-links"):
        value = table.get(key)
        for url in [value] if isinstance(value, str) else value if isinstance(value, list) else []:
            if isinstance(url, str) and url:
                line = _quoted_line(lines, url, 0)
                entries.append(Entry(line, "index", url=url, text=url))
                if key == "find-links":
                    found = find_links_torch(url, line)
                    if found is not None:
                        entries.append(found)


# NOTE [uv sources]
# `[tool.uv.sources]` says where uv takes a package from: `{ url = ... }`, `{ path = ... }`,
# `{ git = ... }`, `{ index = ... }`, or a list of such tables, each with an optional `marker`.
# A source whose marker excludes a Linux x86_64 host is skipped (as a requirement's marker is).
# A url or path naming a wheel is read as the requirement it installs (NOTE [wheel URLs] in
# manifests.py: percent-decoded, `vllm-0.21.0%2Bcu129-...whl` is the pin `vllm==0.21.0+cu129`,
# judged like any pin: its CUDA label, its torch version, its package). Another url or a git
# source is a location, judged by the index rule's URL patterns only. An index source names the
# `[[tool.uv.index]]` a package comes from: the index's own line is judged (`uv_sources` gives the
# packages pinned to it for its message). A source table of another shape is skipped.
def _source_items(sources: object) -> list[tuple[str, dict[str, Any]]]:
    """(canonical package, source table) of the tables that apply on a Linux x86_64 host."""
    out: list[tuple[str, dict[str, Any]]] = []
    if not isinstance(sources, dict):
        return out
    for name, value in sources.items():
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, dict):
                continue
            if isinstance(item.get("marker"), str):
                try:
                    if not installs_on_linux(Marker(item["marker"])):
                        continue
                except Exception:  # noqa: BLE001 - an unreadable marker: keep the source
                    pass
            out.append((canonicalize_name(str(name)), item))
    return out


def _uv_sources(sources: object, lines: TextLines, after: int, entries: list[Entry]) -> None:
    """Entries of `[tool.uv.sources]` url, path and git sources (NOTE [uv sources])."""
    for name, item in _source_items(sources):
        for key in ("url", "path", "git"):
            where = item.get(key)
            if not isinstance(where, str) or not where:
                continue
            line = _quoted_line(lines, where, after)
            wheel = wheel_version(where) if key != "git" else None
            if wheel is not None and wheel[0] == name:
                entries.append(Entry(line, "requirement", name, f"=={wheel[1]}", url=unquote(where),
                                     text=f"{name} = {{ {key} = {where!r} }}"))
            elif key != "path":
                entries.append(Entry(line, "index", url=unquote(where), text=f"{name} = {{ {key} = {where!r} }}"))


def uv_sources(text: str) -> dict[str, str]:
    """`[tool.uv.sources]`: package -> the index name it is pinned to on Linux (for the index
    rule's message; NOTE [uv sources])."""
    doc = _toml(text)
    if isinstance(doc, Problem):
        return {}
    sources = _table(_table(doc, "tool"), "uv").get("sources")
    return {name: item["index"] for name, item in _source_items(sources) if isinstance(item.get("index"), str)}


def extra_names(text: str) -> tuple[str, ...]:
    """The names of a pyproject's extras and dependency groups, empty ones included (NOTE [CUDA
    alternatives] in scan/alternatives.py: a CPU-named extra with nothing in it is still the CPU path)."""
    doc = _toml(text)
    if isinstance(doc, Problem):
        return ()
    out: list[str] = []
    for table in (_table(doc, "project").get("optional-dependencies"), doc.get("dependency-groups")):
        if isinstance(table, dict):
            out.extend(str(name) for name in table)
    return tuple(out)


def project_name(text: str) -> str:
    """`[project] name` (canonical) of a pyproject.toml, or "": its extras may name the project itself
    (`all = ["sglang[srt]"]`), which is a reference to its own extra, judged at that extra's lines."""
    doc = _toml(text)
    if isinstance(doc, Problem):
        return ""
    project = doc.get("project")
    name = project.get("name") if isinstance(project, dict) else None
    return canonicalize_name(name) if isinstance(name, str) else ""


def read_pipfile(text: str) -> tuple[list[Entry], list[Problem]]:
    """Pipfile: [packages], [dev-packages] and [[source]] urls."""
    doc = _toml(text)
    if isinstance(doc, Problem):
        return [], [doc]
    lines = TextLines(text)
    entries: list[Entry] = []
    for section in ("packages", "dev-packages"):
        table = doc.get(section)
        if not isinstance(table, dict):
            continue
        after = lines.section(section)
        for name, value in table.items():
            line = lines.find(rf"^[ \t]*[\"']?{re.escape(name)}[\"']?[ \t]*=", after, regex=True) \
                or lines.line_at(after)
            spec = value if isinstance(value, str) else str((value or {}).get("version", "")) \
                if isinstance(value, dict) else ""
            spec = "" if spec.strip() in ("", "*") else spec.strip()
            entries.append(Entry(line, "requirement", canonicalize_name(name), spec, text=f"{name} = {value!r}",
                                 optional=section == "dev-packages"))
    _sources(doc.get("source"), lines, entries)
    return entries, []


def read_toml_lock(text: str) -> tuple[list[Entry], list[Problem]]:
    """uv.lock, poetry.lock, pdm.lock: each [[package]]'s name, version and the index it came from."""
    doc = _toml(text)
    if isinstance(doc, Problem):
        return [], [doc]
    lines = TextLines(text)
    entries: list[Entry] = []
    packages = doc.get("package")
    for package in packages if isinstance(packages, list) else []:
        if not isinstance(package, dict) or not isinstance(package.get("name"), str):
            continue
        name = package["name"]
        line = lines.find(rf"^[ \t]*name[ \t]*=[ \t]*[\"']{re.escape(name)}[\"']", 0, regex=True)
        # NOTE [lock versions]: a package's version is looked for in its own [[package]] table only
        # (uv writes none for a workspace member whose version is dynamic; searching on would hand
        # the next package's version line to this one and shift every later package by one)
        end = _next_package(lines.text, lines.offset(line) + 1) if line else None
        version_line = lines.find(r"^[ \t]*version[ \t]*=", lines.offset(line), regex=True, before=end) \
            if line else 0
        source = package.get("source")
        url = ""
        if isinstance(source, dict):
            url = str(source.get("registry") or source.get("url") or "")
        entries.append(Entry(version_line or line or 1, "locked", canonicalize_name(name),
                             version=str(package.get("version", "")), url=url,
                             text=f"{name} {package.get('version', '')}"))
    return entries, []


def _next_package(text: str, after: int) -> int | None:
    """The offset of the next `[[package]]` header at or after `after` (None: the package runs to the end)."""
    match = re.compile(r"^[ \t]*\[\[package\]\]", re.M).search(text, after)
    return match.start() if match else None


def read_pipfile_lock(text: str) -> tuple[list[Entry], list[Problem]]:
    """Pipfile.lock (JSON): the resolved `version` of each package and `_meta.sources`."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        return [], [Problem(exc.lineno, f"not valid JSON: {exc.msg}")]
    if not isinstance(doc, dict):
        return [], [Problem(1, "not a Pipfile.lock (no JSON object)")]
    lines = TextLines(text)
    entries: list[Entry] = []
    for section in ("default", "develop"):
        table = doc.get(section)
        if not isinstance(table, dict):
            continue
        after = lines.find(f'"{section}"', 0)
        for name, value in table.items():
            version = str(value.get("version", "")) if isinstance(value, dict) else ""
            line = lines.find(f'"{name}": {{', lines.offset(after)) or 1
            entries.append(Entry(line, "locked", canonicalize_name(name), version=version.lstrip("="),
                                 text=f"{name} {version}"))
    meta = _table(doc, "_meta")
    _sources(meta.get("sources"), lines, entries)
    return entries, []


