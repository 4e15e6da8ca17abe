// Benchmark client on the official TypeScript SDK: `node ts_client.mjs WORKLOAD -- AGENT ARGV...`.
// Same workloads, warm-up and checks (count, order, size) as the Python clients (_common.py).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const QUICK = process.env.ACPSTACK_BENCH_QUICK === "1";
const N_STREAM = QUICK ? 2000 : 20000;
const N_STREAM_64K = QUICK ? 500 : 5000;
const N_ROUND_TRIPS = QUICK ? 200 : 2000;
const N_READS = QUICK ? 500 : 5000;
const N_SESSIONS_W6 = QUICK ? 1000 : 10000;
const N_UPDATES_PER_SESSION = QUICK ? 10 : 100;
const BIG = 10 * 1024 * 1024;
const STREAMS = { W1: [N_STREAM, 40], "W1-64B": [N_STREAM, 64], "W1-1K": [N_STREAM, 1024], "W1-64K": [N_STREAM_64K, 65536] };
const CONCURRENT = { W4: [200, 100], S1: [1, N_UPDATES_PER_SESSION], S100: [100, N_UPDATES_PER_SESSION], S1000: [1000, N_UPDATES_PER_SESSION] };
// Warm-up before the timed part, through the same processes (V8 compiles the hot paths).
const [WARM_STREAM, WARM_ROUND_TRIPS, WARM_READS] = QUICK ? [2000, 300, 300] : [10000, 3000, 3000];
const COLD = ["W5", "W6", "W7"];
const SETTLE_MS = 30000;

const [workload, , ...agent] = process.argv.slice(2);
const counts = new Map();
let size = 40;
let readContent = "hello\n";
let failure = null;

function statusMb(pid, field) {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith(`${field}:`));
  return Number(line.split(/\s+/)[1]) / 1024;
}

function percentiles(samples) {
  const s = [...samples].sort((a, b) => a - b);
  return { p50: s[Math.floor(s.length / 2)], p99: s[Math.min(s.length - 1, Math.floor(s.length * 0.99))] };
}

function fileText(n) {
  const line = "x".repeat(63) + "\n";
  return line.repeat(Math.ceil(n / line.length)).slice(0, n);
}

const app = acp
  .client({ name: "ts-bench-client" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    const text = params.update.content.text;
    const expected = counts.get(params.sessionId) ?? 0;
    if (text.length !== size || Number(text.slice(0, 8)) !== expected) {
      failure ??= `session ${params.sessionId}: update ${text.slice(0, 8)} of ${text.length}, expected ${expected} of ${size}`;
    }
    counts.set(params.sessionId, expected + 1);
  })
  .onRequest(acp.methods.client.fs.readTextFile, async () => ({ content: readContent }));

const started = performance.now();
const child = spawn(agent[0], agent.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const prompt = (sessionId, text) => ({ sessionId, prompt: [{ type: "text", text }] });
const peaks = () => ({ "client peak": statusMb("self", "VmHWM"), "agent peak": statusMb(child.pid, "VmHWM") });

// Resolves once every session in `ids` has had `count` updates handled.
async function settle(ids, count) {
  const deadline = performance.now() + SETTLE_MS;
  for (const id of ids) {
    while ((counts.get(id) ?? 0) < count && !failure && performance.now() < deadline) {
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  if (failure) throw new Error(failure);
  const missing = ids.filter((id) => (counts.get(id) ?? 0) !== count);
  if (missing.length) throw new Error(`${missing.length} sessions without ${count} updates`);
}

async function run(ctx) {
  await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: false }, terminal: false },
  });
  if (workload === "W5") return { value: performance.now() - started };
  const newSession = async () => (await ctx.request(acp.methods.agent.session.new, { cwd: "/tmp", mcpServers: [] })).sessionId;
  const send = (sessionId, text) => ctx.request(acp.methods.agent.session.prompt, prompt(sessionId, text));
  if (workload === "W6") {
    for (let i = 0; i < N_SESSIONS_W6; i++) await newSession();
    return { value: statusMb(child.pid, "VmRSS") };
  }
  if (!COLD.includes(workload)) {
    const warm = await newSession();
    await send(warm, `stream ${WARM_STREAM}`);
    await settle([warm], WARM_STREAM);
    for (let i = 0; i < WARM_ROUND_TRIPS; i++) await send(warm, "noop");
    await send(warm, `read ${WARM_READS}`);
  }
  // Seconds for one prompt streaming `count` updates of `chars` characters.
  const stream = async (count, chars) => {
    const sessionId = await newSession();
    size = chars;
    const t0 = performance.now();
    await send(sessionId, `stream ${count} ${chars}`);
    await settle([sessionId], count);
    return (performance.now() - t0) / 1000;
  };
  if (workload in STREAMS) {
    const [count, chars] = STREAMS[workload];
    return { value: count / (await stream(count, chars)) };
  }
  if (workload in CONCURRENT) {
    const [sessions, updates] = CONCURRENT[workload];
    const ids = [];
    for (let i = 0; i < sessions; i++) ids.push(await newSession());
    const t0 = performance.now();
    await Promise.all(ids.map((id) => send(id, `stream ${updates}`)));
    await settle(ids, updates);
    const elapsed = (performance.now() - t0) / 1000;
    return { value: elapsed, rate: (sessions * updates) / elapsed };
  }
  const sessionId = await newSession();
  if (workload === "W2") {
    const samples = [];
    for (let i = 0; i < N_ROUND_TRIPS; i++) {
      const t0 = performance.now();
      await send(sessionId, "noop");
      samples.push((performance.now() - t0) * 1000);
    }
    return percentiles(samples);
  }
  if (workload === "W3") {
    const t0 = performance.now();
    await send(sessionId, `read ${N_READS}`);
    return { value: N_READS / ((performance.now() - t0) / 1000) };
  }
  if (workload === "BIG-UPDATE") return { value: (await stream(1, BIG)) * 1000, ...peaks() };
  if (workload === "BIG-READ") {
    readContent = fileText(BIG);
    const t0 = performance.now();
    await send(sessionId, `read 1 ${BIG}`); // the agent checks the size
    return { value: performance.now() - t0, ...peaks() };
  }
  throw new Error(`unknown workload ${workload}`);
}

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const result = await app.connectWith(stream, run);
if (failure) throw new Error(failure);
child.kill("SIGTERM");
process.stdout.write(JSON.stringify(result) + "\n", () => process.exit(0));
