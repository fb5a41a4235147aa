"""Build tags in a pin pip no longer parses: `mmcv-full==latest+torch1.6.0+cu101` read as the CUDA
build and the torch it was made for (NOTE [build tags])."""

from __future__ import annotations

import re
from typing import NamedTuple

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

# NOTE [build tags]
# Older toolboxes published their CUDA builds under versions that are not PEP 440: OpenMMLab's
# `mmcv-full==latest+torch1.6.0+cu101` (two `+` parts) from its wheel page, taken by pip releases
# that still accepted legacy versions. `packaging` rejects the pin, so it used to give no entry at
# all in a shell command (it may be anything there). The build tag still says what a port must
# change, as a valid local label does (NOTE [wheel URLs]): a `+cuNNN` / `+cudaX.Y` part is a CUDA
# build (OPS504, by its label as written), and a `torchX.Y[.Z]` part names the torch the build
# was compiled against, read as the pin `torch==X.Y[.Z]` (judged by OPS501), as a find-links page
# of one torch's builds is (NOTE [find-links pages of one torch]). Only a `==` pin whose version
# is no PEP 440 version and whose tag after the first `+` holds such a part is read; the entry
# keeps no specifier (the version is unknown) and its `version` is the tag as written. A valid
# local label (`+cu121`, k2's `+cuda11.8.torch2.1.0`) is read as a pin by `packaging` as before,
# its torch part not taken for a torch pin.
_PIN = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*(?P<public>[^\s+;=<>!~]*)\+(?P<tag>[A-Za-z0-9._+-]+)")
_CUDA_PART = re.compile(r"\+(?:cu\d{2,3}|cuda\d+(?:\.\d+)?)(?=$|[+._-])")   # OPS504's labels, after a `+`
_TORCH_PART = re.compile(r"(?:^|[+._-])torch(?P<version>\d+\.\d+(?:\.\d+)?)(?=$|[+_-]|\.(?!\d))")


class Tagged(NamedTuple):
    """One requirement a build-tagged pin stands for (manifests.py makes it an entry at its line)."""

    name: str       # canonical distribution name
    spec: str       # "" (the package: its version is unknown) or "==X.Y[.Z]" (the torch it was built for)
    version: str    # the version as written ("" for the torch part)
    text: str       # the pin as written


def build_tag(text: str) -> list[Tagged]:
    """The package and the torch a non-PEP 440 build-tagged pin stands for (NOTE [build tags]), or []."""
    token = text.strip().strip("'\"")
    match = _PIN.fullmatch(token)
    if match is None:
        return []
    version = f"{match['public']}+{match['tag']}"
    try:
        Version(version)
        return []   # a valid version: `packaging` reads it
    except InvalidVersion:
        pass
    tag = "+" + match["tag"]
    cuda, torch = _CUDA_PART.search(tag), _TORCH_PART.search(tag)
    if cuda is None and torch is None:
        return []
    tagged = [Tagged(canonicalize_name(match["name"]), "", version, token)]
    if torch is not None:
        tagged.append(Tagged("torch", f"=={torch['version']}", "", token))
    return tagged
