"""`acpstack check client`: an ACP agent on stdio that, when prompted, exercises the client
running it and reports what the client did right and wrong (as its message, and a file).

Prompt `cancel` checks cancellation (press stop while the permission request shows);
any other prompt runs every other check.
"""

from __future__ import annotations

import json
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acpstack.conformance import _client_exercises as exercises
from acpstack.conformance import _client_interact as interact
from acpstack.conformance._client_exercises import Exercise, Finding
from acpstack.conformance._client_negotiation import Negotiation
from acpstack.conformance._client_sim import Answer
from acpstack.conformance._frames import Frame, obj
from acpstack.conformance._model import Verdict
from acpstack.conformance._probe import Probe
from acpstack.conformance._schema import MessageValidator

AGENT_INFO = {"name": "acpstack-check-client", "title": "acpstack check client", "version": "1"}
SCHEMA_SOURCE = "https://github.com/agentclientprotocol/agent-client-protocol/tree/main/schema"


def _error(code: int, message: str) -> Answer:
    return "error", {"code": code, "message": message}


@dataclass
class ClientCheckAgent:
    """Answers the client's requests (the `Responder` of a Probe whose peer is the client)."""

    report_path: Path | None = None
    """Where the report of each run goes (.json: JSON, else Markdown); default: a new file in the
    temporary directory."""
    timeout: float = 30.0
    """Seconds for requests the client answers by itself."""
    wait: float = 600.0
    """Seconds for requests a person answers (permission, elicitation, cancel)."""
    probe: Probe | None = None
    """The probe it answers on; `serve_client_check` sets it."""
    capabilities: dict[str, Any] = field(default_factory=dict)
    """The client's capabilities, from `initialize`."""
    client_info: dict[str, Any] = field(default_factory=dict)
    """The client's `clientInfo`, from `initialize`."""
    sessions: dict[str, Path] = field(default_factory=dict)
    """The sessions made so far, with their working directories."""
    findings: list[Finding] = field(default_factory=list)
    """What the last run found."""
    last_report: Path | None = None
    """Where the last report was written (None before one was)."""
    negotiation: Negotiation = field(default_factory=Negotiation)
    """What the client asked for at `initialize`, and did after the answer (version 1)."""

    async def answer(self, frame: Frame) -> Answer:
        """Answer the client like a small agent: `initialize`, `session/new`, modes and
        config options; `session/prompt` runs the checks (or, for a prompt that starts
        with "cancel", the cancellation check) and ends the turn with the report. Other
        methods get -32601."""
        method, params = frame.method, obj(frame.params)
        if method == "initialize":
            self.negotiation.initialize(params)
            self.capabilities = self.negotiation.capabilities
            self.client_info = self.negotiation.client_info
            return "result", {  # version 1 whatever was asked: this agent speaks v1
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": False},
                "authMethods": [],
                "agentInfo": AGENT_INFO,
            }
        self.negotiation.request(method)
        if method == "session/new":
            cwd = params.get("cwd")
            if not isinstance(cwd, str) or not Path(cwd).is_absolute():
                return _error(-32602, "cwd must be an absolute path")
            session_id = f"check-{uuid.uuid4().hex[:12]}"
            self.sessions[session_id] = Path(cwd)
            modes = interact.MODES
            return "result", {
                "sessionId": session_id,
                "modes": modes,
                "configOptions": interact.config_options("quick"),
            }
        if method in ("session/set_mode", "session/set_config_option"):
            value = params.get("modeId", params.get("value"))
            return "result", {} if method == "session/set_mode" else {
                "configOptions": interact.config_options(str(value))
            }
        if method == "session/prompt":
            return await self._prompt(params)
        return _error(-32601, f"method not found: {method}")

    def cancel_session(self, session_id: str) -> None:
        """Nothing to do: this agent holds no answers (and, being the agent, never
        sends `session/cancel`)."""
        return None

    def release_held(self) -> None:
        """Nothing to do: this agent holds no answers."""
        return None

    async def _prompt(self, params: dict[str, Any]) -> Answer:
        session_id = params.get("sessionId")
        if not isinstance(session_id, str) or session_id not in self.sessions:
            return _error(-32002, f"unknown session {session_id!r}")
        assert self.probe is not None
        text = " ".join(
            b.get("text", "") for b in params.get("prompt") or [] if isinstance(b, dict)
        ).strip()
        ex = Exercise(
            self.probe, session_id, self.sessions[session_id], self.capabilities, self.timeout
        )
        if text.lower().lstrip("/").startswith("cancel"):
            stop = await interact.permission_cancel(ex, self.wait)
        else:
            stop = await self._run_all(ex)
        self._finish(ex)
        return "result", {"stopReason": stop}

    async def _run_all(self, ex: Exercise) -> str:
        ex.say(
            "acpstack check client: checking this client (files, terminals, permissions, "
            "elicitation, rendering).\n\n"
        )
        interact.every_update(ex)
        try:
            await exercises.files(ex)
            await exercises.terminals(ex)
            await interact.permission(ex, self.wait)
            await interact.elicitation(ex, self.wait)
        finally:
            exercises.cleanup(ex)
        return "end_turn"

    def _finish(self, ex: Exercise) -> None:
        assert self.probe is not None
        ex.findings[:0] = self.negotiation.findings()
        problems = self.probe.log.schema
        rule = "Every response follows the ACP JSON Schema of its method."
        if problems:
            shown = "; ".join(str(p.violation) for p in problems[:5])
            ex.note("schema.client-messages", Verdict.FAIL, shown, rule, SCHEMA_SOURCE)
        else:
            ex.note(
                "schema.client-messages",
                Verdict.PASS,
                "every client message valid",
                rule,
                SCHEMA_SOURCE,
            )
        self.findings = ex.findings
        path = (
            self.report_path
            or Path(tempfile.gettempdir()) / f"acpstack-client-check-{int(time.time())}.md"
        )
        try:
            path.write_text(render(self, path.suffix == ".json"), "utf-8")
            self.last_report = path
            where = f"\n\nReport written to `{path}`."
        except OSError as exc:
            where = f"\n\nThe report could not be written to {path}: {exc.strerror}."
        ex.say("\n" + render(self, False) + where + "\n\nSend `cancel` to check cancellation.\n")


def render(agent: ClientCheckAgent, as_json: bool) -> str:
    counts = {v.value: sum(1 for f in agent.findings if f.verdict == v) for v in Verdict}
    if as_json:
        data = {
            "client": agent.client_info,
            "clientCapabilities": agent.capabilities,
            "summary": counts,
            "findings": [f.to_json() for f in agent.findings],
        }
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    name = agent.client_info.get("title") or agent.client_info.get("name") or "the client"
    lines = [
        f"## acpstack check client: {name} {agent.client_info.get('version', '')}".rstrip(),
        "",
    ]
    lines += ["| verdict | check | result |", "|---|---|---|"]
    for f in agent.findings:
        lines.append(f"| {f.verdict.value} | {f.id} | {f.message.replace('|', '/')} |")
    lines += ["", ", ".join(f"{n} {v}" for v, n in counts.items())]
    return "\n".join(lines) + "\n"


async def serve_client_check(agent: ClientCheckAgent) -> None:
    """Serve `agent` on this process's stdin/stdout until the client closes stdin."""
    from acpstack.transports import open_stdio_transport

    transport = await open_stdio_transport()
    probe = Probe(transport, agent, MessageValidator(), peer="client")
    agent.probe = probe
    probe.start()
    await probe.closed.wait()
    await probe.close()
