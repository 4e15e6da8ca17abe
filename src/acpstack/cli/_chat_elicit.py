"""Elicitation at the terminal: the agent asks the user for structured input
(`elicitation/create`). Offered only when someone is at the keyboard; headless, nothing is
advertised and a well-behaved agent does not ask.

- a form: one question per field, in the schema's order; a yes/no field and a choice among
  options are one key each, text and numbers are typed (Enter keeps the default, if any);
  then one key sends the answers, declines or cancels;
- a URL: shown (never opened by us); one key says whether the user will go there.
Esc on a key question (Ctrl-D in a text field) leaves a field out, which declines the form
when the field is required; Ctrl-C cancels (and the turn with it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msgspec import UNSET
from rich.text import Text

from acpstack.cli._input import Interrupted
from acpstack.client import ElicitationReply
from acpstack.schema import v1 as acp

if TYPE_CHECKING:
    from acpstack.cli._chat import Chat


class _Declined(Exception):
    pass


def _set(value: Any) -> bool:
    return value is not UNSET and value is not None


async def ask_elicitation(chat: Chat, request: acp.CreateElicitationRequest) -> ElicitationReply:
    assert chat.renderer is not None and chat.input is not None
    chat.renderer.view.print(Text(f"the agent asks: {request.message}", style="bold magenta"))
    chat.renderer.view.pause()
    try:
        if str(request.mode) == "url":
            return await _url(chat, request)
        return await _form(chat, request)
    except _Declined:
        return ElicitationReply("decline")
    except Interrupted:
        chat.on_interrupt()
        return ElicitationReply("cancel")
    finally:
        chat.renderer.view.resume()


async def _url(chat: Chat, request: acp.CreateElicitationRequest) -> ElicitationReply:
    assert chat.input is not None and chat.renderer is not None
    chat.renderer.view.print(Text(f"  {request.url}", style="underline"))
    choices = [("y", "accept"), ("n", "decline")]
    question = "open it yourself, then y; n declines: "
    answer = await chat.input.read_choice(
        question, choices, lambda a: "yes" if a == "accept" else "no", none="no"
    )
    return ElicitationReply("accept" if answer == "accept" else "decline")


async def _form(chat: Chat, request: acp.CreateElicitationRequest) -> ElicitationReply:
    assert chat.input is not None
    schema = request.requested_schema
    fields: dict[str, Any] = {}
    required: list[str] = []
    if isinstance(schema, acp.ElicitationSchema):
        fields = schema.properties if isinstance(schema.properties, dict) else {}
        required = schema.required if isinstance(schema.required, list) else []
    content: dict[str, Any] = {}
    for name, field in fields.items():
        value = await _field(chat, name, field, name in required)
        if value is not None:
            content[name] = value
    choices = [("s", "accept"), ("d", "decline")]
    answer = await chat.input.read_choice(
        "s sends the answers, d declines: ",
        choices,
        lambda a: "sent" if a == "accept" else "declined",
        none="declined",
    )
    if answer != "accept":
        return ElicitationReply("decline")
    return ElicitationReply("accept", content)


async def _field(chat: Chat, name: str, field: Any, required: bool) -> Any:
    assert chat.input is not None
    label = field.title if _set(getattr(field, "title", UNSET)) else name
    about = field.description if _set(getattr(field, "description", UNSET)) else ""
    default = getattr(field, "default", UNSET)
    hint = f" [{default}]" if _set(default) else ""
    question = f"{label}{' *' if required else ''}{f' ({about})' if about else ''}{hint}: "
    if isinstance(field, acp.BooleanPropertySchema):
        answer = await chat.input.read_choice(
            f"{question}y/n ", [("y", True), ("n", False)], lambda yes: "yes" if yes else "no"
        )
        return _or_default(answer, default, required)
    options = _options(field)
    if options:
        keys = "123456789abcdefghijklmnopqrstuvwxyz"
        shown = [Text(f"  [{key}] {title}") for key, (_, title) in zip(keys, options, strict=False)]
        assert chat.renderer is not None
        chat.renderer.view.print(*shown)
        choices = [(key, value) for key, (value, _) in zip(keys, options, strict=False)]
        titles = dict(options)
        picked = await chat.input.read_choice(question, choices, lambda v: titles.get(v, v))
        return _or_default(picked, default, required)
    return await _typed(chat, question, field, default, required)


def _options(field: Any) -> list[tuple[str, str]]:
    """(value, title) of a field that is a choice among options, else []."""
    if not isinstance(field, acp.StringPropertySchema):
        return []
    if isinstance(field.one_of, list):
        return [(option.const, option.title) for option in field.one_of]
    if isinstance(field.enum, list):
        return [(value, value) for value in field.enum]
    return []


def _or_default(answer: Any, default: Any, required: bool) -> Any:
    if answer is None:  # Esc
        if _set(default):
            return default
        if required:
            raise _Declined
    return answer


async def _typed(chat: Chat, question: str, field: Any, default: Any, required: bool) -> Any:
    assert chat.input is not None
    number = isinstance(field, acp.NumberPropertySchema | acp.IntegerPropertySchema)
    while True:
        try:
            line = (await chat.input.read_line(question)).strip()
        except EOFError:
            raise _Declined from None
        if not line:
            if _set(default) or not required:
                return default if _set(default) else None
            continue
        if not number:
            return line
        try:
            return int(line) if isinstance(field, acp.IntegerPropertySchema) else float(line)
        except ValueError:
            chat.say(Text(f"{line!r} is not a number", style="red"))
