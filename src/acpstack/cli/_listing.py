"""Names with their descriptions, laid out to fit the terminal: side by side when there is
room, else each description under its name. A table with a fixed first column would crop
or squeeze the descriptions to a word per line in a narrow terminal."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

__all__ = ["Listing"]

#: The narrowest description column worth putting beside the names.
MIN_DESCRIPTION_WIDTH = 30
_GAP = 2


@dataclass
class Listing:
    """Sections of (name, description) rows, each section under an underlined heading."""

    sections: list[tuple[str, list[tuple[str, str]]]] = field(default_factory=list)

    def section(self, heading: str) -> list[tuple[str, str]]:
        rows: list[tuple[str, str]] = []
        self.sections.append((heading, rows))
        return rows

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        names = [name for _, rows in self.sections for name, _ in rows]
        widest = max(map(cell_len, names), default=0)
        if widest + _GAP + MIN_DESCRIPTION_WIDTH <= options.max_width:
            yield self._side_by_side()
            return
        for heading, rows in self.sections:
            yield Text(heading, style="underline")
            for name, description in rows:
                yield Text(name, style="bold", overflow="fold")
                yield Padding(Text(description), (0, 0, 0, 4))

    def _side_by_side(self) -> Table:
        table = Table.grid(padding=(0, _GAP))
        table.add_column(no_wrap=True, style="bold")
        table.add_column()
        for heading, rows in self.sections:
            table.add_row(Text(heading, style="underline"), "")
            for name, description in rows:
                table.add_row(name, description)
        return table
