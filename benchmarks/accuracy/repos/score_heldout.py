"""Scores a held-out set of issue 42 (`--set heldout5` to `heldout13`): did
`opscan REPO`, with no configuration, answer each research repository by a complete train-mode trace
of its own training command or of its main model?

The labels (heldout5_labels.toml, heldout6_labels.toml: written by hand before any run) say, per
repository, the training scripts, the model class that command trains and what builds it (a model a
repository takes from a library is written module:NAME; its builder in the repository is what a
trace can match). Both sets are judged by the same rule. A repository is **answered** when
one trace of opscan's JSON report
- is complete, in train mode, and its ops reach the backward and optimizer phases (a script's run
  also took at least one optimizer step), and
- is the label's: `script:<a training script>` (its own training command), `repo:FILE:NAME` with
  FILE:NAME a model class or builder of the label (its main model), or another target the label
  lists (a README block by its opening line, a test, a `__main__` demo).
A part of the model, another model of the repository, a stand-in built elsewhere or a trace that
stopped does not count; each repository's line says why.

    python benchmarks/accuracy/repos/score_heldout.py --set SET [--results DIR]   # score the saved reports
    python benchmarks/accuracy/repos/score_heldout.py --set SET --run [NAME ...]  # run opscan once, then score

`--run` runs `python -m opscan corpus/SET/NAME --format json --exit-zero` with the set's corpus
environment's interpreter (fetch_SET.py --venv), one repository at a time, and saves each report
in results/SET/NAME.json (git-ignored) with runs.json (seconds, load, exit code). It refuses to
overwrite a saved report unless `--again` is given: a held-out part is run once, at the end.
score_heldout5.py is this scorer with `--set heldout5` (the command held-out 5's results were made with).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIMIT = 900.0   # seconds per repository before the run is called not answered (a run, not a goal)
GOAL = 8


@dataclass(frozen=True)
class HeldOutSet:
    """One held-out set: its labels, its exported corpus (with _venv), where its reports are saved."""
    name: str
    title: str

    @property
    def labels(self) -> Path:
        return HERE / f"{self.name}_labels.toml"

    @property
    def corpus(self) -> Path:
        return HERE / "corpus" / self.name

    @property
    def python(self) -> Path:
        return self.corpus / "_venv" / "bin" / "python"

    @property
    def results(self) -> Path:
        return HERE / "results" / self.name


SETS = {s.name: s for s in (HeldOutSet("heldout5", "held out 5"), HeldOutSet("heldout6", "held out 6"),
                                     HeldOutSet("heldout7", "held out 7"), HeldOutSet("heldout8", "held out 8"),
                                     HeldOutSet("heldout9", "held out 9"), HeldOutSet("heldout10", "held out 10"),
                                     HeldOutSet("heldout11", "held out 11"), HeldOutSet("heldout12", "held out 12"),
                                     HeldOutSet("heldout13", "held out 13"))}


@dataclass(frozen=True)
class Label:
    name: str
    repo: str
    command: str
    scripts: tuple[str, ...]
    models: tuple[str, ...]
    builders: tuple[str, ...]
    examples: tuple[str, ...]


@dataclass(frozen=True)
class Judgement:
    name: str
    answered: bool
    reason: str


def _is_ref(ref: str, library_ok: bool) -> bool:
    """FILE.py:NAME (a file of the repository), or, where `library_ok`, module.path:NAME (a library's)."""
    where, _, name = ref.partition(":")
    if not name or not where:
        return False
    dotted = "/" not in where and all(part.isidentifier() for part in where.split("."))
    return where.endswith(".py") or (library_ok and dotted)


def load_labels(path: Path = SETS["heldout5"].labels) -> list[Label]:
    """The labels, checked: unique names, at least one script and one model, FILE.py:NAME forms."""
    rows = tomllib.loads(path.read_text(encoding="utf-8"))["repository"]
    labels = []
    for row in rows:
        label = Label(row["name"], row["repo"], row["command"], tuple(row["scripts"]), tuple(row["models"]),
                      tuple(row.get("builders", ())), tuple(row.get("examples", ())))
        if not label.scripts or not label.models:
            raise SystemExit(f"{path.name}: {label.name}: a label needs its training scripts and model")
        for ref in label.models:
            if not _is_ref(ref, library_ok=True):
                raise SystemExit(f"{path.name}: {label.name}: {ref!r} is not FILE.py:NAME (or module:NAME)")
        for ref in label.builders:
            if not _is_ref(ref, library_ok=False):
                raise SystemExit(f"{path.name}: {label.name}: {ref!r} is not FILE.py:NAME")
        # `library_model = true` (held-out 11): the model is a library's, built inline by the training
        # script (`T5ForConditionalGeneration.from_pretrained(...)` under __main__), so only the
        # script's own trace can answer; said explicitly, never inferred from a missing builder.
        in_repo = any(ref.split(":", 1)[0].endswith(".py") for ref in label.models + label.builders)
        if not in_repo and not row.get("library_model", False):
            raise SystemExit(f"{path.name}: {label.name}: no model or builder is a file of the repository")
        labels.append(label)
    if len({label.name for label in labels}) != len(labels):
        raise SystemExit(f"{path.name}: a repository is labelled twice")
    return labels


def _script(target: str) -> str:
    """`script:X` as a path: `./train.py` -> `train.py`, a module `gae.train` -> `gae/train.py`."""
    name = target.removeprefix("script:").removeprefix("./")
    return name if name.endswith(".py") else name.replace(".", "/") + ".py"


def _candidate(report: dict, target: str) -> dict:
    for candidate in (report.get("discovery") or {}).get("candidates", []):
        if candidate.get("target") == target:
            return candidate
    return {}


def what_it_is(label: Label, report: dict, target: str) -> str:
    """What a traced target is for the label: "" when it is neither its command nor its model."""
    if target.startswith("script:"):
        script = _script(target)
        return f"its own training command ({script})" if script in label.scripts else ""
    if not target.startswith("repo:"):
        return ""
    ref = target.removeprefix("repo:")
    if ref in label.models and ref.split(":", 1)[0].endswith(".py"):   # a library's model is documentation
        return f"its main model ({ref})"
    if ref in label.builders:
        return f"its main model, built by {ref}"
    if "#" in ref and not ref.endswith("#main"):   # a fenced block: the label names it by its opening line
        found = _candidate(report, target)
        ref = f"{found.get('path', '')}:{found.get('line', '')}" if found else ref
    return f"its main model, built by {ref}" if ref in label.examples else ""


def why_incomplete(report: dict, trace: dict) -> str:
    """Why a trace is not a complete train-mode step ("" when it is one)."""
    if not trace.get("complete"):
        return "stopped: " + str(trace.get("stopped_at") or "incomplete")
    if trace.get("mode") != "train":
        return f"traced in {trace.get('mode')} mode, not train"
    phases = {p for op in report.get("ops", []) if trace["target"] in op.get("models", [])
              for p in op.get("phases", [])}
    missing = [p for p in ("backward", "optimizer") if p not in phases]
    if missing:
        return "its step has no " + " and no ".join(missing) + " phase"
    if trace["target"].startswith("script:") and trace.get("steps", 1) < 1:
        return "the script took no optimizer step"
    return ""


def judge(label: Label, report: dict | None) -> Judgement:
    """Answered or not, with the reason, for one repository."""
    if report is None:
        return Judgement(label.name, False, "no report (opscan was not run, or its output was not JSON)")
    traces = report.get("traces", [])
    if not traces:
        why = (report.get("unchecked") or [n for n in report.get("notes", []) if n.startswith("not built")]
               or [report.get("verdict", {}).get("headline", "")])
        return Judgement(label.name, False, "nothing traced: " + str(why[0])[:200])
    misses = []
    for trace in sorted(traces, key=lambda t: not t["target"].startswith("script:")):   # the command first
        role = what_it_is(label, report, trace["target"])
        problem = why_incomplete(report, trace)
        if role and not problem:
            return Judgement(label.name, True, f"{trace['target']}: a complete train-mode trace of {role}")
        misses.append(f"{trace['target']}: {problem}" if role else
                      f"{trace['target']}: not the training command or model the label names")
    stop = next((n for n in report.get("notes", []) if n.startswith("training command `")
                 and " was not a training step (it stopped: " in n), "")
    if stop and not any(t["target"].startswith("script:") for t in traces):   # the command ran before the
        # model path and left no trace: its stop is part of why (held-out 11's FPNET)
        command, _, rest = stop.removeprefix("training command ").partition(" was not a training step (it stopped: ")
        cause = rest.split("): the model path follows")[0].split("; ")[0]   # the error; not what follows
        misses.insert(0, f"{command} stopped: {cause[:160]}")                 # (it may name local paths)
    return Judgement(label.name, False, "; ".join(misses)[:500])


def score(labels: list[Label], results: Path) -> list[Judgement]:
    out = []
    for label in labels:
        path = results / f"{label.name}.json"
        try:
            report = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
        except ValueError:
            report = None
        out.append(judge(label, report))
    return out


def summary(judgements: list[Judgement], title: str = SETS["heldout5"].title) -> str:
    lines = [f"{'answered' if j.answered else 'not answered'}: {j.name}: {j.reason}" for j in judgements]
    answered = sum(j.answered for j in judgements)
    lines.append(f"{title}: {answered}/{len(judgements)} answered by a complete train-mode trace of their own "
                 f"training command or main model (goal >= {GOAL})")
    return "\n".join(lines) + "\n"


def planned(labels: list[Label], wanted: set[str], results: Path, again: bool) -> list[Label]:
    """The repositories to run: those named (all without names), none already run unless `again`."""
    unknown = wanted - {label.name for label in labels}
    if unknown:
        raise SystemExit("score_heldout.py: not labelled: " + ", ".join(sorted(unknown)))
    chosen = [label for label in labels if not wanted or label.name in wanted]
    done = [label.name for label in chosen if (results / f"{label.name}.json").exists()]
    if done and not again:
        raise SystemExit("score_heldout.py: already run (the held-out part runs once; --again to redo): "
                         + ", ".join(done))
    return chosen


def _fetcher(held_out: HeldOutSet) -> str:
    """The command that exports a set and builds its environment (held-out 7 to 13 share held-out 6's)."""
    shared = held_out.name in ("heldout7", "heldout8", "heldout9", "heldout10", "heldout11", "heldout12",
                               "heldout13")
    script = f"fetch_heldout6.py --set {held_out.name}" if shared else f"fetch_{held_out.name}.py"
    return f"python benchmarks/accuracy/repos/{script}"


def run(chosen: list[Label], results: Path, held_out: HeldOutSet = SETS["heldout5"]) -> None:
    """opscan on each repository, one at a time, in the set's corpus environment; reports saved."""
    python = held_out.python
    if not python.exists():
        raise SystemExit(f"score_heldout.py: no corpus environment for {held_out.name} "
                         f"({_fetcher(held_out)} --venv)")
    results.mkdir(parents=True, exist_ok=True)
    log_path = results / "runs.json"
    log = json.loads(log_path.read_text(encoding="utf-8")) if log_path.exists() else {}
    for label in chosen:
        folder = held_out.corpus / label.name
        if not folder.is_dir():
            raise SystemExit(f"score_heldout.py: {label.name} is not exported ({_fetcher(held_out)})")
        load, start = os.getloadavg()[0], time.monotonic()
        try:
            done = subprocess.run([str(python), "-m", "opscan", str(folder), "--format", "json", "--exit-zero"],
                                  capture_output=True, text=True, timeout=LIMIT, check=False)
            out, code, err = done.stdout, done.returncode, done.stderr
        except subprocess.TimeoutExpired:
            out, code, err = "", None, f"timed out after {LIMIT:.0f} s"
        seconds = round(time.monotonic() - start, 1)
        (results / f"{label.name}.json").write_text(out, encoding="utf-8")
        log[label.name] = {"seconds": seconds, "load": round(load, 1), "exit": code,
                           "stderr": (err.strip().splitlines() or [""])[-1][:300]}
        log_path.write_text(json.dumps(log, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{label.name}: {seconds} s, load {load:.1f}, exit {code}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="repositories to run (default: all of the set)")
    parser.add_argument("--set", required=True, choices=sorted(SETS), help="the held-out set")
    parser.add_argument("--run", action="store_true", help="run opscan on them first (once)")
    parser.add_argument("--again", action="store_true", help="with --run: overwrite saved reports")
    parser.add_argument("--results", type=Path, help="the folder of saved reports (default: results/SET)")
    args = parser.parse_args(argv)
    held_out = SETS[args.set]
    results = args.results or held_out.results
    labels = load_labels(held_out.labels)
    if args.run:
        run(planned(labels, set(args.names), results, args.again), results, held_out)
    print(summary(score(labels, results), held_out.title), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
