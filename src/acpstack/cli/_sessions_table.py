"""`acpstack sessions list` as aligned columns. At a terminal the table fits its width:
ids, times and counts are kept whole, and the free text is cut with "…" where it must be,
the title first, then the directory (keeping its end), the agent, the name; in a very
narrow terminal columns are left out, the title first (the name and id stay). On a pipe nothing
is cut (the lines are as long as the values)."""

from __future__ import annotations

import os
import sys

from rich.cells import cell_len, set_cell_size

from acpstack.cli._records import SessionRecord, parse_time

GAP = "  "
#: The free columns, the first to be cut first, each not below its floor.
SHRINK_ORDER = {"TITLE": 10, "DIRECTORY": 12, "AGENT": 10, "NAME": 8}
#: Left out in this order when even the floors do not fit; the name and the id always stay.
LEFT_OUT_ORDER = ("TITLE", "DIRECTORY", "AGENT", "TURNS", "LAST USED")


def print_sessions(records: list[SessionRecord], *, with_directory: bool) -> None:
    width = _terminal_width()
    sys.stdout.write("".join(line + "\n" for line in session_lines(records, with_directory, width)))


def _terminal_width() -> int | None:
    if not sys.stdout.isatty():
        return None
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns
    except OSError:
        return None


def session_lines(
    records: list[SessionRecord], with_directory: bool, width: int | None
) -> list[str]:
    """The table's lines, `width` columns at most (None: as wide as the values)."""
    headers = ["NAME", "ID", "LAST USED", "TURNS", "AGENT", "DIRECTORY", "TITLE"]
    rows = [_row(record) for record in records]
    shown = [h for h in headers if with_directory or h != "DIRECTORY"]
    natural = {
        h: max(cell_len(cells[headers.index(h)]) for cells in [headers, *rows]) for h in shown
    }
    widths = dict(natural)
    if width is not None:
        widths = _fit_widths(natural, shown, width)
        shown = [h for h in shown if h in widths]
    lines = []
    for cells in [headers, *rows]:
        parts = [_fit(cells[headers.index(h)], widths[h], h) for h in shown]
        lines.append(GAP.join(parts).rstrip())
    return lines


def _fit_widths(natural: dict[str, int], shown: list[str], width: int) -> dict[str, int]:
    """Column widths within `width`: free text cut in SHRINK_ORDER, down to each floor;
    then columns left out in LEFT_OUT_ORDER."""
    columns = list(shown)
    while True:
        widths = {h: natural[h] for h in columns}
        excess = sum(widths.values()) + len(GAP) * (len(columns) - 1) - width
        for name, floor in SHRINK_ORDER.items():
            if excess <= 0 or name not in widths:
                continue
            cut = min(excess, max(widths[name] - floor, 0))
            widths[name] -= cut
            excess -= cut
        droppable = [name for name in LEFT_OUT_ORDER if name in columns]
        if excess <= 0 or not droppable:
            return widths
        columns.remove(droppable[0])


def _row(record: SessionRecord) -> list[str]:
    used = parse_time(record.updated_at)
    return [
        record.name or "-",
        record.id,
        used.strftime("%Y-%m-%d %H:%M") if used is not None else record.updated_at,
        str(record.turns),
        record.agent,
        record.cwd,
        record.title or "",
    ]


def _fit(text: str, width: int, header: str) -> str:
    """`text` in `width` cells: cut with "…" (a directory keeps its end), counts to the right."""
    if cell_len(text) > width:
        if header == "DIRECTORY":
            text = "…" + _last_cells(text, width - 1)
        else:
            text = set_cell_size(text, max(width - 1, 0)) + "…"
    pad = " " * (width - cell_len(text))
    return pad + text if header == "TURNS" else text + pad


def _last_cells(text: str, cells: int) -> str:
    while cell_len(text) > cells:
        text = text[1:]
    return text
