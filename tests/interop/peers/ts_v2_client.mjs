// Scripted ACP v2 client built on the official TypeScript SDK's experimental v2 API
// (npm @agentclientprotocol/sdk, `experimental/v2`).
//
//   node ts_v2_client.mjs [--prompt TEXT]... [--permission allow|reject] [--cwd DIR]
//       [--fallback] [--cancel tool|terminal] [--timeout SECONDS] -- AGENT_ARGV...
//
// Asks for protocol version 2. The SDK's v2 client has no fallback: an agent that answers
// 1 makes it throw. With --fallback the client then does what the SDK leaves to its
// users: it starts the agent again and runs the prompts with the SDK's v1 client.
// With --cancel, the first tool call (or terminal) of a turn that advertises cancel is
// cancelled with the SDK's `session.cancelToolCall` (or `cancelTerminal`).
//
// Prints ONE JSON report on stdout:
//   {"protocolVersion": N, "fallback": bool, "initialize": raw result, "sessionId",
//    "turns": [{"prompt", "messageId" (v2), "stopReason", "text", "updates": [raw]}],
//    "permissionRequests": [raw params], "v2Error": message of the v2 attempt's failure,
//    "cancels": [{"method", "id", "result" | "error"}]}

import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve as resolvePath } from "node:path";
import { Readable, Writable } from "node:stream";

import * as v1 from "@agentclientprotocol/sdk";
import * as v2 from "@agentclientprotocol/sdk/experimental/v2";

function parseArgs(argv) {
  const split = argv.indexOf("--");
  if (split < 0) throw new Error("missing -- before the agent command");
  const opts = { prompts: [], permission: "allow", cwd: null, fallback: false, timeout: 60 };
  const own = argv.slice(0, split);
  for (let i = 0; i < own.length; i++) {
    const key = own[i];
    if (key === "--fallback") opts.fallback = true;
    else if (key === "--prompt") opts.prompts.push(own[++i]);
    else if (key === "--permission") opts.permission = own[++i];
    else if (key === "--cwd") opts.cwd = own[++i];
    else if (key === "--timeout") opts.timeout = Number(own[++i]);
    else if (key === "--cancel") opts.cancel = own[++i];
    else throw new Error(`bad option ${key}`);
  }
  opts.agent = argv.slice(split + 1);
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const cwd = resolvePath(opts.cwd ?? mkdtempSync(join(tmpdir(), "ts-v2-client-")));
const rec = {
  protocolVersion: null,
  fallback: false,
  initialize: null,
  sessionId: null,
  turns: [],
  permissionRequests: [],
  v2Error: null,
  cancels: [],
};
let currentTurn = null;
const timer = setTimeout(() => fail(`timed out after ${opts.timeout}s`), opts.timeout * 1000);

function fail(message) {
  process.stderr.write(`ts_v2_client: ${message}\nts_v2_client: partial report: ${JSON.stringify(rec)}\n`);
  process.exit(1);
}

// Every message as it is on the wire (before the SDK parses it).
function tap(stream) {
  const readable = stream.readable.pipeThrough(
    new TransformStream({
      transform(msg, controller) {
        if (msg?.method === "session/update" && currentTurn) currentTurn.updates.push(msg.params.update);
        if (msg?.method === "session/request_permission") rec.permissionRequests.push(msg.params);
        controller.enqueue(msg);
      },
    }),
  );
  return { readable, writable: stream.writable };
}

function startAgent() {
  const child = spawn(opts.agent[0], opts.agent.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  child.stdin.on("error", () => {});
  const exited = new Promise((resolve) => child.once("exit", resolve));
  return { child, exited, streamOf: (lib) => tap(lib.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout))) };
}

async function stopAgent(agent) {
  agent.child.stdin.end();
  const done = await Promise.race([agent.exited, new Promise((r) => setTimeout(() => r("late"), 3000))]);
  if (done === "late") agent.child.kill("SIGKILL");
}

function choose(options) {
  const kind = opts.permission === "allow" ? "allow_once" : "reject_once";
  return options.find((o) => o.kind === kind) ?? options[0];
}

async function v2Run() {
  const agent = startAgent();
  const app = v2
    .client({ name: "ts-sdk-v2-client" })
    .onRequest(v2.methods.client.session.requestPermission, async ({ params }) => ({
      outcome: { outcome: "selected", optionId: choose(params.options).optionId },
    }));
  try {
    await app.connectWith(agent.streamOf(v2), async (ctx) => {
      rec.initialize = await ctx.request(v2.methods.agent.initialize, {
        protocolVersion: 2,
        info: { name: "ts-sdk-v2-client", version: "2.4.0" },
        capabilities: {},
      });
      rec.protocolVersion = rec.initialize.protocolVersion;
      const session = await ctx.buildSession(cwd).start();
      rec.sessionId = session.sessionId;
      for (const text of opts.prompts) {
        currentTurn = { prompt: text, messageId: null, stopReason: null, text: "", updates: [] };
        rec.turns.push(currentTurn);
        const answered = session.prompt(text);
        currentTurn.text = opts.cancel ? await readCancelling(session) : await session.readTextUntilIdle();
        currentTurn.messageId = (await answered).messageId;
        const idle = [...currentTurn.updates].reverse().find((u) => u.sessionUpdate === "state_update");
        currentTurn.stopReason = idle?.stopReason ?? null;
      }
      currentTurn = null;
      session.dispose();
    });
    return true;
  } catch (error) {
    rec.v2Error = String(error?.message ?? error);
    return false;
  } finally {
    await stopAgent(agent);
  }
}

// The turn's text until idle; the first tool call or terminal that advertises cancel is
// cancelled through the SDK (which refuses, without sending, what is not advertised).
async function readCancelling(session) {
  let text = "";
  let cancelled = false;
  for (;;) {
    const message = await session.nextUpdate();
    if (message.kind === "stop") return text;
    const u = message.update;
    if (u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text") text += u.content.text;
    if (cancelled) continue;
    let entry = null;
    if (opts.cancel === "tool" && u.sessionUpdate === "tool_call_update" && session.canCancelToolCall(u.toolCallId)) {
      entry = { method: "tool_call/cancel", id: u.toolCallId, call: () => session.cancelToolCall(u.toolCallId) };
    } else if (opts.cancel === "terminal" && u.sessionUpdate === "terminal_update" && session.canCancelTerminal(u.terminalId)) {
      entry = { method: "terminal/cancel", id: u.terminalId, call: () => session.cancelTerminal(u.terminalId) };
    }
    if (entry === null) continue;
    cancelled = true;
    try {
      rec.cancels.push({ method: entry.method, id: entry.id, result: await entry.call() });
    } catch (error) {
      rec.cancels.push({ method: entry.method, id: entry.id, error: String(error?.message ?? error) });
    }
  }
}

async function v1Run() {
  const agent = startAgent();
  const app = v1
    .client({ name: "ts-sdk-v1-client" })
    .onRequest(v1.methods.client.session.requestPermission, async ({ params }) => ({
      outcome: { outcome: "selected", optionId: choose(params.options).optionId },
    }));
  try {
    await app.connectWith(agent.streamOf(v1), async (ctx) => {
      rec.initialize = await ctx.request(v1.methods.agent.initialize, {
        protocolVersion: 1,
        clientCapabilities: {},
        clientInfo: { name: "ts-sdk-v1-client", version: "2.4.0" },
      });
      rec.protocolVersion = rec.initialize.protocolVersion;
      const session = await ctx.buildSession(cwd).start();
      rec.sessionId = session.sessionId;
      for (const text of opts.prompts) {
        currentTurn = { prompt: text, messageId: null, stopReason: null, text: "", updates: [] };
        rec.turns.push(currentTurn);
        const done = session.prompt(text);
        for (;;) {
          const message = await session.nextUpdate();
          if (message.kind === "stop") {
            currentTurn.stopReason = message.stopReason;
            break;
          }
          const u = message.update;
          if (u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text") currentTurn.text += u.content.text;
        }
        await done.catch(() => {});
      }
      currentTurn = null;
      session.dispose();
    });
  } finally {
    await stopAgent(agent);
  }
}

if (!(await v2Run())) {
  if (!opts.fallback) fail(`the v2 client failed: ${rec.v2Error}`);
  rec.fallback = true;
  rec.turns = [];
  await v1Run();
}
clearTimeout(timer);
process.stdout.write(JSON.stringify(rec) + "\n", () => process.exit(0));
