"""Words the reporters share: counts that read right at 0, 1 and many."""

from __future__ import annotations


def plural(count: int, word: str, many: str | None = None) -> str:
    """`1 op`, `0 ops`, `2 ops`; `many` for an irregular plural (`plural(2, "entry", "entries")`)."""
    return f"{count} {word if count == 1 else (many or word + 's')}"
