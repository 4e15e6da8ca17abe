"""Generated from the official schema: documents decode into our Structs and encode back.

For every params and result type of every v1 method (stable and unstable), hypothesis
draws documents from the vendored JSON Schema itself; each must validate with `jsonschema`,
decode through the same path the wire uses, re-encode to a document that still validates
and equals the input, and decode(encode(x)) == x.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from acpstack.schema import STABLE_METHODS, UNSTABLE_METHODS, MethodSpec
from acpstack.wire._decode import decode_typed

from ._schema_strategies import SchemaStrategies

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "vendor" / "acp-schema" / "v1"
CASES = [(spec, spec.params, False) for spec in STABLE_METHODS] + [
    (spec, spec.result, True) for spec in STABLE_METHODS if spec.result
]
CASES += [(spec, spec.params, False) for spec in UNSTABLE_METHODS if spec.unstable]
CASES += [(spec, spec.result, True) for spec in UNSTABLE_METHODS if spec.unstable and spec.result]
# A few unstable results are free-form JSON (`Any`): nothing to decode into.
CASES = [c for c in CASES if isinstance(c[1], type) and issubclass(c[1], msgspec.Struct)]


@cache
def schema(unstable: bool) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (SCHEMA_DIR / ("schema.unstable.json" if unstable else "schema.json")).read_text()
    )
    return data


@cache
def strategies(unstable: bool) -> SchemaStrategies:
    return SchemaStrategies(schema(unstable))


@cache
def validator(unstable: bool, name: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": schema(unstable)["$defs"]})


def _id(case: tuple[MethodSpec, Any, bool]) -> str:
    spec, tp, is_result = case
    return f"{spec.name}:{spec.kind}:{'result' if is_result else 'params'}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)
@given(data=st.data())
def test_schema_documents_round_trip(
    case: tuple[MethodSpec, Any, bool], data: st.DataObject
) -> None:
    spec, tp, is_result = case
    name = tp.__name__
    check = validator(spec.unstable, name)
    doc = data.draw(strategies(spec.unstable).for_def(name), label=name)
    assume(check.is_valid(doc))  # a drawn oneOf/not combination the schema rejects
    value = decode_typed(msgspec.Raw(json.dumps(doc).encode()), tp, spec.name, result=is_result)
    assert isinstance(value, tp)
    encoded = msgspec.json.encode(value)
    out = json.loads(encoded)
    check.validate(out)
    assert out == doc
    assert decode_typed(msgspec.Raw(encoded), tp, spec.name, result=is_result) == value


def test_every_stable_method_is_covered() -> None:
    covered = {(c[0].name, c[0].kind, c[2]) for c in CASES}
    for spec in STABLE_METHODS:
        assert (spec.name, spec.kind, False) in covered
        assert spec.result is None or (spec.name, spec.kind, True) in covered


def test_the_strategies_draw_rich_documents() -> None:
    # Guards the generator itself: session updates of many kinds, nested content, _meta.
    seen: set[str] = set()
    draw = strategies(False).for_def("SessionNotification")

    @settings(max_examples=200, deadline=None, database=None)
    @given(draw)
    def collect(doc: dict[str, Any]) -> None:
        seen.add(doc["update"]["sessionUpdate"])

    collect()
    assert len(seen) >= 8
