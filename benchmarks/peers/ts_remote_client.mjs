// W8 client on the TypeScript SDK: `node ts_remote_client.mjs URL` (http:// or ws://).
// Same measurements as acpstack_remote_client.py; prints {"value", "p50", "p99"}.
import WebSocket from "ws";
import * as acp from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";

const QUICK = process.env.ACPSTACK_BENCH_QUICK === "1";
const N_STREAM = QUICK ? 2000 : 20000;
const N_ROUND_TRIPS = QUICK ? 200 : 2000;
const [WARM_STREAM, WARM_ROUND_TRIPS] = QUICK ? [2000, 300] : [10000, 3000];
const url = process.argv[2];
let count = 0;
let failure = null;
const stream = url.startsWith("ws") ? createWebSocketStream(url, { WebSocket }) : createHttpStream(url);
const result = {};
await acp.client({ name: "ts-bench-remote-client" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    if (Number(params.update.content.text.slice(0, 8)) !== count) failure ??= `out of order at ${count}`;
    count++;
  })
  .connectWith(stream, async (ctx) => {
    await ctx.request(acp.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: "/tmp", mcpServers: [] });
    const prompt = (text) => ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
    // Warm-up (connections, caches, V8's compiled code), as in _common.py.
    await prompt(`stream ${WARM_STREAM}`);
    for (let i = 0; i < WARM_ROUND_TRIPS; i++) await prompt("hi");
    if (count !== WARM_STREAM || failure) throw new Error(`warm-up got ${count} updates (${failure})`);
    count = 0;
    const t0 = performance.now();
    await prompt(`stream ${N_STREAM}`);
    const elapsed = (performance.now() - t0) / 1000;
    if (count !== N_STREAM || failure) throw new Error(`got ${count} updates (${failure})`);
    const samples = [];
    for (let i = 0; i < N_ROUND_TRIPS; i++) {
      const t = performance.now();
      await prompt("hi");
      samples.push((performance.now() - t) * 1000);
    }
    samples.sort((a, b) => a - b);
    Object.assign(result, { value: N_STREAM / elapsed, p50: samples[Math.floor(samples.length / 2)], p99: samples[Math.min(samples.length - 1, Math.floor(samples.length * 0.99))] });
  });
console.log(JSON.stringify(result));
process.exit(0);
