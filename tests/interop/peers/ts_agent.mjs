// Scripted ACP agent built on the official TypeScript SDK (npm @agentclientprotocol/sdk).
//
// Run with node from a directory whose node_modules holds the SDK (ESM ignores
// NODE_PATH): tests/interop/_foreign.py symlinks this file into
// <repo>/.cache/interop/node/peers/ and launches it from there.
//
// Behaviour is identical to py_sdk_agent.py; see that file's docstring:
//   stream N | permission | read PATH [line=N] [limit=M] | write PATH TEXT | wait | <echo>
// Client errors become a chunk "error: <code> <message>" and the turn ends with end_turn.
// session/cancel (or $/cancel_request for the session/prompt request, which the SDK
// surfaces as the handler's AbortSignal) makes the running prompt return "cancelled".

import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";

import * as acp from "@agentclientprotocol/sdk";

// package.json is not in the SDK's "exports": locate it from the resolved entry point.
function sdkVersion() {
  const entry = new URL(import.meta.resolve("@agentclientprotocol/sdk"));
  const root = entry.href.slice(0, entry.href.indexOf("/dist/") + 1);
  return JSON.parse(readFileSync(new URL("package.json", root), "utf8")).version;
}
const SDK_VERSION = sdkVersion();

const PERMISSION_OPTIONS = [
  { optionId: "allow", name: "Allow", kind: "allow_once" },
  { optionId: "allow-always", name: "Always allow", kind: "allow_always" },
  { optionId: "reject", name: "Reject", kind: "reject_once" },
  { optionId: "reject-always", name: "Always reject", kind: "reject_always" },
];
const ALLOW_IDS = new Set(
  PERMISSION_OPTIONS.filter((o) => o.kind.startsWith("allow")).map((o) => o.optionId),
);

const STREAM_RE = /^stream\s+(\d+)\s*$/;
const READ_RE = /^read\s+([\s\S]+?)((?:\s+(?:line|limit)=\d+)*)\s*$/;
const WRITE_RE = /^write\s+(\S+)(?:\s([\s\S]*))?$/;

/** sessionId -> { cwd, turns: Set<Turn> } */
const sessions = new Map();

class Turn {
  constructor() {
    this.cancelled = false;
    this.waiters = [];
  }
  cancel() {
    if (this.cancelled) return;
    this.cancelled = true;
    for (const resolve of this.waiters.splice(0)) resolve();
  }
  untilCancelled() {
    if (this.cancelled) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

function errorText(error) {
  if (error instanceof acp.RequestError) return `error: ${error.code} ${error.message}`;
  return `error: local ${error?.name ?? "Error"}: ${error?.message ?? String(error)}`;
}

async function say(client, sessionId, text) {
  await client.notify(acp.methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
  });
}

async function toolStatus(client, sessionId, status) {
  await client.notify(acp.methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: "tool_call_update", toolCallId: "call-1", status },
  });
}

async function permission(client, sessionId) {
  await client.notify(acp.methods.client.session.update, {
    sessionId,
    update: {
      sessionUpdate: "tool_call",
      toolCallId: "call-1",
      title: "Edit file",
      kind: "edit",
      status: "pending",
    },
  });
  let response;
  try {
    response = await client.request(acp.methods.client.session.requestPermission, {
      sessionId,
      toolCall: { toolCallId: "call-1", title: "Edit file", kind: "edit", status: "pending" },
      options: PERMISSION_OPTIONS,
    });
  } catch (error) {
    await say(client, sessionId, errorText(error));
    await toolStatus(client, sessionId, "failed");
    return "end_turn";
  }
  const outcome = response?.outcome;
  if (outcome?.outcome === "selected") {
    await say(client, sessionId, `permission: selected ${outcome.optionId}`);
    await toolStatus(client, sessionId, ALLOW_IDS.has(outcome.optionId) ? "completed" : "failed");
    return "end_turn";
  }
  if (outcome?.outcome !== "cancelled") {
    // Responses are not schema-validated by the SDK; never treat junk as approval.
    await say(client, sessionId, `error: local invalid permission outcome ${JSON.stringify(outcome)}`);
    await toolStatus(client, sessionId, "failed");
    return "end_turn";
  }
  await say(client, sessionId, "permission: cancelled");
  await toolStatus(client, sessionId, "failed");
  return "cancelled";
}

async function run(client, sessionId, turn, text) {
  const command = text.trim();
  let m;
  if ((m = STREAM_RE.exec(command))) {
    const n = Number(m[1]);
    for (let i = 1; i <= n; i++) {
      if (turn.cancelled) return "cancelled";
      await say(client, sessionId, `chunk-${String(i).padStart(8, "0")} `);
    }
    return "end_turn";
  }
  if (command === "permission") return permission(client, sessionId);
  if (command === "wait") {
    await say(client, sessionId, "waiting");
    await turn.untilCancelled();
    return "cancelled";
  }
  if ((m = READ_RE.exec(command))) {
    const params = { sessionId, path: m[1] };
    for (const kv of m[2].trim().split(/\s+/).filter(Boolean)) {
      const [key, value] = kv.split("=");
      params[key] = Number(value);
    }
    try {
      const response = await client.request(acp.methods.client.fs.readTextFile, params);
      await say(client, sessionId, `read: ${response.content}`);
    } catch (error) {
      await say(client, sessionId, errorText(error));
    }
    return "end_turn";
  }
  if ((m = WRITE_RE.exec(text.trimStart()))) {
    const path = m[1];
    try {
      await client.request(acp.methods.client.fs.writeTextFile, {
        sessionId,
        path,
        content: m[2] ?? "",
      });
      await say(client, sessionId, `wrote: ${path}`);
    } catch (error) {
      await say(client, sessionId, errorText(error));
    }
    return "end_turn";
  }
  await say(client, sessionId, `echo: ${text}`);
  return "end_turn";
}

const app = acp
  .agent({ name: "ts-sdk-agent" })
  .onRequest(acp.methods.agent.initialize, async () => ({
    protocolVersion: 1,
    agentCapabilities: { loadSession: false },
    authMethods: [],
    agentInfo: { name: "ts-sdk-agent", title: "TypeScript SDK agent", version: SDK_VERSION },
  }))
  .onRequest(acp.methods.agent.session.new, async ({ params }) => {
    const sessionId = `ts-${randomUUID()}`;
    sessions.set(sessionId, { cwd: params.cwd, turns: new Set() });
    return { sessionId };
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client, signal }) => {
    const session = sessions.get(params.sessionId);
    if (!session) throw acp.RequestError.sessionNotFound(params.sessionId);
    const first = params.prompt.find((block) => block.type === "text");
    const text = first ? first.text : "";
    const turn = new Turn();
    session.turns.add(turn);
    const onAbort = () => turn.cancel();
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      const stopReason = await run(client, params.sessionId, turn, text);
      return { stopReason: turn.cancelled ? "cancelled" : stopReason };
    } finally {
      signal.removeEventListener("abort", onAbort);
      session.turns.delete(turn);
    }
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    const session = sessions.get(params.sessionId);
    if (!session) return;
    for (const turn of session.turns) turn.cancel();
  });

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const connection = app.connect(stream);
await connection.closed;
// stdin reached EOF (or the connection failed): leave; pending turns are abandoned.
setTimeout(() => process.exit(0), 200).unref();
