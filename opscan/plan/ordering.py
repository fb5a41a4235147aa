"""Orders tasks as a dependency graph (networkx for `graph`) whose every edge says why one task comes first."""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from opscan.plan.task_kinds import STAGES
from opscan.records import Task

if TYPE_CHECKING:
    import networkx as nx
# NOTE [task edges]: an edge exists only where one kind of task must be done before another, and it
# carries the reason. Kinds are those of catalog.Kind.id; an edge applies when both tasks exist.
# Tasks of unrelated kinds (guarding cuDNN flags and the process group) have no edge at all.
_DEVICE = "device-agnostic"
EDGES: tuple[tuple[str, str, str], ...] = (
    (_DEVICE, "mixed-precision", "autocast and GradScaler take `dev.type` from the device variable the "
     "device-agnostic task introduces"),
    (_DEVICE, "distributed-backend", "the process-group backend and `set_device` follow the device picked "
     "once (`get_default_backend_for_device(dev)`)"),
    (_DEVICE, "backend-flags", "the guard `if dev.type == \"cuda\"` tests the device variable the "
     "device-agnostic task introduces"),
    (_DEVICE, "profiler", "profiling the `neuron` device needs the model to run on it"),
    (_DEVICE, "torch-compile", "`torch.compile(backend=\"neuron\")` compiles a model placed on the device "
     "picked once"),
    (_DEVICE, "library", "the replacement is run and compared on the `neuron` device, which the code "
     "must pick first"),
    (_DEVICE, "kernel", "the kernel's replacement is dispatched and tested on the device variable "
     "instead of `cuda`"),
    (_DEVICE, "unsupported-ops", "op errors are reproduced on `neuron`, which needs the model on that device"),
    (_DEVICE, "cpu-fallback", "fallbacks only happen, and can only be measured, once the model runs on `neuron`"),
    (_DEVICE, "may-fall-back", "fallbacks only happen, and can only be probed, once the model runs on `neuron`"),
    ("unknown-ops", "unsupported-ops", "probing may show more ops the backend rejects, or fewer"),
    ("unknown-ops", "cpu-fallback", "probing may show more ops that fall back to the CPU, or fewer"),
    ("library", "unsupported-ops", "the library's PyTorch replacement dispatches new ops: trace again before "
     "providing missing ones"),
    ("library", "cpu-fallback", "the library's PyTorch replacement dispatches new ops: trace again before "
     "working around fallbacks"),
    ("kernel", "unsupported-ops", "the kernel's replacement dispatches new ops: trace again before providing "
     "missing ones"),
    ("kernel", "cpu-fallback", "the kernel's replacement dispatches new ops: trace again before working around "
     "fallbacks"),
    ("kernel", "torch-compile", "a CUDA or Triton kernel in the model stops `torch.compile(backend=\"neuron\")` "
     "from capturing it"),
    ("library", "torch-compile", "a CUDA-only library's kernels in the model stop `torch.compile(backend=\"neuron\")` "
     "from capturing it"),
    ("torch-version", "unsupported-ops", "the ops are judged for the torch the release pairs with: trace again "
     "on it before providing missing ones"),
    ("torch-version", "cpu-fallback", "the ops are judged for the torch the release pairs with: trace again on "
     "it before working around fallbacks"),
    ("torch-version", "may-fall-back", "the ops are judged for the torch the release pairs with: probe them on it"),
    ("torch-version", "unknown-ops", "the ops are judged for the torch the release pairs with: probe them on it"),
    ("torch-version", "torch-compile", "`torch.compile(backend=\"neuron\")` needs the torch the release pairs with"),
    ("torch-version", "library", "the library's PyTorch replacement is written and compared on the paired torch"),
    ("torch-version", "kernel", "the NKI kernel is registered with the torch-neuronx built for the paired torch"),
    ("cuda-graphs", "torch-compile", "with CUDA-graph capture removed, `torch.compile(backend=\"neuron\")` is "
     "the compiled path left"),
)


# When the torch task is an upgrade (a pin of the installed package keeps torch off the pairing:
# NOTE [torch move] in plan/torch_move.py), it comes before every other task, with this reason.
UPGRADE = "torch-version"
UPGRADE_FIRST = ("every other task is done and tested on the torch this upgrade brings: the code, its ops "
                 "and its libraries are judged for the paired torch")


def dependencies(kinds: dict[str, str], upgrade: bool = False) -> dict[str, tuple[tuple[str, str], ...]]:
    """For each task id (-> its kind id), the (task id, reason) pairs that must come first, sorted.
    `upgrade`: the torch task moves torch, so it precedes every task (UPGRADE_FIRST)."""
    by_kind: dict[str, list[str]] = {}
    for task_id, kind in kinds.items():
        by_kind.setdefault(kind, []).append(task_id)
    out: dict[str, tuple[tuple[str, str], ...]] = {}
    for task_id, kind in kinds.items():
        deps: dict[str, str] = {}
        for before, after, reason in EDGES:
            if after == kind:
                for other in by_kind.get(before, ()):
                    if other != task_id:
                        deps.setdefault(other, reason)
        if upgrade and kind != UPGRADE:
            for other in by_kind.get(UPGRADE, ()):
                deps.setdefault(other, UPGRADE_FIRST)
        out[task_id] = tuple(sorted(deps.items()))
    return out


def graph(tasks: tuple[Task, ...] | list[Task]) -> nx.DiGraph:
    """The task graph: an edge a -> b (attribute `reason`) means a must be done before b."""
    import networkx as nx  # here only: importing it costs more than a warm scan (docs/benchmarks.md)

    g = nx.DiGraph()
    for task in tasks:
        g.add_node(task.id)
    for task in tasks:
        for dep in task.depends_on:
            g.add_edge(dep, task.id, reason=task.reason_for(dep))
    return g


def order(tasks: list[Task], stage_of: dict[str, str]) -> tuple[Task, ...]:
    """Tasks in an order that respects the graph; ties broken by priority, stage, then id.

    The lexicographical topological sort of `graph(tasks)` (Kahn's algorithm, always taking the
    smallest key among the tasks whose prerequisites are done), without importing networkx.
    """
    by_id = {t.id: t for t in tasks}
    stage_index = {name: i for i, name in enumerate(STAGES)}
    key = {t.id: (t.priority, stage_index[stage_of[t.id]], t.id) for t in tasks}
    after: dict[str, set[str]] = {t.id: set() for t in tasks}
    waiting: dict[str, int] = {}
    for task in tasks:
        for dep in set(task.depends_on):
            after[dep].add(task.id)
            waiting[task.id] = waiting.get(task.id, 0) + 1
    ready = [key[t.id] for t in tasks if t.id not in waiting]
    heapq.heapify(ready)
    out: list[Task] = []
    while ready:
        task_id = heapq.heappop(ready)[2]
        out.append(by_id[task_id])
        for nxt in after[task_id]:
            waiting[nxt] -= 1
            if not waiting[nxt]:
                heapq.heappush(ready, key[nxt])
    if len(out) != len(tasks):
        raise ValueError("task dependencies form a cycle: " + ", ".join(sorted(set(by_id) - {t.id for t in out})))
    return tuple(out)
