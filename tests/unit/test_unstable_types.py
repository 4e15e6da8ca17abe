"""Types decoded on an unstable connection are still instances of the stable classes."""

from __future__ import annotations

import msgspec

from acpstack.schema import v1, v1_unstable


def test_unstable_structs_are_instances_of_their_stable_namesakes() -> None:
    note = msgspec.json.decode(
        b'{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}',
        type=v1_unstable.SessionNotification,
    )
    assert type(note.update) is v1_unstable.AgentMessageChunk
    assert isinstance(note.update, v1.AgentMessageChunk) and isinstance(
        note.update.content, v1.TextContent
    )
    shared = set(v1.__all__) & set(v1_unstable.__all__)
    structs = [
        n
        for n in shared
        if isinstance(getattr(v1, n), type) and issubclass(getattr(v1, n), msgspec.Struct)
    ]
    assert len(structs) > 100
    for name in structs:
        assert issubclass(getattr(v1_unstable, name), getattr(v1, name)), name


def test_subclasses_do_not_inherit_the_stable_conversions() -> None:
    # A stable parent's lenient/union marks name stable types; the unstable class has its own.
    for name in v1_unstable.__all__:
        cls = getattr(v1_unstable, name)
        if (
            isinstance(cls, type)
            and issubclass(cls, msgspec.Struct)
            and cls.__module__ == v1_unstable.__name__
        ):
            assert "__acp_lenient__" in vars(cls) or not hasattr(cls, "__acp_lenient__"), name
            assert "__acp_unions__" in vars(cls) or not hasattr(cls, "__acp_unions__"), name


def test_unstable_only_variants_decode() -> None:
    update = msgspec.json.decode(
        b'{"sessionId":"s","mcpServers":[],"cwd":"/tmp"}', type=v1_unstable.ForkSessionRequest
    )
    assert update.cwd == "/tmp"
