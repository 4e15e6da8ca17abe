// W8 server on the TypeScript SDK: `node ts_remote_server.mjs PORT` (AcpServer on node:http,
// WebSocket via `ws`); the same bench agent as ts_agent.mjs's stream/answer prompts.
import http from "node:http";
import { WebSocketServer } from "ws";
import * as acp from "@agentclientprotocol/sdk";
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } from "@agentclientprotocol/sdk/experimental/node";

const PAD = "x".repeat(32);
function createAgent() {
  let n = 0;
  return acp.agent({ name: "ts-bench-remote" })
    .onRequest(acp.methods.agent.initialize, () => ({ protocolVersion: 1, agentCapabilities: {}, agentInfo: { name: "ts-bench", version: "1" } }))
    .onRequest(acp.methods.agent.session.new, () => ({ sessionId: `s${String(n++).padStart(6, "0")}` }))
    .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
      const [command, count] = params.prompt[0].text.split(" ");
      if (command === "stream") {
        for (let i = 0; i < Number(count); i++) {
          await client.notify(acp.methods.client.session.update, {
            sessionId: params.sessionId,
            update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: String(i).padStart(8, "0") + PAD } },
          });
        }
      }
      return { stopReason: "end_turn" };
    });
}
const server = new AcpServer({ createAgent });
const httpServer = http.createServer(createNodeHttpHandler(server));
httpServer.on("upgrade", createNodeWebSocketUpgradeHandler(server, new WebSocketServer({ noServer: true })));
httpServer.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => console.log(`READY ${httpServer.address().port}`));
process.on("SIGTERM", async () => { await server.close(); process.exit(0); });
