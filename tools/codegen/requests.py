"""`rpc/_generated_requests.py`: `Connection.request` typed from the method table.

One `@overload` per request method and schema: the method name as a `Literal`, its params
Struct, its response Struct. v1 and v2 share method names and are told apart by the
params type (their types are separate classes). Stable methods take the stable types
(an unstable subclass matches them too); methods only the unstable schema has take the
unstable types, and the frozen extensions' methods their extension module's.

After them, three kinds of overloads that are not one method's:

- for a name of several schemas, their params' union returns their results' union;
- any other protocol method name with any other params returns `ParamsDoNotMatchMethod`,
  which is not awaitable, so a type checker reports `await conn.request("session/new",
  wrong)` (a `str` fallback alone would accept it and return `Any`);
- any other `str` (a `_` extension method, or a name only known at run time) returns `Any`.

mypy wants overloads and their implementation in one class, hence a mixin whose
implementation calls the hand-written `Connection._request`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.codegen.generate import EXTENSIONS, HEADER, VENDOR_DIR, sha
from tools.codegen.methods import MethodRow, method_rows, method_sides
from tools.codegen.reading import load
from tools.codegen.v2 import v2_rows


@dataclass(frozen=True)
class Overload:
    method: str
    params: str  # e.g. "v1.NewSessionRequest"
    result: str


def _requests(rows: list[MethodRow], module: str, skip: set[str]) -> list[Overload]:
    return [
        Overload(r.name, f"{module}.{r.params}", f"{module}.{r.result}")
        for r in rows
        if r.kind == "request" and r.side != "protocol" and r.name not in skip
    ]


def collect() -> tuple[list[Overload], set[str]]:
    """The overloads, and every method name of the protocol (requests and notifications)."""
    overloads: list[Overload] = []
    names: set[str] = set()
    for version in ("v1", "v2"):
        folder = VENDOR_DIR / version
        stable_schema, unstable_schema = (
            load(folder / n) for n in ("schema.json", "schema.unstable.json")
        )
        stable_meta, unstable_meta = (load(folder / n) for n in ("meta.json", "meta.unstable.json"))
        stable_names = set(method_sides(stable_meta))
        rows_of = method_rows if version == "v1" else v2_rows
        stable = rows_of(stable_schema, stable_meta, stable_names)
        unstable = rows_of(unstable_schema, unstable_meta, stable_names)
        overloads += _requests(stable, version, set())
        overloads += _requests(unstable, f"{version}_unstable", stable_names)
        names |= {r.name for r in stable + unstable}
        if version != "v1":
            continue  # the frozen extensions exist in version 1 only
        for name, (ext_folder, schema_file, meta_file, prefixes) in EXTENSIONS.items():
            frozen = load(VENDOR_DIR / ext_folder / schema_file)
            meta = load(VENDOR_DIR / ext_folder / meta_file)
            methods = {m for m in method_sides(meta) if m.startswith(prefixes)}
            rows = method_rows(frozen, meta, set(), only=methods)
            overloads += _requests(rows, f"v1_{name}", set())
            names |= methods
    return overloads, names


def shared(overloads: list[Overload]) -> list[Overload]:
    """For a name of several schemas (v1 and v2), one overload that takes the union of
    their params and returns the union of their results (mypy does not split a union
    argument over the overloads: it would match `ParamsDoNotMatchMethod`'s)."""
    by_name: dict[str, list[Overload]] = {}
    for o in overloads:
        by_name.setdefault(o.method, []).append(o)
    return [
        Overload(name, " | ".join(o.params for o in group), " | ".join(o.result for o in group))
        for name, group in by_name.items()
        if len(group) > 1
    ]


PROLOGUE = '''
from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Literal, Protocol, overload

if TYPE_CHECKING:
    from acpstack.schema import v1, v1_nes, v1_unstable, v2, v2_unstable

__all__ = ["ParamsDoNotMatchMethod", "ProtocolMethod", "TypedRequests"]


class ParamsDoNotMatchMethod(Protocol):
    """What a type checker sees `Connection.request` return for a protocol method whose
    params are not that method's params Struct (a dict, or another method's Struct).

    It is not awaitable, so `await conn.request("session/new", wrong)` is a type error
    that names this class. Nothing of this type exists at run time: the call itself is
    made as written (a `str` method with any params is the untyped way to call).
    """

    def close(self) -> None:
        """(A coroutine has it too: that keeps the typed overloads compatible with this one.)"""
'''

REQUEST_DOC = '''\
        """Send a request and wait for its result: the method's response Struct (e.g.
        `NewSessionResponse`), or the JSON value for a `_` method.

        A type checker picks the result type from the method name and the params Struct
        (v1 and v2 share names: the params tell them apart); a protocol method with
        params that are not its params Struct is reported (`ParamsDoNotMatchMethod`);
        any other `str` method returns `Any`.

        Raises `RequestError` (the peer's error), `RequestTimeout` (none in `timeout` s;
        the request is then cancelled), `ConnectionClosed`, `CapabilityError` (not
        advertised by the peer; `check_gate=False` skips that check). Cancelling the
        caller cancels the request.
        """'''

KEYWORDS = "*, timeout: float | None = None, check_gate: bool = True"


def emit_requests() -> dict[str, str]:
    overloads, names = collect()
    header = HEADER.format(
        src="v1/, v2/ and the frozen extensions' meta.json and schema.json",
        sha=sha(VENDOR_DIR / "v1" / "meta.unstable.json"),
    )
    out = [header, PROLOGUE, ""]
    out.append("ProtocolMethod = Literal[" + ", ".join(repr(n) for n in sorted(names)) + "]")
    out.append('"""Every method name of the protocol: v1 (with its unstable methods and the')
    out.append('frozen extensions) and v2."""')
    out += ["", "", "class TypedRequests:"]
    out.append(
        '    """`Connection.request`, typed from the method table (a base of `Connection`)."""'
    )
    out += ["", "    if TYPE_CHECKING:", ""]
    out.append(
        f"        async def _request(self, method: str, params: Any, {KEYWORDS}) -> Any: ..."
    )
    out.append("")
    for o in overloads:
        out.append("    @overload")
        out.append(
            f"    def request(self, method: Literal[{o.method!r}], params: {o.params}, "
            f"{KEYWORDS}) -> Coroutine[Any, Any, {o.result}]: ..."
        )
    for o in shared(overloads):
        out.append("    @overload")
        out.append(
            f"    def request(self, method: Literal[{o.method!r}], params: {o.params}, "
            f"{KEYWORDS}) -> Coroutine[Any, Any, {o.result}]: ..."
        )
    out.append("    @overload")
    out.append(
        f"    def request(self, method: ProtocolMethod, params: object, {KEYWORDS}) "
        "-> ParamsDoNotMatchMethod: ..."
    )
    out.append("    @overload")
    out.append(f"    def request(self, method: str, params: Any, {KEYWORDS}) -> Any: ...")
    out.append("")
    out.append(f"    def request(self, method: str, params: Any, {KEYWORDS}) -> Any:")
    out.append(REQUEST_DOC)
    out.append(
        "        return self._request(method, params, timeout=timeout, check_gate=check_gate)"
    )
    out.append("")
    return {"rpc/_generated_requests.py": "\n".join(out)}
