// Benchmark client on the official TypeScript SDK: `node ts_client.mjs WORKLOAD -- AGENT ARGV...`.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const QUICK = process.env.ACPSTACK_BENCH_QUICK === "1";
const N_STREAM = QUICK ? 2000 : 20000;
const N_ROUND_TRIPS = QUICK ? 200 : 2000;
const N_READS = QUICK ? 500 : 5000;
const N_SESSIONS_W4 = 200;
const N_UPDATES_W4 = 100;
const N_SESSIONS_W6 = QUICK ? 1000 : 10000;

const [workload, , ...agent] = process.argv.slice(2);
const counts = new Map();
let failure = null;

function rssMb(pid) {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"));
  return Number(line.split(/\s+/)[1]) / 1024;
}

function percentiles(samples) {
  const s = [...samples].sort((a, b) => a - b);
  return { p50: s[Math.floor(s.length / 2)], p99: s[Math.min(s.length - 1, Math.floor(s.length * 0.99))] };
}

const app = acp
  .client({ name: "ts-bench-client" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    const expected = counts.get(params.sessionId) ?? 0;
    if (Number(params.update.content.text.slice(0, 8)) !== expected) failure ??= `out of order at ${expected}`;
    counts.set(params.sessionId, expected + 1);
  })
  .onRequest(acp.methods.client.fs.readTextFile, async () => ({ content: "hello\n" }));

const started = performance.now();
const child = spawn(agent[0], agent.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const prompt = (sessionId, text) => ({ sessionId, prompt: [{ type: "text", text }] });
const settle = () => new Promise((r) => setTimeout(r, 50));

async function run(ctx) {
  await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: false }, terminal: false },
  });
  if (workload === "W5") return { value: performance.now() - started };
  const newSession = () => ctx.request(acp.methods.agent.session.new, { cwd: "/tmp", mcpServers: [] });
  if (workload === "W6") {
    for (let i = 0; i < N_SESSIONS_W6; i++) await newSession();
    return { value: rssMb(child.pid) };
  }
  const { sessionId } = await newSession();
  if (workload === "W1") {
    const t0 = performance.now();
    await ctx.request(acp.methods.agent.session.prompt, prompt(sessionId, `stream ${N_STREAM}`));
    const elapsed = (performance.now() - t0) / 1000;
    await settle();
    if (counts.get(sessionId) !== N_STREAM) throw new Error(`got ${counts.get(sessionId)} updates`);
    return { value: N_STREAM / elapsed };
  }
  if (workload === "W2") {
    const samples = [];
    for (let i = 0; i < N_ROUND_TRIPS; i++) {
      const t0 = performance.now();
      await ctx.request(acp.methods.agent.session.prompt, prompt(sessionId, "noop"));
      samples.push((performance.now() - t0) * 1000);
    }
    return percentiles(samples);
  }
  if (workload === "W3") {
    const t0 = performance.now();
    await ctx.request(acp.methods.agent.session.prompt, prompt(sessionId, `read ${N_READS}`));
    return { value: N_READS / ((performance.now() - t0) / 1000) };
  }
  if (workload === "W4") {
    const ids = [sessionId];
    for (let i = 1; i < N_SESSIONS_W4; i++) ids.push((await newSession()).sessionId);
    const t0 = performance.now();
    await Promise.all(ids.map((id) => ctx.request(acp.methods.agent.session.prompt, prompt(id, `stream ${N_UPDATES_W4}`))));
    const elapsed = (performance.now() - t0) / 1000;
    await settle();
    if (!ids.every((id) => counts.get(id) === N_UPDATES_W4)) throw new Error("missing updates");
    return { value: elapsed };
  }
  throw new Error(`unknown workload ${workload}`);
}

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const result = await app.connectWith(stream, run);
if (failure) throw new Error(failure);
child.kill("SIGTERM");
process.stdout.write(JSON.stringify(result) + "\n", () => process.exit(0));
