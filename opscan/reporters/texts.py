"""The sentences opscan says about its records, in one place (NOTE [records hold data]).

Records (opscan/records/) hold data; the words that describe them are built here, from the record
alone, so that every format (terminal, Markdown, the gate's line, the verdict's stored headline and
the notes of a run) says the same thing the same way. This module imports nothing of opscan but
records/, so analysis that stores a sentence in the report (the verdict's headline, a note) may use
it as the reporters do.
"""

from __future__ import annotations

from opscan.records import Blockers, Coverage, Replacement, StepPart, containment_line

# NOTE [records hold data]: a record of opscan/records/ holds values a program reads (counts,
# kinds, places), never a sentence built from them: which words describe a count, how a place is
# quoted and in which order the parts are said is the reporters' choice, made here once. What the
# report stores as its own content (the verdict's headline, its details, the notes) is built with
# these functions when the analysis writes it. One sentence stays in records/: the containment
# line (records.containment_line), which the contained child's side says too (opscan/containment/
# reads records and errors only); the reporters take it from here, as the others.

__all__ = ["blockers_words", "containment_line", "coverage_label", "plural", "replacement_words",
           "step_part_words"]


def plural(count: int, word: str, many: str = "") -> str:
    """"1 file", "3 files", "2 CUDA-only libraries" (`many`: the plural when it is not word + s)."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def blockers_words(blockers: Blockers) -> str:
    """"12 CUDA-pinned sites in 2 files, 3 custom kernels": the words of the headline and the gate."""
    parts = []
    if blockers.sites:
        parts.append(f"{plural(blockers.sites, 'CUDA-pinned site')} in {plural(blockers.files, 'file')}")
    if blockers.dependencies:   # first: the torch move comes before every other task (docs/dependencies.md)
        parts.insert(0, plural(blockers.dependencies, "dependency pin") + " off the paired torch")
    if blockers.kernels:
        parts.append(plural(blockers.kernels, "custom kernel"))
    if blockers.libraries:
        parts.append(plural(blockers.libraries, "CUDA-only library", "CUDA-only libraries"))
    if blockers.unsupported_ops:
        parts.append(plural(blockers.unsupported_ops, "unsupported op"))
    if blockers.compiled_fallback_ops:
        parts.append(plural(blockers.compiled_fallback_ops, "op") + " with no kernel in torch.compile regions")
    if blockers.syntax_errors:   # named with file and line: a syntax error is not an unreadable file
        where = ", ".join(blockers.syntax_errors[:3]) + (" …" if len(blockers.syntax_errors) > 3 else "")
        count = len(blockers.syntax_errors)
        parts.append(f"{'a syntax error' if count == 1 else plural(count, 'syntax error')} ({where})")
    unreadable = blockers.unreadable_files - len(blockers.syntax_errors)
    if unreadable:
        parts.append(plural(unreadable, "file opscan could not read", "files opscan could not read"))
    return ", ".join(parts)


def step_part_words(part: StepPart) -> str:
    """"AdamW (fused) from train.py:42", "sum of the outputs (opscan's stand-in)"."""
    said = f"{part.name} ({part.detail})" if part.detail else part.name
    where = f" from {part.source}" if part.source else " (opscan's stand-in)"
    return said + where + ("" if part.applied else ", not traced")


def replacement_words(replacement: Replacement) -> str:
    """"CIFAR10: 64 synthetic ... (train.py:12)": one line of the report."""
    where = f" ({replacement.path}:{replacement.line})" if replacement.path else ""
    return f"{replacement.subject}: {replacement.detail}{where}"


def coverage_label(coverage: Coverage) -> str:
    """The status with its first evidence: "native (probed on torch-neuronx 2.14.3.0)"."""
    return f"{coverage.status} ({coverage.evidence[0].text})" if coverage.evidence else str(coverage.status)
