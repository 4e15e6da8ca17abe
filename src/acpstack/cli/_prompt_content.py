"""A prompt's blocks (text, images, resources, links) as the reference agent understands them.

- text: as is.
- image: an OpenAI image part with a data URL when the model accepts images (`--images`),
  otherwise a note saying an image was left out.
- resource (embedded): its text, inline with its URI; a binary resource is an image part
  (for an image type and a model that accepts images) or a note with its type and size.
- resource_link: described by name and URI; when it is a `file://` URI inside the
  session's workspace, its content is read through the client (`fs/read_text_file`).
- audio: a note (no audio support).
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from acpstack.agent import Turn
from acpstack.schema import v1 as acp

MAX_LINKED_CHARS = 100_000


@dataclass
class Attachment:
    """One non-text block, with what the model gets for it."""

    kind: str  # image, resource, resource_link, audio
    label: str  # the URI or the media type
    text: str | None = None  # the resource's text, when there is one
    note: str | None = None  # why its content was left out, when it was


async def read_prompt(
    turn: Turn, *, images: bool
) -> tuple[str | list[dict[str, Any]], list[Attachment]]:
    """The user message content for the model (a string when the prompt is only text) and the attachments."""
    parts: list[dict[str, Any]] = []
    attachments: list[Attachment] = []
    for block in turn.prompt:
        if isinstance(block, acp.TextContent):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, acp.ImageContent):
            parts.append(_image(block.data, block.mime_type, images, attachments, "image"))
        elif isinstance(block, acp.EmbeddedResource):
            parts.append(_embedded(block.resource, images, attachments))
        elif isinstance(block, acp.ResourceLink):
            parts.append(await _link(turn, block, attachments))
        elif isinstance(block, acp.AudioContent):
            attachments.append(Attachment("audio", block.mime_type, note="audio is not supported"))
            parts.append(
                {
                    "type": "text",
                    "text": f"[An audio clip ({block.mime_type}) was attached; this agent cannot listen to audio.]",
                }
            )
    if all(part["type"] == "text" for part in parts):
        return "".join(part["text"] for part in parts), attachments
    return parts, attachments


def _image(
    data: str, mime: str, images: bool, attachments: list[Attachment], label: str
) -> dict[str, Any]:
    if images:
        attachments.append(Attachment("image", mime))
        return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}
    attachments.append(
        Attachment("image", mime, note="this model is not configured for images (--images)")
    )
    return {
        "type": "text",
        "text": f"[An image ({mime}, {label}) was attached, but this model does not accept images.]",
    }


def _embedded(resource: Any, images: bool, attachments: list[Attachment]) -> dict[str, Any]:
    mime = resource.mime_type if isinstance(resource.mime_type, str) else None
    if isinstance(resource, acp.TextResourceContents):
        attachments.append(Attachment("resource", resource.uri, text=resource.text))
        return {
            "type": "text",
            "text": f'\n<resource uri="{resource.uri}">\n{resource.text}\n</resource>\n',
        }
    if mime and mime.startswith("image/"):
        return _image(resource.blob, mime, images, attachments, resource.uri)
    size = _decoded_size(resource.blob)
    attachments.append(
        Attachment(
            "resource", resource.uri, note=f"binary ({mime or 'unknown type'}, {size} bytes)"
        )
    )
    return {
        "type": "text",
        "text": f"\n[Attached binary resource {resource.uri} ({mime or 'unknown type'}, {size} bytes); its content is not shown.]\n",
    }


async def _link(
    turn: Turn, link: acp.ResourceLink, attachments: list[Attachment]
) -> dict[str, Any]:
    title = link.title if isinstance(link.title, str) and link.title else link.name
    described = f"Linked resource: {title} <{link.uri}>"
    path = workspace_file(turn, link.uri)
    if path is None:
        attachments.append(
            Attachment("resource_link", link.uri, note="not a file in the workspace")
        )
        return {"type": "text", "text": f"\n[{described}]\n"}
    try:
        content = await turn.read_file(path)
    except Exception as exc:  # the client refused or the file is gone: the model is told why
        reason = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        attachments.append(
            Attachment("resource_link", link.uri, note=f"could not be read: {reason}")
        )
        return {"type": "text", "text": f"\n[{described}; it could not be read: {reason}]\n"}
    if len(content) > MAX_LINKED_CHARS:
        content = content[:MAX_LINKED_CHARS] + f"\n[... cut at {MAX_LINKED_CHARS} characters]"
    attachments.append(Attachment("resource_link", link.uri, text=content))
    return {
        "type": "text",
        "text": f'\n<resource uri="{link.uri}" name="{title}">\n{content}\n</resource>\n',
    }


def workspace_file(turn: Turn, uri: str) -> str | None:
    """The local path of a file:// URI inside one of the session's roots, else None."""
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    path = os.path.normpath(unquote(parts.path))
    for root in turn.session.roots:
        root = os.path.normpath(root)
        if os.path.isabs(path) and os.path.commonpath([root, path]) == root:
            return path
    return None


def _decoded_size(blob: str) -> int:
    try:
        return len(base64.b64decode(blob, validate=False))
    except (binascii.Error, ValueError):
        return len(blob)


def describe(attachments: list[Attachment]) -> str:
    """A short sentence per attachment, for the scripted brain's answer."""
    lines = []
    for item in attachments:
        if item.text is not None:
            lines.append(f"- {item.kind} `{item.label}`: {len(item.text)} characters of text")
        else:
            lines.append(f"- {item.kind} `{item.label}`" + (f" ({item.note})" if item.note else ""))
    return "\n".join(lines)
