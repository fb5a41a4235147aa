"""Fixes one Python module: finds the node of each finding, plans its codemod, applies the plans.

Pure: `fix_source(text, findings, rules)` returns the new text and one outcome per finding; it
never reads or writes files. Untouched code keeps its bytes (libcst round-trips the module
exactly; only replaced nodes are printed anew).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING
from fnmatch import fnmatchcase

import libcst as cst

from opscan.fix import codemods, reasons
from opscan.fix.reasons import FixStatus
from opscan.fix.context import Context
from opscan.fix.positions import Positions
from opscan.fix.scope import Probe
from opscan.index import parse as parse_source
from opscan.records import Finding, ImportBinding
from opscan.scan.rule_records import Rule

if TYPE_CHECKING:
    from opscan.scan.rules import RuleSet

GUARDED = ("inside a guard that protects CUDA-only work (e.g. `if torch.cuda.is_available():`): "
           "left alone; port the guarded block by hand")


# NOTE [the scan's advice and the fixer agree]
# An availability test (`torch.cuda.is_available()`) is never rewritten: what it decides must move
# with it. Why it is left follows the scan's advice for that very finding, so the two never say
# opposite things about one line: where the scan found CUDA-only work behind the check (its
# `#guards-cuda-only` fix, NOTE [guards that protect CUDA-only code], also for what follows it in
# `and`/`or` or a conditional) the fixer keeps it as a guard; where the scan advises the
# device-agnostic check, the fixer leaves that change to a person ("decision"), since the code the
# check decides must be ported with it. The finding's fix is compared with its rule's own
# replacement fix (rule data), never read for words.
AVAILABILITY_GUARD = codemods.Leave("an availability test that keeps CUDA-only work off other devices: leave it a "
                                    "CUDA check (torch.accelerator.is_available() is true on neuron and would run "
                                    "that work there)", "guard")
AVAILABILITY_TEST = codemods.Leave("an availability test: replace this guard by hand, together with the code it "
                                   "decides, as the finding's fix says (not automatic: that code must be checked "
                                   "for CUDA-only work first)", "decision")


def availability_leave(rule: Rule, finding: Finding) -> codemods.Leave:
    """Why an availability test is left, as the scan advised it (NOTE [the scan's advice and the fixer agree])."""
    plain = rule.format(rule.fix_for(finding.subject)[0], name=finding.subject)
    return AVAILABILITY_TEST if finding.fix == plain else AVAILABILITY_GUARD


@dataclass(frozen=True)
class SiteOutcome:
    """What `opscan fix` did with one finding."""

    finding: Finding
    status: FixStatus    # fixed | unsafe (needs --unsafe-fixes) | left (no fix here) | manual (no codemod)
    detail: str = ""     # fixed/unsafe: what the rewrite does; left/manual: why not, for this site
    reason: str = ""     # why it is not fixed: a code of reasons.REASONS ("" when fixed)
    # the torch names the rewrite relies on: planned without torch (the fixable mark), it is left
    # when one of them is missing from the installed torch (NOTE [fixable is what fix fixes])
    needs: tuple[str, ...] = ()

    def __post_init__(self) -> None:   # NOTE [typed vocabularies] in opscan/records/vocabulary.py
        object.__setattr__(self, "status", FixStatus(self.status))


def manual_outcome(finding: Finding, rules: dict[str, Rule]) -> SiteOutcome:
    """The outcome of a finding whose rule declares no rewrite, with the reason (reasons.py)."""
    rule = rules.get(finding.rule)
    if rule is not None and rule.autofix is not None:    # a rule with a rewrite that does not apply here
        if finding.guarded:
            return SiteOutcome(finding, FixStatus.LEFT, GUARDED, "guard")
        if finding.subject in codemods.GUARD_NAMES and rule.autofix.codemod != "required-check":
            leave = availability_leave(rule, finding)
            return SiteOutcome(finding, FixStatus.LEFT, leave.reason, leave.kind)
        if not rule.autofix.covers(finding.subject):
            return SiteOutcome(finding, FixStatus.LEFT, no_equivalent(finding.subject).reason, "no-equivalent")
        return SiteOutcome(finding, FixStatus.UNSAFE, "the rule's rewrite is unsafe", "unsafe")
    code, why = reasons.manual(rule)
    return SiteOutcome(finding, FixStatus.MANUAL, why, code)


def no_equivalent(subject: str) -> codemods.Leave:
    names = f"`{subject}`" if subject else "this name"
    return codemods.Leave(f"no equivalent declared for {names} (see docs/fix.md): fix by hand", "no-equivalent")


@dataclass(frozen=True)
class SourceFix:
    """The result of fixing one module (or one notebook)."""

    text: str | bytes          # bytes when the module was given as bytes
    outcomes: tuple[SiteOutcome, ...]

    @property
    def fixed(self) -> int:
        return sum(o.status is FixStatus.FIXED for o in self.outcomes)


def matched_name(rule: Rule, subject: str) -> str | None:
    """The `replace` key a finding's subject (the dotted name the scan resolved) matches, or None."""
    assert rule.autofix is not None
    for key, _ in rule.autofix.replace:
        if subject == key or fnmatchcase(subject, key):
            return key
    return None


class _Planner:
    def __init__(self, ctx: Context, rules: dict[str, Rule], unsafe: bool) -> None:
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
        asked = len(self.ctx.asked)
        outcome = self._outcome(finding)
        if outcome.status is FixStatus.FIXED and len(self.ctx.asked) > asked:
            return replace(outcome, needs=tuple(sorted(set(self.ctx.asked[asked:]))))
        return outcome

    def _outcome(self, finding: Finding) -> SiteOutcome:
        rule = self.rules.get(finding.rule)
        if rule is None or rule.autofix is None:
            return manual_outcome(finding, self.rules)
        if finding.guarded and not codemods.handles_guarded(rule.autofix.codemod, finding.subject):
            return SiteOutcome(finding, FixStatus.LEFT, GUARDED, "guard")
        loc = finding.location
        nodes = self.by_range.get((loc.line, loc.column, loc.end_line, loc.end_column), [])
        result = None
        asks = (self.ctx.device_asks, self.ctx.torch_asks)
        for node in nodes:
            result = self._plan(rule, node, finding)
            if result is not None:
                break
        device, torch = self.ctx.device_asks > asks[0], self.ctx.torch_asks > asks[1]
        if result is None:
            return SiteOutcome(finding, FixStatus.LEFT, "no rewrite for this form: fix by hand", "form")
        if isinstance(result, codemods.Leave):
            return SiteOutcome(finding, FixStatus.LEFT, result.reason, result.kind)
        if "unsafe" in (result.safety, rule.autofix.safety) and not self.unsafe:
            return SiteOutcome(finding, FixStatus.UNSAFE, result.note, "unsafe")
        if id(result.target) in self.plans:
            return SiteOutcome(finding, FixStatus.FIXED, "rewritten with another finding at the same place")
        self.plans[id(result.target)] = result
        self.uses_device |= device
        self.uses_torch |= torch
        return SiteOutcome(finding, FixStatus.FIXED, result.note)

    def _plan(self, rule: Rule, node: cst.CSTNode, finding: Finding) -> codemods.Plan | codemods.Leave | None:
        assert rule.autofix is not None
        subject = finding.subject
        codemod = rule.autofix.codemod
        if codemod in codemods.SIMPLE:
            return codemods.SIMPLE[codemod](node, self.ctx)
        if not isinstance(node, (cst.Name, cst.Attribute)):
            return None
        if subject in codemods.GUARD_NAMES and codemod != "required-check":
            return codemods.bf16_test(node, self.ctx) or availability_leave(rule, finding)
        if codemod == "accelerator-api" and subject in codemods.BF16_QUERIES:
            return codemods.bf16_choice(node, self.ctx)
        key = matched_name(rule, subject)
        if key is None:
            return no_equivalent(subject)
        return codemods.NAMED[codemod](node, self.ctx, dict(rule.autofix.replace)[key])


class _Applier(cst.CSTTransformer):
    def __init__(self, planner: _Planner) -> None:
        super().__init__()
        self.plans = planner.plans

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode  # type: ignore[override]
                 ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]:
        left = super().on_leave(original_node, updated_node)
        if not isinstance(left, cst.CSTNode):
            return left
        updated_node = left
        plan = self.plans.get(id(original_node))
        if plan is not None:
            return plan.build(updated_node)
        return updated_node


def _apply(planner: _Planner) -> cst.Module:
    """The module with the plans applied, visiting only the top-level statements that hold a plan's
    target (the others keep their nodes, hence their bytes), and the device and `import torch`
    added after the imports when the applied plans use them."""
    ctx = planner.ctx
    touched = {id(ctx.top_statement(plan.target)) for plan in planner.plans.values()}
    applier = _Applier(planner)
    body: list[cst.BaseStatement] = []
    for statement in ctx.module.body:
        if id(statement) not in touched:
            body.append(statement)
            continue
        new = statement.visit(applier)
        if isinstance(new, cst.FlattenSentinel):
            body.extend(new.nodes)
        elif not isinstance(new, cst.RemovalSentinel):
            body.append(new)
    added = ctx.definition(planner.uses_device, planner.uses_torch)
    if added:
        index = ctx.insert_at
        body = body[:index] + added + body[index:]
    return ctx.module.with_changes(body=body)


def fix_module(text: str | bytes, findings: list[Finding], rules: dict[str, Rule], unsafe: bool = False,
               probe: Probe | None = None, prior: dict[str, str] | None = None,
               bindings: tuple[ImportBinding, ...] | None = None, planned: str | None = None) -> SourceFix:
    """Fix one module's `findings` (all of this text). `rules`: rule id -> Rule.

    `text` may be bytes (then the result is bytes in the same encoding, newlines kept). `prior`
    carries what earlier cells of a notebook defined ({"device": NAME, "torch": ALIAS}) and is
    updated with what this one defines. Returns the text unchanged when it does not parse.
    `planned`: plan on this text instead, `text` elided (NOTE [planning on an elided module] in
    fix/elision.py): the outcomes are those of `text`, the result's text is `planned` rewritten.
    """
    try:
        module = cst.parse_module(planned if planned is not None else text)
    except (cst.ParserSyntaxError, RecursionError) as exc:
        reason = f"libcst cannot parse this file: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        return SourceFix(text, tuple(SiteOutcome(f, FixStatus.LEFT, reason, "file-skipped") if _has_fix(f, rules) else
                                     manual_outcome(f, rules) for f in findings))
    # where the findings' nodes are (NOTE [positions per statement] in fix/positions.py)
    positions = Positions(module, ((f.location.line, f.location.end_line or f.location.line) for f in findings))
    ctx = Context(module, positions, probe, prior,
                  text.decode("utf-8", "replace") if isinstance(text, bytes) else text,
                  bindings)   # `bindings`: the scan's import facts of this module (fix/context.py)
    planner = _Planner(ctx, rules, unsafe)
    outcomes = tuple(planner.outcome(f) for f in findings)
    if prior is not None:    # what later notebook cells may use: this cell's torch and device, as written
        prior.update(ctx.defined(False, False))
    if not planner.plans:
        return SourceFix(text, outcomes)
    fixed = _apply(planner)
    new = fixed.code if planned is not None or not isinstance(text, bytes) else fixed.bytes
    parses = _parses(new)
    if parses and prior is not None:   # ... and what the rewrite added
        prior.update(ctx.defined(planner.uses_device, planner.uses_torch))
    if not parses:   # never write code that does not parse (a bug in a codemod): leave the file
        reason = "the rewrite did not parse (an opscan bug: please report it); file left unchanged"
        return SourceFix(text,
                         tuple(SiteOutcome(o.finding, FixStatus.LEFT, reason, "file-skipped")
                                     if o.status is FixStatus.FIXED else o for o in outcomes))
    return SourceFix(new, outcomes)


def _has_fix(finding: Finding, rules: dict[str, Rule]) -> bool:
    rule = rules.get(finding.rule)
    return rule is not None and rule.autofix is not None


def _parses(text: str | bytes) -> bool:
    """Whether the rewrite parses, as the scan parses (newer syntax too: NOTE [newer syntax])."""
    try:
        if isinstance(text, bytes):
            from opscan.index import decode

            decoded = decode(text)
            if decoded is None:
                return False
            text = decoded
        parse_source(text, "<rewrite>")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def fix_source(text: str, findings: Iterable[Finding], rules: RuleSet | dict[str, Rule], unsafe: bool = False,
               probe: Probe | None = None) -> SourceFix:
    """Fix a Python module's text given its findings; `rules` is a RuleSet or an id -> Rule mapping."""
    by_id = rules if isinstance(rules, dict) else {r.id: r for r in rules}
    return fix_module(text, list(findings), by_id, unsafe, probe)
