"""Prompts with images, embedded resources and resource links reach the model (and the
scripted brain acknowledges them). Real `acpstack agent` processes, the fake model server."""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

from acpstack import spawn_agent
from acpstack.client import ClientRuntime
from acpstack.schema import v1 as acp

sys.path.insert(0, str(Path(__file__).parent))
from tests_cli_fake import FakeOpenAI, agent_command  # noqa: E402

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-not-really-an-image").decode()


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.md").write_text("linked file content: blue\n")
    (tmp_path / "outside.txt").write_text("outside content: never sent\n")
    return ws


def prompt_blocks(tmp_path: Path, ws: Path) -> list[Any]:
    return [
        acp.TextContent(text="Look at these."),
        acp.ImageContent(data=PNG, mime_type="image/png"),
        acp.EmbeddedResource(
            resource=acp.TextResourceContents(
                uri="file:///virtual/spec.txt", text="embedded text: green"
            )
        ),
        acp.EmbeddedResource(
            resource=acp.BlobResourceContents(
                uri="file:///virtual/data.bin",
                blob=base64.b64encode(b"\0" * 10).decode(),
                mime_type="application/octet-stream",
            )
        ),
        acp.ResourceLink(name="notes.md", uri=(ws / "notes.md").as_uri()),
        acp.ResourceLink(name="outside.txt", uri=(tmp_path / "outside.txt").as_uri()),
        acp.ResourceLink(name="docs", uri="https://example.com/docs", title="The docs"),
    ]


async def send_to_model(tmp_path: Path, *flags: str) -> tuple[Any, list[dict[str, Any]]]:
    ws = workspace(tmp_path)
    with FakeOpenAI() as fake:
        runtime = ClientRuntime(
            unrestricted_fs=True
        )  # a client that would read any file: the agent must not ask
        async with spawn_agent(
            agent_command(fake.url, str(tmp_path / "s.db"), *flags), runtime, env={"FAKE_KEY": "k"}
        ):
            await runtime.initialize()
            sid = (await runtime.new_session(str(ws))).session_id
            result = await runtime.prompt(sid, prompt_blocks(tmp_path, ws))
        return result, fake.requests[0]["messages"][-1]["content"]


async def test_the_model_gets_images_and_resource_text(tmp_path: Path) -> None:
    result, content = await send_to_model(tmp_path, "--images")
    assert result.stop_reason == "end_turn"
    assert content[0] == {"type": "text", "text": "Look at these."}
    assert content[1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    texts = "".join(part.get("text", "") for part in content)
    assert '<resource uri="file:///virtual/spec.txt">\nembedded text: green\n</resource>' in texts
    assert "file:///virtual/data.bin (application/octet-stream, 10 bytes)" in texts
    assert "linked file content: blue" in texts  # read through the client (fs/read_text_file)
    assert (
        "outside.txt" in texts and "outside content" not in texts
    )  # outside the workspace: only named
    assert "Linked resource: The docs <https://example.com/docs>" in texts


async def test_without_images_the_model_is_told_one_was_left_out(tmp_path: Path) -> None:
    _result, content = await send_to_model(tmp_path)
    assert isinstance(content, str)  # only text parts left: sent as plain text
    assert "data:image" not in content and PNG not in content
    assert (
        "[An image (image/png, image) was attached, but this model does not accept images.]"
        in content
    )
    assert "linked file content: blue" in content


async def test_the_scripted_brain_acknowledges_attachments(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    runtime = ClientRuntime()
    async with spawn_agent(
        [sys.executable, "-m", "acpstack", "agent", "--store", str(tmp_path / "s.db")], runtime
    ):
        await runtime.initialize()
        sid = (await runtime.new_session(str(ws))).session_id
        blocks = prompt_blocks(tmp_path, ws)
        await runtime.prompt(sid, [blocks[2], blocks[4], blocks[1]])  # only attachments, no text
        message = runtime.sessions[sid].state.last_agent_message
    assert message is not None
    assert "You attached:" in message.text
    assert "resource `file:///virtual/spec.txt`: 20 characters of text" in message.text
    assert f"resource_link `{(ws / 'notes.md').as_uri()}`: 26 characters of text" in message.text
    assert "image `image/png` (this model is not configured for images (--images))" in message.text
