"""The chat's rendering, in process: streamed Markdown cut into blocks (each line looked at
once, each block rendered once, whatever the chunk sizes), and what the renderer shows
once (tool calls, diffs, plans). Real rich consoles writing into strings."""

from __future__ import annotations

import io
import random
import re

import pytest
from rich.console import Console

from acpstack.cli import _mdstream, _view_live
from acpstack.cli._markdown import ChatMarkdown
from acpstack.cli._mdstream import BlockSplitter
from acpstack.cli._render import Renderer
from acpstack.cli._view_live import LiveView
from acpstack.cli._view_plain import PlainView
from acpstack.client import ClientRuntime
from acpstack.events import v1 as events_v1
from acpstack.schema import v1 as acp

MESSAGE = (
    "Intro paragraph\nstill intro.\n\n"
    "- one\n- two\n\n"
    "```python\ncode line\n\nafter a blank line, still code\n```\n"
    "A paragraph right after the fence.\n"
    "```\nfence right after a paragraph\n```\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n\n"
    "~~~~\n``` not a close\n~~~~\n"
    "last words"
)


def split(chunks: list[str]) -> list[str]:
    splitter = BlockSplitter()
    blocks = [b.text for chunk in chunks for b in splitter.feed(chunk)]
    return blocks + [b.text for b in splitter.finish()]


def test_blocks_do_not_depend_on_how_the_text_was_chunked() -> None:
    whole = split([MESSAGE])
    assert whole == [
        "Intro paragraph\nstill intro.",
        "- one\n- two",
        "```python\ncode line\n\nafter a blank line, still code\n```",
        "A paragraph right after the fence.",
        "```\nfence right after a paragraph\n```",
        "| a | b |\n|---|---|\n| 1 | 2 |",
        "~~~~\n``` not a close\n~~~~",
        "last words",
    ]
    rng = random.Random(3)
    for _ in range(50):
        cuts = sorted(rng.sample(range(1, len(MESSAGE)), rng.randint(1, 60)))
        pieces = [MESSAGE[a:b] for a, b in zip([0, *cuts], [*cuts, len(MESSAGE)], strict=True)]
        assert split(pieces) == whole


def test_each_line_is_looked_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    original = BlockSplitter._line

    def counting(self: BlockSplitter, line: str, done: list[_mdstream.Block]) -> None:
        nonlocal calls
        calls += 1
        original(self, line, done)

    monkeypatch.setattr(BlockSplitter, "_line", counting)
    text = "".join(f"word {i} " * 3 + ("\n\n" if i % 7 == 0 else "\n") for i in range(3000))
    splitter = BlockSplitter()
    for index in range(0, len(text), 3):  # three characters at a time
        splitter.feed(text[index : index + 3])
    splitter.finish()
    assert calls == text.count("\n")  # linear: no line is parsed again as chunks arrive


def test_a_block_too_long_for_the_screen_is_handed_out_as_plain_text() -> None:
    splitter = BlockSplitter()
    splitter.feed("```\n" + "".join(f"line {i}\n" for i in range(100)) + "partial")
    taken = splitter.take_partial(1000)
    assert taken.startswith("```\nline 0\n") and taken.endswith("line 99")
    assert splitter.tail == "partial"
    [rest] = splitter.feed(" end\n```\n")
    assert rest.text == "partial end\n```" and not rest.markdown  # its opening fence is gone
    long_line = BlockSplitter()
    long_line.feed("x" * 250)
    assert long_line.take_partial(100) == "x" * 200 and long_line.tail == "x" * 50


def live_console(width: int) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=width, height=30, force_terminal=True, color_system=None), out


@pytest.mark.parametrize("width", [40, 80, 200])
def test_every_block_is_rendered_once_however_many_chunks(
    monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    rendered: list[str] = []

    class CountingMarkdown(_view_live.ChatMarkdown):
        def __init__(self, markup: str, *args: object, **kwargs: object) -> None:
            rendered.append(markup)
            super().__init__(markup)

    monkeypatch.setattr(_view_live, "ChatMarkdown", CountingMarkdown)
    console, out = live_console(width)
    view = LiveView(console)
    for index in range(0, len(MESSAGE)):
        view.message(MESSAGE[index])  # one character per chunk
    view.close()
    assert rendered == split([MESSAGE])
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    for word in ("Intro", "intro.", "code", "fence", "last", "words", "paragraph"):
        assert word in plain


PATH = "/usr/local/lib/python3.12/site-packages/acpstack/cli/_render.py"
TABLES = (
    "| h0 | h1 | h2 | h3 | h4 | h5 | h6 |\n|---|---|---|---|---|---|---|\n"
    + "".join(f"| {' | '.join(f'c{r}{c}word' for c in range(7))} |\n" for r in range(3))
    + f"| path | x | x | x | x | x | {PATH} |\n\n"
    + f"| name | value |\n|---|---|\n| long | {'Q' * 230} |\n\n"
    + "| empty | table |\n|---|---|\n\nafter"
)


@pytest.mark.parametrize("width", [12, 20, 40, 80, 200])
def test_no_table_cell_is_cut_at_any_width(width: int) -> None:
    screen = _render(ChatMarkdown(TABLES), width)
    assert "…" not in screen and "|" not in screen, screen  # drawn, and nothing cut short
    cells = re.findall(r"c\d\dword", screen)
    assert sorted(cells) == [f"c{r}{c}word" for r in range(3) for c in range(7)], screen
    assert screen.count("Q") == 230
    assert PATH in "".join(screen.split())  # in the last column: it reads on in order
    for heading in ("h0", "h6", "name", "value", "empty", "table", "after"):
        assert heading in screen
    assert max(len(line) for line in screen.splitlines()) <= width


def test_a_table_that_fits_stays_a_table_and_one_too_wide_becomes_records() -> None:
    assert re.search(r"c00word +c01word +c02word", _render(ChatMarkdown(TABLES), 80))
    narrow = _render(ChatMarkdown(TABLES), 40)
    lines = [line.rstrip() for line in narrow.splitlines()]
    assert "h0: c00word" in lines and "h6: c06word" in lines and "h0: c10word" in lines
    assert re.search(r"long +Q+", narrow)  # two columns fit: still a table


def runtime_with_session() -> ClientRuntime:
    runtime = ClientRuntime()
    runtime.register_session("s", "/tmp")
    return runtime


def feed(runtime: ClientRuntime, renderer: Renderer, update: acp.SessionUpdate) -> None:
    """The update as the runtime hands it on: an event (read from v1's JSON)."""
    event = events_v1.decode(update)
    runtime.sessions["s"].state.apply(event)
    renderer.on_update("s", event)


def test_a_tool_call_is_one_line_and_a_diff_is_shown_once() -> None:
    out = io.StringIO()
    runtime = runtime_with_session()
    renderer = Renderer(PlainView(out), runtime, rich=False)
    diff = acp.Diff(path="/tmp/f", old_text="a\n", new_text="DIFF-MARK\n")
    feed(
        runtime,
        renderer,
        acp.ToolCall(
            tool_call_id="t", title="Edit f", kind="edit", status="pending", content=[diff]
        ),
    )
    for status in ("in_progress", "in_progress", "completed"):
        feed(runtime, renderer, acp.SessionUpdateToolCallUpdate(tool_call_id="t", status=status))  # type: ignore[arg-type]
    request = acp.RequestPermissionRequest(
        session_id="s",
        tool_call=acp.ToolCallUpdate(tool_call_id="t", title="Edit f", content=[diff]),
        options=[acp.PermissionOption(option_id="y", name="Allow", kind="allow_once")],
    )
    renderer.permission(request, ["1"])
    feed(runtime, renderer, acp.SessionUpdateToolCallUpdate(tool_call_id="t", status="failed"))
    text = out.getvalue()
    assert text.count("DIFF-MARK") == 1
    assert text.count("[tool] Edit f") == 1 and "(completed)" in text and "failed" not in text


def test_a_read_does_not_repeat_the_file_and_a_plan_asked_again_is_shown() -> None:
    out = io.StringIO()
    runtime = runtime_with_session()
    renderer = Renderer(PlainView(out), runtime, rich=False)
    body = acp.Content(content=acp.TextContent(text="FILE-CONTENT"))
    feed(
        runtime,
        renderer,
        acp.ToolCall(
            tool_call_id="r", title="Read f", kind="read", status="completed", content=[body]
        ),
    )
    plan = acp.Plan(entries=[acp.PlanEntry(content="step", priority="low", status="pending")])
    feed(runtime, renderer, plan)
    feed(runtime, renderer, plan)  # the same plan again in the turn: not repeated
    renderer.begin_turn()
    feed(runtime, renderer, plan)  # asked for in a new turn: shown
    text = out.getvalue()
    assert "FILE-CONTENT" not in text and text.count("[tool] Read f (completed)") == 1
    assert text.count("[ ] step") == 2


def test_an_unknown_update_is_said() -> None:
    out = io.StringIO()
    renderer = Renderer(PlainView(out), runtime_with_session(), rich=False)
    renderer.on_update("s", events_v1.decode({"sessionUpdate": "future_thing"}))
    assert "not understood by this client" in out.getvalue() and "future_thing" in out.getvalue()


def test_the_live_area_never_grows_past_the_screen() -> None:
    out = io.StringIO()
    console = Console(file=out, width=30, height=6, force_terminal=True, color_system=None)
    view = LiveView(console)
    from rich.text import Text

    for index in range(8):  # more running tool calls than the screen has rows
        view.tool_live(f"t{index}", [Text(f"tool {index} running"), Text("  output")])
    assert 0 < view._rows <= console.height - 1  # a cursor cannot go above the screen
    view.close()
    assert view._rows == 0


def test_a_notice_is_shown_with_its_severity() -> None:
    out = io.StringIO()
    runtime = runtime_with_session()
    renderer = Renderer(PlainView(out), runtime, rich=False)
    feed(
        runtime, renderer, acp.Notice(severity="warning", title="Rate limited", description="later")
    )
    assert out.getvalue() == "warning: Rate limited: later\n"


def _render(renderable: object, width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(renderable)
    return out.getvalue()


def test_the_command_listing_is_never_cropped_in_a_narrow_terminal() -> None:
    from acpstack.cli._listing import Listing

    rows = [
        ("/mcp SERVER TOOL {json arguments}", "Call an MCP tool of the session's servers"),
        ("/edit FILE OLD NEW", "Replace text in a file (shown as a diff)"),
    ]
    listing = Listing()
    listing.section("The agent's commands").extend(rows)
    for width in (24, 40, 60):
        screen = _render(listing, width)
        assert "…" not in screen, screen
        flowing = " ".join(screen.split())
        for name, description in rows:
            assert name in flowing and description in flowing, screen
        assert max(len(line) for line in screen.splitlines()) <= width
    wide = _render(listing, 120).splitlines()
    assert any(line.startswith("/edit FILE OLD NEW") and "Replace text" in line for line in wide)


def test_a_tools_output_wrapped_by_the_terminal_stays_indented() -> None:
    out = io.StringIO()
    console = Console(file=out, width=40, height=20, force_terminal=True, color_system=None)
    runtime = runtime_with_session()
    renderer = Renderer(LiveView(console), runtime, rich=True)
    long_line = "drwxr-xr-x 2 root root 4096 Nov 24 02:39 some-directory"
    body = acp.Content(content=acp.TextContent(text=f"short\n{long_line}"))
    feed(
        runtime,
        renderer,
        acp.ToolCall(
            tool_call_id="x", title="Run ls", kind="execute", status="completed", content=[body]
        ),
    )
    renderer.view.close()
    lines = [line for line in out.getvalue().splitlines() if line.strip()]
    output = lines[lines.index(next(line for line in lines if "short" in line)) :]
    assert len(output) >= 3, output  # the long line took two rows
    assert all(line.startswith("  ") for line in output), output
