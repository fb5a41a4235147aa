"""Groups findings and op gaps by the fix they need (not by file) into task drafts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from opscan.records import (Coverage, Finding, KernelSource, Location, OpSource, OpUsage, status_of, Category,
                            KernelSourceKind)
from opscan.plan import task_kinds
from opscan.plan.task_kinds import Kind


@dataclass(frozen=True)
class KnownLibrary:
    """The library a custom op's namespace belongs to (`torchvision::nms` -> torchvision), as the
    assessment found it in opscan's tables: that library's question, never a kernel to port (NOTE
    [library ops] in opscan/assess/library_ops.py)."""

    package: str                 # its import name, the task's subject: "torchvision"
    builds: str = ""             # the build paired with the release's torch: "torchvision 0.28 (torch 2.13)"
    source: str = ""             # where that pairing is stated


@dataclass
class Draft:
    """A task before sizing and ordering."""

    kind: Kind
    id: str
    name: str = ""                                  # library / kernel name(s) as the title shows them
    subject: str = ""                               # library: its package; kernel: its first name (Task.subject)
    findings: list[Finding] = field(default_factory=list)
    ops: list[OpUsage] = field(default_factory=list)
    kernel_sources: list[KernelSource] = field(default_factory=list)   # distinct, in order found
    names: list[str] = field(default_factory=list)  # every kernel name in a kernel task
    places: list[Location] = field(default_factory=list)   # sites found by the trace (static-shapes)
    known: KnownLibrary | None = None               # a library task made from a known library's own ops

    @property
    def kernel_lines(self) -> int | None:
        """Measured size of the kernel sources (None when none was found)."""
        return sum(src.lines for src in self.kernel_sources) if self.kernel_sources else None

    @property
    def sites(self) -> tuple[Location, ...]:
        """One location per site (`Location.site`: a line of a file), its first, sorted (NOTE [sites])."""
        locations = {f.location for f in self.findings}
        locations |= {site_of(s) for op in self.ops for s in op.sources}
        locations |= set(self.places)
        first: dict[tuple, Location] = {}
        for location in sorted(locations):
            first.setdefault(location.site, location)
        return tuple(sorted(first.values()))

    @property
    def blocking_sites(self) -> int:
        """Sites with a finding that blocks as a site or a dependency pin (`Finding.blocks_as`; a
        kernel or library blocks as one kernel or library, whatever its sites; NOTE [blockers])."""
        return len({f.location.site for f in self.findings if f.blocks_as.is_site})

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(sorted({site.path for site in self.sites}))

    @property
    def blocking(self) -> bool:
        """An unguarded error finding, or an op the backend rejects."""
        return any(f.blocking for f in self.findings) or self.kind is task_kinds.UNSUPPORTED_KIND


def site_of(source: OpSource) -> Location:
    """A traced op's task site: the project's line the user can change, the library's line as its cause
    (NOTE [sites the user can change] in opscan/trace/sources.py)."""
    path, line = source.site
    return Location(path, line, cause=f"{source.path}:{source.line}" if source.site_path else "")


class _Union:
    """Union-find over string keys (kernel findings that share a file, name or source)."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, key: str) -> str:
        self.parent.setdefault(key, key)
        while self.parent[key] != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def join(self, *keys: str) -> None:
        roots = sorted({self.find(k) for k in keys})
        for other in roots[1:]:
            self.parent[other] = roots[0]


def kernel_sources(measured: tuple) -> tuple[KernelSource, ...]:
    """The kernel sources of one finding; the measuring code's (id, lines) pairs are parsed once here."""
    return tuple(src if isinstance(src, KernelSource) else KernelSource.parse(*src) for src in measured)


def _kernels(findings: list[Finding], ops: list[OpUsage], sources: Mapping[Location, tuple]) -> list[Draft]:
    """One kernel task per connected group: findings in one file, of one kernel name, or sharing a
    kernel source file are the same kernel work; custom ops join the kernel of the same name."""
    union = _Union()
    keys: list[tuple[object, list[str]]] = []
    for finding in findings:
        name = task_kinds.kernel_name(finding)
        nodes = [f"file:{finding.location.path}"] + ([f"name:{name}"] if name else [])
        # a source file or a stated name joins; a decorated function is its finding's own file
        nodes += [src.key for src in kernel_sources(sources.get(finding.location, ()))
                  if src.kind is not KernelSourceKind.FUNCTION]
        union.join(*nodes)
        keys.append((finding, nodes))
    for usage in ops:
        nodes = [f"name:{usage.op.split('::', 1)[-1].split('.', 1)[0]}"]
        union.join(*nodes)
        keys.append((usage, nodes))
    groups: dict[str, Draft] = {}
    for item, nodes in keys:
        root = union.find(nodes[0])
        draft = groups.setdefault(root, Draft(task_kinds.KERNEL_KIND, ""))
        for node in nodes:
            if node.startswith("name:") and node[5:] not in draft.names:
                draft.names.append(node[5:])
        if isinstance(item, Finding):
            draft.findings.append(item)
            for src in kernel_sources(sources.get(item.location, ())):
                if src.kind is not KernelSourceKind.NAME and src not in draft.kernel_sources:
                    draft.kernel_sources.append(src)
        else:
            draft.ops.append(item)
    out = []
    for draft in groups.values():
        first = draft.findings[0].location.path if draft.findings else ""
        draft.subject = draft.names[0] if draft.names else task_kinds.file_stem(first)
        draft.id = f"kernel:{draft.subject}"
        draft.name = ", ".join(f"`{n}`" for n in (draft.names or [draft.subject]))
        out.append(draft)
    return out


def _manifest_only_libraries(drafts: dict[str, Draft]) -> None:
    """A CUDA-only library only a dependency manifest names (OPS506; no code imports it as a
    library: unused, or the language of a kernel task, like `triton`) is no library port: its
    requirement is dropped with the other CUDA builds (the `cuda-packages` task, docs/dependencies.md).
    A requirement that admits a release with CPU wheels (OPS513) installs as it is: with no code
    calling the library there is nothing to port, so it joins no task (NOTE [CPU-capable releases]
    in opscan/plan/libraries.py)."""
    for task_id in [k for k, d in drafts.items() if d.kind is task_kinds.LIBRARY_KIND]:
        draft = drafts[task_id]
        if draft.findings and all(f.category is Category.DEPENDENCY for f in draft.findings):
            del drafts[task_id]
            kind = task_kinds.CUDA_PACKAGES_KIND
            moved = [f for f in draft.findings if f.name != "cpu-capable-library-dependency"]
            if moved:
                drafts.setdefault(kind.id, Draft(kind, kind.id)).findings.extend(moved)


def group(findings: tuple[Finding, ...], ops: list[OpUsage], coverage: Mapping[str, Coverage],
          kernel_sources: Mapping[Location, tuple] | None = None,
          libraries: Mapping[str, KnownLibrary] | None = None) -> list[Draft]:
    """Drafts for every port task the findings and traced ops call for; `libraries`: the custom ops
    of known libraries (op -> its library), which join that library's task, not a kernel's."""
    drafts: dict[str, Draft] = {}
    kernel_findings: list[Finding] = []
    custom_ops: list[OpUsage] = []
    for finding in sorted(findings, key=Finding.sort_key):
        kind = task_kinds.source_kind(finding)   # the rule's task kind: `import triton` next to a Triton
        if kind is None:                      # kernel already has task `kernel` (NOTE [subjects])
            continue
        if kind is task_kinds.KERNEL_KIND:
            kernel_findings.append(finding)
            continue
        name, task_id = "", kind.id
        if kind is task_kinds.LIBRARY_KIND:
            name = task_kinds.library_name(finding)
            task_id = f"library:{name}"
        draft = drafts.setdefault(task_id, Draft(kind, task_id, name, name))
        draft.findings.append(finding)
        if kind is task_kinds.LIBRARY_KIND and name in (libraries or {}):   # NOTE [library ops]
            draft.known = (libraries or {})[name]
    for usage in ops:
        status = status_of(coverage[usage.op].status if usage.op in coverage else "unknown")
        known = (libraries or {}).get(usage.op)
        if usage.custom and known is not None:   # NOTE [library ops]: that library's question
            task_id = f"library:{known.package}"
            draft = drafts.setdefault(task_id, Draft(task_kinds.LIBRARY_KIND, task_id, known.package, known.package))
            draft.ops.append(usage)
            draft.known = draft.known or known
            continue
        if usage.custom:
            custom_ops.append(usage)
            continue
        kind = task_kinds.OP_KINDS.get(status.task)   # the op-gap task its status makes (NOTE [status facts])
        if kind is not None:
            drafts.setdefault(kind.id, Draft(kind, kind.id)).ops.append(usage)
    _manifest_only_libraries(drafts)
    for draft in _kernels(kernel_findings, custom_ops, kernel_sources or {}):
        if draft.id in drafts:   # two groups with one name: keep them apart, deterministically
            draft.id = f"{draft.id}@{draft.findings[0].location.path if draft.findings else 'trace'}"
        drafts[draft.id] = draft
    return [drafts[key] for key in sorted(drafts)]


def static_shapes(traces) -> Draft | None:
    """The "make shapes static" task of the traces' compile forecasts: one site per line that makes
    a shape change between steps (the varying ops' origins), None when no shape varies."""
    places = sorted({site_of(v.origin) for t in traces if t.compile is not None
                     for v in t.compile.varying if v.origin is not None and v.origin.path})
    if not places:
        return None
    kind = task_kinds.STATIC_SHAPES_KIND
    return Draft(kind, kind.id, places=places)
