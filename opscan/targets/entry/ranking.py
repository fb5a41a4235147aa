"""The training commands of a project, read (never run) and ranked: which one `opscan PATH` runs.

NOTE [training command ranking]
Every command read (opscan/targets/entry/sources.py: README and docs shell blocks, shell scripts,
Makefile recipes, [project.scripts]; and scripts that train when run) is kept
only when it launches Python code of the project (`python SCRIPT`, `python -m MODULE`, `torchrun`,
`accelerate launch`, a console script of [project.scripts]) whose file exists, from the folder the
text runs it in (else from the folder of the file it was read in), and when that code trains
(NOTE [what trains] in training.py). Then, best first:
1. the evidence that it trains: it steps an optimizer (in the script, or a project module it
   imports) > a library's trainer runs its loop > only its name says training;
2. where it was read: README > docs > shell script > Makefile > [project.scripts] > a script that
   trains when run with no command written anywhere (NOTE [scripts that train when run]; the
   authors' written command carries their arguments and configs); then a command whose options
   force the CPU or ask for another job comes after the others read there (NOTE [commands set
   aside by their options] in purpose.py);
3. the order of reading (the walk is breadth first and sorted: the same on every machine).
Before all three: a command whose script sits in a copy of another project kept in the repository
comes after every command of the project's own code (NOTE [vendored copies] in vendored.py).
The same command (same words, same folder) read twice is kept once, at its best place. `--entry`
(or `entry` in [tool.opscan]) is not ranked: it is the one run, the others are listed.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import replace
from pathlib import PurePosixPath

from opscan.records import TrainingEntry, EntryKind
from opscan.targets.entry import placeholders, purpose, required_args, sources, training, vendored
from opscan.targets.entry.shell_words import Simple

SOURCE_ORDER = tuple(EntryKind)   # given, readme, docs, shell-script, makefile, project-script, main-step
MAX_ENTRIES = 12
MAX_MAIN_SCRIPTS = 400


def find_entries(index) -> tuple[TrainingEntry, ...]:
    """The project's training commands, best first (NOTE [training command ranking])."""
    scripts = sources.project_scripts(index)
    found = [*sources.documents(index), *sources.shell_scripts(index), *sources.makefiles(index)]
    ranked: list[tuple[tuple, TrainingEntry]] = []
    seen: set[tuple[str, str]] = set()
    written: set[str] = set()   # the files written commands run: no main-step entry of their own
    for order, item in enumerate(found):
        entry = _entry(index, item.simple, item.kind, item.path, item.base, scripts, item.context)
        if entry is not None:
            aside = bool(entry[3])   # NOTE [commands set aside by their options]
            copy, found_entry = _copy(index, entry[2], entry[0])
            ranked.append((_key(entry[1], item.kind, order, aside, copy), found_entry))
            written.add(entry[2])
    for order, (name, (_, line)) in enumerate(sorted(scripts.items()), len(found)):
        entry = _entry(index, Simple((name,), "", line), EntryKind.PROJECT_SCRIPT, "pyproject.toml", "", scripts)
        if entry is not None:
            copy, found_entry = _copy(index, entry[2], entry[0])
            ranked.append((_key(entry[1], EntryKind.PROJECT_SCRIPT, order, copy=copy), found_entry))
            written.add(entry[2])
    for order, (score, item) in enumerate(_main_steps(index), len(found) + len(scripts)):
        if item.path not in written:
            copy, item = _copy(index, item.path, item)
            ranked.append((_key(score, EntryKind.MAIN_STEP, order, copy=copy), item))
    out: list[TrainingEntry] = []
    for _, entry in sorted(ranked, key=lambda pair: pair[0]):
        key = (entry.command, entry.cwd)
        if key not in seen:
            seen.add(key)
            out.append(entry)
    return tuple(out[:MAX_ENTRIES])


def given_entry(command: str) -> TrainingEntry:
    """The command of `--entry` (or `entry` in the configuration), as given."""
    return TrainingEntry(command=command.strip(), kind=EntryKind.GIVEN,
                         why="given (--entry or `entry` in [tool.opscan])")


def _key(score: int, kind: str, order: int, aside: bool = False, copy: bool = False) -> tuple:
    return (copy, -score, SOURCE_ORDER.index(kind), aside, order)


def _copy(index, rel: str | None, entry: TrainingEntry) -> tuple[bool, TrainingEntry]:
    """Whether the script `rel` sits in a copy of another project, and the entry saying so
    (NOTE [vendored copies])."""
    folder = vendored.copy_folder(index, rel) if rel else ""
    if not folder:
        return False, entry
    return True, replace(entry, why=f"{entry.why}; ranked after the project's own: in {folder}/, "
                                    "a copy of another project")


def _entry(index, simple: Simple, kind: str, path: str, base: str, scripts: dict[str, tuple[str, int]],
           context: str = "") -> tuple[TrainingEntry, int, str, str] | None:
    """The entry of a simple command, its evidence score (3 steps, 2 trainer, 1 name), the file it
    runs and why it is set aside ("" when it is not), or None when it launches no training code of
    the project."""
    words = _python_launcher(list(simple.words))
    head = PurePosixPath(words[0]).name
    entry_point = ""
    if head in scripts:   # a console script of [project.scripts]
        entry_point = scripts[head][0]
        module, _, function = entry_point.partition(":")
        if not (training.named_for_training(head) or training.named_for_training(function)) or \
                training.named_for_other_job(head) or training.named_for_other_job(function):
            return None   # a console script of the package that does another job (serve, eval, ...)
        rel = _module_file(index, module, "")
        name = f"{module}:{entry_point.split(':')[1]}"
        cwd = ""
    else:
        launched = _launched(words)
        if launched is None:
            return None
        target, is_module = launched
        rel, cwd = None, simple.cwd
        within = posixpath.normpath(posixpath.join(base, simple.cwd)) if base and simple.cwd else base
        for folder in dict.fromkeys((simple.cwd, within, base)):   # NOTE [a document's own folder]
            rel = _module_file(index, target, folder) if is_module else _script_file(index, target, folder)
            if rel is not None:
                cwd = _module_folder(rel, target) if is_module else folder
                break
        if rel is None and not is_module and kind in (EntryKind.README, EntryKind.DOCS):
            found = _script_in_subfolder(index, target, simple.cwd or base, path)
            if found is not None:
                rel, cwd = found
        name = target
    if rel is None:
        return None
    tree = index.tree(rel, max_bytes=2_000_000)
    if tree is None:
        return None
    proof, where = _imported_evidence(index, rel, tree)
    named = training.named_for_training(name) or training.named_for_training(rel) or \
        (kind == EntryKind.MAKEFILE and training.named_for_training(context))
    if proof.steps:
        score, why = 3, f"steps an optimizer ({where}:{proof.steps})"
    elif proof.trainer:
        score, why = 2, f"a trainer runs its loop ({where}:{proof.trainer})"
    elif named and not training.named_for_other_job(name):
        score, why = 1, f"named for training ({name})"
    else:
        return None
    if training.named_for_other_job(PurePosixPath(rel).name) and not proof.steps:
        return None
    if not entry_point:   # NOTE [capitalised placeholders] in placeholders.py
        after = next((i + 1 for i, w in enumerate(words) if w == name), len(words))
        words, assumed = placeholders.filled(index, words, cwd, after, tree)
    else:
        assumed = ""
    read = f"{path}:{simple.line}" if simple.line else path
    why = f"{_READ[kind]} {read}" + (f" (make {context})" if context else "") + f"; {why}"
    if simple.unset:
        why += f"; not set by the text: {', '.join('$' + v for v in simple.unset)}"
    if assumed:
        why += f"; placeholders: {assumed}"
    other_job = purpose.other_job_script(PurePosixPath(rel).name, where != rel)
    if other_job:   # its step is a module's it imports: weaker evidence than a trainer of its own
        score = 1
    aside = purpose.set_aside(simple.words) or other_job
    if aside:   # NOTE [commands set aside by their options]
        why += f"; ranked after the others: it {aside}"
    if simple.via:   # NOTE [a script invoked with its arguments]
        why += f"; {simple.via}"
    if simple.read_as:   # NOTE [documentation continuations]
        why += f"; read as the author meant: {', '.join(simple.read_as)}"
    command = shlex.join(words)
    return TrainingEntry(command=command, kind=kind, path=path, line=simple.line, cwd=cwd, why=why,
                         entry_point=entry_point), score, rel, aside


# NOTE [a written command whose step is imports deep]
# A written command's script often trains through the project's own modules, several imports down:
# `python main.py` whose three lines build `PipelineOrchestrator().run()`, whose module imports the
# `Trainer` that steps the optimizer. One level of following saw no step there, so the README's
# command had no evidence and a script that no text names, stepping an optimizer itself (kind
# main-step), ran in its place. A written command's imports are followed breadth first, up to
# IMPORT_DEPTH levels and IMPORT_FILES files of the project; the first that trains gives the
# evidence, as the file's own would. A script found only because it trains when run keeps one level
# (NOTE [scripts that train when run]): it is the script itself that has to train, or every helper
# importing the training module would be a command.
IMPORT_DEPTH = 3
IMPORT_FILES = 40


def _imported_evidence(index, rel: str, tree) -> tuple[training.Evidence, str]:
    """(the evidence that `rel` trains, the file it is in) by NOTE [a written command whose step is
    imports deep]: the file's own, else that of the first project module it imports, breadth first,
    that trains."""
    proof = training.evidence(tree)
    if proof.trains:
        return proof, rel
    seen, level_files, read = {rel}, [(rel, tree)], 0
    for _ in range(IMPORT_DEPTH):
        following = []
        for importer, importer_tree in level_files:
            for module, level in training.imported_modules(importer_tree):
                other = _imported_file(index, importer, module, level)
                if other is None or other in seen or read >= IMPORT_FILES:
                    continue
                seen.add(other)
                read += 1
                other_tree = index.tree(other, max_bytes=2_000_000)
                if other_tree is None:
                    continue
                found = training.evidence(other_tree)
                if found.trains:
                    return found, other
                following.append((other, other_tree))
        level_files = following
    return proof, rel


_READ = {EntryKind.README: "README shell block", EntryKind.DOCS: "shell block of",
         EntryKind.SHELL_SCRIPT: "shell script", EntryKind.MAKEFILE: "Makefile recipe",
         EntryKind.PROJECT_SCRIPT: "[project.scripts] of",
         EntryKind.MAIN_STEP: "script"}


def _python_launcher(words: list[str]) -> list[str]:
    """`py [-3[.X]] SCRIPT ...` (the Python launcher of Windows, as READMEs written there give it) as
    `python SCRIPT ...`; any other command as it is."""
    if words[:1] != ["py"] or len(words) < 2:
        return words
    rest = words[2:] if re.fullmatch(r"-[23](\.\d+)?(-64|-32)?", words[1]) else words[1:]
    return ["python", *rest]


def _launched(words: list[str]) -> tuple[str, bool] | None:
    """(script path or module, is a module) a launch command runs, or None (not a Python launch)."""
    from opscan.errors import UsageError
    from opscan.targets.entry.launch import parse_command

    head = PurePosixPath(words[0]).name
    if not (head.startswith("python") or head in ("torchrun", "accelerate", "accelerate-launch")
            or words[0].endswith(".py")):
        return None
    if head.startswith("python") and (len(words) < 2 or words[1] in ("-c", "-")):
        return None
    try:
        parsed = parse_command(words, "neuron")
    except (UsageError, OSError, ValueError):
        return None
    return parsed["script"], bool(parsed["module"])


def _script_file(index, script: str, cwd: str) -> str | None:
    if script.startswith(("/", "~", "$")):
        return None
    rel = posixpath.normpath(str(PurePosixPath(cwd) / script) if cwd else script)   # `../train.py` from scripts/
    if rel.startswith("..") or not rel.endswith(".py"):
        return None
    return rel if (index.root / rel).is_file() else None


# NOTE [a written command run from its script's folder]
# A README often writes the command as it is typed in the folder that holds the code, and says so
# in prose ("code in `python` folder", then `python main.py --dataset=ml-1m`), where the file is
# `python/main.py`. When a README's or doc's `python SCRIPT` names no file from the folder it runs
# in, the script is looked for one folder down: when exactly one subfolder holds SCRIPT, that
# folder is not a package (a package's module is run with -m) and the text names the folder as a
# word (`python`, "cd src", not `pkg.train`), the command is that one, run from that subfolder
# (where the script's relative paths point). Two or more subfolders holding it: nothing is guessed.


def _script_in_subfolder(index, script: str, cwd: str, document: str) -> tuple[str, str] | None:
    """(the file, its folder) of a written `python SCRIPT` found one folder below `cwd`, when one
    only (NOTE [a written command run from its script's folder])."""
    if script.startswith(("/", "~", "$", "..")) or not script.endswith(".py"):
        return None
    try:
        text = index.data(document).decode("utf-8", "replace")
    except OSError:
        return None
    base = PurePosixPath(cwd) if cwd else PurePosixPath()
    tail = PurePosixPath(*[p for p in PurePosixPath(script).parts if p != "."])
    name = tail.name
    found = []
    for path in index.paths(lambda p: p.name == name):
        rel = PurePosixPath(index.rel(path))
        parts = rel.parts[len(base.parts):] if rel.parts[:len(base.parts)] == base.parts else ()
        if len(parts) == len(tail.parts) + 1 and PurePosixPath(*parts[1:]) == tail:
            folder = str(base / parts[0])
            named = re.search(rf"(?<![\w./-]){re.escape(parts[0])}(?![\w.-])", text)
            if named and not (index.root / folder / "__init__.py").is_file():
                found.append((str(rel), folder))
    return found[0] if len(found) == 1 else None


def _module_file(index, module: str, cwd: str) -> str | None:
    parts = module.split(".")
    for base in dict.fromkeys((cwd, "", "src")):
        stem = PurePosixPath(base, *parts) if base else PurePosixPath(*parts)
        for rel in (f"{stem}.py", f"{stem}/__main__.py"):
            if (index.root / rel).is_file():
                return rel
    return None


# NOTE [a module run from the folder that holds its package]
# `python -m main.twotower` finds `main` on sys.path, whose first entry is the working directory. A
# README often writes it after a `cd src` in an earlier block, or not at all, while the package is
# `src/main/twotower.py`. The module file is looked for from the command's folder, the project root
# and `src/` (_module_file); the command then runs from the folder where it was found, so that the
# contained child's sys.path[0] (its working directory) holds the package, as the author's shell did.


def _module_folder(rel: str, module: str) -> str:
    """The folder `python -m module` must run from for `module` to be the file `rel`."""
    parts = PurePosixPath(rel).parts
    depth = len(module.split(".")) + (PurePosixPath(rel).name == "__main__.py")
    folder = str(PurePosixPath(*parts[:len(parts) - depth])) if len(parts) > depth else ""
    return "" if folder == "." else folder


def _imported_file(index, importer: str, module: str, level: int) -> str | None:
    """The project file a (possibly relative) import of `importer` names, or None."""
    if not module and not level:
        return None
    if level:
        base = PurePosixPath(importer).parent
        for _ in range(level - 1):
            base = base.parent
        parts = [p for p in module.split(".") if p]
        stem = PurePosixPath(base, *parts)
        for rel in (f"{stem}.py", f"{stem}/__init__.py"):
            if (index.root / rel).is_file():
                return rel.removeprefix("./")
        return None
    folder = str(PurePosixPath(importer).parent)
    return _module_file(index, module, "" if folder == "." else folder)


# NOTE [scripts that train when run]
# With no command written anywhere, a script is a training command (kind main-step) when running it
# trains: the code that runs when the file is run (its module-level statements, its `__main__` block,
# and the functions of the file they name, followed through: training.top_level_references) reaches
# an optimizer's step or a trainer's loop (NOTE [what trains]), in the file itself or, one level
# down as for written commands, in a project module it imports and names there (`from train_epoch
# import train_epoch` then `train_epoch(...)` in a module-level loop; `mp.Process(target=train)`).
# A `__main__` block and a step anywhere in the file counts as before. Research code often trains
# at module level through a helper of its own, or inside a function the file calls at its end; a
# library module with a step but nothing that runs it is still no command.


def _main_steps(index) -> list[tuple[int, TrainingEntry]]:
    """Scripts that train when run (NOTE [scripts that train when run]), with their evidence score
    (3 steps, 2 a trainer's loop), kind main-step."""
    out: list[tuple[int, TrainingEntry]] = []
    for count, path in enumerate(index.paths(lambda p: p.suffix == ".py"), 1):
        if count > MAX_MAIN_SCRIPTS:
            break
        rel = index.rel(path)
        parts = PurePosixPath(rel).parts
        name = parts[-1]
        if any(p in ("tests", "test", "docs") for p in parts[:-1]) or name.startswith("test_") or \
                name.endswith("_test.py") or name in ("setup.py", "conftest.py", "hubconf.py", "__init__.py"):
            continue
        if not index.mentions(rel, b"import"):   # trains with nothing imported: never (no torch, no helper)
            continue
        tree = index.tree(rel, max_bytes=2_000_000)
        if tree is None:
            continue
        found = _trains_when_run(index, rel, tree)
        if found is None:
            continue
        score, where, line, how = found
        if training.named_for_other_job(name) and not (score == 3 and where == rel):
            continue
        what = f"steps an optimizer ({where}:{line})" if score == 3 else f"a trainer runs its loop ({where}:{line})"
        main = training.is_main_script(tree)
        extra, said = required_args.filled(tree)
        out.append((score, TrainingEntry(command=shlex.join(["python", rel, *extra]), kind=EntryKind.MAIN_STEP,
                                         path=rel, line=main or line if where == rel else main or 1,
                                         why=f"script {rel}{how}; {what}{said}")))
    return out


def _trains_when_run(index, rel: str, tree) -> tuple[int, str, int, str] | None:
    """(score, file, line, how it is reached) when running `rel` trains, else None."""
    main = training.is_main_script(tree)
    reached = training.top_level_references(tree)
    proof = training.evidence(tree)
    for line, score in ((proof.steps, 3), (proof.trainer, 2)):
        if not line:
            continue
        function = training.function_of(tree, line)
        if main:
            return score, rel, line, f":{main} runs under __main__"
        if training.at_top_level(tree, line):
            return score, rel, line, " trains at its top level"
        if function and function in reached:
            return score, rel, line, f" calls {function}() when run"
    for module, level, name, local in training.imported_names(tree):
        if local not in reached:
            continue
        other = _imported_file(index, rel, module, level) if not name else None
        if name:   # `from m import f`: f of the module m, or the module m.f of a package
            other = _imported_file(index, rel, f"{module}.{name}" if module else name, level)
            if other is None:
                other = _imported_file(index, rel, module, level)
            else:
                name = ""
        if other is None or other == rel:
            continue
        other_tree = index.tree(other, max_bytes=2_000_000)
        if other_tree is None:
            continue
        theirs = training.evidence(other_tree)
        for line, score in ((theirs.steps, 3), (theirs.trainer, 2)):
            if not line:
                continue
            function = training.function_of(other_tree, line)
            called = bool(function) and (function == name if name else f"{local}.{function}" in reached)
            if called or training.at_top_level(other_tree, line):   # the file runs it, or the import does
                return score, other, line, f" runs {function or 'the module'} of {other} when run"
    return None
