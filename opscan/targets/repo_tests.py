"""`repo-test` recipes: a repository's own tests that build one of its models and call it.

Found by reading (stdlib ast, nothing imported: `test_recipes`): in files named `test_*.py` or
`*_test.py`, test functions (`test_*` at module level, in `Test*` classes or unittest.TestCase
subclasses) whose body builds one of the repository's model classes (or calls a factory of one:
`build_*`, `create_model`, ...), directly, through a helper function or a fixture of the same
file, and calls what it built. At most one test per file and MAX_TEST_TARGETS in all (`keep`).
The target is `repo:FILE::TEST` or `repo:FILE::CLASS::TEST`.

Built in the contained child (`build_test`): the test module is imported (the repository's
conftest.py is not run), the test is called with its first `@pytest.mark.parametrize` set (read
from the decorator's literal) and the simple fixtures opscan can give (`tmp_path`, `monkeypatch`,
fixtures of the same file taking only those), and stopped at its first model call, which is taken
with its inputs (NOTE [stopping at the model call] in repository.py). It runs in a temporary
working directory in the contained child (opscan/containment/: no network), so it writes nothing
into the repository and fetches nothing (NOTE [running a repository's test]).
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath

from opscan.targets import absent
from opscan.targets.recipes import Recipe
from opscan.records import CandidateKind

MAX_TEST_TARGETS = 3     # test targets kept for a repository (the best, one per file)
SIMPLE_FIXTURES = frozenset({"tmp_path", "monkeypatch"})   # given by opscan; a same-file fixture too
_FACTORY_CALL = re.compile(r"^((build|make|create|new|get|load)_\w*(model|net|gpt|llm|transformer|network)\w*|"
                           r"build|create_model|build_model|make_model|get_model)$", re.IGNORECASE)
_LOW_PARTS = {"experiments", "experimental", "benchmarks", "benchmark", "examples", "example", "scripts"}


def is_test_file(name: str) -> bool:
    """`test_*.py` / `*_test.py`, as pytest collects them by default."""
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


# NOTE [which test]
# A test is the repository's own usage with real arguments (`Net(categories=(3, 4),
# num_continuous=2)`, which opscan cannot guess by name), so one that builds a model class of the
# repository and calls what it built ranks below the README/hubconf examples and above every
# guessed construction (recipes.rank). In a file the first such test that opscan can call is taken
# (no unsupported fixture, not marked skip); a file whose tests all need fixtures opscan cannot
# give still yields its first one, whose try then says why in one line. Tests under
# experiments/, benchmarks/, examples/, and tests that fetch weights or files first
# (`from_pretrained`, `urlretrieve`, `requests.get`, a `download_*` helper of the file: the
# network is refused, so they cannot reach their model call), rank with the guessed constructions;
# shallower files first; ties by path and line.

def test_recipes(tree: ast.Module, rel: str, models: frozenset[str]) -> list[Recipe]:
    """The best test of one test file that builds one of `models` (the repository's nn.Module
    class names) or calls a model factory, and calls what it built; [] when none does."""
    fixtures = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and _is_fixture(n)}
    helpers = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name not in fixtures
               and not n.name.startswith("test") and _builds(n, models, set())}
    building_fixtures = {name for name, node in fixtures.items() if _builds(node, models, helpers)}
    found = []
    for owner, node, setup in _tests(tree):
        built = _built_names(node, models, helpers) | {p for p in _params(node) if p in building_fixtures}
        for extra in setup:
            built |= _built_names(extra, models, helpers)
        if not built or not _calls_any(node, built):
            continue
        missing = unsupported_fixtures(node, fixtures)
        skipped = any("skip" in ast.unparse(d).split("(")[0].rsplit(".", 1)[-1] for d in node.decorator_list)
        found.append((bool(missing) or skipped, owner, node, missing))
    if not found:
        return []
    blocked, owner, node, missing = min(found, key=lambda f: (f[0], f[2].lineno))
    name = f"{owner}::{node.name}" if owner else node.name
    parts = PurePosixPath(rel).parts[:-1]
    fetchers = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and _fetches(n, set())}
    low = bool(_LOW_PARTS & set(parts)) or _fetches(node, fetchers)
    score = (100 if low else 2000) - 20 * len(parts) - (500 if blocked else 0)
    how = f"the test {rel}::{name} (line {node.lineno}), stopped at its model call"
    if parametrized(node):
        how += "; its first parameter set"
    if missing:
        how += f"; it takes the fixture {missing[0]!r}, which opscan cannot give"
    return [Recipe(f"repo:{rel}::{name}", CandidateKind.REPO_TEST, rel, node.lineno, how, score)]


_FETCH_CALLS = {"from_pretrained", "load_state_dict_from_url", "hf_hub_download", "snapshot_download",
                "urlretrieve", "urlopen", "download_url_to_file"}


def _fetches(node: ast.AST, fetchers: set[str]) -> bool:
    """Whether the code fetches weights or files (from_pretrained, urlretrieve, requests.*, download_*),
    itself or through a function of its file that does: opscan refuses the network, so it cannot
    reach its model call (NOTE [which test])."""
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            name, dotted = _call_name(call), ast.unparse(call.func)
            if name in _FETCH_CALLS or name in fetchers or name.startswith("download") \
                    or dotted.startswith(("requests.", "httpx.", "urllib.request.")):
                return True
    return False


def keep(recipes: list[Recipe]) -> list[Recipe]:
    """`recipes` with at most MAX_TEST_TARGETS `repo-test` ones (the best-ranked)."""
    tests = sorted((r for r in recipes if r.kind is CandidateKind.REPO_TEST), key=lambda r: (-r.score, r.path, r.line))
    dropped = set(tests[MAX_TEST_TARGETS:])
    return [r for r in recipes if r not in dropped]


def _tests(tree: ast.Module):
    """(class name or "", test function, [setUp / setup_method]) for each test of the module."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            yield "", node, []
        elif isinstance(node, ast.ClassDef) and (node.name.startswith("Test") or any(
                ast.unparse(b).endswith("TestCase") for b in node.bases)):   # pytest collects both
            methods = [n for n in node.body if isinstance(n, ast.FunctionDef)]
            setup = [m for m in methods if m.name in ("setUp", "setup_method")]
            for method in methods:
                if method.name.startswith("test"):
                    yield node.name, method, setup


def _is_fixture(node: ast.FunctionDef) -> bool:
    return any(ast.unparse(d).split("(")[0].endswith("fixture") for d in node.decorator_list)


def _params(node: ast.FunctionDef) -> list[str]:
    args = node.args
    return [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs if a.arg not in ("self", "cls")]


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _is_build(call: ast.Call, models: frozenset[str], helpers: set[str]) -> bool:
    """`Net(...)`, `make_model(...)`, a helper of the file that builds one, `Net.from_pretrained(...)`."""
    name = _call_name(call)
    if isinstance(call.func, ast.Attribute) and name.startswith("from_"):   # Net.from_pretrained(...)
        owner = call.func.value
        return (owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")) in models
    return name in models or name in helpers or bool(_FACTORY_CALL.match(name))


def _builds(node: ast.AST, models: frozenset[str], helpers: set[str]) -> bool:
    return any(isinstance(c, ast.Call) and _is_build(c, models, helpers) for c in ast.walk(node))


def _built_names(node: ast.AST, models: frozenset[str], helpers: set[str]) -> set[str]:
    """Names (`model`, `self.model`) assigned a model the code builds; "" for a build called at once."""
    out = set()
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Assign, ast.AnnAssign)) and isinstance(sub.value, ast.Call) \
                and _is_build(sub.value, models, helpers):
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            out |= {ast.unparse(t) for t in targets}
        elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Call) and _is_build(sub.func, models, helpers):
            out.add("")   # Net(...)(x)
    return out


# nn.Module methods that do not call the model (`model.eval()`); any other method called on what a
# test built (`model.generate(x)`, `model.forward(x)`) is taken to run it
_PLUMBING = {"eval", "train", "to", "cuda", "cpu", "half", "float", "double", "bfloat16", "load_state_dict",
             "state_dict", "parameters", "named_parameters", "buffers", "named_buffers", "modules",
             "named_modules", "children", "named_children", "zero_grad", "apply", "requires_grad_",
             "register_buffer", "register_forward_hook", "register_forward_pre_hook", "get_submodule",
             "extra_repr", "type", "share_memory"}


def _calls_any(node: ast.AST, names: set[str]) -> bool:
    """Whether the code calls one of `names` (what it built), or a method of one that runs it."""
    if "" in names:
        return True
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        if ast.unparse(call.func) in names or isinstance(call.func, ast.Attribute) \
                and ast.unparse(call.func.value) in names and call.func.attr not in _PLUMBING:
            return True
    return False


def parametrized(node: ast.FunctionDef) -> list[ast.Call]:
    """The `@pytest.mark.parametrize(...)` decorators of a test."""
    return [d for d in node.decorator_list if isinstance(d, ast.Call)
            and ast.unparse(d.func).endswith("parametrize")]


def first_parameters(node: ast.FunctionDef) -> dict[str, object]:
    """The first parameter set of each parametrize decorator, read from its literal; ValueError
    (one line) when it is not a literal opscan can read."""
    out: dict[str, object] = {}
    for deco in parametrized(node):
        names = deco.args[0] if deco.args else next((k.value for k in deco.keywords if k.arg == "argnames"), None)
        values = deco.args[1] if len(deco.args) > 1 else next((k.value for k in deco.keywords
                                                                if k.arg == "argvalues"), None)
        try:
            argnames = ast.literal_eval(names)
            first = values.elts[0] if isinstance(values, (ast.List, ast.Tuple)) and values.elts else None
            if isinstance(first, ast.Call) and _call_name(first) == "param":   # pytest.param(1, 2, id=...)
                first = ast.Tuple(elts=list(first.args), ctx=ast.Load())
            value = ast.literal_eval(first)
        except (ValueError, TypeError, SyntaxError, AttributeError):
            raise ValueError(f"its @parametrize values are not a literal opscan can read "
                             f"(line {deco.lineno})") from None
        argnames = [a.strip() for a in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
        out.update(zip(argnames, value if len(argnames) > 1 else [value]))
    return out


def unsupported_fixtures(node: ast.FunctionDef, fixtures: dict[str, ast.FunctionDef]) -> list[str]:
    """The arguments of a test that are fixtures opscan cannot give (NOTE [running a repository's test])."""
    try:
        given = set(first_parameters(node))
    except ValueError:
        given = {n for d in parametrized(node) for n in _literal_names(d)}
    out = []
    for name in _params(node):
        if name in given or name in SIMPLE_FIXTURES:
            continue
        fixture = fixtures.get(name)
        if fixture is None or set(_params(fixture)) - SIMPLE_FIXTURES:
            out.append(name)
    return out


def _literal_names(deco: ast.Call) -> list[str]:
    try:
        names = ast.literal_eval(deco.args[0])
    except (ValueError, IndexError, SyntaxError):
        return []
    return [a.strip() for a in names.split(",")] if isinstance(names, str) else list(names)


# --- the contained child --------------------------------------------------------------------------------

# NOTE [running a repository's test]
# The test runs as pytest would run it, minus what only pytest's machinery gives: its module is
# imported (through its package, as load() does for model files), conftest.py files are not run
# (their fixtures and hooks are not known), and the test is called with its first parametrize set
# and the fixtures opscan can give: `tmp_path` (a fresh folder), `monkeypatch` (pytest's, undone
# after), and a fixture of the same file whose own arguments are those (a generator fixture's first
# value). A `Test*` class is instantiated first (a unittest.TestCase with the test's name, then
# setUp; a plain class, then setup_method). Every Parameter is on `meta` and nn.Module.__call__
# raises at the first model call (repository.py `stop_at_model_call`), so the test's assertions on
# outputs never run. Its working directory is a temporary folder (in the child's scratch folder),
# and the child has no network (opscan/containment/: a network namespace, not patched sockets),
# so a test that downloads a checkpoint fails in one line instead of fetching it, and nothing is
# written into the repository.

def build_test(path, spec: str, root, target: str, *, load, stop):
    """The model and inputs of a `repo:FILE::[CLASS::]TEST` target (NOTE [running a repository's test]);
    `load` and `stop`: repository.py's `load` and `stop_at_model_call` (it calls this one)."""
    import contextlib
    import os
    import tempfile
    from pathlib import Path

    from opscan.errors import TargetError
    from opscan.targets.empty import first_line

    names = spec.split("::")
    owner, name = (names[0], names[1]) if len(names) == 2 else ("", names[0])
    tree = ast.parse(Path(path).read_bytes(), filename=str(path))
    fixtures = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and _is_fixture(n)}
    holder = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner), None) if owner else tree
    node = next((n for n in (holder.body if holder is not None else []) if isinstance(n, ast.FunctionDef)
                 and n.name == name), None)
    if node is None:
        raise TargetError(f"{target}: {Path(path).name} has no test {spec!r}")
    missing = unsupported_fixtures(node, fixtures)
    if missing:
        raise TargetError(f"{target}: skipped: it takes the fixture {missing[0]!r}, which opscan cannot give "
                          "(conftest.py is not run; fixtures: tmp_path, monkeypatch, those of its own file)")
    try:
        given = first_parameters(node)
    except ValueError as exc:
        raise TargetError(f"{target}: skipped: {exc}") from None
    with tempfile.TemporaryDirectory(prefix="opscan-test-") as tmp, contextlib.ExitStack() as undo:
        cwd = os.getcwd()
        os.chdir(tmp)
        undo.callback(os.chdir, cwd)
        try:
            module = load(Path(path), Path(root))
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] == "pytest":
                raise TargetError(f"{target}: its module imports pytest, which is not installed here") from None
            raise
        except absent.MissingModules as exc:   # NOTE [every missing module at once] in absent.py
            if "pytest" in exc.modules:
                raise TargetError(f"{target}: its module imports pytest, which is not installed here") from None
            raise
        kwargs = {**given}
        for arg in _params(node):
            if arg not in kwargs:
                kwargs[arg] = _fixture(arg, module, fixtures, Path(tmp), undo, target)
        test = _bound(module, owner, name, undo)
        try:
            return stop(lambda: test(**kwargs), target, "the test ran to its end without calling a model")
        except TargetError:
            raise
        except Exception as exc:  # noqa: BLE001 - the test failed before its model call: one line
            raise TargetError(f"{target}: the test failed before its model call: {type(exc).__name__}: "
                              f"{first_line(exc)}".splitlines()[0][:300]) from None


def _fixture(arg: str, module, fixtures: dict, tmp, undo, target: str):
    from opscan.errors import TargetError

    if arg == "tmp_path":
        folder = tmp / "tmp_path"
        folder.mkdir(exist_ok=True)
        return folder
    if arg == "monkeypatch":
        try:
            import pytest
        except ImportError:
            raise TargetError(f"{target}: skipped: its fixture 'monkeypatch' needs pytest, which is not "
                              "installed here") from None
        patch = pytest.MonkeyPatch()
        undo.callback(patch.undo)
        return patch
    definition = getattr(module, arg, None)
    function = _unwrapped(definition)
    if function is None:
        raise TargetError(f"{target}: skipped: its fixture {arg!r} could not be read from its module")
    kwargs = {a: _fixture(a, module, fixtures, tmp, undo, target) for a in _params(fixtures[arg])}
    value = function(**kwargs)
    if hasattr(value, "__next__") and hasattr(value, "send"):   # a yield fixture: its first value
        undo.callback(value.close)
        value = next(value)
    return value


def _unwrapped(fixture):
    """The function under a pytest fixture decorator (pytest 8.4+ and older ones)."""
    for attr in ("_get_wrapped_function",):
        if callable(getattr(fixture, attr, None)):
            return getattr(fixture, attr)()
    wrapped = getattr(fixture, "__pytest_wrapped__", None)
    if wrapped is not None:
        return wrapped.obj
    return getattr(fixture, "__wrapped__", fixture if callable(fixture) else None)


def _bound(module, owner: str, name: str, undo):
    """The test as a callable: a function of the module, or a method of a fresh `Test*` instance."""
    import unittest

    if not owner:
        return getattr(module, name)
    cls = getattr(module, owner)
    if isinstance(cls, type) and issubclass(cls, unittest.TestCase):
        cls.setUpClass()
        undo.callback(cls.tearDownClass)
        instance = cls(name)
        instance.setUp()
    else:
        instance = cls()
        if hasattr(instance, "setup_method"):
            instance.setup_method(getattr(instance, name))
    return getattr(instance, name)
