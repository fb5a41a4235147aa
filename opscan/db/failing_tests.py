"""Known failures as data: map a backend's failing upstream PyTorch test methods to (op packet, dtype).

The TorchNeuron pre-release snapshot runs PyTorch's device-type tests on `neuron` and keeps the
failing methods per test class (`tests/pytorch_tests/failing_test_methods/<Class>.json`). A device
test's name is `test_<stem>_neuron[_<dtype>...]`. NOTE [clear mapping]: a name maps to one
(packet, dtype) only when
  - it ends in exactly one dtype (`_neuron_float16`; two dtypes, as in `test_set_real_imag_neuron_
    complex64_float32`, or none, say nothing about one op's dtype), and
  - the stem is an aten overload packet of the installed torch (`gather`, `scatter_`, `scatter_add_`,
    `linspace`), or a packet plus one value of its `reduce` argument (`scatter_reduce_mean`).
Everything else (`test_gather_large_...`, `test_upsamplingBiMode2d_...`, `test_GroupNorm_empty_...`)
is not clear: module tests, variants and properties exercise several ops, so those names become
release-level notes (counted per class), never op entries.

`python -m opscan.db.failing_tests DIR` prints the `known_failures:` rows for a release file and
the counts of what stayed unmapped (needs torch for the packet names).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from opscan.db.loader import DTYPES

_NAME = re.compile(r"^test_(?P<stem>.+?)_(?:neuron|privateuse1)(?:_(?P<dtypes>.+))?$")
REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")   # values of aten's `reduce: str` argument


def map_test(name: str, packets: frozenset[str], reducing: frozenset[str]) -> tuple[str, str] | None:
    """(aten packet, dtype) for a failing test method name, or None when the mapping is not clear.

    `packets`: aten packet base names of the installed torch (`gather`); `reducing`: those whose
    schema has a `reduce: str` argument (`scatter_reduce`). See NOTE [clear mapping].
    """
    match = _NAME.match(name)
    if match is None or not match.group("dtypes") or match.group("dtypes") not in DTYPES:
        return None
    stem, dtype = match.group("stem"), match.group("dtypes")
    if stem in packets:
        return f"aten::{stem}", dtype
    base, _, value = stem.rpartition("_")
    if base in reducing and value in REDUCTIONS:
        return f"aten::{base}", dtype
    return None


def torch_packets() -> tuple[frozenset[str], frozenset[str]]:
    """(aten packet names, packets with a `reduce: str` argument) of the installed torch."""
    import torch

    names, reducing = set(), set()
    for full in torch._C._dispatch_get_all_op_names():
        ns, _, rest = full.partition("::")
        if ns != "aten":
            continue
        base, _, overload = rest.partition(".")
        names.add(base)
        op = getattr(getattr(torch.ops.aten, base, None), overload or "default", None)
        if op is not None and any(a.name == "reduce" and str(a.type) == "str" for a in op._schema.arguments):
            reducing.add(base)
    return frozenset(names), frozenset(reducing)


def map_lists(lists: dict[str, Iterable[str]], packets: frozenset[str], reducing: frozenset[str]):
    """({(packet, dtype): ["Class.test", ...]}, {Class: unmapped count}) for {Class: failing tests}."""
    mapped: dict[tuple[str, str], list[str]] = {}
    unmapped: dict[str, int] = {}
    for cls in sorted(lists):
        for name in sorted(lists[cls]):
            hit = map_test(name, packets, reducing)
            if hit is None:
                unmapped[cls] = unmapped.get(cls, 0) + 1
            else:
                mapped.setdefault(hit, []).append(f"{cls}.{name}")
    return dict(sorted(mapped.items())), unmapped


def read_lists(folder: Path) -> dict[str, list[str]]:
    """{Class: failing test methods} from a folder of `<Class>.json` files (`{"failed_tests": [...]}`)."""
    out = {}
    for path in sorted(folder.glob("*.json")):
        out[path.stem] = list(json.loads(path.read_text(encoding="utf-8"))["failed_tests"])
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m opscan.db.failing_tests FAILING_TEST_METHODS_DIR", file=sys.stderr)
        return 2
    lists = read_lists(Path(argv[0]))
    mapped, unmapped = map_lists(lists, *torch_packets())
    print("known_failures:")
    for (packet, dtype), tests in mapped.items():
        print(f'  - {{packet: "{packet}", dtype: {dtype}, evidence: [snapshot-tests],')
        print("     tests: [" + ", ".join(f'"{t}"' for t in tests) + "]}")
    total = sum(len(v) for v in lists.values())
    print(f"# {total} failing methods: {sum(len(t) for t in mapped.values())} mapped to "
          f"{len(mapped)} (packet, dtype) rows; unmapped per class: "
          + ", ".join(f"{c} {n}" for c, n in unmapped.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
