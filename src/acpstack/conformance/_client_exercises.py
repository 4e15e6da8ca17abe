"""What `acpstack check client` asks of the client: files, terminals, permissions,
elicitation and every stable update kind. Each step notes findings with their rule."""

from __future__ import annotations

import os
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acpstack.conformance._frames import obj
from acpstack.conformance._model import DOCS, Rule, Verdict
from acpstack.conformance._probe import Probe, Reply

SAMPLE = "line one\nline two\nline three\nline four\n"
ACCENTED = "é" * 10 + "abcdefghij"  # 30 bytes of UTF-8, the first 20 two bytes a character
BYTE_LIMIT = 11


@dataclass
class Finding:
    id: str
    verdict: Verdict
    message: str
    rule: Rule

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "verdict": self.verdict.value,
            "message": self.message,
            "rule": {"text": self.rule.text, "source": self.rule.source},
        }


@dataclass
class Exercise:
    """One prompt's worth of checks against the client of `probe`."""

    probe: Probe
    session_id: str
    cwd: Path
    capabilities: dict[str, Any]
    timeout: float
    findings: list[Finding] = field(default_factory=list)
    cleanup: list[Path] = field(default_factory=list)

    def note(self, id: str, verdict: Verdict, message: str, rule: str, source: str) -> None:
        self.findings.append(Finding(id, verdict, message, Rule(rule, source)))

    async def call(
        self, method: str, params: dict[str, Any], timeout: float | None = None
    ) -> Reply:
        params = {"sessionId": self.session_id, **params}
        return await self.probe.request(method, params, timeout=timeout or self.timeout)

    def update(self, update: dict[str, Any]) -> None:
        self.probe.notify("session/update", {"sessionId": self.session_id, "update": update})

    def say(self, text: str) -> None:
        content = {"type": "text", "text": text}
        self.update({"sessionUpdate": "agent_message_chunk", "content": content})

    def offers(self, *path: str) -> bool:
        value: Any = self.capabilities
        for key in path:
            value = obj(value).get(key)
        return value is True or (path[0] == "elicitation" and isinstance(value, dict))


FS = f"{DOCS}/file-system"
TERMINALS = f"{DOCS}/terminals"


async def files(ex: Exercise) -> None:
    """fs/read_text_file and fs/write_text_file, inside and outside the workspace."""
    name = f"acpstack-check-{uuid.uuid4().hex[:8]}.txt"
    inside = ex.cwd / name
    if not ex.offers("fs", "writeTextFile"):
        ex.note("fs.write", Verdict.SKIP, "the client does not offer fs.writeTextFile", "", FS)
    else:
        reply = await ex.call("fs/write_text_file", {"path": str(inside), "content": SAMPLE})
        ex.cleanup.append(inside)
        _grade_write(ex, reply, inside)
        await _write_outside(ex)
    if not ex.offers("fs", "readTextFile"):
        ex.note("fs.read", Verdict.SKIP, "the client does not offer fs.readTextFile", "", FS)
        return
    if not inside.exists():
        try:  # the client may run elsewhere; then the read checks use what it wrote
            inside.write_text(SAMPLE, "utf-8")
            ex.cleanup.append(inside)
        except OSError:
            pass
    await _reads(ex, inside)


def _grade_write(ex: Exercise, reply: Reply, inside: Path) -> None:
    rule = "The Client MUST create the file if it doesn't exist."
    if reply.status != "result":
        ex.note(
            "fs.write-creates", Verdict.FAIL, f"writing a new file got {reply.describe()}", rule, FS
        )
    elif inside.exists() and inside.read_text("utf-8") != SAMPLE:
        ex.note("fs.write-creates", Verdict.FAIL, "the file on disk has other content", rule, FS)
    else:
        where = "verified on disk" if inside.exists() else "not visible here to verify"
        ex.note("fs.write-creates", Verdict.PASS, f"created {inside.name} ({where})", rule, FS)


async def _write_outside(ex: Exercise) -> None:
    outside = Path(tempfile.gettempdir()) / f"acpstack-check-outside-{uuid.uuid4().hex[:8]}.txt"
    reply = await ex.call("fs/write_text_file", {"path": str(outside), "content": "outside"})
    ex.cleanup.append(outside)
    rule = (
        "The working directory SHOULD serve as a boundary for tool operations on the file system."
    )
    if reply.status == "result":
        ex.note(
            "fs.write-outside", Verdict.WARN, f"wrote {outside} outside the workspace", rule, FS
        )
    else:
        ex.note("fs.write-outside", Verdict.PASS, f"refused ({reply.describe()})", rule, FS)


async def _reads(ex: Exercise, inside: Path) -> None:
    whole = await ex.call("fs/read_text_file", {"path": str(inside)})
    _expect_content(ex, "fs.read", whole, SAMPLE, "fs/read_text_file returns the file's content.")
    window = await ex.call("fs/read_text_file", {"path": str(inside), "line": 2, "limit": 2})
    _expect_content(
        ex,
        "fs.read-lines",
        window,
        "line two\nline three\n",
        "line is the 1-based line to start at, limit the number of lines to read.",
    )
    missing = await ex.call("fs/read_text_file", {"path": str(ex.cwd / "acpstack-no-such-file")})
    _expect_error(ex, "fs.read-missing", missing, "reading a file that does not exist", -32002)
    relative = await ex.call("fs/read_text_file", {"path": "relative/path.txt"})
    _expect_error(ex, "fs.relative-path", relative, "reading a relative path", -32602)
    outside = Path(tempfile.gettempdir()) / f"acpstack-check-secret-{uuid.uuid4().hex[:8]}.txt"
    outside.write_text("not for the agent\n", "utf-8")
    ex.cleanup.append(outside)
    reply = await ex.call("fs/read_text_file", {"path": str(outside)})
    rule = (
        "The working directory SHOULD serve as a boundary for tool operations on the file system."
    )
    if reply.status == "result":
        ex.note(
            "fs.read-outside",
            Verdict.WARN,
            f"served {outside} from outside the workspace",
            rule,
            FS,
        )
    else:
        ex.note("fs.read-outside", Verdict.PASS, f"refused ({reply.describe()})", rule, FS)


def _expect_content(ex: Exercise, id: str, reply: Reply, wanted: str, rule: str) -> None:
    content = obj(reply.result).get("content")
    if reply.status != "result":
        ex.note(id, Verdict.FAIL, f"got {reply.describe()}", rule, FS)
    elif content != wanted:
        ex.note(id, Verdict.FAIL, f"content {str(content)[:80]!r}, expected {wanted!r}", rule, FS)
    else:
        ex.note(id, Verdict.PASS, "the expected content", rule, FS)


def _expect_error(ex: Exercise, id: str, reply: Reply, what: str, ideal: int) -> None:
    rule = "Paths are absolute; a missing resource is -32002, invalid params -32602."
    if reply.status == "result":
        ex.note(id, Verdict.FAIL, f"{what} succeeded", rule, FS)
    elif reply.status != "error":
        ex.note(id, Verdict.FAIL, f"{what} got {reply.describe()}", rule, FS)
    elif reply.code != ideal:
        ex.note(id, Verdict.WARN, f"{what}: error {reply.code}, ideally {ideal}", rule, FS)
    else:
        ex.note(id, Verdict.PASS, f"{what}: error {ideal}", rule, FS)


async def terminals(ex: Exercise) -> None:
    if not ex.offers("terminal"):
        ex.note("terminal", Verdict.SKIP, "the client does not offer terminals", "", TERMINALS)
        return
    script = "printf 'hello terminal\\n'; printf '%s|%s' \"$ACPSTACK_CHECK\" \"$PWD\"; exit 3"
    env = [{"name": "ACPSTACK_CHECK", "value": "42"}]
    run = await _run(ex, ["-c", script], env=env)
    if run is not None:
        terminal_id, exit_reply, output = run
        _grade_run(ex, exit_reply, output)
        await ex.call("terminal/release", {"terminalId": terminal_id})
    await _byte_limit(ex)
    await _kill_and_release(ex)


async def _run(
    ex: Exercise, args: list[str], **extra: Any
) -> tuple[str, Reply, dict[str, Any]] | None:
    params = {"command": "sh", "args": args, "cwd": str(ex.cwd), **extra}
    created = await ex.call("terminal/create", params)
    terminal_id = obj(created.result).get("terminalId")
    rule = "terminal/create returns a terminalId at once; the command runs in the background."
    if created.status != "result" or not isinstance(terminal_id, str):
        ex.note(
            "terminal.create",
            Verdict.FAIL,
            f"terminal/create got {created.describe()}",
            rule,
            TERMINALS,
        )
        return None
    ex.update(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": f"terminal-{terminal_id}",
            "title": f"sh {' '.join(args)[:40]}",
            "kind": "execute",
            "status": "in_progress",
            "content": [{"type": "terminal", "terminalId": terminal_id}],
        }
    )
    exit_reply = await ex.call("terminal/wait_for_exit", {"terminalId": terminal_id})
    output = await ex.call("terminal/output", {"terminalId": terminal_id})
    ex.update(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": f"terminal-{terminal_id}",
            "status": "completed",
        }
    )
    return terminal_id, exit_reply, obj(output.result)


def _grade_run(ex: Exercise, exit_reply: Reply, output: dict[str, Any]) -> None:
    rule = "wait_for_exit answers the exit status; terminal/output the output and, after exit, exitStatus."
    code = obj(exit_reply.result).get("exitCode")
    text = output.get("output")
    status = obj(output.get("exitStatus")).get("exitCode")
    if code != 3 or status != 3:
        ex.note(
            "terminal.exit-status",
            Verdict.FAIL,
            f"exit code {code!r} / exitStatus {status!r}, expected 3",
            rule,
            TERMINALS,
        )
    else:
        ex.note("terminal.exit-status", Verdict.PASS, "exit code 3 from both", rule, TERMINALS)
    wanted = f"hello terminal\n42|{ex.cwd}"
    rule = "The command runs with the given env and cwd; its output is returned in full."
    if not isinstance(text, str) or wanted not in text.replace(
        os.path.realpath(ex.cwd), str(ex.cwd)
    ):
        ex.note(
            "terminal.env-cwd",
            Verdict.FAIL,
            f"output {str(text)[:120]!r}, expected {wanted!r}",
            rule,
            TERMINALS,
        )
    else:
        ex.note(
            "terminal.env-cwd",
            Verdict.PASS,
            "env and cwd applied, output complete",
            rule,
            TERMINALS,
        )


async def _byte_limit(ex: Exercise) -> None:
    run = await _run(ex, ["-c", f"printf '%s' '{ACCENTED}'"], outputByteLimit=BYTE_LIMIT)
    if run is None:
        return
    terminal_id, _, output = run
    await ex.call("terminal/release", {"terminalId": terminal_id})
    text = output.get("output")
    rule = (
        "When output exceeds outputByteLimit, the client drops it from the beginning, at a "
        "character boundary, and reports truncated: true."
    )
    kept = text.encode() if isinstance(text, str) else b""
    problems = []
    if len(kept) > BYTE_LIMIT:
        problems.append(f"{len(kept)} bytes kept (limit {BYTE_LIMIT})")
    if not isinstance(text, str) or not ACCENTED.endswith(text) or len(kept) < BYTE_LIMIT - 1:
        problems.append(f"kept {text!r}, expected the last {BYTE_LIMIT} bytes {ACCENTED[-10:]!r}")
    if output.get("truncated") is not True:
        problems.append(f"truncated is {output.get('truncated')!r}")
    verdict = Verdict.FAIL if problems else Verdict.PASS
    ex.note(
        "terminal.byte-limit",
        verdict,
        "; ".join(problems) or f"kept {text!r}, truncated",
        rule,
        TERMINALS,
    )


async def _kill_and_release(ex: Exercise) -> None:
    created = await ex.call(
        "terminal/create", {"command": "sleep", "args": ["30"], "cwd": str(ex.cwd)}
    )
    terminal_id = obj(created.result).get("terminalId")
    if not isinstance(terminal_id, str):
        return
    kill = await ex.call("terminal/kill", {"terminalId": terminal_id})
    waited = await ex.call("terminal/wait_for_exit", {"terminalId": terminal_id}, timeout=10)
    after = await ex.call("terminal/output", {"terminalId": terminal_id})
    rule = "terminal/kill stops the command; the terminal stays valid for output and wait_for_exit."
    if kill.status != "result" or waited.status != "result" or after.status != "result":
        message = f"kill: {kill.describe()}; wait: {waited.describe()}; output: {after.describe()}"
        ex.note("terminal.kill", Verdict.FAIL, message, rule, TERMINALS)
    else:
        status = obj(after.result).get("exitStatus")
        ex.note("terminal.kill", Verdict.PASS, f"stopped; exit status {status}", rule, TERMINALS)
    released = await ex.call("terminal/release", {"terminalId": terminal_id})
    gone = await ex.call("terminal/output", {"terminalId": terminal_id})
    rule = "terminal/release frees the terminal; its id is no longer valid."
    if released.status != "result":
        ex.note(
            "terminal.release", Verdict.FAIL, f"release got {released.describe()}", rule, TERMINALS
        )
    elif gone.status == "result":
        ex.note(
            "terminal.release",
            Verdict.FAIL,
            "terminal/output still works after release",
            rule,
            TERMINALS,
        )
    else:
        ex.note(
            "terminal.release",
            Verdict.PASS,
            "released; the id is refused afterwards",
            rule,
            TERMINALS,
        )


def cleanup(ex: Exercise) -> None:
    for path in ex.cleanup:
        try:
            path.unlink(missing_ok=True)
        except OSError:
            pass
