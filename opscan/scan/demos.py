"""Demo blocks of library modules: findings under `if __name__ == "__main__":` in a module the project imports."""

# NOTE [demo blocks]
# A library module often ends with a demo: `if __name__ == '__main__': model = ViT().cuda()`. That
# block runs only when someone runs the file itself, never when the rest of the project imports the
# module, so its `.cuda()` is not the library's blocker. A finding inside such a block is reported
# apart: a warning whose message names the block, instead of an error that blocks. This holds when
#   - the block is a module-level `if __name__ == "__main__":` (either operand order, `==` only);
#   - another module of the scanned tree imports the module (by its dotted name from the root or
#     `src/`, or a dotted tail of it, as a script that puts its folder on sys.path does; `from pkg
#     import model` counts for pkg/model.py);
#   - nothing says the file is run as a script: its path (`python tools/demo.py`, `torchrun
#     train.py`) or module (`python -m pkg.model`) in a README, a docs page, a shell script, a
#     Makefile or a CI workflow, or an entry point (`[project.scripts]`, console_scripts) in its module.
# Per file, the scan records the blocks' lines (`FileResult.demos`) and the modules the file
# imports (`FileResult.modules`, read from the text, also for files the pre-check skips), both
# cached with the file; the decision is made over the whole result (`demote`), so it follows the
# tree as it is. A scan of some files only (the pre-commit hook) reads the other Python files of
# the project for their imports, once, and only when a scanned file has a finding in such a block.

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from opscan.records import Finding, Severity

_IMPORT = re.compile(r"[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+\(?([^\n#]*)|import[ \t]+([^\n#]*))", re.M)
_NAME = re.compile(r"[A-Za-z_][\w.]*")
_SCRIPT_PATH = re.compile(r"(?<![\w/.-])\.?/?((?:[\w.-]+/)*[\w-]+\.py)\b")
_SCRIPT_MODULE = re.compile(r"(?:^|\s)-m[ \t]+([A-Za-z_][\w.]*)")
_ENTRY_POINT = re.compile(r"""["']?[\w.-]+["']?[ \t]*=[ \t]*["']?([A-Za-z_][\w.]*):[A-Za-z_]\w*""")
_DOC_SUFFIXES = (".md", ".rst", ".txt", ".sh", ".bash", ".yml", ".yaml", ".cfg", ".toml", ".ipynb")
_DOC_NAMES = ("Makefile", "Dockerfile", "justfile", "setup.py", "Procfile")


def blocks(tree: ast.Module) -> tuple[tuple[int, int], ...]:
    """The lines (first, last) of each module-level `if __name__ == "__main__":` block."""
    out = []
    for stmt in tree.body:
        if isinstance(stmt, ast.If) and _is_main_test(stmt.test) and stmt.body:
            out.append((stmt.lineno, stmt.body[-1].end_lineno or stmt.body[-1].lineno))
    return tuple(out)


def _is_main_test(test: ast.AST) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and \
        any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)


def module_name(relpath: str) -> str:
    """The dotted module of a Python file of the tree (`src/` dropped, `__init__.py` is its package)."""
    parts = relpath[:-3].split("/") if relpath.endswith(".py") else relpath.split("/")
    if parts and parts[0] == "src" and len(parts) > 1:
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imported_modules(text: str, relpath: str) -> tuple[str, ...]:
    """The dotted names the file's import statements name (relative ones resolved against its
    package; `from X import a` gives X and X.a, since `a` may be a module), read from the text."""
    if "import" not in text:
        return ()
    package = module_name(relpath).split(".")
    if not relpath.endswith("__init__.py"):
        package = package[:-1]
    out: set[str] = set()
    for match in _import_statements(text):
        dots, base, names, plain = match.groups()
        if plain is not None:   # import a.b as c, d
            for part in plain.split(","):
                words = _NAME.findall(part)
                if words:
                    out.add(words[0])
            continue
        if dots:
            up = len(dots) - 1
            if up > len(package):
                continue
            prefix = package[:len(package) - up]
            base = ".".join([*prefix, base] if base else prefix)
        if not base:
            continue
        out.add(base)
        for part in (names or "").split(","):
            words = _NAME.findall(part)
            if words and words[0] != "*":
                out.add(f"{base}.{words[0]}")
    return tuple(sorted(out))


def _import_statements(text: str) -> Iterator[re.Match[str]]:
    """_IMPORT's matches, tried only at the start of the lines that spell "import" (a literal search
    the regex engine does fast) instead of at every line: the same matches, a few times faster."""
    seen = -1
    pos = text.find("import")
    while pos != -1:
        start = text.rfind("\n", 0, pos) + 1
        if start != seen:
            seen = start
            match = _IMPORT.match(text, start)
            if match is not None:
                yield match
        pos = text.find("import", pos + 6)


def run_as_scripts(texts: Iterable[str]) -> tuple[frozenset[str], frozenset[str]]:
    """The script paths (`tools/demo.py`) and modules (`pkg.cli`) that the given texts of the
    project's docs, shell scripts and build files run or name as entry points."""
    paths: set[str] = set()
    modules: set[str] = set()
    for text in texts:
        paths.update(m.lstrip("./") for m in _SCRIPT_PATH.findall(text))
        modules.update(_SCRIPT_MODULE.findall(text))
        modules.update(_ENTRY_POINT.findall(text))
    return frozenset(paths), frozenset(modules)


def is_script_doc(relpath: str) -> bool:
    """Whether a file of the tree may say which Python files are run (a README, docs, scripts, CI)."""
    base = relpath.rsplit("/", 1)[-1]
    return base in _DOC_NAMES or base.endswith(_DOC_SUFFIXES) or base.startswith("README")


def demote(results: Sequence[Any], importers: dict[str, tuple[str, ...]],
           scripts: tuple[frozenset[str], frozenset[str]]) -> list[Any]:
    """The results with each finding inside a demo block of an imported library module turned into a
    warning naming the block (NOTE [demo blocks]); `importers`: relpath -> the modules it imports."""
    imported: dict[str, set[str]] = {}
    for path, names in importers.items():
        for name in names:
            imported.setdefault(name, set()).add(path)
    paths, modules = scripts
    out: list[Any] = []
    for result in results:
        spans = getattr(result, "demos", ())
        if not spans or not result.findings or not result.path.endswith(".py"):
            out.append(result)
            continue
        module = module_name(result.path)
        parts = module.split(".")
        tails = {".".join(parts[i:]) for i in range(len(parts))}
        library = any(imported.get(tail, set()) - {result.path} for tail in tails)
        script = module in modules or any(result.path == p or result.path.endswith("/" + p) for p in paths)
        if not library or script:
            out.append(result)
            continue
        out.append(replace(result, findings=tuple(_in_block(f, spans) for f in result.findings)))
    return out


def _in_block(finding: Finding, spans: Sequence[tuple[int, int]]) -> Finding:
    if finding.severity != Severity.ERROR:
        return finding
    for first, last in spans:
        if first <= finding.location.line <= last:
            where = f"line {first}" if first == last else f"lines {first}-{last}"
            return replace(finding, severity=Severity.WARNING,
                           message=f"{finding.message} (in the `__main__` demo block, {where}, of a module the "
                                   "project imports: it runs only when the file is run itself)")
    return finding


def apply(results: list[Any], docs: Callable[[], list[tuple[str, bytes]]],
          others: Callable[[], list[tuple[str, bytes]]]) -> list[Any]:
    """NOTE [demo blocks]: findings in the `__main__` demo block of an imported library
    module become warnings naming the block. `docs()` and `others()` give (relpath, bytes) of the
    project's docs and scripts, and of its Python files that were not scanned; both are read only
    when a scanned file has an error inside such a block."""
    if not any(r.demos and any(f.severity == Severity.ERROR and any(a <= f.location.line <= b for a, b in r.demos)
                               for f in r.findings) for r in results):
        return results
    importers = {r.path: r.modules for r in results}
    for rel, data in others():
        importers[rel] = imported_modules(data.decode("utf-8", "replace"), rel)
    scripts = run_as_scripts(data.decode("utf-8", "replace") for _, data in docs())
    return demote(results, importers, scripts)


_DOC_BYTES = 1 << 20


def project_files(index: Any, keep: Callable[[str], bool], limit: int = 20_000) -> list[tuple[str, bytes]]:
    """(relpath, bytes) of the project's files that `keep` accepts (by relative path), read through
    the run's index and not kept; unreadable or large files are left out."""
    out: list[tuple[str, bytes]] = []
    for path in index.paths(lambda p: keep(index.rel(p)), limit=limit):
        rel = index.rel(path)
        try:
            data = index.data(rel, keep=False)
        except OSError:
            continue
        if len(data) <= _DOC_BYTES:
            out.append((rel, data))
    return out
