"""Turn a valid JSON-RPC message into a hostile line, and say what the peer must answer.

Values are plain JSON plus two markers the serializer understands: `Raw` (bytes written
verbatim: invalid UTF-8, out-of-range numbers, control characters) and `Dup` (an object
with duplicate keys). `expectation` re-reads the final bytes the way a strict peer would
and decides whether a reply with the line's id is required, allowed, or forbidden.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Raw:
    data: bytes


@dataclass(frozen=True)
class Dup:
    items: list[tuple[str, Any]]


def dump(value: Any) -> bytes:
    """Serialize with the markers; everything else as compact JSON."""
    if isinstance(value, Raw):
        return value.data
    if isinstance(value, Dup):
        return b"{" + b",".join(dump(k) + b":" + dump(v) for k, v in value.items) + b"}"
    if isinstance(value, dict):
        return b"{" + b",".join(dump(str(k)) + b":" + dump(v) for k, v in value.items()) + b"}"
    if isinstance(value, list):
        return b"[" + b",".join(dump(v) for v in value) + b"]"
    if isinstance(value, float) and value != value:
        return b"NaN"
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


HOSTILE_SCALARS: list[Any] = [
    Raw(b"1e400"),
    Raw(b"-1e400"),
    Raw(b"9" * 5000),
    Raw(b"-0"),
    Raw(b"NaN"),
    Raw(b"Infinity"),
    2**64,
    -(2**63) - 1,
    99999999999999999999,
    1.7976931348623157e308,
    5e-324,
    Raw(b'"\\ud800"'),
    Raw(b'"a\\udfffb"'),
    Raw(b'"\xff\xfe"'),
    Raw(b'"ok\xc3"'),
    Raw(b'"\xed\xa0\x80"'),
    "\u0000",
    Raw(b'"a\x00b"'),
    Raw(b'"a\rb"'),
    Raw(b'"a\x01b"'),
    "\r",
    "\u2028\u2029",
    "\ufeff",
    None,
    True,
    False,
    0,
    -1,
    "",
    [],
    {},
    0.5,
]


def deep(rng: random.Random) -> Raw:
    depth = rng.choice([64, 200, 999, 1001, 3000, 20000])
    opener, closer = (b"[", b"]") if rng.random() < 0.5 else (b'{"a":', b"}")
    return Raw(opener * depth + b"0" + closer * depth)


def huge(rng: random.Random) -> Any:
    kind = rng.randint(0, 3)
    size = rng.choice([10_000, 100_000, 1_000_000])
    if kind == 0:
        return "x" * size
    if kind == 1:
        return list(range(size // 10))
    if kind == 2:
        return {f"k{i}": i for i in range(size // 50)}
    return "é" * (size // 2)


# Long and odd text for every position (ids, methods, keys, values): each pattern once
# made some scan retry from every character (a regular expression, a salvage of the id),
# which costs the square of the length.
LONG_PATTERNS = [
    "x",
    'a"',
    "\\",
    'a\\"',
    "a=b&",
    "http://",
    "a.",
    "a ",
    "key: ",
    "é",
    "\u2028",
    "🙂",
]
LONG_SIZES = [1_000, 10_000, 100_000, 1_000_000]


def long_text(rng: random.Random) -> str:
    """A string of about 1 KB to 1 MB repeating one awkward pattern."""
    pattern = rng.choice(LONG_PATTERNS)
    return pattern * (rng.choice(LONG_SIZES) // len(pattern))


def hostile_value(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.6:
        return rng.choice(HOSTILE_SCALARS)
    if roll < 0.8:
        return deep(rng)
    if roll < 0.9:
        return long_text(rng)
    return huge(rng)


def mutate_tree(rng: random.Random, value: Any) -> Any:
    """Apply one mutation at a random place in a JSON tree (returns the new tree)."""
    if isinstance(value, dict) and value and rng.random() < 0.7:
        key = rng.choice(list(value))
        out = dict(value)
        op = rng.randint(0, 4)
        if op == 0:
            del out[key]  # missing field
        elif op == 1:
            out[key] = hostile_value(rng)  # wrong type / hostile value
        elif op == 2:
            extra = rng.choice(["extra", "_meta", "zz", "\u00e9", long_text(rng)])
            out[extra] = hostile_value(rng)  # extra field
        elif op == 3:
            return Dup([*out.items(), (key, hostile_value(rng))])  # duplicate key
        else:
            out[key] = mutate_tree(rng, out[key])
        return out
    if isinstance(value, list) and value and rng.random() < 0.7:
        out_list = list(value)
        index = rng.randrange(len(out_list))
        out_list[index] = (
            mutate_tree(rng, out_list[index]) if rng.random() < 0.5 else hostile_value(rng)
        )
        return out_list
    return hostile_value(rng)


# Ids no peer may echo (not a string or an integer). Odd but valid ids (huge, negative,
# empty, unusual strings) come from the caller's `odd_id`, so that they stay unique.
BAD_IDS: list[Any] = [None, True, 1.5, {}, [], {"a": 1}, Raw(b"1e400"), -0.0, Raw(b'"\xff"')]


def mutate_message(rng: random.Random, message: dict[str, Any], odd_id: Any = None) -> Any:
    """One mutation of the envelope or the params (the caller decides how often).
    `odd_id()` returns a fresh, valid but unusual id."""
    out = dict(message)
    roll = rng.random()
    if roll < 0.45 and "params" in out:
        out["params"] = mutate_tree(rng, out["params"])
    elif roll < 0.55 and "result" in out:
        out["result"] = mutate_tree(rng, out["result"])
    elif roll < 0.62:
        out["id"] = odd_id() if odd_id is not None and rng.random() < 0.4 else rng.choice(BAD_IDS)
        if odd_id is not None and rng.random() < 0.25:  # long, and unique by its prefix
            out["id"] = f"{odd_id()}{long_text(rng)}"
    elif roll < 0.67:
        out["jsonrpc"] = rng.choice(["1.0", 2, None, Raw(b'"2.\xff"')])
    elif roll < 0.71:
        out.pop(rng.choice(list(out)), None)
    elif roll < 0.75:
        long = long_text(rng)
        out["method"] = rng.choice(
            [5, None, "", "x" * 300, "session/prompt ", "_", "$/x", "\u0000"]
            + [long, f"_{long}", f"session/{long}", f"$/{long}"]
        )
    elif roll < 0.79:
        out["result"] = {}
    elif roll < 0.83:
        out["params"] = rng.choice([[], "params", 1, None, [out.get("params")]])
    elif roll < 0.86:
        return [out, mutate_message(rng, message, odd_id)] if rng.random() < 0.8 else []  # batch
    elif roll < 0.88:  # a long or odd key beside the envelope's own
        out[long_text(rng) if rng.random() < 0.7 else rng.choice(["", "\u0000", "ID", " id"])] = 1
    else:
        extra = [("id", out["id"])] if "id" in out else []
        return Dup([*out.items(), *extra, ("jsonrpc", "2.0")])
    return out


def mutate_line(rng: random.Random, line: bytes) -> bytes:
    """Byte-level damage to a serialized line (no newline inside unless on purpose)."""
    roll = rng.random()
    if roll < 0.2 and len(line) > 2:
        return line[: rng.randrange(1, len(line))]  # truncated
    if roll < 0.35:
        pos = rng.randrange(len(line) + 1)
        return line[:pos] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 4))) + line[pos:]
    if roll < 0.45:
        return b"\xef\xbb\xbf" + line  # BOM
    if roll < 0.55:
        return line + b"\r"  # CRLF line end (valid)
    if roll < 0.65:
        return line + rng.choice([b" garbage", b"}", b",{}", b"\x00"])
    if roll < 0.75:
        return b" \t" + line + b"  "
    if roll < 0.85 and line:
        pos = rng.randrange(len(line))
        return line[:pos] + bytes([line[pos] ^ (1 << rng.randrange(8))]) + line[pos + 1 :]
    return bytes(rng.randrange(256) for _ in range(rng.randint(0, 300))).replace(b"\n", b" ")


def random_bytes(rng: random.Random) -> bytes:
    return bytes(rng.randrange(256) for _ in range(rng.randint(0, 200))).replace(b"\n", b"")


def strict_parse(line: bytes) -> Any:
    """Parse as a strict peer must (UTF-8, no lone surrogates, finite numbers); raise if not."""
    text = line.decode("utf-8")

    def bad_constant(name: str) -> Any:
        raise ValueError(name)

    value = json.loads(text, parse_constant=bad_constant)
    _check(value)
    return value


def _check(value: Any, depth: int = 0) -> None:
    if depth > 200:
        raise ValueError("deep")
    if isinstance(value, str):
        value.encode("utf-8")  # lone surrogates raise
    elif isinstance(value, float) and value in (float("inf"), float("-inf")):
        raise ValueError("inf")
    elif isinstance(value, list):
        for item in value:
            _check(item, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check(key, depth + 1)
            _check(item, depth + 1)


def expectation(line: bytes) -> tuple[str, Any]:
    """What the peer must do with `line`, read from its final bytes (after every mutation):
    ("answer", id): a well-formed request, exactly one reply with that id is required;
    ("maybe", id): damaged, but a top-level id can still be read, at most one reply;
    ("none", None): no reply may carry an id from this line."""
    if b"\n" in line:  # NDJSON splits it: each piece is a line of its own, probably damaged
        ids = [
            rid for rid in (readable_id(piece) for piece in line.split(b"\n")) if rid is not None
        ]
        return ("maybe", ids[-1]) if ids else ("none", None)
    try:
        value = strict_parse(line.strip(b" \t\r"))
    except (ValueError, RecursionError, UnicodeError):
        value = None
    if isinstance(value, dict):
        rid = value.get("id")
        if isinstance(rid, int | str) and not isinstance(rid, bool):
            if (
                isinstance(value.get("method"), str)
                and "result" not in value
                and "error" not in value
            ):
                return ("answer" if value.get("jsonrpc") == "2.0" else "maybe"), rid
            return "maybe", rid
        return "none", None
    # Damaged: the peer may still read a top-level id (and must then answer it at most once).
    rid = readable_id(line)
    return ("maybe", rid) if rid is not None else ("none", None)


def request_ids(line: bytes) -> list[Any]:
    """The ids a reply to `line` may carry: the exact JSON value of the id of every request
    in it, read as a strict peer reads it. A request here is a top-level object (or an
    element of a batch) with an integer or string id that is not a response: it has a
    method, or neither result nor error (an invalid request is answered with its id). For a
    damaged line, the top-level id a lenient reader could take (`readable_id`). `None`
    stands for a well-formed request whose id is null (ACP v1 allows it; the answer to it
    has id null). A notification, or an `id` nested in params, gives nothing."""
    if b"\n" in line:  # NDJSON splits it: each piece is a line of its own
        return [rid for piece in line.split(b"\n") for rid in request_ids(piece)]
    try:
        value = strict_parse(line.strip(b" \t\r"))
    except (ValueError, RecursionError, UnicodeError):
        rid = readable_id(line)
        return [] if rid is None else [rid]
    items = value if isinstance(value, list) else [value]
    return [item["id"] for item in items if _is_request(item)]


def generated_request_ids(value: Any) -> list[Any]:
    """The ids of the requests in a message as it was generated, before any byte-level
    damage (`mutate_line`): a reader that recovers more of a damaged line than
    `readable_id` does (bytes between `"id"` and its colon, say) may rightly answer them."""
    ids: list[Any] = []
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, Dup | dict):
            pairs = item.items if isinstance(item, Dup) else list(item.items())
            shape = {key: v for key, v in pairs if key != "id"}
            rids = [v for key, v in pairs if key == "id" and isinstance(v, int | str)]
            for rid in dict.fromkeys(r for r in rids if not isinstance(r, bool)):
                if _is_request({**shape, "id": rid}):
                    ids.append(rid)
    return ids


def _is_request(item: Any) -> bool:
    if not isinstance(item, dict) or "id" not in item:
        return False
    rid = item["id"]
    response = "result" in item or "error" in item
    if rid is None:
        return item.get("jsonrpc") == "2.0" and isinstance(item.get("method"), str) and not response
    if not isinstance(rid, int | str) or isinstance(rid, bool):
        return False
    return "method" in item or not response


_ID_VALUE = re.compile(rb'\s*:\s*(-?\d+(?=\s*[,}\]])|"(?:[^"\\]|\\.)*")')


def readable_id(line: bytes, limit: int = 1 << 20) -> Any:
    """The last top-level `"id"` value a lenient reader could take from a damaged line
    (the fuzzer's own reading, independent of the implementation under test)."""
    found: Any = None
    depth = 0
    i, end = 0, min(len(line), limit)
    while i < end:
        byte = line[i]
        if byte == 0x22:  # a string: skip it, and look at it when it is a top-level key
            j = i + 1
            while j < end and line[j] != 0x22:
                j += 2 if line[j] == 0x5C else 1
            if depth == 1 and line[i : j + 1] == b'"id"':
                match = _ID_VALUE.match(line, j + 1)
                if match is not None:
                    try:
                        value = json.loads(match.group(1).decode("utf-8"))
                    except (ValueError, UnicodeError):
                        value = None
                    if isinstance(value, int | str) and not isinstance(value, bool):
                        found = value
            i = j + 1
            continue
        if byte in (0x7B, 0x5B):
            depth += 1
        elif byte in (0x7D, 0x5D):
            depth -= 1
            if depth <= 0:
                break
        i += 1
    return found


def checked(n: int) -> int:
    """`n` with a check digit: no one-digit change (a bit flip in a digit) of one such id is
    another, so damage can never make a line carry the id of a different request."""
    return n * 10 + sum(map(int, str(n))) % 10
