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
from opscan.model import EVIDENCE_KINDS, STATUSES, OpName

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
    """What small sample inputs showed for one op: dtypes that ran on the device / fell back."""

    ran: list[str] = field(default_factory=list)
    fell_back: list[str] = field(default_factory=list)


def _import(module: str | None):
    if module is None:
        return None
    try:
        return importlib.import_module(module)
    except Exception as exc:  # the user's module: any failure is theirs to see in one line
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


def read_dispatcher() -> tuple[list[str], bool, dict[str, int]]:
    """(ops with a PrivateUse1 kernel, whether a catch-all fallback is registered, composite counts)."""
    import torch

    C = torch._C
    registered = set()
    for name in C._dispatch_get_registrations_for_dispatch_key("PrivateUse1"):
        if name.startswith("c10d::"):
            continue  # torch registers its collectives for every PrivateUse1 backend: not kernels
        try:
            registered.add(str(OpName.parse(name)))
        except ValueError:
            continue
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
    return sorted(registered), fallback, counts


def _tracker(module):
    """TorchNeuron's op-tracking API (get_fallback_ops / clear_op_tracking), if the backend has it."""
    for candidate in (module, _maybe_import("torch_neuronx")):
        if candidate is not None and hasattr(candidate, "get_fallback_ops") and hasattr(candidate, "clear_op_tracking"):
            return candidate
    return None


def _maybe_import(name: str):
    try:
        return importlib.import_module(name)
    except Exception:
        return None


def run_samples(ops: list[str], device: str, dtypes: tuple[str, ...], module=None) -> dict[str, SampleResult]:
    """Run each op on small inputs per dtype on `device`; note which dtypes ran there / fell back."""
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
            dtype = getattr(torch, dtype_name)

            def make(shape, dtype=dtype):
                base = torch.randint(0, 3, shape) if not dtype.is_floating_point else torch.rand(shape)
                return base.to(dtype).to(device)

            verdict = _try(overload, make, tracker)
            if verdict == "ran":
                result.ran.append(dtype_name)
            elif verdict == "fell-back":
                result.fell_back.append(dtype_name)
        if result.ran or result.fell_back:
            results[op] = result
    return results


def _try(overload, make, tracker) -> str:
    """'ran', 'fell-back' or 'no-sample' for the first sample input the op accepts."""
    try:
        attempts = list(candidates_for(overload, make))
    except Exception:
        return "no-sample"
    for args, kwargs in attempts:
        if tracker is not None:
            tracker.clear_op_tracking()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                overload(*args, **kwargs)
            except Exception:
                continue
        fell = any(_FELL_BACK.search(str(w.message)) for w in caught)
        if tracker is not None and tracker.get_fallback_ops():
            fell = True
        return "fell-back" if fell else "ran"
    return "no-sample"


def candidates_for(overload, make):
    from opscan.db.samples import candidates

    return candidates(overload, make)


def sdpa_choice(device: str) -> str | None:
    """The SDPA kernel the backend picks for small float32 inputs, when it answers on the device."""
    import torch

    q = torch.rand(1, 1, 4, 8).to(device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            choice = int(torch.ops.aten._fused_sdp_choice(q, q, q))
        except Exception:
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
    registered, fallback, counts = read_dispatcher()
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
                        "text": f"sample inputs fell back to CPU on {install.text}",
                        "install": f"{install.text} / torch {install.torch}", "date": date})
    ops = [_entry(op, results.get(op)) for op in registered]
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
        "notes": [
            f"{len(registered)} ops have a PrivateUse1 kernel; catch-all fallback registered: "
            f"{'yes' if fallback else 'no'}.",
            f"{counts['CompositeImplicitAutograd']} aten ops reach the backend through CompositeImplicitAutograd "
            f"and {counts['CompositeExplicitAutograd']} through CompositeExplicitAutograd kernels; "
            "opscan judges them by their parts at lookup time.",
            "Sample inputs were run per dtype: " + ", ".join(dtypes) if samples else
            "No sample inputs were run (--samples): run-time fallbacks inside registered kernels are not seen.",
        ],
        "ops": ops,
    }


def _entry(op: str, result: SampleResult | None) -> dict:
    entry = {"op": op, "status": "native", "evidence": ["probe"], "confidence": "high"}
    if result is None or not result.fell_back:
        return entry
    if result.ran:
        entry.update(status="limited", evidence=["probe", "samples"],
                     note=f"falls back to CPU at run time for {', '.join(result.fell_back)} "
                          f"(ran on the device for {', '.join(result.ran)})")
    else:
        entry.update(status="cpu-fallback", evidence=["probe", "samples"], confidence="medium",
                     note=f"has a kernel, but sample inputs fell back to CPU for {', '.join(result.fell_back)}")
    return entry


def write_probe(doc: dict, out: Path) -> None:
    """Write the probed release file atomically, then load it back to prove it is valid."""
    from opscan.db.loader import load_file
    from opscan.db.writer import dump, write_atomic

    header = ("Probed by `opscan db probe` from a live dispatcher. Regenerate rather than edit.\n"
              "Schema: coverage_db/README.md in the opscan source.")
    write_atomic(out, dump(doc, header))
    load_file(out, check_registry=False)
