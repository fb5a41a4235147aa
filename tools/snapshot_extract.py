"""Read the TorchNeuron pre-release source snapshot into a small JSON extract (registrations, failing tests, xfails).

Usage: python tools/snapshot_extract.py GIT_DIR [--commit C] [--out PATH]

GIT_DIR is a clone (or bare mirror) of parmoham-aws/test-repo-parmoham; files are read with
`git show COMMIT:PATH`, so no checkout is needed. The extract is what `tools/regen_torchneuron.py`
builds coverage_db/torchneuron-2.33.0.yaml from; it is committed beside the release file
(coverage_db/sources/) so the build and its test run without the source.

NOTE [reading registrations]
The snapshot registers PrivateUse1 kernels in four ways (mechanism codes as in the project's fact
notes): `mlir` -- `@register_aten([...])` in torch_neuronx/python_ops/torch_mlir/ops/*.py;
`neuron_op` -- the `@neuron_op` / `@neuron_unary_op` / `@neuron_binary_op` /
`@neuron_reduction_op` / `@neuron_comparison_op` decorators, in every module that
`auto_registration.discover_all_implementations` imports (it skips `.legacy`, `.jax` and module
names containing "test"); `pylib` -- `aten_lib.impl(NAME, fn, "PrivateUse1")` in
torch_neuronx/python_ops/__init__.py; `cpp` -- `m.impl("NAME", ...)` inside
`TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)` in torch_neuronx/csrc/core/NeuronBindings.cpp.
Python files are parsed with `ast`, so a commented-out decorator (`# @register_aten([...vstack...])`)
is not a registration; C++ comment lines are skipped. Registrations behind version guards are
counted (the guard is not evaluated), as in the fact notes.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from pathlib import Path

COMMIT = "98154b867aa24562a3213e520d9ad7fd41032291"
REPO = "parmoham-aws/test-repo-parmoham"
_DECORATORS = {"register_aten": "mlir", "neuron_op": "neuron_op", "neuron_unary_op": "neuron_op",
               "neuron_binary_op": "neuron_op", "neuron_reduction_op": "neuron_op",
               "neuron_comparison_op": "neuron_op"}
_FAILING = "tests/pytorch_tests/failing_test_methods/"
_SPEC = "tests/pytorch_tests/specs/"
_PYTEST = "tests/python_ops/"


class Source:
    """Files of one commit of a git repository."""

    def __init__(self, git_dir: Path, commit: str) -> None:
        self.git_dir, self.commit = Path(git_dir), commit

    def _git(self, *args: str) -> str:
        return subprocess.run(["git", "--git-dir", str(self._dir()), *args], check=True,
                              capture_output=True, text=True).stdout

    def _dir(self) -> Path:
        dotgit = self.git_dir / ".git"
        return dotgit if dotgit.exists() else self.git_dir

    def files(self, prefix: str) -> list[str]:
        return sorted(self._git("ls-tree", "-r", "--name-only", self.commit, prefix).split())

    def read(self, path: str) -> str:
        return self._git("show", f"{self.commit}:{path}")


def _aten(name: str) -> str:
    return name if name.startswith("aten::") else f"aten::{name}"


def _strings(node) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [s for item in node.elts for s in _strings(item)]
    return []


def _call_name(node) -> str:
    func = node.func if isinstance(node, ast.Call) else node
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _python_registrations(path: str, text: str) -> list[dict]:
    out = []
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            for dec in node.decorator_list:
                via = _DECORATORS.get(_call_name(dec))
                if via and isinstance(dec, ast.Call) and dec.args:
                    if via == "mlir" and "/torch_mlir/ops/" not in path:
                        continue
                    out += [{"op": _aten(s), "via": via, "path": path, "line": dec.lineno}
                            for s in _strings(dec.args[0])]
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "impl"
                and _call_name(node.func.value) == "aten_lib" and len(node.args) >= 3
                and _strings(node.args[2]) == ["PrivateUse1"]):
            out += [{"op": _aten(s), "via": "pylib", "path": path, "line": node.lineno}
                    for s in _strings(node.args[0])]
    return out


def _cpp_registrations(path: str, text: str) -> list[dict]:
    out, inside = [], False
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("//", 1)[0]
        if re.match(r"\s*TORCH_LIBRARY_IMPL\(\s*aten\s*,\s*PrivateUse1\s*,", code):
            inside = True
        elif inside and re.match(r"^}", code):
            inside = False
        elif inside:
            for name in re.findall(r'\bm\.impl\(\s*"([^"]+)"', code):
                out.append({"op": _aten(name), "via": "cpp", "path": path, "line": number})
    return out


def _auto_imported(path: str) -> bool:
    """Whether auto_registration's package walk imports this module (NOTE [reading registrations])."""
    module = path[:-3].replace("/", ".")
    return not (".legacy" in module or ".jax" in module or "test" in module.split("torch_neuronx.python_ops", 1)[-1])


def registrations(src: Source) -> list[dict]:
    """Every PrivateUse1 registration of an aten op, with its mechanism, file and line."""
    found = []
    for path in src.files("torch_neuronx/python_ops/"):
        if path.endswith(".py") and _auto_imported(path):
            found += _python_registrations(path, src.read(path))
    found += _cpp_registrations("torch_neuronx/csrc/core/NeuronBindings.cpp",
                                src.read("torch_neuronx/csrc/core/NeuronBindings.cpp"))
    return sorted(found, key=lambda r: (r["op"], r["via"], r["path"], r["line"]))


def failing_tests(src: Source) -> dict[str, list[str]]:
    """{Class: failing test methods} from tests/pytorch_tests/failing_test_methods/*.json."""
    return {Path(p).stem: sorted(json.loads(src.read(p))["failed_tests"])
            for p in src.files(_FAILING) if p.endswith(".json")}


def spec_xfails(src: Source) -> list[dict]:
    """Per-test xfails with a reason in tests/pytorch_tests/specs/*.json (not the list-file ones)."""
    out = []
    for path in src.files(_SPEC):
        for config in json.loads(src.read(path)).get("test_configurations", []):
            for item in config.get("xfail") or []:
                if "test_list_filename" in item or "tests" in item:
                    continue
                for test, info in item.items():
                    out.append({"class": config.get("class", ""), "test": test,
                                "reason": (info or {}).get("reason", ""), "path": path})
    return sorted(out, key=lambda x: (x["path"], x["class"], x["test"]))


_PARAM_XFAIL = re.compile(r"pytest\.param\(\s*torch\.(?P<dtype>\w+)\s*,\s*marks\s*=\s*pytest\.mark\.xfail\("
                          r"\s*reason\s*=\s*\"(?P<reason>[^\"]*)\"")


def pytest_xfails(src: Source) -> list[dict]:
    """`pytest.param(torch.DTYPE, marks=pytest.mark.xfail(reason=...))` in tests/python_ops/test_<op>.py."""
    out = []
    for path in src.files(_PYTEST):
        if not (path.endswith(".py") and Path(path).name.startswith("test_")):
            continue
        text = src.read(path)
        for match in _PARAM_XFAIL.finditer(text):
            out.append({"file": path, "line": text.count("\n", 0, match.start()) + 1,
                        "dtype": match["dtype"], "reason": match["reason"]})
    return out


def _reason(call: ast.Call) -> str:
    """The `reason=` of an xfail mark call: a string constant (implicitly joined literals included)."""
    for keyword in call.keywords:
        if keyword.arg == "reason" and isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str):
            return " ".join(keyword.value.value.split())
    return ""


def test_xfails(src: Source) -> list[dict]:
    """Whole-test `@pytest.mark.xfail(reason=...)` on the test functions of tests/python_ops/test_<op>.py
    (read with `ast`: a commented-out mark is none). `conditional`: the mark has a condition argument
    (`xfail(cond, reason=...)`), so the test fails only where the condition holds."""
    out = []
    for path in src.files(_PYTEST):
        if not (path.endswith(".py") and Path(path).name.startswith("test_")):
            continue
        try:
            tree = ast.parse(src.read(path))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.ClassDef, ast.Module)):
                continue
            owner = node.name if isinstance(node, ast.ClassDef) else ""
            for item in node.body:
                if not (isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test_")):
                    continue
                for mark in item.decorator_list:
                    if (isinstance(mark, ast.Call) and isinstance(mark.func, ast.Attribute)
                            and mark.func.attr == "xfail" and ast.unparse(mark.func.value) == "pytest.mark"):
                        out.append({"file": path, "line": mark.lineno, "class": owner, "test": item.name,
                                    "reason": _reason(mark), "conditional": bool(mark.args)})
    return sorted(out, key=lambda x: (x["file"], x["line"]))


def extract(src: Source) -> dict:
    """The whole extract: what regen_torchneuron.py reads."""
    return {"repo": REPO, "commit": src.commit, "registrations": registrations(src),
            "failing_tests": failing_tests(src), "spec_xfails": spec_xfails(src),
            "pytest_xfails": pytest_xfails(src), "test_xfails": test_xfails(src)}


def dumps(data: dict) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("git_dir", type=Path)
    parser.add_argument("--commit", default=COMMIT)
    parser.add_argument("--out", type=Path,
                        default=(Path(__file__).resolve().parents[1]
                                 / "coverage_db/sources/torchneuron-snapshot-98154b8.json"))
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(dumps(extract(Source(args.git_dir, args.commit))), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
