"""Markdown as the chat shows it: rich's, except that a table never crops a cell and
code is never wrapped.

rich draws a Markdown table with columns that end a cell in "…" when it is wider than its
column, and that a narrow terminal squeezes to nothing. Here cells fold (a long word goes
on in the next row of its column), and a table that cannot give each column a readable
width is shown as records instead: one line per cell, "heading: cell", a blank line
between two rows, wrapped like any text. Every character of every cell is on screen.

Code is the opposite case: a wrapped code line continues in the first column, where it
reads (and copies) as a line of its own, and breaks indentation-sensitive code. So each
code line stays one row: a line wider than the terminal is cut, and ends in a dim "…" that
says so (`acpstack sessions export` has the agent's text whole).
"""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.markdown import CodeBlock, Markdown, TableElement
from rich.measure import Measurement
from rich.padding import Padding
from rich.syntax import Syntax
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


class _CodeBlock(CodeBlock):
    """Highlighted like rich's, one row per line: a line too wide is cut, marked "…"."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        code = str(self.text).rstrip()
        room = max(options.max_width - 2, 2)  # a column of padding on each side
        lines = Syntax(code, self.lexer_name, theme=self.theme).highlight(code)
        rows: list[Text] = []
        for line in lines.split("\n", allow_blank=True):
            if line.cell_len > room:
                line.truncate(room - 1)
                line.append("…", style="dim")
            line.no_wrap = True
            rows.append(line)
        background = Syntax.get_theme(self.theme).get_background_style()
        yield Padding(Group(*rows), 1, style=background)


class ChatMarkdown(Markdown):
    """`rich.markdown.Markdown`, with tables that fold their cells or become records, and
    code that is cut rather than wrapped."""

    elements = {
        **Markdown.elements,
        "table_open": _Table,
        "fence": _CodeBlock,
        "code_block": _CodeBlock,
    }
