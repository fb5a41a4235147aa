"""The findings of one file as rows of three cells, laid out as rich's `Table.grid` lays them out.

NOTE [the findings grid]: the findings section printed one `Table.grid(padding=(0, 1))` per file
(a right-justified location, the rule and severity, the message with its source line and fix,
the last column wrapping). On transformers' source that is 149 tables and ~1,500 rows, and rich's
Table spent ~0.17 s on them (of a ~0.6 s warm `opscan scan`): each cell measured twice, rendered
through a `Padding`, cropped and padded twice. `FindingsGrid` computes the three column widths by
rich's own rule for that grid (`Table._calculate_column_widths` with no expand, no box and
collapsed padding: the two no-wrap columns at their widest cell plus one space of padding, the
last column at its widest line, shrunk to what is left of the width when the row is too wide)
and renders each cell with `console.render_lines` (rich's text wrapping, justifying and cropping),
adding the padding and column styles as the table does: the same segments, so the same bytes,
coloured or not (tests/reporters/test_terminal_grid.py compares it with `Table.grid` at many
widths). When the two narrow columns leave the last no room, it hands the rows to `Table.grid`.
"""

from __future__ import annotations

from collections.abc import Iterator

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

# (style, justify, no_wrap, right padding) of the three columns
COLUMNS = (("dim", "right", True, 1), ("", "left", True, 1), ("", "left", False, 0))


def _widest(text: Text, limit: int) -> int:
    """rich's maximum measurement of `text` (Text.__rich_measure__, clamped to `limit`)."""
    lines = text.plain.splitlines()
    return min(max(cell_len(line) for line in lines) if lines else 0, limit)


class FindingsGrid:
    """Rows of (location, code, body) Texts; printed with `console.print` like the Table.grid it replaces."""

    def __init__(self, rows: list[tuple[Text, Text, Text]]) -> None:
        self.rows = rows

    def table(self):
        """The same rows as a rich Table.grid (the fallback, and what the tests compare with)."""
        from rich.table import Table

        grid = Table.grid(padding=(0, 1), expand=False)
        grid.add_column(style="dim", no_wrap=True, justify="right")
        grid.add_column(no_wrap=True)
        grid.add_column(ratio=1)
        for row in self.rows:
            grid.add_row(*row)
        return grid

    def widths(self, width: int) -> list[int] | None:
        """The three column widths (padding included) at `width`, or None when rich's layout of
        this grid would have to squeeze the no-wrap columns (then the Table renders it)."""
        if not self.rows or width < 2:
            return None
        widths = []
        for index, (_, _, _, right) in enumerate(COLUMNS):
            widest = max(_widest(row[index], width) for row in self.rows)
            widths.append(min(widest + right, width) or 1)
        if widths[0] + widths[1] >= width:
            return None
        widths[2] = min(widths[2], width - widths[0] - widths[1])
        return widths

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = self.widths(options.max_width)
        if widths is None:
            yield self.table()
            return
        new_line = Segment.line()
        if console.color_system is None:   # no colour, no attributes: the text alone (NOTE [plain cells])
            for row in self.rows:
                cells = [_plain_cell(console, text, width, column)
                         or self._plain_lines(console, options, text, width, column)
                         for text, width, column in zip(row, widths, COLUMNS)]
                height = max(len(cell) for cell in cells)
                for cell, width in zip(cells, widths):
                    cell.extend([" " * width] * (height - len(cell)))
                for line_no in range(height):
                    yield Segment("".join(cell[line_no] for cell in cells))
                    yield new_line
            return
        styles = [console.get_style(style) if style else Style.null() for style, _, _, _ in COLUMNS]
        for row in self.rows:
            cells = [list(self._cell(console, options, text, width, column, style))
                     for text, width, column, style in zip(row, widths, COLUMNS, styles)]
            height = max(len(cell) for cell in cells)
            for cell, width, style in zip(cells, widths, styles):
                cell.extend([[Segment(" " * width, style)]] * (height - len(cell)))
            for line_no in range(height):
                for cell in cells:
                    yield from cell[line_no]
                yield new_line

    @classmethod
    def _plain_lines(cls, console: Console, options: ConsoleOptions, text: Text, width: int,
                     column: tuple) -> list[str]:
        """One cell's lines as text (no colour system: the segments' styles are not written)."""
        return ["".join(seg.text for seg in line) for line in cls._cell(console, options, text, width, column,
                                                                         Style.null())]

    @staticmethod
    def _cell(console: Console, options: ConsoleOptions, text: Text, width: int, column: tuple,
              style: Style) -> Iterator[list[Segment]]:
        """One cell's lines, each `width` cells wide: the text at `width` less its padding, the
        padding after it, the column's style under both (as Table, Padding and render_lines do)."""
        _, justify, no_wrap, right = column
        inner = options.update(width=width - right, justify=justify, no_wrap=no_wrap, overflow="ellipsis",
                               height=None, highlight=False)
        null = Style.null()
        pad = [Segment(" " * right, null)] if right else []
        for line in console.render_lines(text, inner, style=null, pad=True):
            if style:
                yield [Segment(seg.text, None if seg.control else style + seg.style, seg.control) for seg in line + pad]
            else:
                yield line + pad


def _plain_cell(console: Console, text: Text, width: int, column: tuple) -> list[str] | None:
    """NOTE [plain cells]: with no colour system rich writes each segment's text alone, so a cell is
    the text of its lines as rich's `Text.wrap` leaves them, which `Text.__rich_console__` then
    renders unchanged (rich's Table only crops or pads lines not already the column's width, and
    `wrap` justifies each line to it). For a text of the reporter's kind (no justify, overflow or
    wrap of its own, no tab) whose every line fits the column, that is each line padded to the
    column (left) or stripped and padded before (right): no line is divided, cropped or folded.
    Otherwise the lines come from `Text.wrap` itself. None: anything else (rendered in full)."""
    _, justify, no_wrap, right = column
    inner = width - right
    plain = text.plain
    if "\t" in plain or text.justify or text.overflow or text.no_wrap is not None or text.end != "\n":
        return None
    cells = []
    for line in plain.split("\n"):
        if justify == "right":
            line = line.rstrip()
        size = cell_len(line)
        if size > inner:
            break
        cells.append(" " * (inner - size) + line + " " * right if justify == "right" else line + " " * (width - size))
    else:
        return cells
    cells = []
    for wrapped in text.wrap(console, inner, justify=justify, overflow="ellipsis", tab_size=8, no_wrap=no_wrap):
        line = wrapped.plain
        if cell_len(line) != inner:
            return None
        cells.append(line + " " * right)
    return cells
