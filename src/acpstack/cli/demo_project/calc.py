"""A tiny calculator (the acpstack demo project)."""


def add(a: float, b: float) -> float:
    return a + b


def multiply(a: float, b: float) -> float:
    return a * b
