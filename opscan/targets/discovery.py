"""Finding models to trace without running anything: model folders, exported programs, factories.

`direct(path)` answers "is PATH itself a model?": a folder (or its `config.json`) holding a
transformers config (`model_type` / `architectures`) or a timm config (`architecture`), a `.pt2`
file, or a folder of `.pt2` files. Those are traced with no configuration (`opscan PATH`), since
building a transformers or timm architecture from a config, or reading an exported program, runs
none of the project's own code. A config that asks for remote code (`auto_map`) is refused unless
`trust_remote_code` is given.

`candidates(root)` reads a project (stdlib ast, JSON; no import, no torch) for models it could
trace: factory functions (`build`, `make`, `create_model`, `get_model`, `build_*model*`, ...),
`nn.Module` subclasses that nothing else in their file builds, `from_pretrained` /
`from_config` calls on a local folder, model folders and `.pt2` files in the tree, and models
built inline in scripts and notebooks (for which a factory must be written: FACTORY_HINT).
`opscan PATH` carries the result in `Report.discovery`; `opscan init` writes it into
pyproject.toml (opscan/commands/init.py). Nothing here prints. Files are listed, read and parsed
through the run's project index (opscan/index: one walk, each file read and parsed once, shared
with the scan; NOTE [one project index]).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import json
import re
from pathlib import Path

from opscan.errors import TargetError
from opscan.index import MAX_FILES, ProjectIndex
from opscan.index.resolver import Imports
from opscan.records import Discovery, ModelCandidate, CandidateKind, Target, TargetKind
from opscan.targets import call_sites, hubconf, registries, repo_tests, shipped, train_scripts
from opscan.targets import factories as factories_
from opscan.targets import recipes as repo
from opscan.targets.folders import NO_TRUST_NOTE, TIMM_FOLDER, read_config, remote_code
from opscan.targets.tries import MAX_TRIES

# Folders never searched: the one skip list (opscan/index/walk.py: environments, caches, build
# output, version control, any virtual environment and `*.egg-info`), plus `env` and every hidden
# folder. MAX_FILES: a search stops after this many files, shallowest first (docs/check.md).
MAX_CONFIG_BYTES = 1 << 20

FACTORY_NAMES = {"build", "make", "create_model", "get_model", "build_model", "make_model", "model_fn",
                 "load_model", "new_model", "model_factory"}
_FACTORY = re.compile(r"^((build|make|create|new)_\w+|(get|load)_\w*(model|net|network|gpt|llm|transformer)\w*)$",
                      re.IGNORECASE)
# Names of the parameters opscan can pass to a factory (docs/trace.md, "Targets").
FACTORY_PARAMETERS = {"batch", "seq_len"}
MODULE_BASES = {"nn.Module", "torch.nn.Module", "Module", "PreTrainedModel", "nn.modules.module.Module"}
# A base the scan's import resolver (opscan/index/resolver.py) resolves to one of these is a module
# too, whatever it is called in the file (`from torch.nn import Module as Base`).
RESOLVED_BASES = {"torch.nn.Module", "torch.nn.modules.module.Module"}

FACTORY_HINT = (   # lines under 78 columns: printed indented in an 80-column terminal
    "write a factory opscan can call, e.g. in opscan_model.py:\n"
    "    import torch\n"
    "    from mypackage.model import Net   # your model class (no side effects)\n"
    "    def build():\n"
    "        model = Net(hidden=64, layers=2)   # small: ops do not depend on size\n"
    "        return model, {\"x\": torch.zeros(2, 64)}   # forward's keyword inputs\n"
    "then add target = \"opscan_model.py:build\" to [[tool.opscan.models]]"
)


# --- PATH itself ----------------------------------------------------------------------------------

def config_kind(path: Path) -> tuple[str, dict]:
    """("hf-folder" | "timm-folder" | "", the JSON) for a config.json; "" for anything else
    (opscan/targets/folders.py reads and classifies it)."""
    try:
        config = read_config(path, max_bytes=MAX_CONFIG_BYTES)
    except TargetError:
        return "", {}
    return (config.kind, config.data) if config.kind else ("", {})


def unreadable_config(path: Path, label: str) -> str:
    """Why the config.json at `path` is not a JSON object ("LABEL:LINE: not valid JSON: ..."), or ""
    (read by the one reader, opscan/targets/folders.py; a file over MAX_CONFIG_BYTES is not judged)."""
    try:
        read_config(path, max_bytes=MAX_CONFIG_BYTES)
    except TargetError as exc:
        if exc.message.startswith("larger than"):
            return ""
        if exc.message == "not a JSON object":
            return f"{label}: not valid JSON for a model config: not a JSON object"
        return f"{label}:{exc.line}: {exc.message}" if exc.line is not None else f"{label}: {exc.message}"
    return ""


def folder_candidate(folder: Path, label: str, trust_remote_code: bool = False) -> ModelCandidate | None:
    """The candidate for a model folder (`label` is its path as the user sees it), else None."""
    kind, data = config_kind(folder / "config.json")
    if not kind:
        return None
    if kind == TIMM_FOLDER:
        return ModelCandidate(target=f"timm:{label}", kind=kind, path=label)
    note = ""
    if not isinstance(data.get("model_type"), str):
        note = "config.json has architectures but no model_type: transformers cannot tell which config class to use"
    elif isinstance(data.get("auto_map"), dict) and data["auto_map"] and not trust_remote_code:
        note = NO_TRUST_NOTE.format(where=remote_code(data) or "its modules")
    return ModelCandidate(target=f"hf:{label}", kind=kind, path=label, ready=not note, note=note)


def direct(path: Path, label: str | None = None, *, trust_remote_code: bool = False) -> Discovery | None:
    """The models PATH itself is (a model folder, a config.json, a .pt2, a folder of .pt2), else None.

    `label` is PATH as the targets should name it (default: as given).
    """
    path = Path(path)
    label = (label if label is not None else path.as_posix()).rstrip("/") or "."
    if path.is_file() and path.suffix == ".pt2":
        return Discovery(traced=(f"pt2:{label}",))
    if path.is_file() and path.name == "config.json":
        folder = label.rpartition("/")[0] or "."
        found = folder_candidate(path.parent, folder, trust_remote_code) or _unreadable(path, folder, label)
        return None if found is None else _split((found,))
    if not path.is_dir():
        return None
    found = folder_candidate(path, label, trust_remote_code)
    if found is None and (path / "config.json").is_file() \
            and not any(p.suffix in (".py", ".ipynb") for p in path.iterdir()):
        found = _unreadable(path / "config.json", label, f"{label}/config.json")   # a model folder, broken
    if found is not None:
        return _split((found,))
    exports = sorted(p.name for p in path.iterdir() if p.suffix == ".pt2" and p.is_file())
    if exports and not any(p.suffix in (".py", ".ipynb") for p in path.iterdir()):
        return Discovery(traced=tuple(f"pt2:{label}/{name}" for name in exports))
    return None


def _unreadable(path: Path, folder: str, shown: str) -> ModelCandidate | None:
    """A model folder whose config.json does not parse: refused, with the parse error (file and line)."""
    why = unreadable_config(path, shown)
    return ModelCandidate(target=f"hf:{folder}", kind=CandidateKind.HF_FOLDER, path=folder, ready=False,
                          note=why) if why else None


def _split(found: tuple[ModelCandidate, ...]) -> Discovery:
    return Discovery(traced=tuple(c.target for c in found if c.ready),
                     refused=tuple(c for c in found if not c.ready))


# --- a project --------------------------------------------------------------------------------------

def candidates(root: Path, *, trust_remote_code: bool = False, construct: bool = False,
               index: ProjectIndex | None = None) -> Discovery:
    """Every model candidate in the project at `root`, read statically, in a stable order.

    With `construct`, the ways to build a model with no configuration (opscan/targets/recipes.py:
    `repo:` targets) follow, best first, and `traced` holds the ones to try (zero_config_targets).
    `index`: the run's project index of `root` (opscan/index), shared with the scan; default a new one."""
    root = Path(root).resolve()
    index = index if index is not None and index.root == root else ProjectIndex(root)
    found: list[ModelCandidate] = []
    ways: list[repo.Recipe] | None = [] if construct else None
    known = _repository_modules(index) if construct else (frozenset(), frozenset())
    for path in _walk(index, docs=construct):
        rel = index.rel(path)
        if path.suffix == ".md":
            try:
                ways.extend(repo.readme_recipes(index.data(rel).decode("utf-8", errors="replace"), rel))
            except OSError:
                pass
        elif path.name == "config.json":
            folder = path.parent.relative_to(root).as_posix()
            one = folder_candidate(path.parent, folder, trust_remote_code)
            if one is not None:
                found.append(one)
        elif path.suffix == ".pt2":
            found.append(ModelCandidate(target=f"pt2:{rel}", kind=CandidateKind.EXPORT, path=rel))
        elif path.suffix == ".py":
            found.extend(python_candidates(path, rel, root, trust_remote_code, ways, known, index))
            if ways is not None and repo_tests.is_test_file(path.name):
                ways.extend(_test_recipes(index, rel, known[0]))
        elif path.suffix == ".ipynb":
            found.extend(notebook_candidates(path, rel, index))
    unique: dict[str, ModelCandidate] = {}
    for cand in found:
        unique.setdefault(cand.target, cand)
    ordered = sorted(unique.values(), key=lambda c: (_RANK[c.kind], not c.ready, c.path, c.line, c.target))
    if ways is None:
        return Discovery(candidates=tuple(ordered))
    trained = train_scripts.scripts(index)   # NOTE [candidates the training scripts build]
    ways = train_scripts.boosted(ways, trained) + train_scripts.by_name(trained, index)
    built, seen = [], set(unique)
    for w in repo.rank(repo_tests.keep(ways)):
        if w.target not in seen:
            seen.add(w.target)
            built.append(ModelCandidate(target=w.target, kind=w.kind, path=w.path, line=w.line, note=w.how))
    traced = zero_config_targets(ordered, built)
    return Discovery(candidates=tuple(ordered) + tuple(_with_setup_calls(index, built, traced)), traced=traced)


def _with_setup_calls(index: ProjectIndex, built: list[ModelCandidate],
                      traced: tuple[str, ...]) -> list[ModelCandidate]:
    """The notes of the model classes to try, with the setup call the repository makes before calling
    one, and where (opscan/targets/call_sites.py, NOTE [setup calls]): the child makes it when the
    forward fails without it."""
    out = []
    for cand in built:
        found = call_sites.usage(index, cand.path, Target.parse(cand.target).name, setups_only=True) \
            if cand.kind is CandidateKind.REPO_CLASS and cand.target in traced else None
        if found is not None:
            cand = dataclasses.replace(cand, note=f"{cand.note}; if its forward fails without it: {found.words()}")
        out.append(cand)
    return out


def call_site_table(index: ProjectIndex, targets: tuple[str, ...]) -> tuple:
    """How the repository calls the model classes of the files of its `repo:FILE:NAME` targets
    (opscan/targets/call_sites.py `usage`), read through the run's index: ((file, class), Usage or
    None) pairs, sorted, handed to the trace's child as data (ModelConfig.call_sites). A model class
    of another file (a factory building one it imports) is not among them: the child reads it."""
    table = {}
    for target in targets:
        parsed = Target.parse(target)
        rel, name = parsed.where, parsed.name
        if parsed.kind is not TargetKind.REPO or not rel or "#" in parsed.spec or not rel.endswith(".py"):
            continue
        tree = index.tree(rel, MAX_PYTHON_BYTES)
        if tree is None:
            continue
        for cls in sorted(set(_module_classes(tree, rel, index=index)) | ({name} & _class_names(tree))):
            if (rel, cls) not in table:
                table[(rel, cls)] = call_sites.usage(index, rel, cls)
    return tuple(sorted(table.items(), key=lambda item: item[0]))


def step_plans(index: ProjectIndex, targets: tuple[str, ...]) -> dict:
    """The training step each `repo:` target's training script constructs (opscan/targets/train_scripts.py
    `plans`): target -> records.TrainStep, handed to the trace's child as data (ModelConfig.step)."""
    return train_scripts.plans(index, targets, train_scripts.scripts(index))


def _class_names(tree: ast.Module) -> set[str]:
    return {n.name for n in tree.body if isinstance(n, ast.ClassDef)}


def zero_config_targets(found: list[ModelCandidate], built: list[ModelCandidate]) -> tuple[str, ...]:
    """What `opscan REPO` tries with no configuration, in order: ready factories, model folders and
    exports, then the best-ranked `repo:` recipes (at most one per file, MAX_TRIES in all)."""
    first, files = [], set()   # a file's own factory is enough (its first)
    for cand in found:
        if cand.ready and (cand.kind.is_folder
                           or cand.kind is CandidateKind.FACTORY and _model_factory(cand) and cand.path not in files):
            first.append(cand.target)
            files |= {cand.path} if cand.kind is CandidateKind.FACTORY else set()
    rest, hubs = [], []
    for cand in built:
        if cand.path in files:
            continue
        files.add(cand.path)
        (hubs if cand.kind is CandidateKind.HUBCONF else rest).append(cand.target)
    helpers = [c.target for c in found if c.ready and c.kind is CandidateKind.FACTORY and not _model_factory(c)]
    return tuple((hubs + first + rest + helpers)[:MAX_TRIES])   # NOTE [hub entries first]


# NOTE [hub entries first]
# A `hubconf.py` entry point is the authors' own way to build their model (torch.hub calls it), so
# it is tried before anything else: before ready factories, whose number is not bounded (a research
# repository has many `create_*`/`build_*` functions, each of its own file) and which once used up
# every one of the MAX_TRIES before the hub entry was reached.


_MODEL_WORD = re.compile(r"model|net|gpt|llm|transformer|vit|unet|encoder|decoder|classifier|policy", re.IGNORECASE)


def _model_factory(cand: ModelCandidate) -> bool:
    """A factory named like it builds a model (`build`, `create_model`, `make_unet`), outside tests
    and docs: tried first. Other `build_*` helpers (torchtitan's `build_device_memory_monitor`,
    `build_*_test_list`) come after the repository's model classes."""
    name = Target.parse(cand.target).name
    return (name in FACTORY_NAMES or bool(_MODEL_WORD.search(name))) and \
        not set(cand.path.split("/")[:-1]) & {"tests", "test", "testing", "docs", "examples"}


_RANK = {CandidateKind.FACTORY: 0, CandidateKind.HF_FOLDER: 1, CandidateKind.TIMM_FOLDER: 1, CandidateKind.EXPORT: 2,
         CandidateKind.FROM_PRETRAINED: 3, CandidateKind.MODULE_CLASS: 4, CandidateKind.INLINE: 5,
         **{kind: 6 for kind in CandidateKind if kind.from_repository}}


def _walk(index: ProjectIndex, docs: bool = False):
    """Python files, notebooks, exported programs and config.json files (with `docs`, READMEs and
    Markdown under docs/ too), breadth first: the index's one walk (opscan/index/walk.py)."""
    def keep(path: Path) -> bool:
        return path.suffix in (".py", ".ipynb", ".pt2") or path.name == "config.json" or docs and \
            path.suffix == ".md" and (path.name.lower().startswith("readme") or "docs" in path.parts)

    return index.paths(keep, MAX_FILES)


# A file is parsed only when its text could hold a candidate (most files of a big tree cannot).
_HINT = re.compile(rb"Module\b|PreTrainedModel|from_pretrained|from_config|"
                   rb"^\s*def\s+(build|make|create|new|get_\w*(model|net|gpt|llm|transformer)|"
                   rb"load_\w*(model|net|gpt|llm|transformer)|model_fn|model_factory)|"
                   rb"^\w*(model|net)\w*\s*=|->\s*[\w.]*(decoder|model|module|transformer|gpt|net)\b",
                   re.MULTILINE | re.IGNORECASE)
MAX_PYTHON_BYTES = 2 << 20


def python_candidates(path: Path, rel: str, root: Path, trust_remote_code: bool = False,
                      ways: list | None = None, known: tuple = (frozenset(), frozenset()),
                      index: ProjectIndex | None = None) -> list[ModelCandidate]:
    """Factories, root nn.Module classes, local from_pretrained folders and inline builds in one file
    (and, into `ways`, the recipes that build its models with no configuration)."""
    index = index if index is not None else ProjectIndex(root)
    try:
        data = index.data(rel)
    except OSError:
        return []
    if len(data) > MAX_PYTHON_BYTES or not _HINT.search(data) \
            and not (ways is not None and (path.name == "hubconf.py" or known[0] and b"class " in data)):
        return []
    tree = index.tree(rel)
    if tree is None:
        return []
    if ways is not None:
        ways.extend(_recipes(tree, rel, known, root, index))
    return _module_candidates(tree, rel, root, path.parent, trust_remote_code, notebook=False, index=index)


# NOTE [models an agent builds]
# A model class another model class of its file builds is a part, not a root (its whole is tried).
# A class that is no nn.Module (a reinforcement-learning agent, a Trainer) building it says the
# opposite: it is the model that class trains (`self.policy = CNNPolicyNetwork(channels, actions)`
# in `ReinforceAgent.__init__`), so it stays a root. A function of the file building it still
# makes it no root (the function is the recipe).


def _recipes(tree: ast.Module, rel: str, known: tuple = (frozenset(), frozenset()),
             root: Path | None = None, index: ProjectIndex | None = None) -> list[repo.Recipe]:
    """The file's recipes; `known`: the repository's (model classes, base model classes)
    (NOTE [bases in other files])."""
    if Path(rel).name == "hubconf.py":
        return hubconf.hubconf_recipes(tree, rel, root)
    classes = _module_classes(tree, rel, known[0], index)
    built_inside = {c.func.id for node in tree.body if isinstance(node, ast.FunctionDef)   # NOTE [models
                    or isinstance(node, ast.ClassDef) and node.name in classes              # an agent builds]
                    for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                    and c.func.id in classes and c.func.id != node.name}
    wrappers = repo.wrapper_classes(classes)
    roots = {n: c for n, c in classes.items() if n not in built_inside or n in wrappers}
    factories = [n for n in tree.body if isinstance(n, ast.FunctionDef) and _is_factory(n)]
    folder = root / Path(rel).parent if root is not None else None
    found = repo.class_recipes(tree, rel, roots, repo.runs_code_on_import(tree), wrappers, known[1],
                               shipped=lambda required: _shipped_table(folder, frozenset(required)))
    found += repo.factory_recipes(tree, rel, factories)
    found += repo.builder_recipes(tree, rel, factories)
    found = _with_registries(found, registries.registry_recipes(tree, rel, set(classes) | known[0]))
    main = repo.main_recipe(tree, rel, set(classes))
    return found + ([main] if main is not None else [])


@functools.lru_cache(maxsize=256)
def _shipped_table(folder: Path | None, required: frozenset[str]) -> str:
    """Where a config file beside the code holds `required` (`config.json['waveglow_config']`), else ""."""
    return shipped.described(folder, set(required))


def _test_recipes(index: ProjectIndex, rel: str, models: frozenset[str]) -> list[repo.Recipe]:
    """The repository's test in one test file that builds one of its models (opscan/targets/repo_tests.py)."""
    tree = index.tree(rel, MAX_PYTHON_BYTES)
    return repo_tests.test_recipes(tree, rel, models) if tree is not None else []


def _with_registries(found: list[repo.Recipe], registered: list[repo.Recipe]) -> list[repo.Recipe]:
    """The file's recipes with those of its registries of model functions (opscan/targets/registries.py);
    a function found both ways is kept once, as the registry names it."""
    targets = {r.target for r in registered}
    return [r for r in found if r.target not in targets] + registered


def notebook_candidates(path: Path, rel: str, index: ProjectIndex | None = None) -> list[ModelCandidate]:
    """A notebook cannot be imported by name: a model built in it asks for a factory (FACTORY_HINT)."""
    try:
        data = json.loads(index.data(rel).decode("utf-8") if index is not None else path.read_text(encoding="utf-8"))
        cells = [c for c in data.get("cells", []) if c.get("cell_type") == "code"]
    except (OSError, ValueError, UnicodeDecodeError, AttributeError):
        return []
    for index, cell in enumerate(cells, 1):
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        source = "\n".join("pass" if line.lstrip().startswith(("%", "!")) else line
                           for line in source.splitlines())
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        found = _module_candidates(tree, rel, None, path.parent, False, notebook=True)
        if found:
            return [ModelCandidate(target=f"{rel}:cell {index}", kind=CandidateKind.INLINE, path=rel, line=index,
                                   ready=False, note="a model is built in a notebook, which cannot be "
                                   "traced by name: write a factory (5 lines)")]
    return []


def _dotted(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - odd nodes are simply not matched
        return ""


def _module_candidates(tree: ast.Module, rel: str, root: Path | None, folder: Path,
                       trust_remote_code: bool, notebook: bool,
                       index: ProjectIndex | None = None) -> list[ModelCandidate]:
    out: list[ModelCandidate] = []
    classes = _module_classes(tree, rel, index=None if notebook else index)
    built_inside: set[str] = set()     # classes some other class or factory of this file builds
    factories: list[ast.FunctionDef] = []
    loading: list[ast.Call] = []       # from_pretrained / from_config calls (one walk finds both)
    for node in tree.body:
        inside = isinstance(node, (ast.FunctionDef, ast.ClassDef))
        for call in ast.walk(node):
            if not isinstance(call, ast.Call):
                continue
            func = call.func
            if inside and isinstance(func, ast.Name) and func.id in classes and func.id != node.name:
                built_inside.add(func.id)
            elif isinstance(func, ast.Attribute) and func.attr in ("from_pretrained", "from_config"):
                loading.append(call)
        if isinstance(node, ast.FunctionDef) and _is_factory(node):
            factories.append(node)
    runs_on_import = _runs_code_on_import(tree)
    import_note = (f"importing {rel} runs its top-level code (a script?): move the factory into a "
                   "module without side effects") if runs_on_import else ""
    if not notebook:
        for fn in factories:
            required = set(factories_.required(fn)) - FACTORY_PARAMETERS
            defaults = factories_.defaults_function(tree, fn) if required and not runs_on_import else None
            if required and defaults is None:
                note = f"{fn.name}() needs arguments ({', '.join(sorted(required))}): " + \
                       "write a factory without them (5 lines)"
            else:
                note = import_note
            target = f"{rel}:{fn.name}"
            built = not note and (defaults or not factories_.returns_example(fn))
            if built:   # NOTE [factories of a package]: opscan builds it, as a repository's factory
                target = f"{TargetKind.REPO}:{target}"
                note = f"{fn.name}(**{defaults}()): its required arguments from {defaults}() of its file, " \
                       "the model the first of what it returns" if defaults else ""
            out.append(ModelCandidate(target=target, kind=CandidateKind.FACTORY, path=rel, line=fn.lineno,
                                      ready=not note or bool(built), note=note))
        for name, node in classes.items():
            if name in built_inside or node.name.startswith("_"):
                continue
            init_args = _init_required(node)
            why = f"{name}({', '.join(init_args)}) needs constructor arguments" if init_args else \
                  f"{name} needs example inputs: add inputs = [\"NAME:DTYPE[SHAPE]\"]"
            out.append(ModelCandidate(target=f"{rel}:{name}", kind=CandidateKind.MODULE_CLASS, path=rel,
                                      line=node.lineno, ready=False, note=f"{why}; or write a factory (5 lines)"))
    for call in loading:
        if not call.args:
            continue
        first = call.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)) or root is None:
            continue
        local = _local_folder(first.value, folder, root)
        if local is not None:
            one = folder_candidate(root / local, local, trust_remote_code)
            if one is not None:
                out.append(ModelCandidate(target=one.target, kind=CandidateKind.FROM_PRETRAINED, path=rel,
                                          line=call.lineno, ready=one.ready, note=one.note))
    if not factories and runs_on_import or notebook:
        inline = _inline_build(tree, classes)
        if inline is not None:
            out.append(ModelCandidate(target=f"{rel}:{inline}", kind=CandidateKind.INLINE, path=rel, line=inline,
                                      ready=False, note="a model is built inline here, with no name opscan "
                                      "could trace: write a factory (5 lines)"))
    return out


def _repository_modules(index: ProjectIndex) -> tuple[frozenset[str], frozenset[str]]:
    """(names of the nn.Module classes of the whole repository, those other ones derive from): bases
    followed across its files (`class Llama3Model(Decoder)` with Decoder(BaseModel) and BaseModel(Module)
    in three other files): what `_module_classes` adds to a file's own when recipes are read
    (NOTE [bases in other files])."""
    bases: dict[str, set[str]] = {}
    seeds: set[str] = set()
    for path in _walk(index):
        if path.suffix != ".py":
            continue
        rel = index.rel(path)
        if not index.mentions(rel, b"class ", MAX_PYTHON_BYTES):
            continue
        tree = index.tree(rel)
        if tree is None:
            continue
        seeds |= set(_module_classes(tree, rel, index=index))
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                bases.setdefault(node.name, set()).update(_dotted(b).split(".")[-1] for b in node.bases)
    known, changed = set(seeds), True
    while changed:
        grown = {name for name, parents in bases.items() if parents & known} - known
        known |= grown
        changed = bool(grown)
    parents = frozenset(p for name in known for p in bases.get(name, ()) if p in known)
    return frozenset(known), parents


# NOTE [bases in other files]
# Training repositories derive their models from base classes of their own, in other files
# (torchtitan: Llama3Model(Decoder), Decoder(BaseModel), BaseModel(Module), Module(nn.Module)).
# Recipes are read per file, so the repository's nn.Module class names are gathered first (every
# file's own, then any class whose base, by its last name, is one of them, to a fixed point) and a
# class deriving from one counts as a model class of its file. Names are matched by their last
# part: a same-named unrelated base elsewhere is a false friend the child's build then rejects.

def _module_classes(tree: ast.Module, rel: str = "", known: frozenset = frozenset(),
                    index: ProjectIndex | None = None) -> dict[str, ast.ClassDef]:
    """Top-level classes deriving (directly or through another class of the file) from nn.Module:
    as spelled (MODULE_BASES), or as the import resolver (opscan/index/resolver.py, the scan's)
    resolves the base (RESOLVED_BASES), or from a class of the repository `known` to be one
    (NOTE [bases in other files]). `index`: the file's bindings are made once for the run."""
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    imports = index.imports(rel, tree) if index is not None else _imports(tree, rel)
    resolved = {name: {imports.resolve(b) for b in node.bases} for name, node in classes.items()}
    modules: dict[str, ast.ClassDef] = {}
    changed = True
    while changed:
        changed = False
        for name, node in classes.items():
            if name in modules:
                continue
            bases = {_dotted(b) for b in node.bases}
            if bases & MODULE_BASES or bases & set(modules) or any(b.endswith("PreTrainedModel") for b in bases) \
                    or resolved[name] & RESOLVED_BASES or {b.split(".")[-1] for b in bases} & known:
                modules[name] = node
                changed = True
    return dict(sorted(modules.items(), key=lambda item: item[1].lineno))


def _imports(tree: ast.Module, rel: str) -> Imports:
    """The module-level import bindings of a tree no index holds (a notebook cell)."""
    imports = Imports(rel)
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.add(node)
    return imports


def _is_factory(fn: ast.FunctionDef) -> bool:
    return fn.name in FACTORY_NAMES or bool(_FACTORY.match(fn.name))


def _init_required(node: ast.ClassDef) -> list[str]:
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            required = set(factories_.required(item)) - {"self"}
            return sorted(required)
    return []


def _runs_code_on_import(tree: ast.Module) -> bool:
    """True when the module does more at import than define things (opscan/targets/recipes.py)."""
    return repo.runs_code_on_import(tree)


def _inline_build(tree: ast.Module, classes: dict[str, ast.ClassDef]) -> int | None:
    """The line of a top-level assignment that builds a model (a class of the file, nn.*, from_pretrained)."""
    for node in tree.body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        names = " ".join(_dotted(t) for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))
        if isinstance(node.value, ast.Call) and re.search(r"model|net\b", names, re.IGNORECASE) \
                and _dotted(node.value.func).split(".")[-1][:1].isupper():
            return node.lineno
        for call in ast.walk(node.value):
            if not isinstance(call, ast.Call):
                continue
            name = _dotted(call.func)
            last = name.split(".")[-1]
            if last in classes or last in ("from_pretrained", "from_config", "create_model") \
                    or name.startswith(("nn.", "torch.nn.")) and last[:1].isupper():
                return node.lineno
    return None


def _local_folder(text: str, folder: Path, root: Path) -> str | None:
    """`text` as a folder of the project holding config.json (relative to root), else None."""
    if not text or "\n" in text or len(text) > 400:
        return None
    for base in (folder, root):
        try:
            candidate = (base / text).resolve()
            rel = candidate.relative_to(root)
        except (ValueError, OSError):
            continue
        if (candidate / "config.json").is_file():
            return rel.as_posix() or "."
    return None


def toml_lines(candidate: ModelCandidate, config_name: str = "pyproject.toml") -> str:
    """The `[[tool.opscan.models]]` block (or `[[models]]` for opscan.toml) for one candidate."""
    header = "[[models]]" if config_name == "opscan.toml" else "[[tool.opscan.models]]"
    lines = [header, f"target = {json.dumps(candidate.target)}"]
    if candidate.kind is CandidateKind.EXPORT:
        lines.append('mode = "inference"     # an exported program holds the forward only')
    if candidate.kind.from_repository and candidate.note:
        lines.insert(1, f"# {candidate.note}")
    return "\n".join(lines) + "\n"
