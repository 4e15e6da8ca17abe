// An ACP client on the official TypeScript SDK's *unstable* entry point
// (`@agentclientprotocol/sdk/unstable`, 2.4.0), for the interop tests of the newer methods.
//
//   node ts_unstable_client.mjs [--scenario full|sessions|lifecycle] [--cwd DIR] [--timeout S] -- AGENT...
//
// Must run from a directory whose node_modules holds the SDK (ESM ignores NODE_PATH):
// tests/interop/_foreign.py copies it into <repo>/.cache/interop/node/peers/.
//
// It advertises notices, compaction, elicitation (form and URL) and subagents, answers a form
// with {"name": "Grace"}, accepts URLs, allows what it is asked to allow, and offers one MCP server over ACP ("tools", tools
// `shout` and `count`, which reports progress) through the SDK's McpOverAcpProvider. Scenarios:
//   full      for tests/e2e/peers/unstable_agent.py --auth: auth/status, authentication and
//             auth/status_update, a session with systemPrompt and the MCP server, the prompts
//             notice, compact, form, url-open URL, url-done ID, subagent, system, mcp hello,
//             mcp-progress two words, then title/status/archive/list/unarchive/fork, providers/*, bad
//             inputs, and logout (then auth/status and a session/new that needs authentication);
//   sessions  for `acpstack agent --unstable`: the session-management part, and the MCP server
//             through the scripted agent's `/mcp` command;
//   lifecycle for `acpstack agent --unstable --store FILE`: session/new, a `/help` prompt,
//             session/set_mode, session/set_config_option, close (then a prompt), load, set_mode,
//             close, resume, a prompt, list, delete, list, load and delete of the deleted session,
//             logout, and bad inputs (all raw requests, see `lifecycle`).
// Prints ONE JSON report on stdout and exits 0: {initialize, steps: {name: result | {error}},
// traces: {step name: [raw session/update objects received while that step ran]},
// turns: [{prompt, stopReason, updates (raw, wire order), sdkUpdates (as the SDK parsed them)}],
// elicitations, completions, authUpdates, mcpRequests: [{method, protocolVersion}],
// updateCounts: {received, parsed} (every session/update on the wire, and those the SDK's
// schemas accepted and handed to the client's handler), agentExitCode}. On failure: non-zero
// exit, message and partial report on stderr.

import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve as resolvePath } from "node:path";
import { Readable, Writable } from "node:stream";

import * as acp from "@agentclientprotocol/sdk/unstable";

// ------------------------------------------------------------------ arguments

function usage(message) {
  process.stderr.write(`ts_unstable_client: ${message}\n`);
  process.exit(64);
}

const argv = process.argv.slice(2);
const split = argv.indexOf("--");
if (split < 0) usage("missing -- before the agent command");
const opts = { scenario: "full", cwd: null, timeout: 60 };
for (let i = 0; i < split; i += 2) {
  const [key, value] = [argv[i], argv[i + 1]];
  if (key === "--scenario" && ["full", "sessions", "lifecycle"].includes(value)) opts.scenario = value;
  else if (key === "--cwd" && value) opts.cwd = value;
  else if (key === "--timeout" && Number(value) > 0) opts.timeout = Number(value);
  else usage(`bad option ${key} ${value}`);
}
opts.agent = argv.slice(split + 1);
if (opts.agent.length === 0) usage("missing agent command after --");

// ------------------------------------------------------------------ recording

const rec = {
  initialize: null,
  steps: {},
  traces: {},
  turns: [],
  elicitations: [],
  completions: [],
  authUpdates: [],
  mcpRequests: [],
  updateCounts: { received: 0, parsed: 0 },
  agentExitCode: null,
};
let wireTurn = null; // the turn whose updates the tap records
let trace = null; // the step whose updates the tap records (see `traced`)
let parsedArrived = () => {};

function clone(value) {
  return value === undefined ? null : structuredClone(value);
}

function errorObject(error) {
  if (error instanceof acp.RequestError) return { code: error.code, message: error.message };
  return { code: null, message: `${error?.name ?? "Error"}: ${error?.message ?? String(error)}` };
}

async function step(name, call) {
  try {
    rec.steps[name] = clone(await call());
  } catch (error) {
    rec.steps[name] = { error: errorObject(error) };
  }
  return rec.steps[name];
}

// A step, and the session/update messages that came while it ran (in rec.traces[name]).
async function traced(name, call) {
  trace = rec.traces[name] = [];
  try {
    return await step(name, call);
  } finally {
    trace = null;
  }
}

// Every session/update the SDK accepted (its handlers run after its zod schemas parsed the
// params, and asynchronously: wait until they caught up with the wire, or `ms` passed).
function parsedUpdate() {
  rec.updateCounts.parsed += 1;
  parsedArrived();
}

async function allParsed(ms) {
  const deadline = Date.now() + ms;
  while (rec.updateCounts.parsed < rec.updateCounts.received && Date.now() < deadline) {
    await new Promise((resolve) => {
      parsedArrived = resolve;
      setTimeout(resolve, deadline - Date.now());
    });
  }
}

// Every incoming message is seen raw, before the SDK parses it.
function tap(stream) {
  const readable = stream.readable.pipeThrough(
    new TransformStream({
      transform(msg, controller) {
        if (msg?.method === "session/update") {
          rec.updateCounts.received += 1;
          if (wireTurn) wireTurn.updates.push(clone(msg.params.update));
          if (trace) trace.push(clone(msg.params.update));
        }
        controller.enqueue(msg);
      },
    }),
  );
  return { readable, writable: stream.writable };
}

// ------------------------------------------------------------------ the MCP server we offer

const TOOLS = [
  {
    name: "shout",
    description: "Upper-case the text.",
    inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  },
  {
    name: "count",
    description: "Count the words of the text, reporting progress.",
    inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  },
];

async function mcpHandler(op) {
  rec.mcpRequests.push({ method: op.method, protocolVersion: op.protocolVersion });
  const cacheable = { ttlMs: 0, cacheScope: "private", resultType: "complete" };
  if (op.method === "server/discover") {
    return {
      result: {
        supportedVersions: [acp.MCP_PROTOCOL_VERSION],
        capabilities: { tools: {} },
        ...cacheable,
      },
    };
  }
  if (op.method === "tools/list") return { result: { tools: TOOLS, ...cacheable } };
  if (op.method === "tools/call" && op.params?.name === "shout") {
    const text = String(op.params?.arguments?.text ?? "").toUpperCase();
    return { result: { content: [{ type: "text", text }], isError: false, resultType: "complete" } };
  }
  if (op.method === "tools/call" && op.params?.name === "count") {
    // Progress for the caller's token: `mcp/message` notifications, client to agent.
    const words = String(op.params?.arguments?.text ?? "").split(/\s+/).filter(Boolean);
    const progressToken = op.params?._meta?.progressToken;
    for (const [index, word] of words.entries()) {
      const progress = { progressToken, progress: index + 1, total: words.length };
      await op.notify("notifications/progress", { ...progress, message: `read ${word}` });
    }
    const text = String(words.length);
    return { result: { content: [{ type: "text", text }], isError: false, resultType: "complete" } };
  }
  throw new acp.McpProtocolError(-32602, `Unknown tool: ${op.params?.name}`);
}

// ------------------------------------------------------------------ client behaviour

const provider = new acp.McpOverAcpProvider();
const app = acp
  .client({ name: "ts-unstable-client" })
  .onRequest(acp.methods.client.elicitation.create, async ({ params }) => {
    rec.elicitations.push(clone(params));
    if (params.mode === "form") return { action: "accept", content: { name: "Grace" } };
    return { action: "accept" };
  })
  .onNotification(acp.methods.client.elicitation.complete, ({ params }) => {
    rec.completions.push(clone(params));
  })
  .onNotification(acp.methods.client.auth.statusUpdate, ({ params }) => {
    rec.authUpdates.push(clone(params));
  })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
    const allow = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  })
  .onRequest(acp.methods.client.mcp.message, provider.handleRequest)
  .onNotification(acp.methods.client.session.update, parsedUpdate);

async function prompt(session, text) {
  const turn = { prompt: text, stopReason: null, updates: [], sdkUpdates: [] };
  rec.turns.push(turn);
  wireTurn = turn;
  session.prompt(text).catch(() => {}); // the completion is also queued as a "stop" message
  for (;;) {
    const message = await session.nextUpdate();
    if (message.kind === "stop") {
      turn.stopReason = message.stopReason;
      break;
    }
    turn.sdkUpdates.push(clone(message.update));
  }
  wireTurn = null;
  const said = turn.updates
    .filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text")
    .map((u) => u.content.text)
    .join("");
  return said;
}

async function sessionManagement(ctx, sid, cwd) {
  const m = acp.methods.agent.session;
  await step("setTitle", () => ctx.request(m.setTitle, { sessionId: sid, title: "  My   session " }));
  await step("status", () => ctx.request(m.status, { sessionId: sid }));
  const other = (await ctx.request(m.new, { cwd, mcpServers: [] })).sessionId;
  rec.steps.other = other;
  await step("archive", () => ctx.request(m.archive, { sessionId: other }));
  await step("statusArchived", () => ctx.request(m.status, { sessionId: other }));
  await step("listDefault", () => ctx.request(m.list, {}));
  await step("listInclude", () => ctx.request(m.list, { archived: "include" }));
  await step("listOnly", () => ctx.request(m.list, { archived: "only" }));
  await step("unarchive", () => ctx.request(m.unarchive, { sessionId: other }));
  await step("listAfterUnarchive", () => ctx.request(m.list, {}));
  const forked = await step("fork", () => ctx.request(m.fork, { sessionId: sid, cwd, mcpServers: [] }));
  await step("statusForked", () => ctx.request(m.status, { sessionId: forked.sessionId }));
  // Bad inputs: each gets a clear error.
  await step("listBadFilter", () => ctx.request(m.list, { archived: "_sometimes" }));
  await step("setEmptyTitle", () => ctx.request(m.setTitle, { sessionId: sid, title: "   " }));
  await step("statusUnknown", () => ctx.request(m.status, { sessionId: "nope" }));
}

// The session lifecycle, by raw requests (an ActiveSession only wraps session/new), each
// step's session/update messages traced: load replays, resume does not.
async function lifecycle(ctx, cwd) {
  const m = acp.methods.agent.session;
  const created = await step("new", () => ctx.request(m.new, { cwd, mcpServers: [] }));
  const sessionId = created.sessionId;
  rec.steps.sessionId = sessionId;
  const ask = (text) => ctx.request(m.prompt, { sessionId, prompt: [{ type: "text", text }] });
  const reopen = { sessionId, cwd, mcpServers: [] };
  await traced("prompt", () => ask("/help"));
  await traced("setMode", () => ctx.request(m.setMode, { sessionId, modeId: "ask" }));
  const option = { sessionId, configId: "mode", value: "code" };
  await traced("setConfigOption", () => ctx.request(m.setConfigOption, option));
  await step("setModeUnknown", () => ctx.request(m.setMode, { sessionId, modeId: "yolo" }));
  await step("setConfigUnknown", () => ctx.request(m.setConfigOption, { ...option, configId: "zz" }));
  await step("setConfigBadValue", () => ctx.request(m.setConfigOption, { ...option, value: "zz" }));
  await step("close", () => ctx.request(m.close, { sessionId }));
  await step("promptClosed", () => ask("/help"));
  await traced("load", () => ctx.request(m.load, reopen));
  await step("setModeLoaded", () => ctx.request(m.setMode, { sessionId, modeId: "ask" }));
  await step("closeLoaded", () => ctx.request(m.close, { sessionId }));
  await traced("resume", () => ctx.request(m.resume, reopen));
  await traced("promptResumed", () => ask("/help"));
  await step("listBeforeDelete", () => ctx.request(m.list, {}));
  await step("delete", () => ctx.request(m.delete, { sessionId }));
  await step("listAfterDelete", () => ctx.request(m.list, {}));
  await step("loadDeleted", () => ctx.request(m.load, reopen));
  await step("resumeDeleted", () => ctx.request(m.resume, reopen));
  await step("promptDeleted", () => ask("/help"));
  await step("deleteAgain", () => ctx.request(m.delete, { sessionId }));
  await step("logout", () => ctx.request(acp.methods.agent.logout, {}));
}

async function logout(ctx, cwd) {
  await step("logout", () => ctx.request(acp.methods.agent.logout, {}));
  await step("authStatusAfterLogout", () => ctx.request(acp.methods.agent.auth.status, {}));
  await step("newAfterLogout", () => ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] }));
}

async function providers(ctx) {
  const p = acp.methods.agent.providers;
  await step("providersList", () => ctx.request(p.list, {}));
  await step("providersSet", () =>
    ctx.request(p.set, { providerId: "main", apiType: "openai", baseUrl: "http://x/v1", headers: {} }),
  );
  await step("providersListAfterSet", () => ctx.request(p.list, {}));
  await step("providersDisable", () => ctx.request(p.disable, { providerId: "main" }));
  await step("providersListAfterDisable", () => ctx.request(p.list, {}));
  await step("providersSetUnknown", () =>
    ctx.request(p.set, { providerId: "zz", apiType: "openai", baseUrl: "http://x/v1" }),
  );
}

async function scenario(ctx, cwd) {
  rec.initialize = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: {
      session: { notices: {}, compaction: {} },
      elicitation: { form: {}, url: {} },
      subagents: {},
    },
    clientInfo: { name: "ts-unstable-client", version: "1" },
  });
  if (opts.scenario === "lifecycle") return lifecycle(ctx, cwd);
  const tools = provider.registerServer(ctx, { name: "tools", handler: mcpHandler });
  const systemPrompt = { mode: "append", content: [{ type: "text", text: "Be brief." }] };
  const request = { cwd, mcpServers: [tools.declaration], systemPrompt };
  if (opts.scenario === "full") {
    await step("authStatusBefore", () => ctx.request(acp.methods.agent.auth.status, {}));
    await step("newBeforeAuth", () => ctx.request(acp.methods.agent.session.new, request));
    const methodId = rec.initialize.authMethods[0].id;
    await step("authenticate", () => ctx.request(acp.methods.agent.authenticate, { methodId }));
    await step("authStatusAfter", () => ctx.request(acp.methods.agent.auth.status, {}));
  }
  const session = await ctx.buildSession(request).start();
  rec.steps.sessionId = session.sessionId;
  try {
    if (opts.scenario === "full") {
      for (const text of ["notice", "compact", "form", "url-open https://example.com/login"]) {
        await prompt(session, text);
      }
      const opened = rec.turns.at(-1).updates.find((u) => u.sessionUpdate === "agent_message_chunk");
      await prompt(session, `url-done ${opened.content.text.split(":")[1]}`);
      for (const text of ["subagent", "system", "mcp hello", "mcp-progress two words"]) {
        await prompt(session, text);
      }
    } else {
      await prompt(session, '/mcp tools shout {"text": "hello"}');
    }
  } finally {
    session.dispose();
  }
  await sessionManagement(ctx, session.sessionId, cwd);
  if (opts.scenario === "full") {
    await providers(ctx);
    await logout(ctx, cwd);
  }
}

// ------------------------------------------------------------------ agent process

const child = spawn(opts.agent[0], opts.agent.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
child.stdin.on("error", () => {});

function fail(message) {
  process.stderr.write(`ts_unstable_client: ${message}\n`);
  process.stderr.write(`ts_unstable_client: partial report: ${JSON.stringify(rec)}\n`);
  child.kill("SIGKILL");
  process.exit(1);
}

const timer = setTimeout(() => fail(`timed out after ${opts.timeout}s`), opts.timeout * 1000);
const cwd = resolvePath(opts.cwd ?? mkdtempSync(join(tmpdir(), "ts-unstable-client-")));
const stream = tap(acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
try {
  await app.connectWith(stream, async (ctx) => {
    await scenario(ctx, cwd);
    await allParsed(5000);
  });
} catch (error) {
  fail(error?.stack ?? String(error));
}
child.stdin.end();
const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("timeout"), 5000))]);
if (code === "timeout") child.kill("SIGKILL");
rec.agentExitCode = code === "timeout" ? null : code;
clearTimeout(timer);
process.stdout.write(JSON.stringify(rec) + "\n", () => process.exit(0));
