"""Fixes one Python module: finds the node of each finding, plans its codemod, applies the plans.

Pure: `fix_source(text, findings, rules)` returns the new text and one outcome per finding; it
never reads or writes files. Untouched code keeps its bytes (libcst round-trips the module
exactly; only replaced nodes are printed anew).
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass
from fnmatch import fnmatchcase

import libcst as cst

from opscan.fix import codemods
from opscan.fix.context import Context
from opscan.model import Finding

GUARDED = ("inside a guard that protects CUDA-only work (e.g. `if torch.cuda.is_available():`): "
           "left alone; port the guarded block by hand")


@dataclass(frozen=True)
class SiteOutcome:
    """What `opscan fix` did with one finding."""

    finding: Finding
    status: str          # "fixed" | "unsafe" (needs --unsafe-fixes) | "left" (no fix) | "manual" (no codemod)
    detail: str = ""     # fixed/unsafe: what the rewrite does; left: why not


@dataclass(frozen=True)
class SourceFix:
    """The result of fixing one module (or one notebook)."""

    text: str
    outcomes: tuple[SiteOutcome, ...]

    @property
    def fixed(self) -> int:
        return sum(o.status == "fixed" for o in self.outcomes)


def matched_name(rule, subject: str) -> str | None:
    """The `replace` key a finding's subject (the dotted name the scan resolved) matches, or None."""
    for key, _ in rule.autofix.replace:
        if subject == key or fnmatchcase(subject, key):
            return key
    return None


class _Planner:
    def __init__(self, ctx: Context, rules: dict, unsafe: bool) -> None:
        self.ctx = ctx
        self.rules = rules
        self.unsafe = unsafe
        self.by_range: dict[tuple[int, int, int, int], list[cst.CSTNode]] = {}
        for node, where in ctx.positions.items():
            if isinstance(node, cst.BaseExpression):
                key = (where.start.line, where.start.column + 1, where.end.line, where.end.column + 1)
                self.by_range.setdefault(key, []).append(node)
        self.plans: dict[int, codemods.Plan] = {}      # id(target) -> plan
        self.uses_device = self.uses_torch = False     # what the applied plans need defined

    def outcome(self, finding: Finding) -> SiteOutcome:
        rule = self.rules.get(finding.rule)
        if rule is None or rule.autofix is None:
            return SiteOutcome(finding, "manual", "no automatic fix for this rule")
        if finding.guarded:
            return SiteOutcome(finding, "left", GUARDED)
        loc = finding.location
        nodes = self.by_range.get((loc.line, loc.column, loc.end_line, loc.end_column), [])
        result = None
        asks = (self.ctx.device_asks, self.ctx.torch_asks)
        for node in nodes:
            result = self._plan(rule, node, finding.subject)
            if result is not None:
                break
        device, torch = self.ctx.device_asks > asks[0], self.ctx.torch_asks > asks[1]
        if result is None:
            return SiteOutcome(finding, "left", "no rewrite for this form: fix by hand")
        if isinstance(result, codemods.Leave):
            return SiteOutcome(finding, "left", result.reason)
        if "unsafe" in (result.safety, rule.autofix.safety) and not self.unsafe:
            return SiteOutcome(finding, "unsafe", result.note)
        if id(result.target) in self.plans:
            return SiteOutcome(finding, "fixed", "rewritten with another finding at the same place")
        self.plans[id(result.target)] = result
        self.uses_device |= device
        self.uses_torch |= torch
        return SiteOutcome(finding, "fixed", result.note)

    def _plan(self, rule, node: cst.CSTNode, subject: str):
        codemod = rule.autofix.codemod
        if codemod in codemods.SIMPLE:
            return codemods.SIMPLE[codemod](node, self.ctx)
        if not isinstance(node, (cst.Name, cst.Attribute)):
            return None
        if subject in codemods.GUARD_NAMES:
            return codemods.Leave("an availability test: a guard for CUDA-only work (torch.accelerator.is_available() "
                                  "would also be true on neuron and run that work there); decide by hand")
        key = matched_name(rule, subject)
        if key is None:
            names = f"`{subject}`" if subject else "this name"
            return codemods.Leave(f"no equivalent declared for {names} (see docs/fix.md): fix by hand")
        return codemods.NAMED[codemod](node, self.ctx, dict(rule.autofix.replace)[key])


class _Applier(cst.CSTTransformer):
    def __init__(self, planner: _Planner) -> None:
        super().__init__()
        self.plans = planner.plans
        self.ctx = planner.ctx
        self.needs = (planner.uses_device, planner.uses_torch)

    def on_leave(self, original_node, updated_node):
        updated_node = super().on_leave(original_node, updated_node)   # leave_Module below
        plan = self.plans.get(id(original_node))
        if plan is not None:
            return plan.build(updated_node)
        return updated_node

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        added = self.ctx.definition(*self.needs)
        if not added:
            return updated_node
        body = list(updated_node.body)
        index = self.ctx.insert_at
        return updated_node.with_changes(body=body[:index] + added + body[index:])


def fix_module(text: str | bytes, findings: list[Finding], rules: dict, unsafe: bool = False, probe=None,
               prior: dict | None = None, bindings: tuple | None = None) -> SourceFix:
    """Fix one module's `findings` (all of this text). `rules`: rule id -> Rule.

    `text` may be bytes (then the result is bytes in the same encoding, newlines kept). `prior`
    carries what earlier cells of a notebook defined ({"device": NAME, "torch": ALIAS}) and is
    updated with what this one defines. Returns the text unchanged when it does not parse.
    """
    try:
        module = cst.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError) as exc:
        reason = f"libcst cannot parse this file: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        return SourceFix(text, tuple(SiteOutcome(f, "left", reason) if _has_fix(f, rules) else
                                     SiteOutcome(f, "manual", "no automatic fix for this rule") for f in findings))
    wrapper = cst.MetadataWrapper(module, unsafe_skip_copy=True)
    ctx = Context(wrapper, probe, prior, text.decode("utf-8", "replace") if isinstance(text, bytes) else text,
                  bindings)   # `bindings`: the scan's import facts of this module (fix/context.py)
    planner = _Planner(ctx, rules, unsafe)
    outcomes = tuple(planner.outcome(f) for f in findings)
    if not planner.plans:
        return SourceFix(text, outcomes)
    fixed = wrapper.module.visit(_Applier(planner))
    new = fixed.bytes if isinstance(text, bytes) else fixed.code
    if prior is not None:
        prior.update(ctx.defined(planner.uses_device, planner.uses_torch))
    if not _parses(new):   # never write code that does not parse (a bug in a codemod): leave the file
        reason = "the rewrite did not parse (an opscan bug: please report it); file left unchanged"
        return SourceFix(text, tuple(SiteOutcome(o.finding, "left", reason) if o.status == "fixed" else o
                                     for o in outcomes))
    return SourceFix(new, outcomes)


def _has_fix(finding: Finding, rules: dict) -> bool:
    rule = rules.get(finding.rule)
    return rule is not None and rule.autofix is not None


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def fix_source(text: str, findings, rules, unsafe: bool = False, probe=None) -> SourceFix:
    """Fix a Python module's text given its findings; `rules` is a RuleSet or an id -> Rule mapping."""
    by_id = rules if isinstance(rules, dict) else {r.id: r for r in rules}
    return fix_module(text, list(findings), by_id, unsafe, probe)
