// A CopilotKit runtime in front of `tether serve`, as the docs set it up (docs/doors/serving.md):
// the agent "default" is an AG-UI HttpAgent pointed at the server's /agui.
// Usage: node copilotkit.mjs <node_modules folder of @copilotkit/runtime> <tether serve URL>
// Prints the runtime's URL, then serves until stdin closes.
import { createServer } from "node:http";
import { join } from "node:path";

const [modules, tether] = process.argv.slice(2);
const load = (path) => import(join(modules, path));
const { CopilotRuntime } = await load("@copilotkit/runtime/dist/v2/index.mjs");
const { createCopilotNodeListener } = await load("@copilotkit/runtime/dist/v2/node.mjs");
const { HttpAgent } = await load("@ag-ui/client/dist/index.mjs");

// --8<-- [start:runtime]
const runtime = new CopilotRuntime({
  agents: { default: new HttpAgent({ url: `${tether}/agui` }) },
});
const listener = createCopilotNodeListener({
  runtime, basePath: "/api/copilotkit", activateChannels: false,
});
// --8<-- [end:runtime]
const server = createServer(listener).listen(0, "127.0.0.1", () => {
  process.stdout.write(`http://127.0.0.1:${server.address().port}/api/copilotkit\n`);
});
process.stdin.on("end", () => { server.close(); process.exit(0); });
process.stdin.resume();
