// Scripted ACP client built on the official TypeScript SDK (npm @agentclientprotocol/sdk).
//
//   node ts_client.mjs [--scenario prompts|cancel] [--cwd DIR]
//       [--permission allow|reject|cancel|hold] [--prompt TEXT]... [--timeout SECONDS]
//       [--caps all|fs|none] -- AGENT_ARGV...
//
// Must run from a directory whose node_modules holds the SDK (ESM ignores NODE_PATH):
// tests/interop/_foreign.py copies it into <repo>/.cache/interop/node/peers/.
//
// Same options, scenarios and report as py_sdk_client.py (see its docstring): prints ONE
// JSON object on stdout and exits 0; exits non-zero with a message (and the partial
// report) on stderr when the run itself fails.  "updates" are the raw update objects as
// they came off the wire (observed by a tap on the SDK's message stream), "sdkUpdates"
// the same updates as the SDK's ActiveSession delivered them (zod-parsed: unknown
// fields stripped, invalid updates dropped). --caps and the terminals (real processes in
// their own process group, recorded in "terminals") work as in py_sdk_client.py.

import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { isAbsolute, join, resolve as resolvePath } from "node:path";
import { Readable, Writable } from "node:stream";

import * as acp from "@agentclientprotocol/sdk";

function sdkVersion() {
  const entry = new URL(import.meta.resolve("@agentclientprotocol/sdk"));
  const root = entry.href.slice(0, entry.href.indexOf("/dist/") + 1);
  return JSON.parse(readFileSync(new URL("package.json", root), "utf8")).version;
}
const SDK_VERSION = sdkVersion();

// ------------------------------------------------------------------ arguments

function usage(message) {
  process.stderr.write(`ts_client: ${message}\n`);
  process.stderr.write(
    "usage: ts_client.mjs [--scenario prompts|cancel] [--cwd DIR] " +
      "[--permission allow|reject|cancel|hold] [--prompt TEXT]... [--timeout S] " +
      "[--caps all|fs|none] -- AGENT_ARGV...\n",
  );
  process.exit(64);
}

function parseArgs(argv) {
  const split = argv.indexOf("--");
  if (split < 0) usage("missing -- before the agent command");
  const opts = {
    scenario: "prompts",
    cwd: null,
    permission: "allow",
    prompts: [],
    timeout: 60,
    caps: "fs",
  };
  const own = argv.slice(0, split);
  for (let i = 0; i < own.length; i++) {
    const key = own[i];
    const value = own[i + 1];
    if (value === undefined) usage(`missing value for ${key}`);
    i++;
    if (key === "--scenario" && ["prompts", "cancel"].includes(value)) opts.scenario = value;
    else if (key === "--cwd") opts.cwd = value;
    else if (key === "--permission" && ["allow", "reject", "cancel", "hold"].includes(value))
      opts.permission = value;
    else if (key === "--prompt") opts.prompts.push(value);
    else if (key === "--timeout" && Number(value) > 0) opts.timeout = Number(value);
    else if (key === "--caps" && ["all", "fs", "none"].includes(value)) opts.caps = value;
    else usage(`bad option ${key} ${value}`);
  }
  opts.agent = argv.slice(split + 1);
  if (opts.agent.length === 0) usage("missing agent command after --");
  return opts;
}

const opts = parseArgs(process.argv.slice(2));

// ------------------------------------------------------------------ recording

const rec = {
  initialize: null,
  sessionId: null,
  turns: [],
  permissionRequests: [],
  fsReads: [],
  fsWrites: [],
  lateUpdates: [],
  terminals: [],
  agentExitCode: null,
};
const outgoingMethods = new Map(); // our request id -> method
let pendingTurn = null; // set just before session/prompt is sent
let wireTurn = null; // { turn, id } while the prompt request is outstanding

function clone(value) {
  return value === undefined ? null : structuredClone(value);
}

function observeOutgoing(msg) {
  if (typeof msg?.method === "string" && "id" in msg) {
    outgoingMethods.set(msg.id, msg.method);
    if (msg.method === "session/prompt" && pendingTurn) {
      wireTurn = { turn: pendingTurn, id: msg.id };
      pendingTurn = null;
    }
  }
}

function observeIncoming(msg) {
  if (msg === null || typeof msg !== "object" || Array.isArray(msg)) return;
  if (!("method" in msg)) {
    if (outgoingMethods.get(msg.id) === "initialize" && "result" in msg) {
      rec.initialize = clone(msg.result);
    }
    if (wireTurn && msg.id === wireTurn.id) wireTurn = null;
    return;
  }
  const params = msg.params;
  if (msg.method === "session/update" && params && typeof params === "object") {
    if (wireTurn && params.sessionId === rec.sessionId) {
      wireTurn.turn.updates.push(clone(params.update));
    } else {
      rec.lateUpdates.push(clone(params.update));
    }
  } else if (msg.method === "session/request_permission") {
    rec.permissionRequests.push(clone(params));
  }
}

// Wrap the SDK's message stream so every message is seen raw, in wire order,
// before the SDK parses it (incoming) and before it is written (outgoing).
function tap(stream) {
  const readable = stream.readable.pipeThrough(
    new TransformStream({
      transform(msg, controller) {
        observeIncoming(msg);
        controller.enqueue(msg);
      },
    }),
  );
  const writable = new WritableStream({
    async write(msg) {
      observeOutgoing(msg);
      const writer = stream.writable.getWriter();
      try {
        await writer.write(msg);
      } finally {
        writer.releaseLock();
      }
    },
    async close() {
      await stream.writable.close().catch(() => {});
    },
    async abort(reason) {
      await stream.writable.abort(reason).catch(() => {});
    },
  });
  return { readable, writable };
}

function errorObject(error) {
  if (error instanceof acp.RequestError) {
    const out = { code: error.code, message: error.message };
    if (error.data !== undefined && error.data !== null) out.data = error.data;
    return out;
  }
  return { code: null, message: `${error?.name ?? "Error"}: ${error?.message ?? String(error)}` };
}

// ------------------------------------------------------------------ client behaviour

let turnCancelled = false;
let holdWaiters = [];
function releaseHolds() {
  for (const resolve of holdWaiters.splice(0)) resolve();
}

const CANCELLED = { outcome: { outcome: "cancelled" } };

function absolute(path) {
  if (!isAbsolute(path)) {
    throw acp.RequestError.invalidParams({ path, details: "path must be absolute" });
  }
  return path;
}

function fsError(error, path) {
  if (error?.code === "ENOENT") return acp.RequestError.resourceNotFound(path);
  if (error?.code === "EISDIR") return acp.RequestError.invalidParams({ path, details: "is a directory" });
  return error;
}

// ------------------------------------------------------------------ terminals

const terminals = new Map(); // terminal id -> { child, chunks, size, truncated, done, status }

function startTerminal(params) {
  rec.terminals.push({ command: params.command, args: params.args ?? [], cwd: params.cwd ?? null });
  const env = { ...process.env };
  for (const v of params.env ?? []) env[v.name] = v.value;
  const child = spawn(params.command, params.args ?? [], {
    cwd: params.cwd ?? undefined,
    env,
    detached: true, // its own process group
    stdio: ["ignore", "pipe", "pipe"],
  });
  const limit = params.outputByteLimit ?? null;
  const term = { child, buffer: Buffer.alloc(0), truncated: false, status: null };
  const keep = (chunk) => {
    term.buffer = Buffer.concat([term.buffer, chunk]);
    if (limit !== null && term.buffer.length > limit) {
      let start = term.buffer.length - limit;
      while (start < term.buffer.length && (term.buffer[start] & 0xc0) === 0x80) start++;
      term.buffer = term.buffer.subarray(start);
      term.truncated = true;
    }
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  term.done = new Promise((resolve, reject) => {
    child.once("error", (error) =>
      reject(acp.RequestError.invalidParams({ command: params.command, details: error.message })),
    );
    child.once("close", (code, signal) => {
      term.status = { exitCode: code ?? null, signal: signal ?? null };
      resolve(term.status);
    });
  });
  const id = `term-${rec.terminals.length}`;
  terminals.set(id, term);
  return once(child, "spawn").then(
    () => ({ terminalId: id }),
    () => term.done,
  );
}

function terminal(id) {
  const term = terminals.get(id);
  if (!term) throw acp.RequestError.resourceNotFound(id);
  return term;
}

async function killTerminal(term) {
  if (term.status === null) {
    try {
      process.kill(-term.child.pid, "SIGKILL");
    } catch {}
    await term.done.catch(() => {});
  }
}

const app = acp
  .client({ name: "ts-sdk-client" })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
    if (turnCancelled || opts.permission === "cancel") return CANCELLED;
    if (opts.permission === "hold") {
      await new Promise((resolve) => holdWaiters.push(resolve));
      return CANCELLED;
    }
    const wanted = opts.permission === "allow" ? "allow_once" : "reject_once";
    const option = params.options.find((o) => o.kind === wanted);
    if (!option) throw acp.RequestError.invalidParams({ details: `no ${wanted} option offered` });
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
    rec.fsReads.push({ path: params.path, line: params.line ?? null, limit: params.limit ?? null });
    let data;
    try {
      data = await readFile(absolute(params.path), "utf8");
    } catch (error) {
      throw fsError(error, params.path);
    }
    const line = params.line ?? null;
    const limit = params.limit ?? null;
    if (line !== null || limit !== null) {
      const parts = data.split("\n");
      const lines = parts.slice(0, -1).map((l) => l + "\n");
      if (parts[parts.length - 1]) lines.push(parts[parts.length - 1]);
      const start = Math.max((line ?? 1) - 1, 0);
      const end = limit === null ? lines.length : start + limit;
      data = lines.slice(start, end).join("");
    }
    return { content: data };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
    rec.fsWrites.push({ path: params.path, content: params.content });
    try {
      await writeFile(absolute(params.path), params.content, "utf8");
    } catch (error) {
      throw fsError(error, params.path);
    }
    return {};
  })
  .onRequest(acp.methods.client.terminal.create, async ({ params }) => startTerminal(params))
  .onRequest(acp.methods.client.terminal.output, async ({ params }) => {
    const term = terminal(params.terminalId);
    const out = { output: term.buffer.toString("utf8"), truncated: term.truncated };
    if (term.status !== null) out.exitStatus = term.status;
    return out;
  })
  .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => {
    return await terminal(params.terminalId).done;
  })
  .onRequest(acp.methods.client.terminal.kill, async ({ params }) => {
    await killTerminal(terminal(params.terminalId));
    return {};
  })
  .onRequest(acp.methods.client.terminal.release, async ({ params }) => {
    await killTerminal(terminal(params.terminalId));
    terminals.delete(params.terminalId);
    return {};
  });

// ------------------------------------------------------------------ agent process

const child = spawn(opts.agent[0], opts.agent.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const childExited = new Promise((resolve) => {
  child.once("exit", (code, signal) => resolve({ code, signal }));
  child.once("error", (error) => resolve({ code: null, signal: null, error }));
});
child.stdin.on("error", () => {}); // EPIPE when the agent dies early: reported via the connection

async function stopAgent() {
  // close stdin, wait, then terminate, then kill
  child.stdin.end();
  const within = (ms) =>
    Promise.race([childExited, new Promise((resolve) => setTimeout(() => resolve(null), ms))]);
  let result = await within(3000);
  if (!result) {
    child.kill("SIGTERM");
    result = await within(2000);
  }
  if (!result) {
    child.kill("SIGKILL");
    result = await childExited;
  }
  return result;
}

function fail(message, code = 1) {
  process.stderr.write(`ts_client: ${message}\n`);
  process.stderr.write(`ts_client: partial report: ${JSON.stringify(rec)}\n`);
  try {
    child.kill("SIGKILL");
  } catch {}
  process.exit(code);
}

const timer = setTimeout(() => fail(`timed out after ${opts.timeout}s`, 2), opts.timeout * 1000);

// ------------------------------------------------------------------ scenario

async function runTurn(ctx, session, text, cancel) {
  const turn = { prompt: text, stopReason: null, updates: [], sdkUpdates: [], error: null };
  rec.turns.push(turn);
  turnCancelled = false;
  pendingTurn = turn;
  session.prompt(text).catch(() => {}); // completion is also queued as a "stop" message
  let cancelSent = false;
  for (;;) {
    let message;
    try {
      message = await session.nextUpdate();
    } catch (error) {
      turn.error = errorObject(error);
      break;
    }
    if (message.kind === "stop") {
      turn.stopReason = message.stopReason;
      break;
    }
    turn.sdkUpdates.push(clone(message.update));
    if (cancel && !cancelSent) {
      cancelSent = true;
      turnCancelled = true; // later permission requests are answered "cancelled"
      await ctx.notify(acp.methods.agent.session.cancel, { sessionId: session.sessionId });
      releaseHolds(); // held ones too, once the cancel is on its way
    }
  }
  pendingTurn = null;
}

async function scenario(ctx) {
  await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: {
      fs: { readTextFile: opts.caps !== "none", writeTextFile: opts.caps !== "none" },
      terminal: opts.caps === "all",
    },
    clientInfo: { name: "ts-sdk-client", title: "TypeScript SDK client", version: SDK_VERSION },
  });
  const cwd = resolvePath(opts.cwd ?? mkdtempSync(join(tmpdir(), "ts-sdk-client-")));
  const session = await ctx.buildSession(cwd).start();
  rec.sessionId = session.sessionId;
  let prompts = opts.prompts;
  if (opts.scenario === "cancel") prompts = prompts.length ? prompts.slice(0, 1) : ["wait"];
  try {
    for (const text of prompts) {
      await runTurn(ctx, session, text, opts.scenario === "cancel");
    }
    await new Promise((resolve) => setTimeout(resolve, 50)); // let stragglers reach the tap
  } finally {
    session.dispose();
    for (const term of terminals.values()) await killTerminal(term);
  }
}

const stream = tap(acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
try {
  await app.connectWith(stream, scenario);
} catch (error) {
  const exit = await Promise.race([
    childExited,
    new Promise((resolve) => setTimeout(() => resolve(null), 500)),
  ]);
  let detail = "";
  if (exit?.error) detail = ` (spawn failed: ${exit.error.message})`;
  else if (exit) detail = ` (agent exited: code=${exit.code} signal=${exit.signal})`;
  fail(`${error?.stack ?? error}${detail}`);
}
const exit = await stopAgent();
rec.agentExitCode = exit.code ?? null;
clearTimeout(timer);
process.stdout.write(JSON.stringify(rec) + "\n", () => process.exit(0));
