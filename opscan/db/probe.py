"""`opscan db probe`: read a live PrivateUse1 backend's dispatcher (and optionally run samples) into a release file."""

from __future__ import annotations

import datetime
import importlib
import importlib.metadata
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from opscan.errors import DatabaseError, UsageError
from opscan.records import EVIDENCE_KINDS, STATUSES, OpName, Status

SAMPLE_DTYPES = ("float32", "bfloat16", "float64", "int64")
_FELL_BACK = re.compile(r"Operator '([^']+)' fell back to CPU")
# torch.nn.attention.SDPBackend values returned by aten::_fused_sdp_choice
_SDP_CHOICE = {0: "math", 4: "overrideable"}


@dataclass(frozen=True)
class Install:
    """The backend a probe ran against."""

    device: str
    name: str                  # distribution or module name, e.g. "torch-neuronx"
    version: str
    torch: str

    @property
    def text(self) -> str:
        return f"{self.name} {self.version}"


@dataclass
class SampleResult:
    """What sample inputs showed for one op, per dtype: ran on the device, fell back, matched the CPU."""

    ran: list[str] = field(default_factory=list)
    fell_back: list[str] = field(default_factory=list)
    wrong: dict[str, str] = field(default_factory=dict)      # dtype -> measured error, results not the CPU's
    narrowed: dict[str, str] = field(default_factory=dict)   # dtype -> measured error, computed narrower
    matched: list[str] = field(default_factory=list)         # dtypes whose results matched the CPU


def _import(module: str | None):
    if module is None:
        return None
    try:
        return importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - the user's module: any failure is theirs to see in one line
        raise UsageError(f"--import {module}: cannot import it ({type(exc).__name__}: {exc})") from None


def _identify(module, device: str, torch_version: str) -> Install:
    """Name and version of the backend: the --import module, else the torch.backends entry point."""
    candidates: list[tuple[str, str | None]] = []
    if module is not None:
        top = module.__name__.split(".")[0]
        for dist in importlib.metadata.packages_distributions().get(top, []):
            candidates.append((dist, None))
        candidates.append((top, getattr(module, "__version__", None)))
    else:
        for ep in importlib.metadata.entry_points(group="torch.backends"):
            if ep.dist is not None:
                candidates.append((ep.dist.name, ep.dist.version))
    for name, version in candidates:
        if version is None:
            try:
                version = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                continue
        return Install(device=device, name=name, version=str(version), torch=torch_version)
    return Install(device=device, name=f"{device}-backend", version="unknown", torch=torch_version)


def read_dispatcher() -> tuple[list[str], bool, dict[str, int], list[str]]:
    """(ops with a PrivateUse1 kernel, catch-all fallback registered?, composite counts, dropped names).

    Names that are not real overloads of this torch (an impl registered for an op nobody defined)
    are dropped: they can never be dispatched, so they are no kernel.
    """
    import torch

    from opscan.db.samples import resolve

    C = torch._C
    registered, dropped = set(), set()
    for name in C._dispatch_get_registrations_for_dispatch_key("PrivateUse1"):
        if name.startswith("c10d::"):
            continue  # torch registers its collectives for every PrivateUse1 backend: not kernels
        try:
            canonical = str(OpName.parse(name))
        except ValueError:
            dropped.add(name)
            continue
        if name.startswith("aten::") and resolve(canonical) is None:
            dropped.add(canonical)
            continue
        registered.add(canonical)
    fallback = bool(C._dispatch_has_backend_fallback(C.DispatchKey.PrivateUse1))
    counts = {"CompositeImplicitAutograd": 0, "CompositeExplicitAutograd": 0}
    for name in C._dispatch_get_all_op_names():
        if not name.startswith("aten::") or name in registered:
            continue
        if C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd"):
            counts["CompositeImplicitAutograd"] += 1
        elif (C._dispatch_has_kernel_for_dispatch_key(name, "CompositeExplicitAutograd")
              or C._dispatch_has_kernel_for_dispatch_key(name, "CompositeExplicitAutogradNonFunctional")):
            counts["CompositeExplicitAutograd"] += 1
    return sorted(registered), fallback, counts, sorted(dropped)


def _tracker(module):
    """TorchNeuron's op-tracking API (get_fallback_ops / clear_op_tracking), if the backend has it."""
    for candidate in (module, _maybe_import("torch_neuronx")):
        if candidate is not None and hasattr(candidate, "get_fallback_ops") and hasattr(candidate, "clear_op_tracking"):
            return candidate
    return None


def _maybe_import(name: str):
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - an optional module: any import failure means absent
        return None


# NOTE [probe samples]
# Each registered aten op runs on sample inputs (NOTE [sample variants]: several shapes and
# variants, at most SAMPLES_PER_DTYPE accepted per dtype) on the device and, from identical
# copies, on the CPU. A dtype is
#   - fell back: the backend warned "Operator '...' fell back to CPU" (or get_fallback_ops said so);
#   - narrowed: results differ from the CPU by about the precision of the next narrower dtype
#     (float64 computed as float32: error <= NARROWED_FLOAT64), or int64 results differ where the
#     CPU's values leave the int32 range and the device's are exactly the CPU's wrapped to int32
#     (int64 data samples are offset by 2**33 to show it);
#   - wrong: any other difference beyond the dtype's tolerance (TOLERANCE), or another shape/dtype;
#   - matched: every compared output within tolerance.
# Ops whose CPU results differ between two runs on the same inputs (random ops) are not compared.
SAMPLES_PER_DTYPE = 3
TOLERANCE = {"float64": 1e-10, "float32": 1e-4, "float16": 2e-3, "bfloat16": 2e-2}
NARROWED_FLOAT64 = 1e-5
INT64_OFFSET = 2 ** 33


def _factory(dtype, generator):
    """tensor(shape, role) making CPU sample tensors of `dtype` (NOTE [probe samples])."""
    import torch

    def make(shape, role="data"):
        if role == "index":
            return torch.zeros(shape, dtype=torch.int64)
        if role == "mask":
            return torch.rand(shape, generator=generator) > 0.5
        if dtype.is_floating_point or dtype.is_complex:
            return torch.rand(shape, generator=generator).to(dtype)
        base = torch.randint(0, 3, shape, generator=generator)
        return (base + INT64_OFFSET).to(dtype) if dtype == torch.int64 else base.to(dtype)

    return make


def _tensors(value):
    import torch
    from torch.utils._pytree import tree_leaves

    return [t for t in tree_leaves(value) if isinstance(t, torch.Tensor)]


def compare(dtype_name: str, device_out, cpu_out) -> tuple[str, str]:
    """('matched' | 'narrowed' | 'wrong', measured error text) for one sample's outputs."""
    import torch

    got, want = _tensors(device_out), _tensors(cpu_out)
    if len(got) != len(want):
        return "wrong", f"{len(got)} outputs instead of {len(want)}"
    worst, verdict = 0.0, "matched"
    for g, w in zip(got, want):
        g = g.to("cpu")
        if g.shape != w.shape:
            return "wrong", f"shape {tuple(g.shape)} instead of {tuple(w.shape)}"
        if g.dtype != w.dtype:
            return ("narrowed" if g.dtype.itemsize < w.dtype.itemsize else "wrong"), \
                f"returned {str(g.dtype).replace('torch.', '')} instead of {str(w.dtype).replace('torch.', '')}"
        if g.numel() == 0:
            continue
        if w.dtype.is_floating_point or w.dtype.is_complex:
            scale = w.abs().to(torch.float64).clamp(min=1.0)
            diff = ((g.to(torch.complex128 if w.dtype.is_complex else torch.float64)
                     - w.to(torch.complex128 if w.dtype.is_complex else torch.float64)).abs() / scale)
            if bool(torch.isnan(g).ne(torch.isnan(w)).any()):
                return "wrong", "NaN where the CPU has a number (or the reverse)"
            error = float(torch.nan_to_num(diff, nan=0.0).max())
            tolerance = TOLERANCE.get(dtype_name, 1e-4)
            if error > tolerance:
                kind = "narrowed" if dtype_name == "float64" and error <= NARROWED_FLOAT64 else "wrong"
                if kind == "wrong" or verdict == "matched":
                    verdict = kind
            worst = max(worst, error)
        else:
            differs = g.ne(w)
            if bool(differs.any()):
                error = float((g.to(torch.float64) - w.to(torch.float64)).abs().max())
                wrapped = w.to(torch.int32).to(w.dtype) if dtype_name == "int64" else None
                kind = "narrowed" if wrapped is not None and bool(torch.equal(g, wrapped)) else "wrong"
                if kind == "wrong" or verdict == "matched":
                    verdict = kind
                worst = max(worst, error)
    return verdict, f"max error {worst:.3g}"


def _equal(a, b) -> bool:
    import torch

    left, right = _tensors(a), _tensors(b)
    return len(left) == len(right) and all(
        x.shape == y.shape and x.dtype == y.dtype and bool(torch.equal(x, y) or (x.isnan() & y.isnan()).all()
                                                             if x.is_floating_point() else torch.equal(x, y))
        for x, y in zip(left, right))


def _uninitialized(overload) -> bool:
    """Ops whose results are uninitialized memory (empty, resize_): nothing to compare."""
    name = overload._schema.name.partition("::")[2]
    return "empty" in name or name.startswith(("resize", "set_"))


def run_samples(ops: list[str], device: str, dtypes: tuple[str, ...], module=None) -> dict[str, SampleResult]:
    """Run each op on sample inputs per dtype on `device` and on the CPU (NOTE [probe samples])."""
    import torch

    from opscan.db.samples import resolve

    tracker = _tracker(module)
    results: dict[str, SampleResult] = {}
    for op in ops:
        overload = resolve(op)
        if overload is None or not op.startswith("aten::"):
            continue
        result = SampleResult()
        for dtype_name in dtypes:
            outcome, error = _try(overload, getattr(torch, dtype_name), dtype_name, device, tracker)
            if outcome == "fell-back":
                result.fell_back.append(dtype_name)
                continue
            if outcome == "no-sample":
                continue
            result.ran.append(dtype_name)
            if outcome == "wrong":
                result.wrong[dtype_name] = error
            elif outcome == "narrowed":
                result.narrowed[dtype_name] = error
            elif outcome == "matched":
                result.matched.append(dtype_name)
        if result.ran or result.fell_back:
            results[op] = result
    return results


def _try(overload, dtype, dtype_name: str, device: str, tracker) -> tuple[str, str]:
    """The worst outcome over the accepted samples: fell-back > wrong > narrowed > matched > ran.

    'ran' means it ran on the device but no result could be compared (random ops, the CPU rejects
    the sample); 'no-sample' means no sample input was accepted.
    """
    import torch
    from torch.utils._pytree import tree_map

    from opscan.db.samples import candidates

    generator = torch.Generator().manual_seed(0)
    order = ("matched", "ran", "narrowed", "wrong", "fell-back")
    worst, error, accepted = None, "", 0
    try:
        attempts = list(candidates(overload, _factory(dtype, generator)))
    except Exception:  # noqa: BLE001 - no sample builds for this overload: said as no-sample
        return "no-sample", ""
    for _sample, args, kwargs in attempts:
        if accepted >= SAMPLES_PER_DTYPE:
            break
        def clone(x):
            return x.clone() if isinstance(x, torch.Tensor) else x
        cpu_args, cpu_kwargs = tree_map(clone, (args, kwargs))
        cpu_again = tree_map(clone, (args, kwargs))
        dev_args, dev_kwargs = tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x,
                                        (args, kwargs))
        if tracker is not None:
            tracker.clear_op_tracking()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                device_out = overload(*dev_args, **dev_kwargs)
            except Exception:  # noqa: BLE001 - the backend rejects this sample: try the next
                continue
        accepted += 1
        fell = any(_FELL_BACK.search(str(w.message)) for w in caught)
        if tracker is not None and tracker.get_fallback_ops():
            fell = True
        if fell:
            return "fell-back", ""
        outcome, measured = "ran", ""
        if _uninitialized(overload):
            worst = worst or "ran"
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                cpu_out = overload(*cpu_args, **cpu_kwargs)
                repeat = overload(*cpu_again[0], **cpu_again[1])
                if _equal(cpu_out, repeat):
                    outcome, measured = compare(dtype_name, device_out, cpu_out)
            except Exception:  # noqa: BLE001 - the CPU reference cannot run it: the outcome stays as measured
                pass
        if worst is None or order.index(outcome) > order.index(worst):
            worst, error = outcome, measured
    return (worst or "no-sample"), error


def sdpa_choice(device: str) -> str | None:
    """The SDPA kernel the backend picks for small float32 inputs, when it answers on the device."""
    import torch

    q = torch.rand(1, 1, 4, 8).to(device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            choice = int(torch.ops.aten._fused_sdp_choice(q, q, q))
        except Exception:  # noqa: BLE001 - the backend cannot choose: the probe says unknown
            return None
    if any(_FELL_BACK.search(str(w.message)) for w in caught):
        return None  # answered by the CPU, not by the backend
    return _SDP_CHOICE.get(choice)


def _backend_id(name: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "backend"


def probe(import_module: str | None = None, samples: bool = False, name: str | None = None,
          release: str | None = None, dtypes: tuple[str, ...] = SAMPLE_DTYPES,
          today: str | None = None) -> dict:
    """Probe the PrivateUse1 backend of this process and return the release document (a dict)."""
    import torch

    module = _import(import_module)
    device = torch._C._get_privateuse1_backend_name()
    registered, fallback, counts, dropped = read_dispatcher()
    for dropped_name in dropped:
        warnings.warn(f"dropped {dropped_name}: a PrivateUse1 registration for an operator this torch does not "
                      "define (not a real overload, never dispatched)", UserWarning, stacklevel=2)
    if device == "privateuseone" and not any(op.startswith("aten::") for op in registered) and not fallback:
        raise DatabaseError("no PrivateUse1 backend is registered in this process; pass --import MODULE "
                            "(the module that registers it) or install the backend")
    install = _identify(module, device, torch.__version__)
    date = today or datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    sources = [{"id": "probe", "kind": "probed", "text": f"probed on {install.text}",
                "install": f"{install.text} / torch {install.torch}", "date": date}]
    results = run_samples(registered, device, dtypes, module) if samples else {}
    if samples:
        sources.append({"id": "samples", "kind": "probed",
                        "text": f"sample inputs run on {install.text} and compared with the CPU",
                        "install": f"{install.text} / torch {install.torch}", "date": date, "compared": True})
    ops = [_entry(op, results.get(op)) for op in registered]
    fallbacks = [row for row in (fallback_row(e["op"], results.get(e["op"])) for e in ops
                                 if Status(e["status"]) is Status.LIMITED) if row]
    sdpa = "overrideable" if "aten::_scaled_dot_product_fused_attention_overrideable" in registered else "math"
    sdpa_how = "from the registered kernels"
    if samples:
        chosen = sdpa_choice(device)
        if chosen is not None:
            sdpa, sdpa_how = chosen, "aten::_fused_sdp_choice answered on the device"
    if fallback:
        unlisted = {"status": "cpu-fallback", "evidence": ["probe"], "confidence": "high",
                    "note": "no kernel in the probed install; a catch-all PrivateUse1 fallback is registered "
                            "(taken to be the CPU fallback)"}
    else:
        unlisted = {"status": "unsupported", "evidence": ["probe"], "confidence": "high",
                    "note": "no kernel and no catch-all fallback in the probed install: the dispatcher raises "
                            "NotImplementedError"}
    return {
        "schema_version": 1, "backend": _backend_id(name or install.name),
        "release": release or install.version,
        "title": f"{install.text} on device '{device}', probed {date}", "released": date,
        "device": device, "dispatch_key": "PrivateUse1",
        "packages": [{"name": install.name, "version": install.version,
                      "torch": ".".join(install.torch.split("+")[0].split(".")[:2])}],
        "op_names": "overload", "kernel_list": "complete",
        "statuses": dict(STATUSES), "evidence_kinds": dict(EVIDENCE_KINDS), "sources": sources,
        "unlisted": unlisted,
        "profile": {"sdpa_policy": sdpa, "evidence": ["probe"], "note": sdpa_how},
        "environment": environment(install),
        "notes": [
            (f"Dropped {len(dropped)} PrivateUse1 registration(s) for operators this torch does not define: "
             + ", ".join(dropped)) if dropped else "Every PrivateUse1 registration names a real operator.",
            (f"{len(registered)} ops have a PrivateUse1 kernel; catch-all fallback registered: "
             f"{'yes' if fallback else 'no'}."),
            f"{counts['CompositeImplicitAutograd']} aten ops reach the backend through CompositeImplicitAutograd "
            f"and {counts['CompositeExplicitAutograd']} through CompositeExplicitAutograd kernels; "
            "opscan judges them by their parts at lookup time.",
            "Sample inputs were run per dtype: " + ", ".join(dtypes) if samples else
            "No sample inputs were run (--samples): run-time fallbacks inside registered kernels are not seen.",
        ],
        "ops": ops,
        **({"dtype_fallbacks": fallbacks} if fallbacks else {}),
    }


# Environment variables that change what falls back to CPU or how fallbacks show (TorchNeuron's
# env-vars page and pre-release docs/environment_variables.md).
FALLBACK_ENV = ("TORCH_NEURONX_FALLBACK_ONLY_FOR_UNIMPLEMENTED_OPS", "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION",
                "TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY", "TORCH_NEURONX_COMPLEX_DECOMPOSE",
                "TORCH_NEURONX_LOG_LEVEL", "TORCH_NEURONX_RETAIN_DEVICE_MODE")
_INSTANCE_FILE = Path("/sys/devices/virtual/dmi/id/product_name")   # EC2 Nitro: the instance type


def instance_type(path: Path = _INSTANCE_FILE) -> str:
    """The EC2 instance type (e.g. trn2.48xlarge) from the DMI product name, or 'unknown'."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return "unknown"
    return text if re.match(r"^[a-z][a-z0-9-]*\d*[a-z]*\.[a-z0-9]+$", text) else f"unknown (DMI product name {text!r})"


def environment(install: Install) -> dict:
    """Where the probe ran: torch-neuronx version, instance type, fallback-related env vars."""
    import os

    try:
        neuronx = importlib.metadata.version("torch-neuronx")
    except importlib.metadata.PackageNotFoundError:
        neuronx = "not installed"
    return {
        "backend": install.text, "torch": install.torch, "torch-neuronx": neuronx,
        "instance_type": instance_type(),
        "env": {name: os.environ.get(name, "(unset)") for name in FALLBACK_ENV},
    }


def fallback_row(op: str, result: SampleResult | None, source: str = "samples") -> dict | None:
    """The `dtype_fallbacks` row of a `limited` op that fell back to the CPU for some dtypes and ran on
    the device for others (NOTE [dtypes after decomposition] in opscan/db/lookup.py), or None."""
    if result is None or not result.fell_back or not result.ran:
        return None
    return {"op": op, "dtypes": sorted(result.fell_back), "evidence": [source],
            "note": f"fell back to the CPU for {', '.join(sorted(result.fell_back))} on sample inputs"}


def _entry(op: str, result: SampleResult | None) -> dict:
    """A registration alone is native at medium; samples that matched the CPU make it high."""
    entry = {"op": op, "status": "native", "evidence": ["probe"], "confidence": "medium"}
    if result is None:
        return entry
    if result.fell_back and not result.ran:
        entry.update(status="cpu-fallback", evidence=["probe", "samples"], confidence="medium",
                     note=f"has a kernel, but sample inputs fell back to CPU for {', '.join(result.fell_back)}")
        return entry
    problems = []
    if result.fell_back:
        problems.append(f"falls back to CPU at run time for {', '.join(result.fell_back)} "
                        f"(ran on the device for {', '.join(result.ran)})")
    problems.extend(f"wrong results for {d} ({e} vs CPU)" for d, e in result.wrong.items())
    problems.extend(f"{d} computed at lower precision ({e} vs CPU)" for d, e in result.narrowed.items())
    if problems:
        entry.update(status="limited", evidence=["probe", "samples"], confidence="high", note="; ".join(problems))
    elif result.matched and set(result.matched) == set(result.ran):
        entry.update(evidence=["probe", "samples"], confidence="high")
    return entry


def write_probe(doc: dict, out: Path) -> None:
    """Write the probed release file atomically, then load it back to prove it is valid."""
    from opscan.db.loader import load_file
    from opscan.db.writer import dump, write_atomic

    header = ("Probed by `opscan db probe` from a live dispatcher. Regenerate rather than edit.\n"
              "Schema: coverage_db/README.md in the opscan source.")
    write_atomic(out, dump(doc, header))
    load_file(out, check_registry=False)
