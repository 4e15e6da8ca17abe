// Benchmark agent on the official TypeScript SDK (@agentclientprotocol/sdk); same prompts as ours:
// "stream N [SIZE]", "read N [SIZE]", anything else answers at once.
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const sessions = new Map();

const app = acp
  .agent({ name: "ts-bench-agent" })
  .onRequest(acp.methods.agent.initialize, async () => ({ protocolVersion: 1, agentCapabilities: {}, authMethods: [] }))
  .onRequest(acp.methods.agent.session.new, async ({ params }) => {
    const sessionId = `s${String(sessions.size).padStart(6, "0")}`;
    sessions.set(sessionId, { cwd: params.cwd, turns: 0 });
    return { sessionId };
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const [command, count, size] = params.prompt[0].text.split(" ");
    const sessionId = params.sessionId;
    if (command === "stream") {
      const pad = "x".repeat(size === undefined ? 32 : Number(size) - 8);
      for (let i = 0; i < Number(count); i++) {
        await client.notify(acp.methods.client.session.update, {
          sessionId,
          update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: String(i).padStart(8, "0") + pad } },
        });
      }
    } else if (command === "read") {
      for (let i = 0; i < Number(count); i++) {
        const answer = await client.request(acp.methods.client.fs.readTextFile, { sessionId, path: "/bench/file.txt" });
        if (size !== undefined && answer.content.length !== Number(size)) {
          throw new Error(`read ${answer.content.length} characters, not ${size}`);
        }
      }
    }
    return { stopReason: "end_turn" };
  })
  .onNotification(acp.methods.agent.session.cancel, () => {});

const connection = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await connection.closed;
setTimeout(() => process.exit(0), 100).unref();
