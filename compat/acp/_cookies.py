"""The cookie store the official SDK's remote clients keep for load-balancer affinity:
`Set-Cookie` values in, a `Cookie` header out (names and values only; attributes such as
Path or Expires are not interpreted)."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["MemoryAcpCookieStore"]


class MemoryAcpCookieStore:
    def __init__(self) -> None:
        self._cookies: dict[str, str] = {}

    def store_set_cookie(self, header: str) -> None:
        name, sep, value = header.split(";", 1)[0].partition("=")
        if sep and name.strip():
            self._cookies[name.strip()] = value.strip()

    def store_set_cookies(self, headers: Iterable[str]) -> None:
        for header in headers:
            self.store_set_cookie(header)

    def cookie_header(self) -> str | None:
        if not self._cookies:
            return None
        return "; ".join(f"{name}={value}" for name, value in self._cookies.items())

    def clear(self) -> None:
        self._cookies.clear()

    def __len__(self) -> int:
        return len(self._cookies)
