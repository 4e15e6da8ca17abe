// An ACP agent on the official TypeScript SDK's *unstable* entry point
// (`@agentclientprotocol/sdk/unstable`, 2.4.0), for the interop tests of the newer methods.
//
// Run with node from a directory whose node_modules holds the SDK (ESM ignores NODE_PATH):
// tests/interop/_foreign.py copies it into <repo>/.cache/interop/node/peers/.
//
// It advertises and implements: session/list (with `archived`), session/fork,
// session/archive + unarchive, session/status, session/set_title (also sent as a
// `session_info_update`), systemPrompt (append), auth/status (+ auth/status_update after
// `authenticate`; session/new needs authentication first: -32000), providers/list|set|disable,
// MCP servers a client offers over ACP (mcpCapabilities.acp, through the SDK's
// McpOverAcpCaller; `mcp TEXT` also calls the server's `count` tool and reports the progress
// notifications the client sent for it), and the session lifecycle over its in-memory table:
// session/load (replays the session's history, the prompts and every update sent for it, as
// session/update before answering), session/resume (no replay), session/close (the session
// stays listed but takes no prompts: -32002 until loaded or resumed), session/delete (gone:
// later calls get the SDK's sessionNotFound, -32002 with data.sessionId), modes `code`/`ask`
// (session/set_mode, answered after a `current_mode_update`), a `model` select option
// (`small`/`large`, session/set_config_option answers every option), and logout (auth.logout:
// sessions need `authenticate` again, and an auth/status_update says so). A prompt's text
// picks what the turn does:
//   notice | compact | form | url URL | subagent | system | mcp TEXT | settings (says
//   "mode=<id> model=<value>") | <anything>: echo
// Client errors become a message "error: <code> <message>"; the turn ends with end_turn.

import { randomUUID } from "node:crypto";
import { Readable, Writable } from "node:stream";

import * as acp from "@agentclientprotocol/sdk/unstable";

// id -> { cwd, title, archived, systemPrompt, mcpServers, open, modeId, model, history }
const sessions = new Map();
const MODES = [
  { id: "code", name: "Code" },
  { id: "ask", name: "Ask" },
];
const MODELS = ["small", "large"];
const providers = new Map([["main", { apiType: "openai", baseUrl: "http://127.0.0.1:1/v1" }]]);
let authenticated = false;
const mcp = new acp.McpOverAcpCaller({ clientInfo: { name: "ts-unstable-agent", version: "1" } });
// Every `mcp/message` notification as it came. (The caller's per-request listener misses
// those the SDK dispatches after the request's answer: it runs notification handlers
// asynchronously, so an answer sent after them on the wire can settle the request first.)
const mcpNotes = [];
let noteArrived = () => {};

function recordMcpNote(context) {
  mcpNotes.push(context.params);
  noteArrived();
  return mcp.handleNotification(context);
}

async function notesFor(requestId, count, ms) {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = mcpNotes.filter((note) => note.requestId === requestId);
    const left = deadline - Date.now();
    if (found.length >= count || left <= 0) return found;
    await new Promise((resolve) => {
      noteArrived = resolve;
      setTimeout(resolve, left);
    });
  }
}

function session(sessionId) {
  const found = sessions.get(sessionId);
  if (!found) throw acp.RequestError.sessionNotFound(sessionId);
  return found;
}

function newSession(params) {
  return {
    cwd: params.cwd,
    title: null,
    archived: false,
    systemPrompt: params.systemPrompt ?? null,
    mcpServers: params.mcpServers ?? [],
    open: true,
    modeId: MODES[0].id,
    model: MODELS[0],
    history: [],
  };
}

// What session/new, load and resume report: the current mode and the config options.
function settings(s) {
  return {
    modes: { currentModeId: s.modeId, availableModes: MODES },
    configOptions: [
      {
        id: "model",
        name: "Model",
        type: "select",
        currentValue: s.model,
        options: MODELS.map((value) => ({ value, name: value })),
      },
    ],
  };
}

// session/load and session/resume: the session becomes usable again on this connection.
function reopen(params) {
  const s = session(params.sessionId);
  Object.assign(s, { cwd: params.cwd, mcpServers: params.mcpServers ?? [], open: true });
  if (params.systemPrompt) s.systemPrompt = params.systemPrompt;
  return s;
}

// A session that takes requests: known, and not closed (load or resume it first).
function openSession(sessionId) {
  const s = session(sessionId);
  if (!s.open) throw acp.RequestError.sessionNotFound(sessionId);
  return s;
}

function errorText(error) {
  if (error instanceof acp.RequestError) return `error: ${error.code} ${error.message}`;
  return `error: local ${error?.name ?? "Error"}: ${error?.message ?? String(error)}`;
}

async function update(client, sessionId, update) {
  sessions.get(sessionId)?.history.push(update); // what session/load replays
  await client.notify(acp.methods.client.session.update, { sessionId, update });
}

async function say(client, sessionId, text) {
  await update(client, sessionId, {
    sessionUpdate: "agent_message_chunk",
    content: { type: "text", text },
  });
}

async function run(client, sessionId, text) {
  const current = session(sessionId);
  if (text === "notice") {
    await update(client, sessionId, {
      sessionUpdate: "notice",
      severity: "warning",
      title: "Heads up",
      description: "from the TypeScript agent",
    });
  } else if (text === "compact") {
    const compactionId = "c-1";
    await update(client, sessionId, { sessionUpdate: "compaction_update", compactionId, status: "in_progress" });
    await update(client, sessionId, {
      sessionUpdate: "compaction_summary_chunk",
      compactionId,
      content: { type: "text", text: "short summary" },
    });
    await update(client, sessionId, { sessionUpdate: "compaction_update", compactionId, status: "completed" });
  } else if (text === "form") {
    const answer = await client.request(acp.methods.client.elicitation.create, {
      sessionId,
      mode: "form",
      message: "Your name?",
      requestedSchema: {
        type: "object",
        properties: { name: { type: "string", title: "Name" } },
        required: ["name"],
      },
    });
    await say(client, sessionId, `${answer.action}:${answer.content?.name ?? ""}`);
  } else if (text.startsWith("url ")) {
    const elicitationId = randomUUID();
    const answer = await client.request(acp.methods.client.elicitation.create, {
      sessionId,
      mode: "url",
      message: "Sign in",
      url: text.slice(4),
      elicitationId,
    });
    if (answer.action === "accept") {
      await client.notify(acp.methods.client.elicitation.complete, { elicitationId });
    }
    await say(client, sessionId, `${answer.action}:${elicitationId}`);
  } else if (text === "subagent") {
    const child = `child-${sessionId}`;
    await update(client, sessionId, {
      sessionUpdate: "subagent_update",
      sessionId: child,
      title: "Researcher",
      state: { state: "running" },
    });
    await update(client, sessionId, {
      sessionUpdate: "session_message",
      messageId: "m-1",
      senderSessionId: sessionId,
      recipientSessionId: child,
      content: [{ type: "text", text: "Find the bug. " }],
    });
    await update(client, sessionId, {
      sessionUpdate: "session_message_chunk",
      messageId: "m-1",
      content: { type: "text", text: "Report back." },
    });
    await update(client, sessionId, {
      sessionUpdate: "subagent_update",
      sessionId: child,
      state: { state: "idle", stopReason: "end_turn" },
    });
    await say(client, sessionId, `child=${child}`);
  } else if (text === "system") {
    const prompt = current.systemPrompt;
    await say(client, sessionId, prompt ? `${prompt.mode}:${prompt.content.map((b) => b.text).join("|")}` : "none");
  } else if (text === "settings") {
    await say(client, sessionId, `mode=${current.modeId} model=${current.model}`);
  } else if (text.startsWith("mcp ")) {
    const server = current.mcpServers.find(acp.isMcpServerAcp);
    if (!server) return say(client, sessionId, "no acp MCP server");
    const discovered = await mcp.request(client, server.serverId, "server/discover", {});
    const listed = await mcp.request(client, server.serverId, "tools/list", {});
    const called = await mcp.request(client, server.serverId, "tools/call", {
      name: "shout",
      arguments: { text: text.slice(4) },
    });
    const unknown = await mcp.request(client, server.serverId, "tools/call", {
      name: "nope",
      arguments: {},
    });
    // The client's server reports progress: `mcp/message` notifications, client to agent.
    const requestId = `count-${randomUUID()}`;
    const counted = await mcp.request(
      client,
      server.serverId,
      "tools/call",
      { name: "count", arguments: { text: "two words" }, _meta: { progressToken: "p-1" } },
      { requestId },
    );
    const notes = await notesFor(requestId, 2, 10000);
    const progress = notes.map((note) => ({ method: note.method, ...note.params }));
    const summary = {
      versions: discovered.result?.supportedVersions ?? discovered.error,
      tools: listed.result?.tools?.map((t) => t.name) ?? listed.error,
      text: called.result?.content?.[0]?.text ?? called.error,
      unknown: unknown.error ? { code: unknown.error.code } : { isError: unknown.result?.isError },
      counted: counted.result?.content?.[0]?.text ?? counted.error,
      progress,
    };
    await say(client, sessionId, JSON.stringify(summary));
  } else {
    await say(client, sessionId, `echo: ${text}`);
  }
}

function info(id, s) {
  return { sessionId: id, cwd: s.cwd, title: s.title, archived: s.archived };
}

const app = acp
  .agent({ name: "ts-unstable-agent" })
  .onRequest(acp.methods.agent.initialize, async () => ({
    protocolVersion: 1,
    agentCapabilities: {
      loadSession: true,
      mcpCapabilities: { acp: true },
      sessionCapabilities: {
        list: {},
        fork: {},
        archive: {},
        status: {},
        title: {},
        systemPrompt: {},
        resume: {},
        close: {},
        delete: {},
      },
      auth: { status: {}, logout: {} },
      providers: {},
    },
    authMethods: [{ id: "key", name: "API key" }],
    agentInfo: { name: "ts-unstable-agent", version: "1" },
  }))
  .onRequest(acp.methods.agent.authenticate, async ({ client }) => {
    authenticated = true;
    await client.notify(acp.methods.client.auth.statusUpdate, { state: "authenticated" });
    return {};
  })
  .onRequest(acp.methods.agent.auth.status, async () => ({
    state: authenticated ? "authenticated" : "unauthenticated",
  }))
  .onRequest(acp.methods.agent.session.new, async ({ params }) => {
    if (!authenticated) throw acp.RequestError.authRequired();
    const sessionId = `ts-${randomUUID()}`;
    sessions.set(sessionId, newSession(params));
    return { sessionId, ...settings(sessions.get(sessionId)) };
  })
  .onRequest(acp.methods.agent.logout, async ({ client }) => {
    authenticated = false;
    await client.notify(acp.methods.client.auth.statusUpdate, { state: "unauthenticated" });
    return {};
  })
  .onRequest(acp.methods.agent.session.load, async ({ params, client }) => {
    if (!authenticated) throw acp.RequestError.authRequired();
    const s = reopen(params);
    for (const past of s.history) {
      await client.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update: past });
    }
    return settings(s);
  })
  .onRequest(acp.methods.agent.session.resume, async ({ params }) => {
    if (!authenticated) throw acp.RequestError.authRequired();
    return settings(reopen(params));
  })
  .onRequest(acp.methods.agent.session.close, async ({ params }) => {
    session(params.sessionId).open = false;
    return {};
  })
  .onRequest(acp.methods.agent.session.delete, async ({ params }) => {
    sessions.delete(params.sessionId);
    return {};
  })
  .onRequest(acp.methods.agent.session.setMode, async ({ params, client }) => {
    const s = openSession(params.sessionId);
    if (!MODES.some((m) => m.id === params.modeId)) {
      throw acp.RequestError.invalidParams({ modeId: params.modeId }, `unknown mode ${params.modeId}`);
    }
    s.modeId = params.modeId;
    await update(client, params.sessionId, { sessionUpdate: "current_mode_update", currentModeId: s.modeId });
    return {};
  })
  .onRequest(acp.methods.agent.session.setConfigOption, async ({ params }) => {
    const s = openSession(params.sessionId);
    if (params.configId !== "model" || !MODELS.includes(params.value)) {
      const data = { configId: params.configId, value: params.value };
      throw acp.RequestError.invalidParams(data, "unknown option or value");
    }
    s.model = params.value;
    return { configOptions: settings(s).configOptions };
  })
  .onRequest(acp.methods.agent.session.list, async ({ params }) => {
    const filter = params.archived ?? "exclude";
    if (!["exclude", "include", "only"].includes(filter)) {
      throw acp.RequestError.invalidParams({ archived: filter }, `Unsupported archive filter: ${filter}`);
    }
    const keep = (s) => filter === "include" || (filter === "only") === s.archived;
    return { sessions: [...sessions].filter(([, s]) => keep(s)).map(([id, s]) => info(id, s)) };
  })
  .onRequest(acp.methods.agent.session.setTitle, async ({ params, client }) => {
    const title = params.title.trim();
    if (!title) throw acp.RequestError.invalidParams({ title: params.title }, "The title is empty");
    session(params.sessionId).title = title;
    await update(client, params.sessionId, { sessionUpdate: "session_info_update", title });
    return { title };
  })
  .onRequest(acp.methods.agent.session.archive, async ({ params }) => {
    const s = session(params.sessionId);
    s.archived = true;
    s.open = false;
    return {};
  })
  .onRequest(acp.methods.agent.session.unarchive, async ({ params }) => {
    session(params.sessionId).archived = false;
    return {};
  })
  .onRequest(acp.methods.agent.session.status, async ({ params }) => ({
    status: session(params.sessionId).open ? "open" : "saved",
  }))
  .onRequest(acp.methods.agent.session.fork, async ({ params }) => {
    const s = session(params.sessionId);
    const sessionId = `ts-${randomUUID()}`;
    sessions.set(sessionId, { ...s, cwd: params.cwd, archived: false, open: true, history: [...s.history] });
    return { sessionId };
  })
  .onRequest(acp.methods.agent.providers.list, async () => ({
    providers: [...providers].map(([providerId, current]) => ({
      providerId,
      supported: ["openai"],
      required: false,
      current,
    })),
  }))
  .onRequest(acp.methods.agent.providers.set, async ({ params }) => {
    if (!providers.has(params.providerId)) {
      throw acp.RequestError.invalidParams({ providerId: params.providerId }, "unknown provider");
    }
    providers.set(params.providerId, { apiType: params.apiType, baseUrl: params.baseUrl });
    return {};
  })
  .onRequest(acp.methods.agent.providers.disable, async ({ params }) => {
    providers.set(params.providerId, null);
    return {};
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const s = openSession(params.sessionId);
    for (const content of params.prompt) s.history.push({ sessionUpdate: "user_message_chunk", content });
    const first = params.prompt.find((block) => block.type === "text");
    try {
      await run(client, params.sessionId, first ? first.text : "");
    } catch (error) {
      await say(client, params.sessionId, errorText(error));
    }
    return { stopReason: "end_turn" };
  })
  .onNotification(acp.methods.agent.session.cancel, () => {})
  .onNotification(acp.methods.agent.mcp.message, recordMcpNote);

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const connection = app.connect(stream);
await connection.closed;
setTimeout(() => process.exit(0), 200).unref();
