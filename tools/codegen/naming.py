"""Python names and docstrings from schema names and descriptions."""

from __future__ import annotations

import keyword
import re


def snake(name: str) -> str:
    if name == "_meta":
        return "meta"
    out = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    out = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", out).lower()
    out = out.replace("-", "_")
    if keyword.iskeyword(out):
        out += "_"
    return out


def pascal(tag: str) -> str:
    parts = re.split(r"[_\-/ ]+", tag)
    return "".join(p[:1].upper() + p[1:] for p in parts if p)


def first_paragraph(text: str | None) -> str:
    if not text:
        return ""
    para = text.strip().split("\n\n")[0].replace("\n", " ").strip()
    return para.replace("\\", "\\\\").replace('"""', "'''")
