"""Conda manifests: environment files (`environment.yml`) and conda package lists saved under a
requirements name (`conda list --export > requirements.txt`), read as conda match specs. Entries and
problems are scan/manifests.py's.
"""

from __future__ import annotations

import re

import yaml
from packaging.utils import canonicalize_name

from opscan.scan.manifests import CONDA_NAMES, Entry, Problem, TextLines, logical_lines, pip_arguments, \
    requirement_line


def conda_spec(spec: str) -> tuple[str, str, str]:
    """A conda match spec (`pytorch=2.0.1=py3.10_cuda11.8*`, `cudatoolkit 11.3`, `nvidia::cuda-nvcc`) as
    (canonical name, PEP 440 specifier or "", build string)."""
    spec = spec.strip()
    if "::" in spec:
        spec = spec.split("::", 1)[1]
    spec = re.sub(r"\[.*\]$", "", spec)
    match = re.match(r"^([A-Za-z0-9_.\-]+)\s*(.*)$", spec)
    if not match:
        return "", "", ""
    name, rest = match[1], match[2].strip()
    build = ""
    version = rest
    if " " in rest:
        version, build = rest.split(None, 1)
    elif rest.count("=") >= 2 and not rest.startswith(("==", ">=", "<=", "!=")):
        version, build = rest[1:].split("=", 1) if rest.startswith("=") else rest.split("=", 1)
    elif rest.startswith("==") and rest[2:].count("=") == 1:
        version, build = rest[2:].split("=", 1)
        version = "==" + version
    version = version.strip()
    if version.startswith("=") and not version.startswith("=="):
        version = version[1:]
    if version and version[0].isdigit():
        version = f"=={version}" if "*" in version or version.count(".") >= 2 else f"=={version}.*"
    name = CONDA_NAMES.get(name.lower(), name)
    return canonicalize_name(name), version, build.strip()


def read_conda(text: str) -> tuple[list[Entry], list[Problem]]:
    """environment.yml: `channels`, `dependencies` (match specs) and their `pip:` list."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return [], [Problem(mark.line + 1 if mark else 1, f"not valid YAML: {getattr(exc, 'problem', exc)}")]
    if not isinstance(doc, dict) or not isinstance(doc.get("dependencies"), list):
        return [], []   # not a conda environment
    lines = TextLines(text)
    entries: list[Entry] = []
    problems: list[Problem] = []
    for channel in doc.get("channels") or []:
        if isinstance(channel, str):
            line = lines.find(rf"^[ \t]*-[ \t]*[\"']?{re.escape(channel)}[\"']?\s*(#.*)?$", 0, regex=True) or 1
            entries.append(Entry(line, "index", name=channel, url=channel, text=channel))
    after = lines.find(r"^dependencies\s*:", 0, regex=True)
    start = lines.offset(after)
    for item in doc["dependencies"]:
        if isinstance(item, str):
            line = lines.find(rf"^[ \t]*-[ \t]*[\"']?{re.escape(item)}", start, regex=True) or after or 1
            name, spec, build = conda_spec(item)
            if name:
                entries.append(Entry(line, "conda", name, spec, build=build, text=item, url=item.split("::")[0]
                                     if "::" in item else ""))
        elif isinstance(item, dict) and isinstance(item.get("pip"), list):
            for value in item["pip"]:
                if not isinstance(value, str):
                    continue
                line = lines.find(rf"^[ \t]*-[ \t]*[\"']?{re.escape(value)}", start, regex=True) or after or 1
                if value.strip().startswith("-") or re.search(r"\s-", value):
                    pip_arguments(value.split(), line, entries, problems, strict=not value.startswith("-"))
                else:   # one requirement, spaces allowed as in a requirements file (`torch == 1.7.1`)
                    requirement_line(line, value.strip(), entries, problems, [])
    return entries, problems


# NOTE [conda lists under a requirements name]
# `conda list --export > requirements.txt` writes one `name=version=build` per line under a
# `# platform: linux-64` header, the file `conda create --file` reads. pip cannot read it, and
# reading it as pip requirements gave one OPS000 error per line (93 in one repository of the
# precision sweep). A requirements-named file with that header, or whose lines are mostly
# `name=version=build`, is read as conda match specs (`conda_spec`), as an environment file's
# dependencies are: `pytorch=1.7.1=py3.8_cuda11.0...` is a torch pin, `cudatoolkit=11.0.221=...`
# a conda CUDA package. `@EXPLICIT` lists of package URLs are not read as specs.
_CONDA_EXPORT = re.compile(r"^[A-Za-z0-9_.\-]+=[^=\s]+=\S+$")


def conda_list(text: str) -> bool:
    """Whether a requirements-named file is a conda package list (NOTE [conda lists under a requirements name])."""
    if "@EXPLICIT" in text:
        return False
    if re.search(r"^#\s*platform:\s*\S+", text, re.M):
        return True
    logical = [entry for _, entry in logical_lines(text)]
    return bool(logical) and 2 * sum(bool(_CONDA_EXPORT.match(entry)) for entry in logical) > len(logical)


def read_conda_list(text: str) -> tuple[list[Entry], list[Problem]]:
    """A conda package list under a requirements name: each line a match spec (NOTE [conda lists
    under a requirements name]); pip options in it are skipped."""
    entries: list[Entry] = []
    problems: list[Problem] = []
    for line, logical in logical_lines(text):
        if logical.startswith("-"):
            continue
        name, spec, build = conda_spec(logical)
        if name:
            entries.append(Entry(line, "conda", name, spec, build=build, text=logical))
        else:
            problems.append(Problem(line, f"not a conda match spec: {logical!r}"))
    return entries, problems
