"""Tells the two torch-neuronx lines apart by version: native TorchNeuron (2.13.x/2.14.x) or XLA.

Both ship under the same pip name. Facts (Neuron SDK 2.33.0; sources: the SRC_* URLs below):
- native line: torch-neuronx 2.13.3.0 pairs with torch 2.13.0, 2.14.3.0 with torch 2.14.0
  (release notes 2.33, components index 2.33); install the family matching the torch version;
- XLA line: 2.9.0.2.x (e.g. 2.9.0.2.15.32035, Neuron 2.31-2.33) pairs with torch 2.9, the last
  XLA-based version; older XLA releases are <torch version>.<sdk version> (e.g. 1.13.0.1.6.0);
- caveat: the troubleshooting page (2026-04-21) calls only 2.14.x native, which conflicts with
  the 2.13.3.0 native package in the 2.33 release notes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SRC_RELEASE_NOTES = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/release-notes/components/torchneuron.html"
SRC_COMPONENTS = "https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/release-notes/components/index.html"
SRC_TROUBLESHOOTING = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/troubleshooting.html"
SRC_XLA_NOTES = ("aws-neuron/aws-neuron-sdk release-notes/torch/torch-neuronx/index.rst "
                 "@ 90a7fe4ba2ba0cf16202efd1895ac6f8c401f8d9")

# (torch-neuronx major, minor) -> the documented native release for Neuron SDK 2.33.0
NATIVE_RELEASES: dict[tuple[int, int], str] = {(2, 13): "2.13.3.0", (2, 14): "2.14.3.0"}
LAST_XLA_TORCH = (2, 9)
XLA_LATEST = "2.9.0.2.15.32035"

_NUMBERS = re.compile(r"^(\d+(?:\.\d+)*)")


@dataclass(frozen=True)
class NeuronxLine:
    """What an installed torch-neuronx version is."""

    version: str
    line: str                         # "native" | "xla" | "unknown"
    torch: tuple[int, int] | None     # the torch major.minor it pairs with
    detail: str
    sources: tuple[str, ...]


def release(version: str) -> tuple[int, ...]:
    """The numeric release of a version string: '2.14.3.0+abc' -> (2, 14, 3, 0); () if none."""
    match = _NUMBERS.match(version.strip().lstrip("vV"))
    return tuple(int(p) for p in match.group(1).split(".")) if match else ()


def classify(version: str) -> NeuronxLine:
    """Which torch-neuronx line `version` belongs to, and the torch it pairs with."""
    parts = release(version)
    if len(parts) < 2:
        return NeuronxLine(version, "unknown", None, f"cannot read version {version!r}", ())
    key = (parts[0], parts[1])
    if key in NATIVE_RELEASES:
        documented = NATIVE_RELEASES[key]
        detail = (f"native TorchNeuron line (device 'neuron'); pairs with torch {key[0]}.{key[1]}; "
                  f"SDK 2.33.0 ships {documented}")
        if ".".join(map(str, parts)) != documented:
            detail += f" (this is {version}, not the documented {documented})"
        sources = (SRC_RELEASE_NOTES, SRC_COMPONENTS)
        if key == (2, 13):
            detail += ("; note: the troubleshooting page (2026-04-21) calls only 2.14.x native, "
                       "the 2.33 release notes list 2.13.3.0 as native")
            sources += (SRC_TROUBLESHOOTING,)
        return NeuronxLine(version, "native", key, detail, sources)
    if (1, 11) <= key <= LAST_XLA_TORCH and len(parts) >= 4:
        return NeuronxLine(
            version, "xla", key,
            f"older XLA-based line (device 'xla', PyTorch/XLA), pairs with torch {key[0]}.{key[1]}; "
            f"it is not the native backend: TorchNeuron needs torch-neuronx 2.13.x/2.14.x "
            f"(latest XLA release in the facts: {XLA_LATEST})",
            (SRC_RELEASE_NOTES, SRC_COMPONENTS, SRC_XLA_NOTES))
    return NeuronxLine(
        version, "unknown", None,
        f"version {version} is neither the native line (2.13.x/2.14.x) nor the XLA line "
        "(<= 2.9.0.x) in the facts for Neuron SDK 2.33.0",
        (SRC_RELEASE_NOTES, SRC_COMPONENTS))


def torch_release(version: str) -> tuple[int, int] | None:
    """torch '2.13.0+cpu' -> (2, 13)."""
    parts = release(version)
    return (parts[0], parts[1]) if len(parts) >= 2 else None
