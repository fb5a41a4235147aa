"""A repository's training scripts, read statically (stdlib ast through the run's index; nothing runs):
which scripts train, what model they build, and the step they take.

- `scripts(index)`: the files that train (a `.backward()` call and an optimizer built or stepped),
  best first (NOTE [which training script]);
- `boosted(recipes, found)`: the recipes whose class or function a training script builds rank
  above those nothing builds (NOTE [candidates the training scripts build]);
- `by_name(found, index)`: factories a script picks by name, `models.__dict__[args.arch]` with the
  default of `--arch` (NOTE [factories picked by name]);
- `plans(index, targets, found)`: for each `repo:` target, the step its training script constructs
  (opscan/targets/train_step.py), handed to the trace's child as data (ModelConfig.step).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from opscan.index import ProjectIndex
from opscan.records import StepPartKind, TrainStep, CandidateKind, Target, TargetKind
from opscan.targets import train_step
from opscan.targets.recipes import Recipe, runs_code_on_import

MAX_SCRIPTS = 8            # training scripts read at most (the best-ranked)
MAX_PYTHON_BYTES = 2 << 20
_SKIP = {"tests", "test", "testing", "docs", "doc", "benchmarks", "benchmark"}
_TRAIN_NAME = re.compile(r"^(train|training|pretrain|finetune|fine_tune|main|run_train|trainer)", re.IGNORECASE)


@dataclass(frozen=True)
class Script:
    """A training script: where it is, and what it builds (called directly, or through a function of
    the repository it calls): the name, the line of the first call, and the file defining it ("" when
    its import does not resolve to a file of the repository)."""

    rel: str
    builds: tuple[tuple[str, int, str], ...]   # (name, line, file), e.g. ("GPT", 42, "model.py")
    tree: ast.Module

    def line_of(self, name: str, rel: str | None = None) -> int | None:
        """The line building `name` (defined in `rel`, when given: the file, or a package re-exporting it)."""
        return next((line for built, line, where in self.builds if built == name
                     and (rel is None or _same_file(where, rel))), None)


def _same_file(where: str, rel: str) -> bool:
    if not where:
        return False
    if where == rel:
        return True
    package = where.removesuffix("__init__.py")   # `from models import Net`, re-exported by models/__init__.py
    return where.endswith("__init__.py") and rel.startswith(package)


# NOTE [which training script]
# A training script is a script (a `__main__` block, or code run at import: not a library module
# whose Trainer class trains) that calls `.backward()` and builds or steps an optimizer
# (`torch.optim.X(...)`, `.step()`), outside tests, docs and benchmarks. What it builds is read
# outside its class bodies (a class's own parts are not what the script trains). Several may (train.py, finetune.py,
# scripts/train_gan.py): the one at the root whose name starts like a training entry (train*,
# pretrain*, finetune*, main*) comes first, then fewer folders deep, then by name; MAX_SCRIPTS are read.
# A model's step is the one of the script that builds it (or picks it by name); a model no script
# builds takes the step of the training script at the root (train.py), when there is one, and else
# opscan's stand-in: a demo deep in a package that trains its own model says nothing of another.

def scripts(index: ProjectIndex) -> list[Script]:
    """The repository's training scripts, best first (NOTE [which training script])."""
    found = []
    for path in index.paths(lambda p: p.suffix == ".py"):
        rel = index.rel(path)
        parts = rel.split("/")
        if _SKIP & set(parts[:-1]) or parts[-1].startswith("test_") or parts[-1].endswith("_test.py"):
            continue
        if not index.mentions(rel, b".backward(", MAX_PYTHON_BYTES):
            continue
        tree = index.tree(rel, MAX_PYTHON_BYTES)
        if tree is None or not _is_script(tree) or not _trains(tree, index.imports(rel, tree)):
            continue
        found.append((rel, tree))
    found.sort(key=lambda item: (not _TRAIN_NAME.match(PurePosixPath(item[0]).name), item[0].count("/"), item[0]))
    return [Script(rel, _builds(index, rel, tree), tree) for rel, tree in found[:MAX_SCRIPTS]]


def _is_script(tree: ast.Module) -> bool:
    """A script, not a library module: it has a `__main__` block or runs code at import."""
    return any(isinstance(n, ast.If) and "__name__" in ast.unparse(n.test) for n in tree.body) \
        or runs_code_on_import(tree)


def _trains(tree: ast.Module, imports) -> bool:
    backward = step = False
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        if isinstance(call.func, ast.Attribute) and call.func.attr == "backward":
            backward = True
        elif isinstance(call.func, ast.Attribute) and call.func.attr == "step" \
                or (imports.resolve(call.func) or "").startswith("torch.optim."):
            step = True
    return backward and step


def _builds(index: ProjectIndex, rel: str, tree: ast.Module) -> tuple[tuple[str, int, str], ...]:
    """What the script calls, with the file defining each, and (one level down) the CapWords names the
    repository's functions it calls build: `model = GPT(config)`, `model = build_model(cfg)` whose body
    calls `Net(...)`."""
    out: dict[tuple[str, str], int] = {}
    calls = [c for node in tree.body if not isinstance(node, ast.ClassDef)   # a class's own parts are not built
             for c in ast.walk(node) if isinstance(c, ast.Call)]
    for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
        name = _called(call)
        if not name:
            continue
        where = _defined_in(index, rel, tree, call)
        out.setdefault((name, where), call.lineno)
        found = _function_at(index, where, name) if where else None
        if found is None:
            continue
        home, body = found
        home_tree = index.tree(home, MAX_PYTHON_BYTES)
        for inner in (c for c in ast.walk(body) if isinstance(c, ast.Call)):
            inner_name = _called(inner)
            if inner_name[:1].isupper() and home_tree is not None:
                out.setdefault((inner_name, _defined_in(index, home, home_tree, inner)), call.lineno)
    return tuple((name, line, where) for (name, where), line in out.items())


def _defined_in(index: ProjectIndex, rel: str, tree: ast.Module, call: ast.Call) -> str:
    """The repository file defining what `call` calls: the file itself for its own top-level
    definitions, else the file its import resolves to; "" when neither."""
    if isinstance(call.func, ast.Name) and any(isinstance(n, (ast.ClassDef, ast.FunctionDef)) and n.name == call.func.id
                                               for n in tree.body):
        return rel
    dotted = index.imports(rel, tree).resolve(call.func) or ""
    module = dotted.rpartition(".")[0]
    return _module_file(index, module, rel) or "" if module else ""


def _function_at(index: ProjectIndex, rel: str, name: str) -> tuple[str, ast.FunctionDef] | None:
    """(file, the function `name` it defines), following one re-export of a package's `__init__.py`."""
    tree = index.tree(rel, MAX_PYTHON_BYTES)
    if tree is None:
        return None
    found = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if found is not None:
        return rel, found
    for node in tree.body:   # `from .build import build_model` in a package's __init__.py
        if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names):
            module = index.imports(rel, tree).absolute(node)
            other = _module_file(index, module, rel) if module else None
            if other and other != rel:
                inner = index.tree(other, MAX_PYTHON_BYTES)
                hit = next((n for n in inner.body if isinstance(n, ast.FunctionDef) and n.name == name), None) \
                    if inner is not None else None
                return (other, hit) if hit is not None else None
    return None


def _called(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, (ast.Name, ast.Attribute)):
        return func.attr
    return ""


# NOTE [candidates the training scripts build]
# A repository holds many models (baselines, parts, demos); the one its training script builds is
# the one the team trains. A `repo:FILE:NAME` recipe whose NAME a training script calls (directly,
# or in the body of a repository function the script calls: `build_model(cfg)` -> `Net(cfg)`)
# gains BUILT_BONUS, above any class nothing builds, and its note says where the script builds it.
# The name must be the file's: the script defines it, or its import resolves to FILE (or to the
# package whose `__init__.py` re-exports it); four classes named `Unet` in four files are not all
# built because a script builds one of them.
BUILT_BONUS = 600
# NOTE [parts the training script joins]
# A script may build the parts of its model and join them: `encoder = EncoderRNN(...)`, `decoder =
# DecoderRNN(...)`, `model = S2VTAttModel(encoder, decoder)`. All three are built by the script, but
# the model the team trains is the one that owns the others: traced alone, a decoder needs the
# encoder's outputs (`encoder_hidden`), which nothing but the encoder makes. So a built class whose
# instance (a name assigned from its call) the script passes to another built class's constructor is
# a part: it ranks PART_BONUS lower, and the owner ranks first among what that script builds (above
# its parts and above a model the script builds whole in another branch, `if opt.model ==
# 'S2VTModel'`: the owner is the fuller model, an assumption its note states; `--entry` or
# `[[tool.opscan.models]]` picks another).
PART_BONUS = 150


def boosted(recipes: list[Recipe], found: list[Script]) -> list[Recipe]:
    """`recipes` with those a training script builds raised (NOTE [candidates the training scripts build]),
    the owner of parts the script joins above them (NOTE [parts the training script joins])."""
    joined = [_joined(s) for s in found]
    out: list[Recipe] = []
    owned: list[tuple[int, int]] = []   # (index in out, script) of each owner: raised once all are scored
    by: list[int] = []   # the script that builds each recipe of out (-1: none)
    for recipe in recipes:
        spec = recipe.target[len("repo:"):]
        rel, _, name = spec.rpartition(":")
        where = next(((s.rel, s.line_of(name, rel)) for s in found if rel and "#" not in spec and "::" not in spec
                      and s.line_of(name, rel) is not None), None)
        if where is None:
            out.append(recipe)
            by.append(-1)
            continue
        how = f"{recipe.how}; the training script {where[0]} builds it (line {where[1]})"
        score = recipe.score + BUILT_BONUS
        script = next(i for i, s in enumerate(found) if s.rel == where[0])
        parts, owners = joined[script]
        if name in owners:
            owned.append((len(out), script))
            how += f", joining {', '.join(sorted(owners[name]))} (ranked first of what it builds: the fuller model)"
        elif name in parts:
            score -= PART_BONUS
            how += f", as a part of {parts[name]}"
        out.append(replace(recipe, score=score, how=how))
        by.append(script)
    for at, script in owned:
        best = max(r.score for r, s in zip(out, by) if s == script)
        out[at] = replace(out[at], score=max(out[at].score, best + 1))
    return out


def _joined(script: Script) -> tuple[dict[str, str], dict[str, set[str]]]:
    """({part class: the class it is passed to}, {owner class: its parts}) of NOTE [parts the training
    script joins]: names assigned from a built class's call, then passed to another built class's call."""
    built = {name for name, _, _ in script.builds}
    made: dict[str, str] = {}   # variable -> the built class it was assigned from
    for node in ast.walk(script.tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and _called(node.value) in built:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    made[target.id] = _called(node.value)
    parts: dict[str, str] = {}
    owners: dict[str, set[str]] = {}
    for node in ast.walk(script.tree):
        if not isinstance(node, ast.Call) or _called(node) not in built:
            continue
        owner = _called(node)
        for arg in (*node.args, *(k.value for k in node.keywords)):
            part = made.get(arg.id) if isinstance(arg, ast.Name) else None
            if part and part != owner:
                parts.setdefault(part, owner)
                owners.setdefault(owner, set()).add(part)
    return parts, owners


# NOTE [factories picked by name]
# Research training scripts pick their model by a name given on the command line:
# `model = models.__dict__[args.arch](num_classes=10)`, `getattr(models, args.model)()`, `MODELS[args.model]`,
# with `parser.add_argument('-a', '--arch', default='resnet18')`. No recipe finds the function
# (it is built by nothing, or is one of many), so the script is read for such lookups: the module
# (or the module holding the dict) resolved through the script's imports to a file of the
# repository, the name the argparse default of that option. The recipe `repo:FILE:NAME` ranks as
# the model the training script builds (BUILT_BONUS) and says so.

def by_name(found: list[Script], index: ProjectIndex) -> list[Recipe]:
    """`repo:FILE:NAME` for the factories the training scripts pick by name (NOTE [factories picked by name])."""
    return [recipe for _, recipe in _picks(found, index)]


def _picks(found: list[Script], index: ProjectIndex) -> list[tuple[Script, Recipe]]:
    out = []
    for script in found:
        defaults = _argparse_defaults(script.tree)
        imports = index.imports(script.rel, script.tree)
        for node in ast.walk(script.tree):
            picked = _lookup(node)
            if picked is None:
                continue
            holder, option = picked
            name = defaults.get(option)
            if not isinstance(name, str) or not name.isidentifier():
                continue
            rel = _module_file(index, imports.resolve(holder) or ast.unparse(holder), script.rel)
            if rel is None:
                continue
            how = f"{name}(): the model {script.rel} picks by name ({ast.unparse(node)}, the default of " \
                  f"--{option.replace('_', '-')}, line {node.lineno})"
            out.append((script, Recipe(f"repo:{rel}:{name}", CandidateKind.REPO_FACTORY, rel, node.lineno, how,
                                       900 + BUILT_BONUS)))
    return out


def _lookup(node: ast.AST) -> tuple[ast.expr, str] | None:
    """(the module or dict, the option) of `X.__dict__[args.N]`, `getattr(X, args.N)`, `X[args.N]`."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Attribute):
        holder = node.value
        if isinstance(holder, ast.Attribute) and holder.attr == "__dict__":
            holder = holder.value
        if isinstance(holder, (ast.Name, ast.Attribute)):
            return holder, node.slice.attr
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Attribute) \
            and isinstance(node.args[0], (ast.Name, ast.Attribute)):
        return node.args[0], node.args[1].attr
    return None


def _argparse_defaults(tree: ast.Module) -> dict[str, object]:
    """`dest -> default` of the script's `add_argument` calls with a literal default."""
    out: dict[str, object] = {}
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute) \
                or call.func.attr != "add_argument":
            continue
        flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        default = next((k.value for k in call.keywords if k.arg == "default"), None)
        dest = next((k.value.value for k in call.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)),
                    None)
        if not flags or not isinstance(default, ast.Constant):
            continue
        long = next((f for f in flags if f.startswith("--")), flags[0])
        out[str(dest or long.lstrip("-").replace("-", "_"))] = default.value
    return out


def _module_file(index: ProjectIndex, dotted: str, script: str) -> str | None:
    """The repository file of module `dotted` (a package's `__init__.py`, or a module), beside the
    script first; a dict name (`MODELS`) is looked up as a module-level name of the script's imports."""
    base = str(PurePosixPath(script).parent)
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        path = "/".join(parts[:cut])
        for rel in (f"{path}.py", f"{path}/__init__.py"):
            for where in ([f"{base}/{rel}"] if base != "." else []) + [rel, f"src/{rel}"]:
                if index.tree(where, MAX_PYTHON_BYTES) is not None:
                    return where
    return None


def plans(index: ProjectIndex, targets: tuple[str, ...], found: list[Script]) -> dict[str, TrainStep]:
    """For each `repo:` or `FILE.py:NAME` target, the step the training script that builds it (or picks it
    by name) constructs, else the root training script's (NOTE [which training script]); an optimizer the
    script does not build (a model's `configure_optimizers`) is read from the target's own file."""
    if not found:
        return {}
    read: dict[str, TrainStep] = {}

    def step_of(rel: str, tree: ast.Module) -> TrainStep:
        if rel not in read:
            read[rel] = train_step.read_step(tree, rel, index.imports(rel, tree))
        return read[rel]

    out = {}
    picked = {recipe.target: script for script, recipe in _picks(found, index)}
    main = found[0] if _TRAIN_NAME.match(found[0].rel) and "/" not in found[0].rel else None
    for target in targets:
        parsed = Target.parse(target)
        if parsed.kind is not TargetKind.REPO and not parsed.is_file:
            continue   # a model folder, a timm name, an exported program: no script of the project builds it
        rel, name = (parsed.where, parsed.name) if parsed.where else (parsed.spec, "")
        script = picked.get(target) or next((s for s in found if name and s.line_of(name, rel) is not None), main)
        if script is None:   # NOTE [which training script]: no script builds it, and none at the root trains
            continue
        step = step_of(script.rel, script.tree)
        own = index.tree(rel, MAX_PYTHON_BYTES) if rel.endswith(".py") and rel != script.rel else None
        if own is not None and not step.part(StepPartKind.OPTIMIZER):
            step = train_step.merged(step, step_of(rel, own))
        if step.parts or step.backward:
            out[target] = step
    return out
