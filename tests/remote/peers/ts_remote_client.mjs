// A remote ACP client on the official TypeScript SDK: `node ts_remote_client.mjs URL`
// (http(s):// = createHttpStream, ws(s):// = createWebSocketStream with `ws`).
// Runs: initialize, session/new, prompts "permission" (answers allow), "stream 20", and
// "wait" cancelled once its first chunk arrived. Prints one JSON report on stdout.
import WebSocket from "ws";
import * as acp from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";

const url = process.argv[2];
const stream = url.startsWith("ws") ? createWebSocketStream(url, { WebSocket }) : createHttpStream(url);
const texts = [];
let permissionRequests = 0;
let firstChunk = null;

const report = { turns: [] };
await acp.client({ name: "ts-remote-client" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    if (params.update.sessionUpdate === "agent_message_chunk") {
      texts.push(params.update.content.text);
      firstChunk?.();
    }
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    permissionRequests++;
    return { outcome: { outcome: "selected", optionId: params.options.find((o) => o.kind === "allow_once").optionId } };
  })
  .connectWith(stream, async (ctx) => {
    report.initialize = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "ts-remote-client", version: "2.4.0" },
    });
    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
    report.sessionId = sessionId;
    const prompt = (text) => ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
    for (const text of ["permission", "stream 20"]) {
      texts.length = 0;
      const { stopReason } = await prompt(text);
      report.turns.push({ prompt: text, stopReason, texts: [...texts] });
    }
    texts.length = 0;
    const started = new Promise((resolve) => { firstChunk = resolve; });
    const waiting = prompt("wait");
    await started;
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
    const { stopReason } = await waiting;
    report.turns.push({ prompt: "wait", stopReason, texts: [...texts] });
  });
report.permissionRequests = permissionRequests;
console.log(JSON.stringify(report));
process.exit(0);
