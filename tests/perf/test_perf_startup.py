"""A scan run's start-up: what it does not load (networkx), and the task order that replaced it."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

import networkx as nx

from opscan.plan import ordering
from opscan.records import Task

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_scan_imports_neither_networkx_nor_rules_twice(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch\ntorch.cuda.synchronize()\nx = x.to('cuda')\n")
    code = ("import sys, atexit\n"
            "import opscan.scan.rules as R\n"
            "calls = []\n"
            "real = R.load_rule_dir\n"
            "R.load_rule_dir = lambda d, *a: calls.append(d) or real(d, *a)\n"
            "atexit.register(lambda: sys.stderr.write(f\"\\nNX={'networkx' in sys.modules} LOADS={len(calls)}\\n\"))\n"
            "from opscan.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    proc = subprocess.run([sys.executable, "-c", code, "scan", str(tmp_path), "--format", "json", "--no-cache",
                           "--no-fix-check"], check=False, capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 1, proc.stderr   # findings: the plan and its task order were built
    report = json.loads(proc.stdout)
    assert report["tasks"] and report["findings"]
    assert "NX=False LOADS=1" in proc.stderr


def _tasks(rng: random.Random, n: int) -> list[Task]:
    ids = [f"t{i:02d}" for i in range(n)]
    rng.shuffle(ids)
    tasks = []
    for i, task_id in enumerate(ids):
        deps = tuple(sorted(rng.sample(ids[:i], rng.randint(0, min(i, 3)))))   # edges only backwards: a DAG
        tasks.append(Task(id=task_id, title=task_id, action="", why="", priority=rng.randint(1, 3),
                          depends_on=deps))
    rng.shuffle(tasks)
    return tasks


def test_task_order_is_networkx_lexicographical_topological_sort() -> None:
    rng = random.Random(23)
    stages = list(ordering.STAGES)
    for _ in range(200):
        tasks = _tasks(rng, rng.randint(1, 15))
        stage_of = {t.id: rng.choice(stages) for t in tasks}
        by_id = {t.id: t for t in tasks}
        index = {name: i for i, name in enumerate(stages)}
        expected = list(nx.lexicographical_topological_sort(
            ordering.graph(tasks), key=lambda i: (by_id[i].priority, index[stage_of[i]], i)))
        assert [t.id for t in ordering.order(tasks, stage_of)] == expected
