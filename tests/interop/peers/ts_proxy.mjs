// A proxy-chain component on the official TypeScript SDK 2.4.0 (unstable entry point): the
// SDK has the proxy methods' names and types (PROXY_METHODS) and no proxy role, so this is
// an agent app whose catch-all handlers do the proxy's routing.
//
// `proxy/initialize` is answered with its successor's answer to `initialize` (forwarded
// first, as the schema requires); every other request or notification from the conductor
// goes down wrapped in `proxy/successor`; what comes up wrapped goes on up plain. It adds
// " [ts]" to the text of each `agent_message_chunk` it passes up, so a test can see that
// it was on the path.
//
// Run with node from a directory whose node_modules holds the SDK (tests/interop/_foreign.py).

import { Readable, Writable } from "node:stream";

import * as acp from "@agentclientprotocol/sdk/unstable";

const INITIALIZE = acp.PROXY_METHODS.proxy_initialize;
const SUCCESSOR = acp.PROXY_METHODS.proxy_successor;

function marked(update) {
  const change = update?.update;
  if (change?.sessionUpdate !== "agent_message_chunk" || change.content?.type !== "text") {
    return update;
  }
  const content = { ...change.content, text: `${change.content.text} [ts]` };
  return { ...update, update: { ...change, content } };
}

const app = acp.agent();
app.onRequest("*", async ({ method, params, client }) => {
  if (method === INITIALIZE) {
    return client.request(SUCCESSOR, { method: "initialize", params });
  }
  if (method === SUCCESSOR) {
    return client.request(params.method, params.params);
  }
  return client.request(SUCCESSOR, { method, params });
});
app.onNotification("*", async ({ method, params, client }) => {
  if (method === SUCCESSOR) {
    const inner = params.method === "session/update" ? marked(params.params) : params.params;
    return client.notify(params.method, inner);
  }
  return client.notify(SUCCESSOR, { method, params });
});

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const connection = app.connect(stream);
await connection.closed;
