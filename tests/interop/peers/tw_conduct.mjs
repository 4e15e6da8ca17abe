// `node tw_conduct.mjs PROXY... AGENT`: the third-party conductor @thinkwell/conductor (npm)
// on this process's stdin/stdout; each argument is one component's command line (the last
// is the agent). The package ships a library only, so this is its command line.
//
// Run with node from a directory whose node_modules holds the package (tests/interop/_foreign.py).

import readline from "node:readline";

import { Conductor, fromCommands } from "@thinkwell/conductor";

const stdioClient = {
  async connect() {
    const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
    async function* messages() {
      for await (const line of lines) {
        if (line.trim()) yield JSON.parse(line);
      }
    }
    return {
      send(message) {
        process.stdout.write(`${JSON.stringify(message)}\n`);
      },
      messages: messages(),
      async close() {
        lines.close();
      },
    };
  },
};

const conductor = new Conductor({
  instantiator: fromCommands(process.argv.slice(2)),
  mcpBridgeMode: "disabled",
});
await conductor.connect(stdioClient);
process.exit(0);
