"""Whether a Python file trains, read from its tree (never imported): it steps an optimizer, or hands
the model to a library's trainer; and whether its name says training. Stdlib only.

NOTE [what trains]
The evidence, strongest first (opscan/targets/entry/ranking.py ranks by it):
- `steps`: a call `X.step()` whose receiver is an optimizer: a name or attribute spelled like one
  (`optimizer`, `optim`, `opt`, `opt_g`, `self.optimizer`), or bound in the file to a call of an
  optimizer class (`torch.optim.AdamW(...)`, `optim.SGD(...)`, `bnb.optim.Adam8bit(...)`, a name
  ending in `Optimizer`); or `scaler.step(optimizer)` (a GradScaler steps the optimizer it is
  given); in the file itself or in a module of the project it imports (`main.py` calling
  `engine.train_one_epoch`; a written command's imports are followed three levels deep: NOTE [a
  written command whose step is imports deep] in ranking.py);
- `trainer`: a library's trainer runs the loop: `X.fit(...)` or `X.train(...)` on a receiver named
  like a trainer (`trainer`, `self.trainer`; never `model.train()`, which sets a mode);
- `name`: the script's (or module's) name holds a training word (`train`, `pretrain`, `finetune`,
  `fit`, `main`).
A name with a word of another job (`eval`, `test`, `sample`, `generate`, `download`, `prepare`,
`export`, `demo`, `benchmark`, ...) is no training command unless the file steps an optimizer.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

TRAIN_WORDS = ("train", "pretrain", "finetune", "fine_tune", "fit", "main")
OTHER_WORDS = ("eval", "evaluate", "test", "infer", "inference", "predict", "sample", "sampling", "generate",
               "demo", "download", "prepare", "preprocess", "process", "export", "convert", "benchmark", "bench",
               "plot", "visualize", "visualise", "serve", "server", "app", "setup", "install", "lint", "docs",
               "profile", "data", "tokenize", "extract", "score", "validate", "val")
OPTIMIZER_CLASS = re.compile(r"(^|\.)(Adam\w*|AdamW\w*|SGD\w*|RMSprop|Adagrad|Adadelta|Adamax|NAdam|RAdam|LBFGS|"
                             r"SparseAdam|ASGD|Rprop|Lion\w*|LAMB|Lamb|Adafactor|Muon|Sophia\w*|Shampoo|"
                             r"\w*Optimizer)$")
_OPTIMIZER_NAME = re.compile(r"(^|_)(optim|optimizer|optimiser|opt)([sgd]|_.*|\d.*)?$|optimi[sz]er", re.I)
_TRAINER_NAME = re.compile(r"trainer$", re.I)


@dataclass(frozen=True)
class Evidence:
    """How a file trains: `steps` (the line of an optimizer step), `trainer` (a trainer's fit/train
    call), each 0 when absent."""

    steps: int = 0
    trainer: int = 0

    @property
    def trains(self) -> bool:
        return bool(self.steps or self.trainer)


def words_of(name: str) -> list[str]:
    """The words of a file or module name: `train_gpt2.py` -> train, gpt2; `pretrainViT` -> pretrain, vit."""
    stem = name.rsplit("/", 1)[-1].removesuffix(".py")
    stem = re.sub(r"([a-z])([A-Z])", r"\1_\2", stem)
    return [w for w in re.split(r"[^A-Za-z0-9]+", stem.lower()) if w]


def named_for_training(name: str) -> bool:
    """The name holds a training word (NOTE [what trains]); `fine_tune` counts as one."""
    stem = "_".join(words_of(name))
    return any(w in TRAIN_WORDS for w in words_of(name)) or "fine_tune" in stem or \
        any(stem.startswith(w) for w in ("train", "pretrain", "finetune"))


def named_for_other_job(name: str) -> bool:
    """The name holds a word of another job than training (eval, sample, download, ...)."""
    return any(w in OTHER_WORDS for w in words_of(name)) and not named_for_training(name)


def evidence(tree: ast.Module) -> Evidence:
    """Where `tree` steps an optimizer or calls a trainer (NOTE [what trains])."""
    bound = _optimizer_bindings(tree)
    steps = trainer = 0
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        receiver = _last_name(node.func.value)
        if node.func.attr == "step":
            if node.args and _is_optimizer(node.args[0], bound) and receiver and "scaler" in receiver.lower():
                steps = steps or node.lineno
            elif not node.args or (len(node.args) == 1 and isinstance(node.args[0], (ast.Name, ast.Lambda))
                                   and not _is_optimizer(node.args[0], bound)):
                if _is_optimizer(node.func.value, bound):
                    steps = steps or node.lineno
        elif node.func.attr in ("fit", "train") and receiver and _TRAINER_NAME.search(receiver):
            trainer = trainer or node.lineno
    return Evidence(steps, trainer)


def is_main_script(tree: ast.Module) -> int:
    """The line of the module's `if __name__ == "__main__":` (0: none)."""
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            sides = [node.test.left, *node.test.comparators]
            names = {s.id for s in sides if isinstance(s, ast.Name)}
            values = {s.value for s in sides if isinstance(s, ast.Constant)}
            if "__name__" in names and "__main__" in values:
                return node.lineno
    return 0


def at_top_level(tree: ast.Module, line: int) -> bool:
    """Whether `line` is in a module-level statement that runs when the file is run (not in a
    function or class body, which run only when called)."""
    for node in tree.body:
        if node.lineno <= line <= (node.end_lineno or node.lineno):
            return not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    return False


def top_level_references(tree: ast.Module) -> set[str]:
    """The names the code that runs when the file is run refers to: its module-level statements that
    do work (`_runs`; the `__main__` block included) and, followed through, the bodies of the module's
    functions they name (NOTE [scripts that train when run] in ranking.py). `f(...)`,
    `mp.Process(target=f)` and `m.f(...)` (as `m` and `m.f`) all count: a name handed on is as good as
    a call."""
    functions = {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    seen: set[str] = set()
    queue: list[ast.AST] = [node for node in tree.body if _runs(node)]
    while queue:
        for node in ast.walk(queue.pop()):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                seen.add(f"{node.value.id}.{node.attr}")   # `m.f` of an imported module `m`
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in seen:
                seen.add(node.id)
                if node.id in functions:
                    queue.append(functions[node.id])
    return seen


def _runs(node: ast.stmt) -> bool:
    """A module-level statement that does work when the file runs: a call, a loop, a `with`, an `if`
    (the `__main__` block), a `try`, or an assignment of a call's result; not a definition, an import
    or a table of names (`TRAINERS = {"a": Trainer}` names a trainer without running it)."""
    if isinstance(node, (ast.Expr, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.If, ast.Try)):
        return True
    return isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and isinstance(node.value, ast.Call)


def function_of(tree: ast.Module, line: int) -> str:
    """The name of the module-level function whose body holds `line` ("" when none does)."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.lineno <= line <= (node.end_lineno or node.lineno):
            return node.name
    return ""


def imported_names(tree: ast.Module) -> list[tuple[str, int, str, str]]:
    """(dotted module, level, name imported, local name) of each module-level import: `from m import f
    as g` gives (m, 0, f, g); `import a.b as c` gives (a.b, 0, "", c); `import a` gives (a, 0, "", a)
    (a dotted `import a.b` without `as` binds `a`, not the module: left out)."""
    out: list[tuple[str, int, str, str]] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            out.extend((a.name, 0, "", a.asname or a.name) for a in node.names if a.asname or "." not in a.name)
        elif isinstance(node, ast.ImportFrom):
            out.extend((node.module or "", node.level, a.name, a.asname or a.name) for a in node.names if a.name != "*")
    return out


def imported_modules(tree: ast.Module) -> list[tuple[str, int]]:
    """(dotted module, level) of each import of the file, in order (for one level of following)."""
    out: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((alias.name, 0) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            out.append((base, node.level))
            out.extend((f"{base}.{alias.name}" if base else alias.name, node.level) for alias in node.names)
    return out


def _optimizer_bindings(tree: ast.Module) -> set[str]:
    """Names (and `self.x` attributes) bound to a call of an optimizer class anywhere in the file."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
            called = _dotted(node.value.func)
            if called and OPTIMIZER_CLASS.search(called):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    name = _last_name(target)
                    if name:
                        names.add(name)
    return names


def _is_optimizer(node: ast.AST, bound: set[str]) -> bool:
    name = _last_name(node)
    return bool(name) and (name in bound or bool(_OPTIMIZER_NAME.search(name)))


def _last_name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        return _last_name(node.value)
    return ""


def _dotted(node: ast.AST) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""
