"""`repo:` targets: build a repository's own model with no configuration, in the trace's child process.

`repo:FILE:NAME` builds a class or calls a factory / torch.hub entry with the arguments
opscan/targets/construct.py fills (weights off: `pretrained=False`); a script-like FILE (one that
trains at import) is run as its definitions only (opscan/targets/recipes.py `definitions`).
`repo:DOC#N` (a README's N-th fenced Python block), `repo:FILE#main` (its `__main__` demo) and
`repo:FILE::TEST` (a test of the repository: opscan/targets/repo_tests.py) run the repository's own
code until its first model call, and take that model and those inputs (NOTE [stopping at the model
call]). Targets come from opscan/targets/discovery.py; nothing is downloaded.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import inspect
import os
import sys
import types
from pathlib import Path

import torch
from torch import nn

from opscan.errors import TargetError
from opscan.targets import (
    absent,
    call_sites,
    config_files,
    constraints,
    construct,
    recipes,
    repo_inputs,
    script_calls,
    script_options,
    setup_calls,
    shrinking,
)
from opscan.targets import absent_weights, import_roots
from opscan.targets.empty import build_empty, first_line
from opscan.trace.spec import Built
from opscan.records import Target


def build_repo(target: str, *, batch: int | None, seq_len: int | None, project_root: str | None,
               gpu_only: tuple[str, ...] = (), call_sites: tuple = ()) -> Built:
    """The model and inputs of a `repo:` target (see the module docstring); TargetError in one line.
    `gpu_only`: the CUDA-only libraries that may be stood in when missing (NOTE [GPU-only kernel
    libraries] in absent.py). `call_sites`: ((file, class), Usage or None) pairs the parent read
    (opscan/targets/discovery.py `call_site_table`); a class not among them is read here."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    parsed = Target.parse(target)   # a `repo:` target (opscan/targets/loader.py dispatches by its kind)
    spec = parsed.spec
    root = Path(project_root or ".").resolve()
    where, hash_, block = spec.rpartition("#")
    try:
        with _no_downloads(), absent_weights.answered() as weights, _cuda_is_cpu(), \
                absent.gpu_only(gpu_only or absent.packages()):
            if "::" in spec:   # a repository's test (opscan/targets/repo_tests.py)
                from opscan.targets.repo_tests import build_test
                file, _, test = spec.partition("::")
                return build_test(_path(file, root), test, root, target, load=load, stop=stop_at_model_call)
            if hash_ and where:
                path = _path(where, root)
                return _capture(path, block, root, target)
            where, name = parsed.where, parsed.name
            if not where or not name:
                raise TargetError(f"bad target {target!r}: expected repo:FILE:NAME, repo:DOC#N or repo:FILE#main")
            built = _unshrunk_if_broken(lambda: _build_named(_path(where, root), name, root, batch, seq_len, target,
                                                             dict(call_sites)))
            said = absent_weights.note(weights)   # NOTE [pretrained weights on the model path]
            if said:
                built.note = "; ".join(n for n in (built.note, said) if n)
            return built
    except TargetError:
        raise
    except Exception as exc:  # noqa: BLE001 - user code fails in many ways: one line
        raise TargetError(f"{target}: {type(exc).__name__}: {first_line(exc)}".splitlines()[0][:300]) from None


def _unshrunk_if_broken(build) -> Built:
    """`build()`; when it fails after opscan shrank what it builds, `build()` once more with nothing
    shrunk (NOTE [retry unshrunk] in opscan/targets/loader.py), and the first error if that fails too."""
    shrinking.reset()
    try:
        return build()
    except Exception as exc:
        cut = shrinking.cuts()
        if not cut or not shrinking.enabled():
            raise
        first = exc
    try:
        with shrinking.off():
            built = build()
    except Exception:  # noqa: BLE001 - the unshrunk build failed too: the shrunk build's error is the reason
        raise first from None
    said = f"built unshrunk: shrunk ({', '.join(cut)}) it failed: {type(first).__name__}: {first_line(first)}"
    built.note = "; ".join(n for n in (said[:300], built.note) if n)
    return built


def _path(where: str, root: Path) -> Path:
    path = Path(where)
    path = path if path.is_absolute() else root / path
    if not path.is_file():
        raise TargetError("no such file", path=where)
    return path


def load(path: Path, root: Path) -> types.ModuleType:
    """Import the file as the repository imports it (its package, for relative imports); a file
    that runs code at import is executed as its definitions only."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    package_root = path.parent
    while (package_root / "__init__.py").is_file():
        package_root = package_root.parent
    if package_root == path.parent and import_roots.relative_imports(tree):   # NOTE [namespace packages and
        package_root = import_roots.namespace_root(path, root)                # own folders] in import_roots.py
    for entry in (str(root), str(root / "src"), str(package_root), str(path.parent)):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    searched = (root, root / "src", package_root, path.parent)
    for folder in reversed(import_roots.run_roots(tree, path, root, searched)):   # NOTE [the folder the
        if str(folder) in sys.path:                                              # README runs from]
            sys.path.remove(str(folder))
        sys.path.insert(0, str(folder))
    dotted = ".".join(path.relative_to(package_root).with_suffix("").parts)
    import_roots.own_folders_first(tree, path.parent, root)
    for _ in range(len(absent.packages())):   # NOTE [GPU-only kernel libraries] in absent.py
        try:
            return _load(path, tree, dotted, package_root)
        except ModuleNotFoundError as exc:
            if not absent.stand_in(exc.name or "", dotted.split(".")[0]):
                if not _installed(exc.name or "", root):
                    raise _missing(path, tree, dotted, package_root, root, exc) from None
                raise
    try:
        return _load(path, tree, dotted, package_root)
    except ModuleNotFoundError as exc:
        if _installed(exc.name or "", root):
            raise
        raise _missing(path, tree, dotted, package_root, root, exc) from None


config_files.use_loader(load)   # Python config modules are imported as the model's module is
MAX_MISSING = 20


def _installed(name: str, root: Path) -> bool:
    """Whether a module that failed to import is installed, or the repository's own (then its failure
    is no missing package)."""
    top = name.split(".")[0]
    if not top:
        return True
    if (root / top).is_dir() or (root / f"{top}.py").is_file() or (root / "src" / top).is_dir():
        return True
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def _missing(path: Path, tree: ast.Module, dotted: str, package_root: Path, root: Path,
             first: ModuleNotFoundError) -> absent.MissingModules:
    """Every module the import misses, found in one run (NOTE [every missing module at once] in absent.py)."""
    stood: list[str] = []
    name = first.name or ""
    try:
        for _ in range(MAX_MISSING):
            if not absent.stand_in_missing(name, dotted.split(".")[0], stood):
                break
            try:
                _load(path, tree, dotted, package_root)
                break
            except ModuleNotFoundError as exc:
                name = exc.name or ""
                if _installed(name, root):
                    break
            except Exception:  # noqa: BLE001 - the stand-ins broke the import further on: what was found stands
                break
    finally:
        absent.forget(stood)
        for module in [n for n in sys.modules if n == dotted.split(".")[0] or n.startswith(dotted.split(".")[0] + ".")]:
            del sys.modules[module]
    names = stood or [name.split(".")[0]]
    listed = ", ".join(f"'{n}'" for n in names)
    noun = "module" if len(names) == 1 else "modules"
    return absent.MissingModules(f"ModuleNotFoundError: No {noun} named {listed} (not installed here)",
                                 modules=tuple(names))   # the remedy is one line of the report (Verdict.remedy)


def _load(path: Path, tree: ast.Module, dotted: str, package_root: Path) -> types.ModuleType:
    if recipes.runs_code_on_import(tree):
        return _exec(path, recipes.definitions(tree), dotted)
    if package_root == path.parent:
        return _exec(path, tree, dotted)
    try:
        return importlib.import_module(dotted)
    except ImportError as exc:   # NOTE [package without its __init__]
        first = exc
    for name in [n for n in sys.modules if n == dotted.split(".")[0] or n.startswith(dotted.split(".")[0] + ".")]:
        del sys.modules[name]
    parts = dotted.split(".")
    for depth in range(1, len(parts)):
        stub = types.ModuleType(".".join(parts[:depth]))
        stub.__path__ = [str(package_root.joinpath(*parts[:depth]))]
        sys.modules[stub.__name__] = stub
    try:
        return importlib.import_module(dotted)
    except ImportError:
        raise first from None


# NOTE [package without its __init__]
# A package's `__init__.py` often imports every submodule, and with them every optional
# dependency (a trainer's accelerate, a dataset's torchvision) that the model file itself never
# needs. When importing the model's module through its package fails on an import, the packages
# above it are put in sys.modules as plain namespaces (their `__path__` only, no `__init__` run)
# and the module is imported again: its relative imports of sibling modules still work. If that
# fails too, the first error is the candidate's reason.


def _exec(path: Path, tree: ast.Module, dotted: str) -> types.ModuleType:
    name = "opscan_repo_" + dotted.replace(".", "_")
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__package__ = dotted.rpartition(".")[0]
    sys.modules[name] = module
    exec(compile(tree, str(path), "exec"), module.__dict__)   # noqa: S102 - the contained child only
    return module


def _build_named(path: Path, name: str, root: Path, batch, seq_len, target: str, read: dict | None = None) -> Built:
    module = load(path, root)
    obj = getattr(module, name, None)
    if obj is None:
        raise TargetError(f"{target}: {path.name} has no {name!r} once loaded")
    kwargs, how = construct.arguments(obj, module, path.parent, root=root)
    config = next((v for v in kwargs.values() if not isinstance(v, (int, float, str, bool))), kwargs)
    if construct.from_defaults(how):   # a factory's own words (`num_channels`: its width): its image size only
        config = {k: v for k, v in kwargs.items() if k in repo_inputs.IMAGE_NAMES}
    result = _construct(obj, kwargs, how)
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], nn.Module) \
            and isinstance(result[1], (dict, tuple, list, torch.Tensor)):
        model, example = result
        if isinstance(example, dict):
            return Built(model, kwargs=dict(example), description=target)
        return Built(model, args=tuple(example) if isinstance(example, (tuple, list)) else (example,),
                     description=target)
    if isinstance(result, tuple):   # `(model, diffusion)`: the first nn.Module (NOTE [factories of a package])
        result = next((item for item in result if isinstance(item, nn.Module)), result)
    if not isinstance(result, nn.Module):
        raise TargetError(f"{target}: returned {type(result).__name__}, not an nn.Module")
    if not how or construct.from_script(how):   # nothing sized by opscan: a builder, defaults or the training
        # script's own arguments at full depth (NOTE [cutting repeated blocks])
        shrinking.cut_repeats(result)
    config = getattr(result, "config", None) or getattr(result, "cfg", None) or config
    args, extra, note = _inputs(result, config, batch, seq_len, root, read or {})
    configs = [w for w in how if config_files.WORDS in w   # configs from the repository's config files
               or script_options.WORDS in w              # or from its argparse parsers
               or script_calls.WORDS in w]               # or its training script's call
    note = "; ".join(n for n in ("config " + "; ".join(configs) if configs else "", note) if n)
    return Built(result, args=args, kwargs=extra, description=target, note=note)


def _inputs(model: nn.Module, config, batch, seq_len, root: Path, read: dict) -> tuple[tuple, dict, str]:
    """The forward's inputs (opscan/targets/repo_inputs.py); when the forward has an argument they
    cannot name, or fails without the setup the repository makes first, the repository's own call
    sites complete them (NOTE [setup calls] in opscan/targets/call_sites.py): (args, kwargs, what was done)."""
    try:
        args, extra = repo_inputs.example_inputs(model, config, batch, seq_len)
    except TargetError:
        usage = _usage(model, root, read)
        if usage is None or usage.call is None:
            raise
        args, extra = repo_inputs.example_inputs(model, config, batch, seq_len, call=usage.call,
                                                 kinds=dict(usage.kinds))
    else:
        usage = None
    if repo_inputs.runs_on_meta(model, args, extra, uncopyable=True):   # no copy: no evidence it fails
        return args, extra, ""
    usage = usage or _usage(model, root, read)
    if usage is None or not usage.setups:
        return args, extra, ""
    return setup_calls.prepare(model, args, extra, usage)


def _usage(model: nn.Module, root: Path, read: dict | None = None):
    """How the repository uses the model's class (call_sites.usage), when the class is one of its
    files: as the parent read it (`read`, keyed (file, class)), else read here."""
    try:
        source = Path(inspect.getsourcefile(type(model)) or "").resolve()
        rel = source.relative_to(root).as_posix()
    except (TypeError, ValueError, OSError):
        return None
    key = (rel, type(model).__name__)
    if read and key in read:
        return read[key]
    return call_sites.usage(root, rel, type(model).__name__)


def _construct(obj, kwargs: dict, how: list[str]):
    """`obj(**kwargs)` on meta; when a constraint between the values opscan chose fails, the
    variants of constraints.retries (NOTE [constructor constraints] in constraints.py), first that builds."""
    try:
        return build_empty(lambda: obj(**kwargs))
    except constraints.RETRY_ERRORS as exc:
        chosen = {w.split("=")[0] for w in how if "=" in w and w.split("=")[0].isidentifier()}
        if not chosen:
            raise
        first = exc
    for variant, words in constraints.retries(kwargs, chosen, str(first)):
        try:
            result = build_empty(lambda variant=variant: obj(**variant))
        except constraints.RETRY_ERRORS:
            continue
        how.append(words)
        return result
    raise first


class _Captured(Exception):
    def __init__(self, module, args, kwargs):
        super().__init__("captured")
        self.module, self.args, self.kwargs = module, args, kwargs


# NOTE [stopping at the model call]
# A README example or a `__main__` demo builds the model as its authors meant and calls it with
# real inputs. It runs here (the contained child) with every Parameter on `meta` (build_empty) and
# nn.Module.__call__ replaced: the first call of a module from the example's own code (no module
# call active) raises _Captured with that module and its arguments, so nothing after it runs: no
# forward on real data, no training loop. The model is then traced as any other. `.cuda()` and
# `device="cuda"` are answered on the CPU, file downloads raise, and pretrained weights keep the
# model's own initialisation (NOTE [pretrained weights on the model path] in absent_weights.py).

def _capture(path: Path, block: str, root: Path, target: str) -> Built:
    if block == "main":
        tree = ast.parse(path.read_bytes(), filename=str(path))
        body = recipes.definitions(tree).body + [n for n in tree.body if isinstance(n, ast.If)
                                                 and "__name__" in ast.unparse(n.test)]
        code = ast.Module(body=body, type_ignores=[])
        namespace = {"__name__": "__main__", "__file__": str(path)}
    else:
        blocks = [code for _, code in recipes.fenced_blocks(path.read_text(encoding="utf-8"))]
        if not block.isdigit() or not 0 < int(block) <= len(blocks):
            raise TargetError(f"{target}: {path.name} has no fenced block {block}")
        code = ast.parse(blocks[int(block) - 1])
        namespace = {"__name__": "__opscan_example__"}
    for entry in (str(root), str(root / "src"), str(path.parent)):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    cwd, argv = os.getcwd(), sys.argv
    try:
        os.chdir(path.parent)
        sys.argv = [str(path)]   # NOTE [a demo's own argv]
        return stop_at_model_call(lambda: _exec_code(code, path, namespace), target,
                                  "the example ran to its end without calling a model")
    finally:
        os.chdir(cwd)
        sys.argv = argv


# NOTE [a demo's own argv]
# A `__main__` demo (or a README block) that parses its command line once read opscan's own
# arguments (`opscan REPO --format json`) and exited 2 in its parser. It runs with an argv of its
# own: its file's path alone, so its parser takes its defaults; a demo that still exits (a required
# option) is the candidate's one-line reason, never an exit of opscan.

def _exec_code(code: ast.Module, path: Path, namespace: dict) -> None:
    try:
        exec(compile(code, str(path), "exec"), namespace)   # noqa: S102 - the contained child only
    except SystemExit as exc:
        raise TargetError(f"{path.name} exited ({exc.code}) before its model call, run with no "
                          "command-line arguments (a required option?)") from None


def stop_at_model_call(run, target: str, ran_through: str) -> Built:
    """`run()` with Parameters on meta until its first model call: that module and its arguments
    (NOTE [stopping at the model call]); TargetError `ran_through` when it calls none."""
    original = nn.Module.__call__

    def call(module, *args, **kwargs):
        raise _Captured(module, args, kwargs)

    nn.Module.__call__ = call
    try:
        build_empty(run)
    except _Captured as got:
        return Built(got.module, args=tuple(got.args), kwargs=dict(got.kwargs), description=target)
    finally:
        nn.Module.__call__ = original
    raise TargetError(f"{target}: {ran_through}")


@contextlib.contextmanager
def _no_downloads():
    import torch.hub

    def refuse(*args, **kwargs):
        raise TargetError("opscan does not download files (the example asks for one)")

    saved = torch.hub.download_url_to_file
    torch.hub.download_url_to_file = refuse   # weights: NOTE [pretrained weights on the model path]
    try:
        yield
    finally:
        torch.hub.download_url_to_file = saved


@contextlib.contextmanager
def _cuda_is_cpu():
    """`.cuda()` and `.to("cuda")` while an example builds its model: kept on the CPU."""
    saved = (nn.Module.cuda, torch.Tensor.cuda, nn.Module.to, torch.Tensor.to)
    module_to, tensor_to = saved[2], saved[3]

    def fix(args, kwargs):
        args = tuple("cpu" if _is_cuda(a) else a for a in args)
        if _is_cuda(kwargs.get("device")):
            kwargs = {**kwargs, "device": "cpu"}
        return args, kwargs

    def mto(self, *args, **kwargs):
        args, kwargs = fix(args, kwargs)
        return module_to(self, *args, **kwargs)

    def tto(self, *args, **kwargs):
        args, kwargs = fix(args, kwargs)
        if self.is_meta:   # NOTE [moves of meta weights]
            device, dtype, *_ = torch._C._nn._parse_to(*args, **kwargs)
            if device is not None and device.type != "meta":
                return tensor_to(self, dtype=dtype) if dtype is not None else self
        return tensor_to(self, *args, **kwargs)

    nn.Module.cuda = lambda self, *a, **k: self
    torch.Tensor.cuda = lambda self, *a, **k: self
    nn.Module.to, torch.Tensor.to = mto, tto
    try:
        yield
    finally:
        nn.Module.cuda, torch.Tensor.cuda, nn.Module.to, torch.Tensor.to = saved


# NOTE [moves of meta weights]
# Constructors often move themselves: `self.to(self.device)`, `self.to("cpu")`, `.cuda()` (answered
# on the CPU, above). While a model is built its Parameters are on `meta` (build_empty), and torch
# refuses to copy a meta tensor to any real device ("Cannot copy out of meta tensor"), so such a
# constructor failed. A move of a meta tensor to a real device keeps it on `meta` (a dtype given
# with it still applies): the trace makes every weight fake on the imitated device anyway.

def _is_cuda(value) -> bool:
    return (isinstance(value, str) and value.startswith("cuda")) or \
        (isinstance(value, torch.device) and value.type == "cuda")


__all__ = ["build_repo", "load", "stop_at_model_call"]
