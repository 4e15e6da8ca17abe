"""The redaction module: URLs, headers, free text, log output."""

from __future__ import annotations

import base64
import io
import logging
import subprocess
import sys
from urllib.parse import quote, quote_plus

import pytest

from acpstack.cli._redact import (
    MASK,
    RedactingFormatter,
    Redactor,
    is_secret_name,
    redact_headers,
    redact_url,
    url_secrets,
)

KEY = "sk-live-0123456789abcdef"


@pytest.mark.parametrize(
    "name",
    [
        "key",
        "api_key",
        "API-KEY",
        "apikey",
        "x-api-key",
        "token",
        "access_token",
        "secret",
        "client_secret",
        "password",
        "passwd",
        "sig",
        "signature",
        "Authorization",
        "Cookie",
    ],
)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name", ["model", "page", "q", "version", "Content-Type", "user", "sessionId", "exit_code"]
)
def test_ordinary_names(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"http://user:{KEY}@host:8080/v1", "http://***@host:8080/v1"),
        (f"https://{KEY}@host/v1", "https://***@host/v1"),
        (f"https://host/v1?api_key={KEY}&model=m", "https://host/v1?api_key=***&model=m"),
        (f"https://host/v1?model=m&access_token={KEY}", "https://host/v1?model=m&access_token=***"),
        (f"https://host/v1?sig={KEY}#frag", "https://host/v1?sig=***#frag"),
        ("https://api.openai.com/v1", "https://api.openai.com/v1"),
        ("http://127.0.0.1:11434/v1?model=x", "http://127.0.0.1:11434/v1?model=x"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_url_secrets_finds_userinfo_and_query_values() -> None:
    assert set(url_secrets(f"http://ada:{KEY}@h/v1?token=t0k3n&x=1")) == {
        "ada",
        KEY,
        f"ada:{KEY}",
        "t0k3n",
    }
    assert url_secrets("http://h/v1?model=m") == []


def test_redact_headers() -> None:
    shown = redact_headers(
        {"Authorization": f"Bearer {KEY}", "X-Api-Key": KEY, "Accept": "text/event-stream"}
    )
    assert shown == {"Authorization": MASK, "X-Api-Key": MASK, "Accept": "text/event-stream"}


def test_redactor_masks_known_secrets_in_every_encoding() -> None:
    key = "k3y/with+odd=chars"
    redactor = Redactor.for_endpoint(
        f"http://ada:{quote(key, safe='')}@h/v1", None
    )  # as a user must write it
    basic = base64.b64encode(f"ada:{key}".encode()).decode()
    for text in (key, quote(key, safe=""), quote_plus(key), f"Basic {basic}", f"echo: {basic}"):
        assert "k3y" not in redactor.text(text) and basic not in redactor.text(text), text
    assert redactor.text(f"the key {key} again") == "the key *** again"


def test_redactor_masks_credential_patterns_it_was_not_told_about() -> None:
    redactor = Redactor()
    text = (
        f"POST http://u:{KEY}@h/v1?api_key={KEY} failed; Authorization: Bearer {KEY}; "
        f'{{"api_key": "{KEY}", "token":"{KEY}"}} password={KEY} exit code: 1'
    )
    shown = redactor.text(text)
    assert KEY not in shown
    assert "exit code: 1" in shown  # ordinary text stays readable
    assert (
        redactor.text("the token expired; Basic auth failed")
        == "the token expired; Basic auth failed"
    )


def test_redactor_leaves_plain_text_alone() -> None:
    text = "Could not connect to http://127.0.0.1:9/v1 ([Errno 111] Connection refused)."
    assert Redactor([KEY]).text(text) == text


def test_formatter_redacts_messages_arguments_and_tracebacks() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(RedactingFormatter(Redactor([KEY])))
    logger = logging.getLogger("test-redact")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("calling %s", f"http://h/v1?key={KEY}")
        try:
            raise RuntimeError(f"bad key {KEY}")
        except RuntimeError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    output = stream.getvalue()
    assert "RuntimeError: bad key ***" in output and "calling http://h/v1?key=***" in output
    assert KEY not in output


LINEAR_CASES = """
from acpstack.cli._redact import Redactor
redactor = Redactor(["s3cret-value"])
for text in ("x" * 1_000_000, "a." * 500_000, "http" * 250_000, '"a' * 500_000, "bearer" + " " * 1_000_000):
    assert redactor.text(text) == text
print("done")
"""


def test_redaction_takes_linear_time() -> None:
    # A backtracking pattern took 10 CPU-seconds over 16,000 characters and grows with the
    # square of the length: over 1 MB it would not end within the timeout. In a process of
    # its own, which the timeout can end (a regular expression does not let go of the GIL).
    done = subprocess.run(
        [sys.executable, "-c", LINEAR_CASES], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (0, "done\n"), done.stderr
