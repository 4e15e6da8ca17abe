"""A stdlib CookieJar used for WebSocket handshakes (httpx uses the same jar for HTTP)."""

from __future__ import annotations

import email.message
import urllib.request
from http.cookiejar import CookieJar
from typing import Any


def _http_url(url: str) -> str:
    if url.startswith("wss://"):
        return "https://" + url[6:]
    if url.startswith("ws://"):
        return "http://" + url[5:]
    return url


def cookie_header(jar: CookieJar, url: str) -> str | None:
    """The Cookie header the jar holds for `url`, if any."""
    request = urllib.request.Request(_http_url(url))
    jar.add_cookie_header(request)
    value: str | None = request.get_header("Cookie")
    return value


class _Response:
    def __init__(self, set_cookies: list[str]) -> None:
        self._headers = email.message.Message()
        for value in set_cookies:
            self._headers["Set-Cookie"] = value

    def info(self) -> Any:
        return self._headers


def store_cookies(jar: CookieJar, url: str, set_cookies: list[str]) -> None:
    """Keep the cookies a handshake response set (`set_cookies` are Set-Cookie values)."""
    if set_cookies:
        jar.extract_cookies(_Response(set_cookies), urllib.request.Request(_http_url(url)))  # type: ignore[arg-type]
