"""The documentation site: every page is in the navigation, every public name of the split
reference pages is on one of them, and the generated method tables and type listings
(tools/docs_reference.py, a MkDocs hook) cover the whole schema."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import yaml

from acpstack import agent, client, schema
from acpstack.agent import Agent
from acpstack.schema import method_table
from tools import docs_reference

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _nav_pages(node: object) -> set[str]:
    if isinstance(node, str):
        return {node}
    if isinstance(node, list):
        return set().union(*(_nav_pages(item) for item in node))
    if isinstance(node, dict):
        return set().union(*(_nav_pages(value) for value in node.values()))
    return set()


def test_every_page_is_in_the_navigation() -> None:
    nav = _nav_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert pages - nav == set()
    assert nav - pages == set()


def _documented_names() -> set[str]:
    text = "\n".join(p.read_text() for p in (DOCS / "reference").glob("*.md"))
    blocks = re.findall(r"^(?:::: |<!-- api: )(acpstack[\w.]*)", text, re.MULTILINE)
    members = re.findall(r"^        - (\w+)$", text, re.MULTILINE)  # a `members:` list
    return set(blocks) | {f"acpstack.schema.{m}" for m in members}


def test_every_public_name_of_agent_client_and_schema_is_documented() -> None:
    documented = _documented_names()
    generated = {"v1", "v1_unstable", "v1_nes", "v2", "v2_unstable"}  # the types pages
    tables = {"STABLE_METHODS", "UNSTABLE_METHODS"}  # the methods page
    expected = {f"acpstack.agent.{n}" for n in agent.__all__}
    expected |= {f"acpstack.client.{n}" for n in client.__all__}
    expected |= {f"acpstack.schema.{n}" for n in set(schema.__all__) - generated - tables}
    assert expected - documented == set()


def test_the_methods_tables_have_every_method_once() -> None:
    for version, table in ((1, method_table(True, ("nes",))), (2, method_table(True, version=2))):
        text = docs_reference.methods_table(version, None, "schema-methods.md")
        rows = re.findall(r"^\| `([^`]+)` \|", text, re.MULTILINE)
        assert sorted(rows) == sorted(spec.name for spec in table)
    agent_rows = docs_reference.methods_table(1, "agent", "agent.md")
    assert "| `session/prompt` |" in agent_rows
    assert "| `fs/read_text_file` |" not in agent_rows
    assert "(schema-v1.md#v1.PromptRequest)" in agent_rows


def test_the_type_listings_have_an_anchor_for_every_type() -> None:
    for name in ("v1", "v2", "v1_nes"):
        module = getattr(schema, name)
        text = docs_reference.types_listing(name)
        for type_name in module.__all__:
            value = getattr(module, type_name)
            if isinstance(value, type) and issubclass(value, msgspec.Struct):
                # A row of its own, or named among the types restated from the module below.
                row = f'<span id="{name}.{type_name}"></span>' in text
                assert row or (f"`{type_name}`" in text and docs_reference._is_restated(value))
    unstable = docs_reference.types_listing("v1_unstable")
    # An unstable type that only retypes its stable namesake is named, not listed again.
    assert '<span id="v1_unstable.PromptRequest">' not in unstable
    assert "`PromptRequest`" in unstable


def test_inherited_members_leave_out_the_generated_stubs() -> None:
    class MyAgent(Agent):
        async def mine(self) -> None:
            pass

    inherited = docs_reference.inherited_members(MyAgent)
    assert "on_connect" in inherited and "initialize" in inherited
    assert "session_prompt" not in inherited and "mine" not in inherited
    block = docs_reference.api_block("acpstack.agent.Agent")
    assert block == "::: acpstack.agent.Agent\n    options:\n      inherited_members: false\n"


def test_markers_are_expanded_and_other_comments_left_alone() -> None:
    text = "# T\n\n<!-- types: v1_nes -->\n\n<!-- a comment -->\n"
    out = docs_reference.expand(text, "schema-v1.md")
    assert "<!-- types:" not in out and "| Type | Fields | What it is |" in out
    assert "<!-- a comment -->" in out
