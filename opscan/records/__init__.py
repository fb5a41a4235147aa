"""The data opscan passes between its phases: frozen dataclasses only, importing nothing of opscan
outside records/.

Analysis (scan, trace, db, plan) produces these; reporters only read them. Every tuple field is
kept sorted by its producer so that the same input gives the same bytes out. The records are
split by stage, each name re-exported here: `from opscan.records import Finding` is the way in.

- vocabulary.py: the closed vocabularies as types and their facts (NOTE [typed vocabularies])
- ops.py: traced ops, their sources, coverage and evidence, fallback costs, profile, shrink
- findings.py: the source scan's findings, kernel sources, rules, baseline status, scan facts
- compile.py: torch.compile regions, options, the compile estimate and forecast
- trace.py: a model's trace and the models found without running anything
- target.py: what to trace, a target string parsed once (NOTE [targets parsed once])
- report.py: tasks, caveats, notes, blockers, the verdict, the Draft and the Report
"""

from __future__ import annotations

from opscan.records.vocabulary import (
    BlockUnit, CATEGORIES, CAVEAT_KINDS, CONFIDENCES, Category, CaveatKind, Confidence, EVIDENCE_KINDS, EvidenceKind,
    NoKernel, OP_STATUSES, OP_TASKS, OpStatus, PHASES, Phase, SEVERITIES, STATUS, STATUSES, STEP_KINDS, Severity,
    Status, StepKind, TASKS, TaskKind, VERDICT_KINDS, VerdictKind, status_of)
from opscan.records.ops import (
    Coverage, DeviceProfile, Evidence, Fallback, OpName, OpSource, OpUsage, Shrink, StandIn)
from opscan.records.findings import (
    BaselineStatus, Finding, FunctionSpan, ImportBinding, KERNEL_SOURCE_KINDS, KernelSource, KernelSourceKind,
    LibraryUse, Location, RuleInfo, ScanFacts, is_kernel_work)
from opscan.records.compile import (
    COMPILE_CAUSES, CompileCause, CompileEstimate, CompileForecast, CompileOption, CompileRegion, CompileStep,
    CompiledOp, GraphBreak, NewSignature, TorchCompile, VaryingOp)
from opscan.records.trace import (
    CANDIDATE_KINDS, ENTRY_KINDS, MODES, STEP_PARTS, STOP_HINT, CandidateKind, Discovery, containment_line,
    EntryKind, Mode, ModelCandidate, ModelTrace, Replacement, StepPart, StepPartKind, TrainStep, TrainingEntry,
    joined_stop, merge_containment, split_stop)
from opscan.records.target import TARGET_FORMS, Target, TargetKind
from opscan.records.report import (
    Blockers, Checked, Draft, EffortTotal, JudgedOps, NotChecked, NothingToCheck, OpCaveat, OpNote, Report,
    SourceCheck, Step, Task, Verdict)

__all__ = [
    "BaselineStatus", "Blockers", "BlockUnit", "CANDIDATE_KINDS", "CandidateKind", "CATEGORIES", "Category",
    "CAVEAT_KINDS", "CaveatKind", "Checked", "CONFIDENCES", "Confidence", "COMPILE_CAUSES", "CompileCause",
    "CompiledOp", "CompileEstimate",
    "CompileForecast", "CompileOption", "CompileRegion", "CompileStep", "containment_line", "Coverage",
    "DeviceProfile", "Discovery", "Draft", "EffortTotal", "ENTRY_KINDS", "EntryKind", "Evidence", "EVIDENCE_KINDS",
    "EvidenceKind", "Fallback", "Finding", "FunctionSpan", "GraphBreak", "ImportBinding", "is_kernel_work",
    "joined_stop", "JudgedOps", "KERNEL_SOURCE_KINDS", "KernelSource", "KernelSourceKind", "LibraryUse", "Location",
    "merge_containment", "Mode", "MODES", "ModelCandidate", "ModelTrace", "NewSignature", "NoKernel", "NotChecked",
    "NothingToCheck",
    "OP_STATUSES", "OP_TASKS", "OpCaveat", "OpName", "OpNote", "OpSource", "OpStatus", "OpUsage", "PHASES", "Phase",
    "Replacement", "Report", "RuleInfo", "ScanFacts", "SEVERITIES", "Severity", "Shrink", "SourceCheck", "split_stop",
    "StandIn", "STATUS", "Status", "status_of", "STATUSES", "Step", "STEP_KINDS", "STEP_PARTS", "StepKind",
    "StepPart", "StepPartKind", "STOP_HINT", "Target", "TARGET_FORMS", "TargetKind", "Task", "TaskKind", "TASKS",
    "TorchCompile", "TrainingEntry", "TrainStep", "VaryingOp", "Verdict", "VERDICT_KINDS", "VerdictKind",
]
