"""Orders tasks as a dependency graph (networkx): device-agnostic, distributed, kernels, performance."""

from __future__ import annotations

import networkx as nx

from opscan.model import Task
from opscan.plan.catalog import STAGES


def dependencies(stages: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """For each task id (-> its stage), the ids of the tasks of the nearest earlier populated stage."""
    order = list(STAGES)
    by_stage: dict[int, list[str]] = {}
    for task_id, stage in stages.items():
        by_stage.setdefault(order.index(stage), []).append(task_id)
    out: dict[str, tuple[str, ...]] = {}
    for task_id, stage in stages.items():
        earlier = [i for i in by_stage if i < order.index(stage)]
        out[task_id] = tuple(sorted(by_stage[max(earlier)])) if earlier else ()
    return out


def graph(tasks: tuple[Task, ...] | list[Task]) -> nx.DiGraph:
    """The task graph: an edge a -> b means a must be done before b."""
    g = nx.DiGraph()
    for task in tasks:
        g.add_node(task.id)
    for task in tasks:
        for dep in task.depends_on:
            g.add_edge(dep, task.id)
    return g


def order(tasks: list[Task], stage_of: dict[str, str]) -> tuple[Task, ...]:
    """Tasks in an order that respects the graph; ties broken by priority, stage, then id."""
    by_id = {t.id: t for t in tasks}
    stage_index = {name: i for i, name in enumerate(STAGES)}
    key = lambda task_id: (by_id[task_id].priority, stage_index[stage_of[task_id]], task_id)  # noqa: E731
    return tuple(by_id[i] for i in nx.lexicographical_topological_sort(graph(tasks), key=key))
