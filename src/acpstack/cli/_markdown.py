"""Markdown as the chat shows it: rich's, except that a table never crops a cell.

rich draws a Markdown table with columns that end a cell in "…" when it is wider than its
column, and that a narrow terminal squeezes to nothing. Here cells fold (a long word goes
on in the next row of its column), and a table that cannot give each column a readable
width is shown as records instead: one line per cell, "heading: cell", a blank line
between two rows, wrapped like any text. Every character of every cell is on screen.
"""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.markdown import Markdown, TableElement
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

#: A column may be this narrow (cells of text, without its padding) before the table is
#: shown as records; a column whose widest cell is narrower keeps that cell's width.
MIN_COLUMN = 8
#: Wide enough to measure a table without squeezing it.
_UNBOUNDED = 1_000_000


class _Table(TableElement):
    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for table in super().__rich_console__(console, options):
            if not isinstance(table, Table):  # what rich gives is a Table: yield it as is
                yield table
                continue
            for column in table.columns:
                column.overflow = "fold"
            yield table if fits(console, options, table) else self.records()

    def records(self) -> RenderableType:
        """The table as one line per cell, "heading: cell", a blank line between rows."""
        headings: list[Text] = []
        if self.header is not None and self.header.row is not None:
            headings = [cell.content for cell in self.header.row.cells]
        rows = self.body.rows if self.body is not None else []
        if not rows:
            return Text("  ").join(headings)
        parts: list[RenderableType] = []
        for row in rows:
            if parts:
                parts.append(Text())
            for index, cell in enumerate(row.cells):
                heading = headings[index] if index < len(headings) else Text()
                line = Text()
                if heading.plain.strip():
                    line.append_text(heading.copy())
                    line.stylize("markdown.table.header")
                    line.append(": ")
                parts.append(line.append_text(cell.content))
        return Group(*parts)


def fits(console: Console, options: ConsoleOptions, table: Table) -> bool:
    """Whether each column of `table` gets at least MIN_COLUMN cells (or all its widest cell
    needs) at the width of `options`.

    rich narrows the widest columns first, down to the next widest and so on: if the table
    is no wider than `options` when every column is cut to that floor, no column ends up
    under its floor."""
    kept = [column.max_width for column in table.columns]
    for column in table.columns:
        column.max_width = MIN_COLUMN
    try:
        needed = Measurement.get(console, options.update_width(_UNBOUNDED), table).maximum
    finally:
        for column, width in zip(table.columns, kept, strict=True):
            column.max_width = width
    return needed <= options.max_width


class ChatMarkdown(Markdown):
    """`rich.markdown.Markdown`, with tables that fold their cells or become records."""

    elements = {**Markdown.elements, "table_open": _Table}
