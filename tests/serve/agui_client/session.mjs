// A session with `tether serve` through the official AG-UI client (@ag-ui/client HttpAgent),
// with no glue: every event goes through the client's own schema and order checks
// (verifyEvents); a check that fails rejects the run and ends this script with status 1.
// Usage: node session.mjs <node_modules folder of @ag-ui/client> <server URL>
// Prints one JSON line per step; waits for a line on stdin where a held run must go on.
import { createInterface } from "node:readline";
import { randomUUID } from "node:crypto";
import { join } from "node:path";

const [modules, base] = process.argv.slice(2);
const { HttpAgent, runHttpRequest, transformHttpEventStream } = await import(
  join(modules, "@ag-ui/client/dist/index.mjs")
);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const say = (step, value) => process.stdout.write(JSON.stringify({ step, ...value }) + "\n");

// Attaching to a run under way is AbstractAgent.connect, which HttpAgent leaves out: this is
// the client's own HTTP and SSE reading, pointed at the server's attach endpoint.
class AttachingAgent extends HttpAgent {
  connect(input) {
    const url = `${base}/agui/${encodeURIComponent(input.threadId)}/events`;
    const init = { method: "GET", headers: { Accept: "text/event-stream" } };
    return transformHttpEventStream(runHttpRequest(() => fetch(url, init)));
  }
}

function watched() {  // a subscriber that keeps the events' types
  const types = [];
  return { types, subscriber: { onEvent: ({ event }) => { types.push(event.type); } } };
}

const agent = new HttpAgent({ url: `${base}/agui` });
const ask = (text) => agent.addMessage({ id: randomUUID(), role: "user", content: text });

// 1. a chat: reasoning, text, a tool call and its result, the answer
ask("2 + 3?");
let seen = watched();
await agent.runAgent({}, seen.subscriber);
say("chat", { threadId: agent.threadId, messages: agent.messages, types: seen.types });

// 2. a call held for approval: an interrupt the client records
ask("remove the file x");
seen = watched();
await agent.runAgent({}, seen.subscriber);
say("interrupted", {
  interrupts: agent.pendingInterrupts, messages: agent.messages, types: seen.types,
});

// 3. answered by resume: approved, the call runs and the run ends
seen = watched();
const resume = agent.pendingInterrupts.map((interrupt) => ({
  interruptId: interrupt.id, status: "resolved", payload: { approved: true },
}));
await agent.runAgent({ resume }, seen.subscriber);
say("resumed", { interrupts: agent.pendingInterrupts, messages: agent.messages, types: seen.types });

// 4. a second client attaches to a run under way; the run goes on once it has
ask("and now?");
const other = new AttachingAgent({ url: `${base}/agui` });
other.threadId = agent.threadId;
let attached;
const running = agent.runAgent({}, {
  onTextMessageContentEvent: () => {
    if (attached) return;
    attached = other.connectAgent({}, {
      onRunStartedEvent: () => { say("attached", {}); },
    });
  },
});
await lines.next();  // the held reply goes on
await running;
await attached;
say("reattached", { messages: agent.messages, attachedMessages: other.messages });

// 5. a front-end tool (a CopilotKit action): the model calls it, the run ends with the call
const pickColor = {
  name: "pick_color",
  description: "Ask the person on the page to pick a color.",
  parameters: { type: "object", properties: { hint: { type: "string" } }, required: ["hint"] },
};
ask("pick a color");
seen = watched();
await agent.runAgent({ tools: [pickColor] }, seen.subscriber);
say("frontend", { messages: agent.messages, types: seen.types });

// 6. the front end runs it and sends its result in the next run's messages
const call = agent.messages.at(-1).toolCalls.at(-1);
agent.addMessage({ id: randomUUID(), role: "tool", toolCallId: call.id, content: "red" });
seen = watched();
await agent.runAgent({ tools: [pickColor] }, seen.subscriber);
say("frontendAnswered", { messages: agent.messages, types: seen.types });

// 7. shared state and context: the client's state goes up, a tool changes it on the server, the
// STATE_DELTA comes back as a JSON Patch the client applies itself; a readable reaches the model
agent.setState({ cart: ["milk"] });
ask("add tea to my cart");
seen = watched();
await agent.runAgent(
  { context: [{ description: "the page the user is on", value: "the shop's front page" }] },
  seen.subscriber,
);
say("state", { state: agent.state, messages: agent.messages, types: seen.types });
process.exit(0);
