// A remote ACP server on the official TypeScript SDK (AcpServer on node:http, WebSocket via `ws`),
// serving the scripted agent the tests use: permission | wait | stream N | <echo>.
// Prints "READY <port>" on stdout once it listens on 127.0.0.1 (port from argv, 0 = any).
import http from "node:http";
import { WebSocketServer } from "ws";
import * as acp from "@agentclientprotocol/sdk";
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } from "@agentclientprotocol/sdk/experimental/node";

const say = (client, sessionId, text) => client.notify(acp.methods.client.session.update, {
  sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
});

function createAgent() {
  let n = 0;
  const cancels = new Map();
  return acp.agent({ name: "ts-remote-agent" })
    .onRequest(acp.methods.agent.initialize, () => ({
      protocolVersion: acp.PROTOCOL_VERSION, agentCapabilities: {}, agentInfo: { name: "ts-remote-agent", version: "2.4.0" },
    }))
    .onRequest(acp.methods.agent.session.new, () => ({ sessionId: `ts-${process.pid}-${++n}` }))
    .onNotification(acp.methods.agent.session.cancel, ({ params }) => { cancels.get(params.sessionId)?.(); })
    .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
      const sid = params.sessionId;
      const text = params.prompt.filter((b) => b.type === "text").map((b) => b.text).join(" ").trim();
      if (text === "permission") {
        await say(client, sid, "asking");
        const answer = await client.request(acp.methods.client.session.requestPermission, {
          sessionId: sid, toolCall: { toolCallId: "call-1", title: "demo", kind: "edit" },
          options: [{ optionId: "allow", name: "Allow", kind: "allow_once" }, { optionId: "reject", name: "Reject", kind: "reject_once" }],
        });
        await say(client, sid, `outcome: ${answer.outcome.outcome === "selected" ? answer.outcome.optionId : "cancelled"}`);
      } else if (text === "wait") {
        const cancelled = new Promise((resolve) => cancels.set(sid, resolve));
        await say(client, sid, "waiting");
        await cancelled;
        return { stopReason: "cancelled" };
      } else if (text.startsWith("stream ")) {
        const count = Number(text.split(/\s+/)[1]);
        for (let i = 0; i < count; i++) await say(client, sid, String(i).padStart(8, "0"));
      } else {
        await say(client, sid, `echo: ${text}`);
      }
      return { stopReason: "end_turn" };
    });
}

const server = new AcpServer({ createAgent });
const httpServer = http.createServer(createNodeHttpHandler(server));
httpServer.on("upgrade", createNodeWebSocketUpgradeHandler(server, new WebSocketServer({ noServer: true })));
httpServer.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => {
  console.log(`READY ${httpServer.address().port}`);
});
const stop = async () => { await server.close(); httpServer.close(); process.exit(0); };
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
