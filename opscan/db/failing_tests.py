"""Known failures as data: map a backend's failing upstream PyTorch tests to the ops a trace sees.

The TorchNeuron pre-release snapshot runs PyTorch's device-type tests on `neuron` and keeps the
failing methods per test class (`tests/pytorch_tests/failing_test_methods/<Class>.json`); its spec
files and its own pytest files add expected failures with reasons. A device test's name is
`test_<stem>_neuron[_<dtype>...]`.

NOTE [clear mapping]
A test name maps to (op packet, dtype or any dtype) when
  - it ends in at most one dtype (two dtypes, as in `test_set_real_imag_neuron_complex64_float32`,
    say nothing about one op's dtype; no dtype means the test does not vary it: "any dtype"), and
  - its stem names an op: an aten packet of the installed torch (`gather`, `one_hot`), a packet
    plus one value of its `reduce` argument (`scatter_reduce_mean`), an upsampling module test
    (`upsamplingBiMode2d_..._mode_bicubic_...` -> `upsample_bicubic2d`, `_upsample_bicubic2d_aa`
    with antialias), or a packet plus a variant (`gather_large`, `nll_loss_all_ignored`: the
    longest packet prefix at a `_` boundary).
Module tests (`GroupNorm_empty`, `Transformer_empty`, `affine_2d_rotate0`) name no op and stay
release notes, counted per class.

NOTE [ops the trace sees]
A trace never sees the packet a test calls when it decomposes first: `dstack` reaches the
dispatcher as `cat` (plus views), `pad` as `constant_pad_nd`, `nll_loss` as `nll_loss_forward`.
So each row lists the ops a trace can record for it: every overload of the packet, of its
in-place form (`normal` -> `normal_`) and, for an in-place packet, the out variants of the
functional form (`scatter_` -> `scatter.src_out`, which is what the snapshot registers); an
overload with a CompositeImplicitAutograd kernel and no kernel of the backend is replaced by the
ops its kernel calls (`registry.composite_expansion`, repeated until no such op is left; views
and allocation and data movement (`empty`, `clone`, `copy_`, `_unsafe_view`, `fill_`) are dropped:
they are not what the test is about). Direct overloads go to `ops`, decomposition results to
`parts`: only `ops` entries must be `limited` (the tests call them), `parts` carry the caveat.

NOTE [decompositions the meta samples miss] (issue 36)
Some CompositeImplicitAutograd packets cannot be expanded on meta samples: conv3d's samples are
4-D, ctc_loss needs its lengths' values, conj of a real sample is a no-op. Their rows would name
only the packet, which a trace never records (a Conv3d model showed just the conv2d row's caveat).
TRACED_AS states what a trace of a real model records instead, checked by tracing one model per
packet (tests/db/test_db_rows_fire.py). Packets whose decomposition is only generic ops
(`combinations` -> arange/index ops, `gru`/`lstm` -> linear, sigmoid, tanh, mul on PrivateUse1)
leave no op of their own in a trace: NOT_TRACED says why, and their rows and release notes are
left out of the release and counted in its known-failures note (tools/regen_torchneuron.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

from opscan.db.loader import DTYPES
from opscan.records import OpName

_NAME = re.compile(r"^test_(?P<stem>.+?)_(?:neuron|privateuse1)(?:_(?P<dtypes>.+))?$")
REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")   # values of aten's `reduce: str` argument
ANY = ""                                               # dtype of a row that holds for any dtype
# Parts that compute nothing the failing test is about: allocation and data movement every
# decomposition does (a row on them would hit every model; NOTE [ops the trace sees]).
_ALLOCATIONS = ("aten::empty", "aten::empty_strided", "aten::empty_like", "aten::clone", "aten::_unsafe_view",
                "aten::copy_", "aten::_to_copy", "aten::fill_", "aten::zero_", "aten::resize_", "aten::expand")
TRACED_AS = {
    "aten::conv3d": ("aten::convolution",),                      # as conv2d: the convolution kernel
    "aten::conj": ("aten::_conj",),                              # the conjugate view of a complex tensor
    "aten::ctc_loss": ("aten::_ctc_loss", "aten::_ctc_loss.Tensor"),   # IntList / Tensor lengths
}
NOT_TRACED = {
    "aten::combinations": "decomposes into generic indexing ops (arange, index): no op of its own in a trace",
    "aten::gru": "on PrivateUse1 decomposes into its cells' linear, sigmoid, tanh and mul: "
                 "no op of its own in a trace",
    "aten::lstm": "on PrivateUse1 decomposes into its cells' linear, sigmoid, tanh and mul: "
                  "no op of its own in a trace",
}
_UPSAMPLE = {"Nearest1d": "upsample_nearest1d", "Nearest2d": "upsample_nearest2d",
             "Nearest3d": "upsample_nearest3d", "Bilinear2d": "upsample_bilinear2d",
             "BiLinear2d": "upsample_bilinear2d", "Bicubic2d": "upsample_bicubic2d",
             "Trilinear3d": "upsample_trilinear3d", "Linear1d": "upsample_linear1d"}


def _upsample(stem: str) -> str | None:
    """The aten packet an `upsampling<Mode>` module test exercises, or None."""
    head, _, rest = stem.partition("_")
    if not head.startswith("upsampling"):
        return None
    mode = head[len("upsampling"):]
    if mode == "BiMode2d":
        found = re.search(r"mode_(bilinear|bicubic)", rest)
        if not found:
            return None
        packet = f"upsample_{found.group(1)}2d"
    else:
        packet = _UPSAMPLE.get(mode)
        if packet is None:
            return None
        if "nearest" in packet and "exact" in rest.lower():
            packet = packet.replace("upsample_nearest", "_upsample_nearest_exact")
    return f"_{packet}_aa" if "antialias_True" in rest else packet


def map_test(name: str, packets: frozenset[str], reducing: frozenset[str],
             apis: frozenset[str] = frozenset()) -> tuple[str, str, str] | None:
    """(aten packet, dtype or ANY, variant) for a failing test name, or None (NOTE [clear mapping]).

    `packets`: aten packet base names of the installed torch (`gather`); `reducing`: those whose
    schema has a `reduce: str` argument (`scatter_reduce`); `apis`: Python API names (torch,
    torch.nn.functional, torch.nn.utils): a stem that continues into one of them names that API, not
    the shorter packet (`cross_entropy_...` is not `cross`, `clip_grad_norm_...` not `clip`).
    `variant` is the rest of the stem (`large` for `test_gather_large_neuron`), "" when the stem is
    the packet.
    """
    match = _NAME.match(name)
    if match is None:
        return None
    dtype = match.group("dtypes") or ANY
    if dtype and dtype not in DTYPES:
        return None
    stem = match.group("stem")
    if stem in packets:
        return f"aten::{stem}", dtype, ""
    base, _, value = stem.rpartition("_")
    if base in reducing and value in REDUCTIONS:
        return f"aten::{base}", dtype, ""
    upsample = _upsample(stem)
    if upsample is not None and upsample in packets:
        return f"aten::{upsample}", dtype, stem.partition("_")[0]     # the module test; its parameters vary
    words = stem.split("_")
    for cut in range(len(words) - 1, 0, -1):
        prefix = "_".join(words[:cut])
        if prefix in packets and len(prefix) > 2:
            if any("_".join(words[:longer]) in apis for longer in range(cut + 1, len(words) + 1)):
                return None
            return f"aten::{prefix}", dtype, "_".join(words[cut:])
    return None


def torch_apis() -> frozenset[str]:
    """Public names of torch, torch.Tensor, torch.nn.functional and torch.nn.utils (see map_test)."""
    import torch

    spaces = (torch, torch.Tensor, torch.nn.functional, torch.nn.utils)
    return frozenset(n.rstrip("_") for space in spaces for n in dir(space) if not n.startswith("__"))


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


def map_lists(lists: dict[str, Iterable[str]], packets: frozenset[str], reducing: frozenset[str],
              apis: frozenset[str] = frozenset()):
    """({(packet, dtype): ["Class.test", ...]}, {Class: unmapped count}) for {Class: failing tests}."""
    mapped: dict[tuple[str, str], list[str]] = {}
    unmapped: dict[str, int] = {}
    for cls in sorted(lists):
        for name in sorted(lists[cls]):
            hit = map_test(name, packets, reducing, apis)
            if hit is None:
                unmapped[cls] = unmapped.get(cls, 0) + 1
            else:
                mapped.setdefault(hit[:2], []).append(f"{cls}.{name}")
    return dict(sorted(mapped.items())), unmapped


def _is_view(op: str) -> bool:
    from opscan.db.samples import resolve

    overload = resolve(op)
    return overload is not None and bool(overload._schema.returns) and all(
        r.alias_info is not None and not r.alias_info.is_write for r in overload._schema.returns)


def seen_ops(packet: str, kernels: frozenset[str], case: str = "", dispatch_key: str = "PrivateUse1"):
    """(ops, parts): the overloads a trace records for `packet` and what decomposes in their place.

    `kernels`: the ops the backend has its own kernel for; `case`: the test's variant -- when it is
    an overload name of the packet, or starts with one (`view_dtype_new` -> `aten::view.dtype`,
    `cat_out` -> `aten::cat.out`; not `out_of_bounds_...`), only that overload is meant. See NOTE
    [ops the trace sees].
    """
    from opscan.db import registry

    base = packet.removeprefix("aten::")
    for overload in registry.packet_overloads(packet):
        name = overload.partition(".")[2]
        if name and (case == name or (name != "out" and case.startswith(f"{name}_"))):
            return _expand([overload], kernels, dispatch_key)
    related = list(registry.packet_overloads(packet))
    if base.endswith("_"):
        related += [o for o in registry.packet_overloads(f"aten::{base[:-1]}") if "out" in o.rpartition(".")[2]]
    else:
        related += registry.packet_overloads(f"aten::{base}_")
    ops, parts = _expand(related, kernels, dispatch_key)
    if not ops and not parts and packet in TRACED_AS:   # NOTE [decompositions the meta samples miss]
        parts = TRACED_AS[packet]
    return ops, parts


def _expand(related, kernels: frozenset[str], dispatch_key: str):
    from opscan.db import registry

    ops, parts, seen = set(), set(), set()
    todo = [(op, True) for op in sorted(set(related))]
    while todo:
        op, direct = todo.pop()
        if op in seen:
            continue
        seen.add(op)
        decomposes = op not in kernels and registry.composite_key(op, dispatch_key) == "CompositeImplicitAutograd"
        if decomposes:
            expansion = registry.composite_expansion(op, dispatch_key)
            todo += [(p, False) for p in (expansion.parts if expansion else ())]
        elif direct:
            ops.add(op)
        elif not _is_view(op) and OpName.parse(op).packet not in _ALLOCATIONS:
            parts.add(op)
    return tuple(sorted(ops)), tuple(sorted(parts - ops))


def read_lists(folder: Path) -> dict[str, list[str]]:
    """{Class: failing test methods} from a folder of `<Class>.json` files (`{"failed_tests": [...]}`)."""
    out = {}
    for path in sorted(folder.glob("*.json")):
        out[path.stem] = list(json.loads(path.read_text(encoding="utf-8"))["failed_tests"])
    return out
