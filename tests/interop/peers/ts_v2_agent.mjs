// Scripted ACP v2 agent built on the official TypeScript SDK's experimental v2 API
// (npm @agentclientprotocol/sdk, `experimental/v2`), alone or behind its protocol router.
//
//   node ts_v2_agent.mjs [--mode v2|router|router-v1|router-v2]
//
//   v2         the v2 app alone (it answers only protocol version 2)
//   router     agentProtocolRouter().withV1(v1 app).withV2(v2 app)
//   router-v1  a router with the v1 app only (a v2 request is downgraded to v1)
//   router-v2  a router with the v2 app only (a v1 request gets -32022)
//
// Prompts (the first text block): `stream N` (N message chunks), `permission` (a tool call
// that asks), `wait` (until session/cancel), `terminal` (an agent-owned display terminal),
// `diff` (a tool call with a structured diff); anything else is echoed as `echo: TEXT`.
// The v2 app reports running, requires_action and idle (with the stop reason) itself.
// The v1 app answers `v1 echo: TEXT`.
//
// Run with node from a directory whose node_modules holds the SDK (tests/interop/_foreign.py
// copies this file there).

import { randomUUID } from "node:crypto";
import { Readable, Writable } from "node:stream";

import * as v1 from "@agentclientprotocol/sdk";
import * as v2 from "@agentclientprotocol/sdk/experimental/v2";

const mode = process.argv[3] ?? "v2";
if (process.argv[2] !== undefined && process.argv[2] !== "--mode") {
  process.stderr.write("usage: ts_v2_agent.mjs [--mode v2|router|router-v1|router-v2]\n");
  process.exit(64);
}

const OPTIONS = [
  { optionId: "allow", name: "Allow", kind: "allow_once" },
  { optionId: "reject", name: "Reject", kind: "reject_once" },
];

/** sessionId -> { cancel: () => void } for the running turn */
const running = new Map();

async function update(client, sessionId, update) {
  await client.notify(v2.methods.client.session.update, { sessionId, update });
}

const state = (client, sessionId, s, extra = {}) =>
  update(client, sessionId, { sessionUpdate: "state_update", state: s, ...extra });

async function say(client, sessionId, messageId, text) {
  await update(client, sessionId, {
    sessionUpdate: "agent_message_chunk",
    messageId,
    content: { type: "text", text },
  });
}

async function permission(client, sessionId, messageId) {
  const toolCall = { toolCallId: "call-1", title: "Edit file", kind: "edit", status: "pending" };
  await update(client, sessionId, { sessionUpdate: "tool_call_update", ...toolCall });
  await state(client, sessionId, "requires_action");
  const answer = await client.request(v2.methods.client.session.requestPermission, {
    sessionId,
    title: "Edit file",
    subject: { type: "tool_call", toolCall },
    options: OPTIONS,
  });
  await state(client, sessionId, "running");
  const outcome = answer.outcome;
  const chosen = outcome?.outcome === "selected" ? outcome.optionId : "cancelled";
  await say(client, sessionId, messageId, `permission: ${chosen}`);
  const status = chosen === "allow" ? "completed" : "failed";
  await update(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId: "call-1", status });
}

async function terminal(client, sessionId, messageId) {
  await update(client, sessionId, {
    sessionUpdate: "tool_call_update",
    toolCallId: "call-t",
    title: "Run ls",
    kind: "execute",
    status: "in_progress",
    content: [{ type: "terminal", terminalId: "term-1" }],
  });
  await update(client, sessionId, { sessionUpdate: "terminal_update", terminalId: "term-1", command: "ls" });
  for (const part of ["hel", "lo\n"]) {
    const data = Buffer.from(part).toString("base64");
    await update(client, sessionId, { sessionUpdate: "terminal_output_chunk", terminalId: "term-1", data });
  }
  await update(client, sessionId, {
    sessionUpdate: "terminal_update",
    terminalId: "term-1",
    exitStatus: { exitCode: 0 },
  });
  await update(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId: "call-t", status: "completed" });
  await say(client, sessionId, messageId, "ran ls");
}

async function diff(client, sessionId, messageId) {
  const patch = "diff --git /w/a.txt /w/a.txt\n--- /w/a.txt\n+++ /w/a.txt\n@@ -1 +1 @@\n-old\n+new\n";
  await update(client, sessionId, {
    sessionUpdate: "tool_call_update",
    toolCallId: "call-d",
    title: "Edit a.txt",
    kind: "edit",
    status: "completed",
    content: [
      {
        type: "diff",
        changes: [{ operation: "modify", path: "/w/a.txt", fileType: "text" }],
        patch: { format: "git_patch", text: patch },
      },
    ],
  });
  await say(client, sessionId, messageId, "edited");
}

async function run(client, sessionId, text, turn) {
  const messageId = `agent-${randomUUID()}`;
  const command = text.trim();
  const stream = /^stream\s+(\d+)$/.exec(command);
  if (stream) {
    for (let i = 1; i <= Number(stream[1]); i++) {
      if (turn.cancelled) return "cancelled";
      await say(client, sessionId, messageId, `chunk-${String(i).padStart(8, "0")} `);
    }
    return "end_turn";
  }
  if (command === "permission") await permission(client, sessionId, messageId);
  else if (command === "terminal") await terminal(client, sessionId, messageId);
  else if (command === "diff") await diff(client, sessionId, messageId);
  else if (command === "wait") {
    await say(client, sessionId, messageId, "waiting");
    await turn.cancelledPromise;
    return "cancelled";
  } else await say(client, sessionId, messageId, `echo: ${text}`);
  return turn.cancelled ? "cancelled" : "end_turn";
}

function newTurn() {
  const turn = { cancelled: false };
  turn.cancelledPromise = new Promise((resolve) => {
    turn.cancel = () => {
      turn.cancelled = true;
      resolve();
    };
  });
  return turn;
}

const v2App = v2
  .agent({ name: "ts-sdk-v2-agent" })
  .onRequest(v2.methods.agent.initialize, async () => ({
    protocolVersion: 2,
    info: { name: "ts-sdk-v2-agent", title: "TypeScript SDK v2 agent", version: "2.4.0" },
    capabilities: { session: {} },
  }))
  .onRequest(v2.methods.agent.session.new, async () => ({ sessionId: `ts-${randomUUID()}` }))
  .onRequest(v2.methods.agent.session.list, async () => ({ sessions: [] }))
  .onRequest(v2.methods.agent.session.resume, async ({ params, client }) => {
    await state(client, params.sessionId, "idle");
    return {};
  })
  .onRequest(v2.methods.agent.session.close, async () => ({}))
  .onRequest(v2.methods.agent.session.prompt, async ({ params, client }) => {
    const sessionId = params.sessionId;
    const messageId = `user-${randomUUID()}`;
    await update(client, sessionId, { sessionUpdate: "user_message", messageId, content: params.prompt });
    await state(client, sessionId, "running");
    const first = params.prompt.find((block) => block.type === "text");
    const turn = newTurn();
    running.set(sessionId, turn);
    // The turn runs on after the answer; its end is the idle state update.
    setImmediate(async () => {
      let stopReason = "end_turn";
      try {
        stopReason = await run(client, sessionId, first ? first.text : "", turn);
      } catch (error) {
        await state(client, sessionId, "idle", {
          stopReason: "error",
          error: { code: -32603, message: String(error?.message ?? error) },
        });
        return;
      } finally {
        running.delete(sessionId);
      }
      await state(client, sessionId, "idle", { stopReason });
    });
    return { messageId };
  })
  .onNotification(v2.methods.agent.session.cancel, ({ params }) => {
    running.get(params.sessionId)?.cancel();
  });

const v1App = v1
  .agent({ name: "ts-sdk-v1-agent" })
  .onRequest(v1.methods.agent.initialize, async () => ({
    protocolVersion: 1,
    agentCapabilities: {},
    agentInfo: { name: "ts-sdk-v1-agent", version: "2.4.0" },
  }))
  .onRequest(v1.methods.agent.session.new, async () => ({ sessionId: `ts1-${randomUUID()}` }))
  .onRequest(v1.methods.agent.session.prompt, async ({ params, client }) => {
    const first = params.prompt.find((block) => block.type === "text");
    await client.notify(v1.methods.client.session.update, {
      sessionId: params.sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `v1 echo: ${first?.text ?? ""}` } },
    });
    return { stopReason: "end_turn" };
  });

let connector;
if (mode === "v2") connector = v2App;
else if (mode === "router") connector = v2.agentProtocolRouter().withV1(v1App).withV2(v2App);
else if (mode === "router-v1") connector = v2.agentProtocolRouter().withV1(v1App);
else if (mode === "router-v2") connector = v2.agentProtocolRouter().withV2(v2App);
else {
  process.stderr.write(`ts_v2_agent: unknown mode ${mode}\n`);
  process.exit(64);
}

const stream = v2.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const connection = connector.connect(stream);
await connection.closed;
setTimeout(() => process.exit(0), 200).unref();
